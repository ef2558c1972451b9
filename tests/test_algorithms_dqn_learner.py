"""The suite's DQN learner (sweeps.engine.algorithms.dqn_learner) against RLlib's DQNTorchLearner: from
the same weights on the same batches, the same weights, TD errors and metrics after every call,
on the replay data path's fast path, on RLlib's own path and with non-finite gradients. No Ray:
the learners run in this process."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
import tree

pytest.importorskip("ray.rllib")

from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner  # noqa: E402
from ray.rllib.core import DEFAULT_MODULE_ID  # noqa: E402
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch  # noqa: E402
from ray.rllib.utils.metrics import TD_ERROR_KEY  # noqa: E402
from ray.rllib.utils.numpy import convert_to_numpy  # noqa: E402

import envs  # noqa: E402,F401  (registers the env ids)
from sweeps.engine.algorithms import build_config  # noqa: E402
from sweeps.engine.algorithms.dqn_learner import LastValueLogger, ReplayDQNTorchLearner  # noqa: E402
from sweeps.engine.algorithms.noise_scale import noise_learner_class  # noqa: E402

ENV, ENV_CONFIG = "ContosoCabs-v0", {"num_cities": 5, "time_matrix_seed": 0}
MB = 16  # minibatch rows: small, so a test call is fast


def _pair(noise_every: int = 0, **training):
    """RLlib's and the suite's learner, built from the sweeps' DQN config (with ``training``
    overrides of RLlib's ``config.training()``, e.g. ``dueling=False``), same weights."""
    config = build_config(
        {"algorithm": "DQN", "train_batch_size": MB, "grad_noise_scale_every": noise_every},
        ENV,
        ENV_CONFIG,
    )
    if training:
        config = config.copy(copy_frozen=False).training(**training)
    env = gym.make(ENV, **ENV_CONFIG)
    spaces = {DEFAULT_MODULE_ID: (env.observation_space, env.action_space)}
    spec = config.get_multi_rl_module_spec(spaces=spaces)
    learners = []
    for base in (DQNTorchLearner, ReplayDQNTorchLearner):
        cls = noise_learner_class(base) if noise_every else base
        learner = cls(config=config, module_spec=spec)
        learner.build()
        learners.append(learner)
    learners[1].module.set_state(learners[0].module.get_state())
    return learners, env


def _batch(env, rows: int, seed: int, nan_reward: bool = False) -> MultiAgentBatch:
    rng = np.random.default_rng(seed)
    space = env.observation_space
    obs = [np.stack([space.sample() for _ in range(rows)]).astype(np.float32) for _ in range(2)]
    rewards = rng.normal(0.0, 30.0, rows).astype(np.float32)
    if nan_reward:
        rewards[3] = np.nan
    data = {
        "obs": obs[0],
        "new_obs": obs[1],
        "actions": rng.integers(0, env.action_space.n, rows),
        "rewards": rewards,
        "terminateds": rng.random(rows) < 0.1,
        "n_step": np.full(rows, 3.0, np.float32),
        "weights": rng.uniform(0.5, 1.0, rows).astype(np.float32),
    }
    return MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=rows)


def _weights(learner) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in learner.module[DEFAULT_MODULE_ID].parameters()]


def _td(result) -> np.ndarray:
    """The call's TD errors, one per transition (RLlib logs one tensor per minibatch)."""
    td = convert_to_numpy(result[DEFAULT_MODULE_ID][TD_ERROR_KEY].peek())
    return np.concatenate([np.ravel(x) for x in (td if isinstance(td, list) else [td])])


def _update(learner, batch, **kw):
    kw.setdefault("minibatch_size", MB)
    kw.setdefault("num_epochs", 1)
    kw.setdefault("shuffle_batch_per_epoch", False)
    return learner.update(batch=batch, timesteps={"num_env_steps_sampled_lifetime": 2_000}, **kw)


def _assert_same(rllib, suite, atol: float = 1e-6) -> None:
    for a, b in zip(_weights(rllib), _weights(suite), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=atol)


def _assert_same_results(r_rllib, r_suite) -> None:
    """Every reduced metric of an ``update()`` call: same keys, same kind of ``Stats``, same
    values (the suite logs window-1 statistics once per call, RLlib once per minibatch)."""
    flat_rllib, flat_suite = (
        dict(tree.flatten_with_path(r_rllib)),
        dict(tree.flatten_with_path(r_suite)),
    )
    assert flat_suite.keys() == flat_rllib.keys()
    for key, theirs in flat_rllib.items():
        ours = flat_suite[key]
        assert type(ours) is type(theirs), key
        a, b = (convert_to_numpy(x.peek()) for x in (theirs, ours))
        if isinstance(a, list):
            a, b = (
                np.concatenate([np.ravel(x) for x in a]),
                np.concatenate([np.ravel(x) for x in b]),
            )
        np.testing.assert_allclose(
            np.asarray(b, float),
            np.asarray(a, float),
            rtol=1e-5,
            atol=1e-5,
            equal_nan=True,
            err_msg=str(key),
        )


@pytest.mark.parametrize("noise_every", [0, 1])
def test_same_weights_td_errors_and_metrics_as_rllibs_learner(noise_every: int) -> None:
    """Five calls of four minibatches each (the replay path's call), with and without the
    noise-scale mixin: weights, per-transition TD errors (the replay priorities) and the logged
    step counts, loss and every other reduced metric equal RLlib's; the optimizer is torch's
    fused Adam."""
    torch.manual_seed(0)
    (rllib, suite), env = _pair(noise_every)
    assert suite.get_optimizer(DEFAULT_MODULE_ID).defaults["fused"] is True
    start = _weights(suite)
    for call in range(5):
        batch = _batch(env, 4 * MB, seed=call)
        r_rllib, r_suite = _update(rllib, batch), _update(suite, batch)
        _assert_same(rllib, suite)
        np.testing.assert_allclose(_td(r_suite), _td(r_rllib), rtol=1e-5, atol=1e-6)
        assert _td(r_suite).shape == (4 * MB,)  # one per transition, in row order
        for key in ("num_env_steps_trained_lifetime", "num_module_steps_trained_lifetime"):
            assert r_suite["__all_modules__"][key].peek() == r_rllib["__all_modules__"][key].peek()
        assert r_suite[DEFAULT_MODULE_ID]["qf_loss"].peek() == pytest.approx(
            r_rllib[DEFAULT_MODULE_ID]["qf_loss"].peek(), rel=1e-5
        )
        _assert_same_results(r_rllib, r_suite)
    assert not isinstance(suite.metrics, LastValueLogger)  # the real logger is back
    assert not all(np.array_equal(a, b) for a, b in zip(start, _weights(suite), strict=True))
    assert suite.module[DEFAULT_MODULE_ID].training


@pytest.mark.parametrize(
    "training", [{"dueling": False}, {"double_q": False}, {"dueling": False, "double_q": False}]
)
def test_same_weights_td_errors_and_metrics_without_dueling_or_double_q(training) -> None:
    """The suite's learner with RLlib's other Q-learning variants (no value head; the target
    network's own argmax) against RLlib's learner: three calls of three minibatches, same
    weights, TD errors and reduced metrics."""
    torch.manual_seed(1)
    (rllib, suite), env = _pair(**training)
    for call in range(3):
        batch = _batch(env, 3 * MB, seed=40 + call)
        r_rllib, r_suite = _update(rllib, batch), _update(suite, batch)
        _assert_same(rllib, suite)
        np.testing.assert_allclose(_td(r_suite), _td(r_rllib), rtol=1e-5, atol=1e-6)
        _assert_same_results(r_rllib, r_suite)


def test_rllibs_path_for_other_calls() -> None:
    """Two epochs and 2.5 minibatches' rows (where RLlib's iterator wraps around) go through
    RLlib's iterator and give RLlib's weights and TD errors."""
    (rllib, suite), env = _pair()
    batch = _batch(env, 4 * MB, seed=10)
    _update(rllib, batch, num_epochs=2)
    _update(suite, batch, num_epochs=2)
    _assert_same(rllib, suite)
    batch = _batch(env, 5 * MB // 2, seed=11)
    r_rllib, r_suite = _update(rllib, batch), _update(suite, batch)
    _assert_same(rllib, suite)
    np.testing.assert_allclose(_td(r_suite), _td(r_rllib), rtol=1e-5, atol=1e-6)
    _assert_same_results(r_rllib, r_suite)


def test_non_finite_gradients_are_handled_as_rllib_handles_them() -> None:
    """A NaN reward makes the gradients NaN: both learners zero them (RLlib's default,
    ``torch_skip_nan_gradients=False``) and end with the same, finite weights."""
    (rllib, suite), env = _pair()
    batch = _batch(env, MB, seed=20, nan_reward=True)
    _assert_same_results(_update(rllib, batch), _update(suite, batch))
    for a, b in zip(_weights(rllib), _weights(suite), strict=True):
        assert np.isfinite(b).all()
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    batch = _batch(env, MB, seed=21)
    _update(rllib, batch)
    _update(suite, batch)
    _assert_same(rllib, suite)


def test_dqn_and_apex_use_it_rllib_dqn_does_not() -> None:
    """The sweeps' DQN and APEX train with the suite's learner (the noise-scale mixin on top);
    RLLIB-DQN keeps RLlib's."""
    for name in ("DQN", "APEX"):
        cls = build_config({"algorithm": name}, ENV, ENV_CONFIG).learner_class
        assert issubclass(cls, ReplayDQNTorchLearner), (name, cls)
    cls = build_config({"algorithm": "RLLIB-DQN"}, ENV, ENV_CONFIG).learner_class
    assert issubclass(cls, DQNTorchLearner) and not issubclass(cls, ReplayDQNTorchLearner)


def test_the_replay_call_takes_the_row_slice_path() -> None:
    """k × minibatch rows, one epoch, no shuffle: row slices in order (not RLlib's iterator),
    each minibatch the next ``MB`` rows of the batch."""
    import types

    from ray.rllib.core.learner.training_data import TrainingData

    (_, suite), env = _pair()
    batch = _batch(env, 3 * MB, seed=30)
    it = suite._create_iterator_if_necessary(
        training_data=TrainingData(batch=batch), minibatch_size=MB
    )
    assert isinstance(it, types.GeneratorType)
    parts = list(it)
    assert [len(p.policy_batches[DEFAULT_MODULE_ID]) for p in parts] == [MB] * 3
    np.testing.assert_array_equal(
        np.concatenate([p.policy_batches[DEFAULT_MODULE_ID]["actions"].numpy() for p in parts]),
        batch.policy_batches[DEFAULT_MODULE_ID]["actions"],
    )


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_foreach_clipping_equals_rllibs(scale: float) -> None:
    """Below and above ``grad_clip`` = 40: the same clipped gradients and global norm as
    RLlib's ``clip_gradients``; a NaN gradient goes to RLlib's (its per-tensor nan_to_num)."""
    from ray.rllib.utils.torch_utils import clip_gradients

    from sweeps.engine.algorithms.dqn_learner import clip_gradients_foreach

    gen = torch.Generator().manual_seed(0)
    grads = {
        i: torch.randn(shape, generator=gen) * scale
        for i, shape in enumerate([(64, 8), (64,), (64, 64), (64,), (5, 64), (5,)])
    }
    for nan in (False, True):
        if nan:
            grads[1][3] = float("nan")
        ours, theirs = ({k: v.clone() for k, v in grads.items()} for _ in range(2))
        norm_ours = clip_gradients_foreach(ours, grad_clip=40.0, grad_clip_by="global_norm")
        norm_theirs = clip_gradients(theirs, grad_clip=40.0, grad_clip_by="global_norm")
        torch.testing.assert_close(norm_ours, norm_theirs, equal_nan=True)
        for k in grads:
            torch.testing.assert_close(ours[k], theirs[k], equal_nan=True)


def test_last_value_logger_holds_window_one_means_only() -> None:
    """Window-1 means are held (latest value per key) until reduce; sums, item series and
    other windows go through at once; the reduced result equals logging every call."""
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    def log(m) -> None:
        for i in range(3):
            m.log_value(("mod", "loss"), float(i), window=1)
            m.log_dict({"q_max": 10.0 + i, "q_min": -float(i)}, key="mod", window=1)
            m.log_value(("mod", "steps"), 16, reduce="sum")
            m.log_value(("mod", "td"), torch.full((2,), float(i)), reduce="item_series")
            m.log_value(("mod", "ema"), float(i))

    plain, real = MetricsLogger(), MetricsLogger()
    held = LastValueLogger(real)
    log(plain)
    log(held)
    assert real.peek(("mod", "steps")) == 48  # went through at once
    assert "loss" not in real.peek("mod")  # held
    expected, got = plain.reduce(), held.reduce()
    assert got["mod"]["loss"].peek() == expected["mod"]["loss"].peek() == 2.0
    _assert_same_results(expected, got)


def test_one_global_norm_per_update(monkeypatch) -> None:
    """The clip's global norm is the finiteness check: one norm per minibatch update, not
    one for the clip and one before the optimizer step."""
    (_, suite), env = _pair()
    calls = []
    real = torch.nn.utils.get_total_norm

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.nn.utils, "get_total_norm", counting)
    _update(suite, _batch(env, 3 * MB, seed=40))
    assert len(calls) == 3

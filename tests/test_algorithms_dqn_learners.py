"""The suite's DQN on RLlib's synchronous data-parallel learners (``num_learners`` > 1): each
learner takes an equal slice of every prioritized minibatch, torch DDP averages their
gradients, and the TD errors that set the replay priorities come back in the replay's order.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.parallel, pytest.mark.slow]


def _dqn(num_learners: int):
    from sweeps.engine.algorithms import build_config

    config = build_config(
        {
            "algorithm": "DQN",
            "num_env_runners": 0,
            "num_learners": num_learners,
            "num_cpus_per_learner": 0.25,
            "train_batch_size": 64,
            # no target network copy between the two updates: the TD errors compared after
            # the first update then depend on the online weights alone
            "target_network_update_freq": 10**9,
            "min_time_s_per_iteration": 0,
            "seed": 3,
        },
        "ContosoCabs-v0",
        {},
    )
    config.debugging(log_level="ERROR")
    return config.build_algo()


def _weights(algo) -> list[np.ndarray]:
    from ray.rllib.core import DEFAULT_MODULE_ID

    state = algo.learner_group.get_weights()[DEFAULT_MODULE_ID]
    return [np.asarray(state[k]) for k in sorted(state)]


def test_two_learners_train_each_minibatch_as_one_learner_does(local_ray):
    """Two prioritized minibatches of 64 replayed transitions, trained by one learner in the
    driver and by two learner actors, both built from the same seed (the same weights): the
    first minibatch's TD errors (before any update) are the same transition by transition,
    so they came back in the replay's order; the second's (after one update) and the weights
    after both updates agree to float rounding, as the two learners' averaged gradient of
    two 32-row halves is the gradient of the 64-row minibatch."""
    source = _dqn(0)
    try:
        while source._sampled() < 2_000:
            source.train()
        indices, weights, data = source.replay.sample(2 * 64)
    finally:
        source.stop()

    def module_weights(learner) -> list[np.ndarray]:  # runs in each learner actor
        from ray.rllib.core import DEFAULT_MODULE_ID

        state = learner.get_state(components="rl_module")["rl_module"][DEFAULT_MODULE_ID]
        return [np.asarray(state[k]) for k in sorted(state)]

    two = _dqn(2)
    try:
        before = _weights(two)
        results, td_two = two._update_learner(indices, weights, data, 2_000, {})
        assert len(results) == 2  # one result per learner actor
        after_two = two.learner_group.foreach_learner(module_weights)
        after_two = [r.get() if hasattr(r, "get") else r for r in after_two]
    finally:
        two.stop()
    one = _dqn(0)
    try:
        assert all(np.array_equal(a, b) for a, b in zip(before, _weights(one), strict=True))
        _, td_one = one._update_learner(indices, weights, data, 2_000, {})
        after_one = _weights(one)
    finally:
        one.stop()
    assert td_two.shape == td_one.shape == (128,)
    np.testing.assert_allclose(td_two[:64], td_one[:64], rtol=1e-5, atol=1e-6)
    assert not np.allclose(td_one[:64], np.roll(td_one[:64], 1))  # the order is checkable
    np.testing.assert_allclose(td_two[64:], td_one[64:], rtol=1e-4, atol=1e-5)
    assert any(not np.array_equal(a, w0) for a, w0 in zip(after_one, before, strict=True))
    for learner_weights in after_two:  # each learner applied the same update
        for a, b in zip(learner_weights, after_one, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)

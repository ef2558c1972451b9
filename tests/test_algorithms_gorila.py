"""GORILA (Gorila DQN, Nair et al. 2015): its parameter server's rules on their own, and a
sweep that declares it with one and two learners, end to end on a real local Ray."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest
from sweep_runs import run_sweep  # tests/sweep_runs.py (pytest puts tests/ on sys.path)

CABS = "ContosoCabs-v0"


def _server(**kwargs):
    """A parameter server in this process (no Ray: its rules are plain Python) on the Cabs
    DQN module of a GORILA trial's defaults."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    import envs
    from sweeps.engine.algorithms import build_config
    from sweeps.engine.algorithms.gorila_dqn import ParameterServer

    cfg = build_config({"algorithm": "GORILA", "seed": 0}, CABS)
    env = envs.make_env(CABS, {})
    spec = cfg.get_rl_module_spec(
        spaces={DEFAULT_MODULE_ID: (env.observation_space, env.action_space)},
        inference_only=False,
    )
    module = spec.build()
    module.make_target_networks()
    return ParameterServer(spec, module.get_state(), lr=1e-3, grad_clip=None, **kwargs)


def _gradient(server) -> list[np.ndarray]:
    return [np.full(tuple(p.shape), 0.1, np.float32) for p in server._params]


def _online(server) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in server._params]


def _targets(server) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    return [
        (
            [p.detach().numpy().copy() for p in main.parameters()],
            [p.detach().numpy().copy() for p in target.parameters()],
        )
        for main, target in server.module.get_target_network_pairs()
    ]


def test_a_gradient_staler_than_max_gradient_staleness_is_dropped_and_counted():
    server = _server(target_update_period=1000, max_gradient_staleness=2)
    for v in range(3):  # fresh gradients: versions 0, 1, 2 on parameters of those versions
        assert server.apply(_gradient(server), v) == v + 1
    before = _online(server)
    # computed on version 0, the server is at 3: 3 versions stale > 2 → dropped
    assert server.apply(_gradient(server), 0) == 3
    assert all(np.array_equal(a, b) for a, b in zip(before, _online(server), strict=True))
    # computed on version 1: 2 versions stale, within the bound → applied
    assert server.apply(_gradient(server), 1) == 4
    assert not all(np.array_equal(a, b) for a, b in zip(before, _online(server), strict=True))
    stats = server.stats()
    assert (stats["applied"], stats["dropped"], stats["staleness_max"]) == (4, 1, 2)
    assert stats["staleness_mean"] == pytest.approx(2 / 4)  # 0, 0, 0 and 2
    assert stats["bytes_in"] == 5 * sum(g.nbytes for g in _gradient(server))


def test_the_servers_target_network_is_copied_on_its_period_only():
    server = _server(target_update_period=3, max_gradient_staleness=None)

    def same() -> bool:
        return all(
            all(np.array_equal(a, b) for a, b in zip(main, target, strict=True))
            for main, target in _targets(server)
        )

    assert same() and server.stats()["target_updates"] == 1  # copied when the server starts
    for v in range(2):
        server.apply(_gradient(server), v)
        assert not same()  # updates 1 and 2: the target lags the online network
    server.apply(_gradient(server), 2)
    assert same() and server.stats()["target_updates"] == 2  # update 3: copied
    server.apply(_gradient(server), 3)
    assert not same()


def test_train_batch_size_is_each_gorila_learners_minibatch_and_learners_are_placed():
    """RLlib splits ``train_batch_size`` over its data-parallel learners; each Gorila learner
    takes a whole minibatch. Each learner actor is a bundle of the trial's request."""
    from sweeps.engine.algorithms import build_config
    from sweeps.engine.trainable import request_bundles

    cfg = build_config(
        {"algorithm": "GORILA", "num_learners": 4, "train_batch_size": 64, "num_env_runners": 1},
        CABS,
    )
    assert (cfg.gorila_num_learners, cfg.total_train_batch_size, cfg.num_learners) == (4, 64, 0)
    assert request_bundles(cfg) == [{"CPU": 1.0}, {"CPU": 1.0}] + [{"CPU": 0.5}] * 4
    ppo = build_config({"algorithm": "PPO", "num_learners": 2, "train_batch_size": 64}, CABS)
    assert ppo.train_batch_size_per_learner == 32


def test_the_dry_runs_check_places_each_learner_count_beside_a_baseline_of_the_same_shape():
    """A baseline of the searched algorithm and env runner count (PPO's learner in the driver)
    does not lend its ``num_learners`` to the searched learner counts: each is placed with
    its own learner actors (RLlib's synchronous data-parallel learners)."""
    from sweeps import Budget, Search, Sweep, Target, choice
    from sweeps.engine.placement import trial_requests, trial_setup
    from sweeps.engine.sweep_file import sweep_target

    fixed = {"num_env_runners": 1, "num_cpus_per_env_runner": 0.25}
    sweep = Sweep(
        name="learners",
        env=CABS,
        algorithms=["PPO"],
        per_algorithm={"PPO": {"num_learners": choice([1, 2])}},
        per_algorithm_fixed={"PPO": {**fixed, "num_cpus_per_learner": 0.125}},
        target=Target(metric="evaluation", fraction_of_optimal=0.95),
        budget=Budget(time_s=10),
        search=Search(sampler="grid", num_samples=2),
        baseline={"algorithm": "PPO", **fixed, "num_learners": 0},
        reference=None,
    )
    here = [{"CPU": 2.0, "GPU": 0.0}]
    requests = trial_requests(sweep, trial_setup(sweep, sweep_target(sweep, "learners"), here))
    assert [(r.num_learners, r.cpus) for r in requests] == [(0, 1.25), (1, 1.375), (2, 1.5)]


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parallel  # bounded by its budgets only, no wall-clock bound
def test_a_sweep_declaring_gorila_with_one_and_two_learners_runs_end_to_end(tmp_path):
    path = tmp_path / "gorila.py"
    path.write_text(
        textwrap.dedent("""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(
            name="gorila", env="ContosoCabs-v0", algorithms=["GORILA"],
            search_space={"num_env_runners": choice([0]), "num_learners": choice([1, 2])},
            target=Target(value=1500.0), budget=Budget(time_s=25),
            search=Search(sampler="grid", num_samples=2, seeds=1, capping=None),
            baseline=None,
        )
        """)
    )
    results = tmp_path / "results"
    run_sweep(path, results)
    (run_dir,) = (results / "gorila").iterdir()
    trials = pd.read_parquet(run_dir / "trials.parquet").sort_values("num_learners")
    assert trials.num_learners.tolist() == [1, 2]
    assert trials.param_num_learners.tolist() == [1, 2]
    assert (trials.status != "error").all(), trials.error.tolist()
    assert (trials.learner_updates > 0).all(), trials.learner_updates.tolist()
    # the server's staleness and traffic per iteration (docs/results.md, progress columns)
    progress = pd.read_parquet(run_dir / "progress.parquet")
    last = progress.groupby("trial_id").tail(1)
    assert (last.gradient_staleness >= 0).all() and (last.bytes_per_update > 0).all(), last
    assert (last.dropped_gradients >= 0).all() and (last.learner_cpu_s > 0).all(), last
    assert (last.server_busy_s > 0).all(), last

"""Ape-X DQN and the suite's DQN on a real local Ray: each Ape-X actor's ε_i and real
asynchrony; DQN's synchronous rounds and its replay ratio.

Run under the machine's Ray lock: ``flock /tmp/ray_workload.lock python -m pytest ...``.
"""

from __future__ import annotations

import sys
import time

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.ray

SLOW_ENV = "SlowFirstRunnerCabs-v0"
SLOW_STEP_S = 0.05  # env runner 1: 64 env steps per sample() call → ≥ 3.2 s per call


class SlowOnFirstRunner(gym.Wrapper):
    """Contoso Cabs that sleeps ``SLOW_STEP_S`` per step on env runner 1 only."""

    def __init__(self, env_config):
        from envs.contoso_cabs import ContosoCabs

        super().__init__(ContosoCabs(dict(env_config)))
        self.delay = SLOW_STEP_S if getattr(env_config, "worker_index", 0) == 1 else 0.0

    def step(self, action):
        if self.delay:
            time.sleep(self.delay)
        return self.env.step(action)


@pytest.fixture(scope="module")
def ray_local(local_ray):
    from ray import cloudpickle
    from ray.tune.registry import register_env

    # Env runners cannot import this test module: ship its classes by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    register_env(SLOW_ENV, SlowOnFirstRunner)
    yield


def _two_runners_one_slow(algorithm: str, **params):
    """``algorithm`` with 2 env runners of 8 envs x 8 steps (64 env steps per sample call) on
    :data:`SLOW_ENV`, half a CPU each so that both fit beside the driver on 2 CPUs."""
    from sweeps.engine.algorithms import build_config

    config = build_config({"algorithm": algorithm, "num_env_runners": 2,
                           "num_envs_per_env_runner": 8, "rollout_fragment_length": 8, **params},
                          SLOW_ENV)
    config.env_runners(num_cpus_per_env_runner=0.5)
    return config.build_algo()


def _train_for(algo, algorithm: str, seconds: float) -> tuple[list, list, list]:
    """Train ``algo`` for ``seconds``; lifetime learner updates, env steps and seconds since the
    start, after each iteration."""
    from sweeps.engine.algorithms import extract_metrics

    updates, steps, walls = [], [], []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        m = extract_metrics(algorithm, algo.train())
        updates.append(m["learner_updates"])
        steps.append(m["env_steps"])
        walls.append(time.perf_counter() - t0)
    return updates, steps, walls


@pytest.mark.timeout(120)
def test_each_env_runner_explores_with_its_own_epsilon(ray_local):
    from sweeps.engine.algorithms import build_config
    from sweeps.engine.algorithms.apex_dqn import actor_epsilon

    n = 3
    config = build_config({"algorithm": "APEX", "num_env_runners": n}, "ContosoCabs-v0")
    config.env_runners(num_cpus_per_env_runner=0.3)  # 3 actors + driver fit 2 CPUs
    algo = config.build_algo()
    try:
        # Ask the RLModules the actors act with, not our bookkeeping.
        got = dict(algo.env_runner_group.foreach_env_runner(
            lambda er: (er.worker_index, float(er.module.epsilon_schedule.get_current_value())),
            local_env_runner=False))
        want = {k: actor_epsilon(k - 1, n, 0.4, 7.0) for k in range(1, n + 1)}
        assert got == pytest.approx(want)
        assert want[1] == pytest.approx(0.4) and want[3] == pytest.approx(0.4**8)
        result = algo.train()
        assert result["apex"]["actor_epsilons"] == pytest.approx(want)
        # each actor prices its own transitions (initial priorities from its network)
        priced = algo.env_runner_group.foreach_env_runner(
            lambda er: (lambda t: (len(t["td_errors"]), len(t["actions"]),
                                   bool(np.isfinite(t["td_errors"]).all())))(
                er.sample_transitions()[0]), local_env_runner=False)
        assert all(n == m > 0 and finite for n, m, finite in priced), priced
    finally:
        algo.stop()


@pytest.mark.timeout(150)
def test_learner_keeps_updating_while_one_env_runner_is_slow(ray_local):
    """Env runner 1 needs ≥ 3.2 s per sample() call; env runner 2 needs ~0.05 s. A synchronous
    learner (RLlib's DQN) would do at most one round of updates per 3.2 s; Ape-X's must grow
    every ~1 s iteration from env runner 2's samples alone."""
    algo = _two_runners_one_slow("APEX", num_steps_sampled_before_learning_starts=256)
    try:
        updates, steps, walls = _train_for(algo, "APEX", 7.0)
        # After warm-up, every ~1 s iteration adds learner updates ...
        started = [u for u in updates if u > 0]
        assert len(started) >= 3, (updates, walls)
        assert all(b > a for a, b in zip(started, started[1:], strict=False)), (updates, walls)
        # ... far more than one synchronous round per slow sample() call would allow.
        assert started[-1] >= 40, (updates, walls)
        print("updates", updates, "env steps", steps, "wall", walls)
        # The slow runner could have delivered at most 2 calls × 64 steps in 7 s; the rest
        # came from the fast one.
        assert steps[-1] > 256 + 2 * 64
    finally:
        algo.stop()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("algorithm", ["APEX", "DQN"])
def test_replay_refuses_observations_it_cannot_store(ray_local, algorithm):
    """Replay keeps observations in arrays: a Discrete observation space is refused in one line."""
    from sweeps.engine.algorithms import build_config

    config = build_config({"algorithm": algorithm, "num_env_runners": 0}, "FrozenLake-v1")
    with pytest.raises(ValueError, match=f"{algorithm} needs a Box observation space"):
        config.build_algo()


@pytest.mark.timeout(90)
def test_apex_without_env_runners_trains_from_the_drivers_own_samples(ray_local):
    """num_env_runners=0: the driver samples, replay fills, the learner takes
    updates_per_learner_call minibatches per call and the replay ratio follows."""
    from sweeps.engine.algorithms import build_config

    config = build_config({"algorithm": "APEX", "num_env_runners": 0,
                           "num_steps_sampled_before_learning_starts": 256,
                           "updates_per_learner_call": 2}, "ContosoCabs-v0")
    algo = config.build_algo()
    try:
        result = algo.train()
        replay = result["replay"]
        assert replay["learner_updates_lifetime"] > 0 and replay["learner_updates_lifetime"] % 2 == 0
        assert 0 < replay["replay_size"] <= 100_000
        # one 64-step sample() call per training step, then 2 updates of 64: ratio -> 2
        assert 1.0 < replay["replay_ratio"] <= 2.0
    finally:
        algo.stop()


@pytest.mark.timeout(150)
def test_dqn_waits_for_every_env_runner_each_step(ray_local):
    """The same slow env runner 1 (≥ 3.2 s per 64-step round) under the suite's DQN: every step
    takes exactly one round from each env runner, so the driver cannot have more rounds than
    env runner 1 could sample in the time, and sampled env steps come in pairs of rounds."""
    algo = _two_runners_one_slow("DQN", num_steps_sampled_before_learning_starts=128)
    try:
        updates, steps, walls = _train_for(algo, "DQN", 7.0)
        rounds = steps[-1] // 128
        assert steps[-1] % 128 == 0 and rounds >= 1, (steps, walls)
        assert rounds <= walls[-1] / (64 * SLOW_STEP_S), (steps, walls)
        assert updates[-1] > 0, (updates, steps)
        # two rounds asked for ahead: env runners sample while the driver trains
        assert algo._rounds_requested - algo._rounds_collected == 2
    finally:
        algo.stop()


@pytest.mark.timeout(90)
def test_dqn_replays_exactly_its_training_intensity(ray_local):
    """num_env_runners=0: after every step, learner updates = ⌊ρ × (sampled − learning
    starts) / batch⌋, done `updates_per_learner_call` at a time; RLlib's own DQN rounds ρ to
    whole sample or update calls instead."""
    from sweeps.engine.algorithms import build_config

    config = build_config({"algorithm": "DQN", "num_env_runners": 0, "training_intensity": 2.0,
                           "num_steps_sampled_before_learning_starts": 256,
                           "updates_per_learner_call": 4}, "ContosoCabs-v0")
    algo = config.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
            sampled = result["env_runners"]["num_env_steps_sampled_lifetime"]
            replay = result["replay"]
            assert replay["learner_updates_lifetime"] == (2 * (sampled - 256)) // 64 > 0
            assert replay["replay_size"] == min(sampled, 50_000)
    finally:
        algo.stop()

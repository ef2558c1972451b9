"""Warm trials (sweeps.engine.warm): a trial that reuses the previous trial's env runner
processes starts from exactly what a cold trial of its seed starts from."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.parallel]


def _config(algorithm: str, seed: int, **params):
    from sweeps.engine.algorithms import build_config

    config = build_config(
        {"algorithm": algorithm, "num_env_runners": 1, "seed": seed, **params}, "ContosoCabs-v0"
    )
    config.debugging(log_level="ERROR")
    return config


def _start_state(algo) -> dict:
    """What a trial starts from: the learner's weights, the env runner's weights and its
    first 64 env steps (observations, actions, rewards), the replay buffer's size."""
    import torch

    learner_weights = {
        k: v.detach().clone()
        for k, v in algo.learner_group._learner.module["default_policy"].state_dict().items()
    }

    def first_steps(runner):
        episodes = runner.sample(num_timesteps=64, random_actions=False)
        obs = np.concatenate([np.asarray(e.get_observations()) for e in episodes])
        actions = np.concatenate([np.asarray(e.get_actions()) for e in episodes])
        rewards = np.concatenate([np.asarray(e.get_rewards()) for e in episodes])
        weights = {k: v.detach().cpu().numpy() for k, v in runner.module.state_dict().items()}
        return obs, actions, rewards, weights

    ((obs, actions, rewards, runner_weights),) = algo.env_runner_group.foreach_env_runner(
        first_steps, local_env_runner=False
    )
    buffer = getattr(algo, "local_replay_buffer", None)
    return {
        "learner": learner_weights,
        "runner": runner_weights,
        "obs": obs,
        "actions": actions,
        "rewards": rewards,
        "replay": len(buffer) if buffer is not None else 0,
        "torch": torch,
    }


def _assert_same_start(a: dict, b: dict) -> None:
    assert a["learner"].keys() == b["learner"].keys()
    for k in a["learner"]:
        assert a["torch"].equal(a["learner"][k], b["learner"][k]), k
    for k in a["runner"]:
        np.testing.assert_array_equal(a["runner"][k], b["runner"][k], err_msg=k)
    np.testing.assert_array_equal(a["obs"], b["obs"])
    np.testing.assert_array_equal(a["actions"], b["actions"])
    np.testing.assert_array_equal(a["rewards"], b["rewards"])
    assert a["replay"] == b["replay"] == 0


@pytest.mark.parametrize("algorithm", ["DQN", "IMPALA"])
def test_a_warm_trial_starts_where_a_cold_trial_of_its_seed_starts(local_ray, algorithm):
    from sweeps.engine import warm

    warm.reset()
    # trial 1 (seed 1) trains, and parks its env runner
    algo, start, charged = warm.build(_config(algorithm, 1))
    assert (start, charged) == ("cold", None)
    pid_before = algo.env_runner_group.foreach_env_runner(
        lambda r: __import__("os").getpid(), local_env_runner=False
    )
    for _ in range(2):
        algo.train()
    warm.park_or_stop(algo, _config(algorithm, 1), startup_s=4.2)

    # trial 2 (seed 0) on the same actor: warm, in the same env runner process
    config = _config(algorithm, 0)
    algo, start, charged = warm.build(config)
    assert (start, charged) == ("warm", 4.2)
    assert (
        algo.env_runner_group.foreach_env_runner(
            lambda r: __import__("os").getpid(), local_env_runner=False
        )
        == pid_before
    )
    warm_start = _start_state(algo)
    warm.park_or_stop(algo, config, startup_s=0.1)
    warm.release_parked()

    # the same seed, cold
    algo, start, _ = warm.build(_config(algorithm, 0), enabled=False)
    assert start == "cold"
    cold_start = _start_state(algo)
    algo.stop()
    _assert_same_start(warm_start, cold_start)


def test_a_trial_of_another_shape_is_cold_and_the_parked_processes_are_released(local_ray):
    import ray

    from sweeps.engine import warm

    warm.reset()
    algo, start, _ = warm.build(_config("DQN", 0))
    (handle,) = algo.env_runner_group._worker_manager._actors.values()
    warm.park_or_stop(algo, _config("DQN", 0), startup_s=3.0)
    # another number of env runners is another shape
    config = _config("DQN", 0)
    config.env_runners(num_env_runners=2)
    algo, start, charged = warm.build(config)
    assert (start, charged) == ("cold", None)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(handle.__ray_call__.remote(lambda r: 1), timeout=30)
    algo.stop()
    # --cold (enabled=False) never reuses
    algo, _, _ = warm.build(_config("DQN", 0))
    warm.park_or_stop(algo, _config("DQN", 0), startup_s=3.0)
    algo, start, _ = warm.build(_config("DQN", 0), enabled=False)
    assert start == "cold"
    algo.stop()


def _pids(algo) -> list[int]:
    return algo.env_runner_group.foreach_env_runner(
        lambda r: __import__("os").getpid(), local_env_runner=False
    )


def test_a_trial_takes_parked_processes_of_another_algorithm_and_count(local_ray):
    """The pool is per actor, not per shape: once IMPALA with 1 env runner has had its cold
    trial, it runs warm on one of the two processes PPO with 2 env runners parked (the same
    env runner class and resources), starts where a cold trial of its seed starts, and leaves
    the other parked; PPO with 2 then takes both back. A shape that never ran cold here is
    cold, and kills the pool first; one that needs more env runners than are parked takes
    them and starts the rest (each env runner asks for half a CPU: three fit Ray's 2 CPUs)."""
    from sweeps.engine import warm

    warm.reset()
    impala = _config("IMPALA", 1, num_cpus_per_env_runner=0.5)
    algo, start, _ = warm.build(impala)
    assert start == "cold"
    algo.train()
    warm.park_or_stop(algo, impala, startup_s=4.0)
    (impala_pid,) = _pids_of_parked(warm)

    ppo = _config("PPO", 1, num_env_runners=2, num_cpus_per_env_runner=0.5)
    algo, start, charged = warm.build(ppo)
    assert (start, charged) == ("cold", None)  # PPO with 2 never ran cold here
    ppo_pids = _pids(algo)
    assert impala_pid not in ppo_pids  # its cold start killed the pool
    algo.train()
    warm.park_or_stop(algo, ppo, startup_s=5.0)

    config = _config("IMPALA", 0, num_cpus_per_env_runner=0.5)
    algo, start, charged = warm.build(config)
    assert (start, charged) == ("warm", 4.0)
    assert _pids(algo) == ppo_pids[:1]
    warm_start = _start_state(algo)
    warm.park_or_stop(algo, config, startup_s=0.1)
    assert _pids_of_parked(warm) == ppo_pids

    algo, start, charged = warm.build(ppo)
    assert (start, charged) == ("warm", 5.0) and _pids(algo) == ppo_pids
    warm.park_or_stop(algo, ppo, startup_s=0.1)
    # a shape that ran cold here but needs more env runners than are parked takes them all
    ppo3 = _config("PPO", 1, num_env_runners=3, num_cpus_per_env_runner=0.5)
    warm._starts.started(warm.shape_key(ppo3), warm.COLD, 6.0)
    algo, start, charged = warm.build(ppo3)
    assert (start, charged) == ("warm", 6.0)
    pids3 = _pids(algo)
    assert pids3[:2] == ppo_pids and pids3[2] not in ppo_pids
    algo.train()
    warm.park_or_stop(algo, ppo3, startup_s=2.0)
    assert _pids_of_parked(warm) == pids3
    warm.reset()

    algo, start, _ = warm.build(_config("IMPALA", 0, num_cpus_per_env_runner=0.5), enabled=False)
    assert start == "cold"
    cold_start = _start_state(algo)
    algo.stop()
    _assert_same_start(warm_start, cold_start)


def _pids_of_parked(warm) -> list[int]:
    import ray

    return ray.get(
        [h.__ray_call__.remote(lambda r: __import__("os").getpid()) for h in warm._parked.handles]
    )


def test_apex_and_impala_share_parked_processes_each_as_its_own_class(local_ray):
    """RLlib's SingleAgentEnvRunner and the suite's swappable subclasses are one family
    (:func:`sweeps.engine.warm.family`): IMPALA runs warm on the processes APEX parked, as
    RLlib's own SingleAgentEnvRunner (nothing of APEX's env runner left: no ε_i), starting
    where a cold trial of its seed starts; APEX then takes them back as ApexEnvRunner and
    trains on the transitions they sample. A subclass that does not declare itself
    swappable is its own family."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from sweeps.engine import warm
    from sweeps.engine.algorithms.apex_dqn import ApexEnvRunner

    class Custom(ApexEnvRunner):
        pass

    assert warm.family(ApexEnvRunner) is SingleAgentEnvRunner
    assert warm.family(Custom) is Custom
    warm.reset()
    apex, impala = _config("APEX", 1), _config("IMPALA", 1)
    assert warm.slot_key(apex) == warm.slot_key(impala)
    for config in (impala, apex):  # each shape's cold trial
        algo, start, _ = warm.build(config)
        assert start == "cold"
        warm.park_or_stop(algo, config, startup_s=4.0)
    (apex_pid,) = _pids_of_parked(warm)

    config = _config("IMPALA", 0)
    algo, start, charged = warm.build(config)
    assert (start, charged) == ("warm", 4.0) and _pids(algo) == [apex_pid]
    kinds = algo.env_runner_group.foreach_env_runner(
        lambda r: (type(r).__name__, hasattr(r, "epsilon")), local_env_runner=False
    )
    assert kinds == [("SingleAgentEnvRunner", False)]
    warm_start = _start_state(algo)
    algo.train()
    warm.park_or_stop(algo, config, startup_s=0.1)

    algo, start, _ = warm.build(apex)
    assert start == "warm" and _pids(algo) == [apex_pid]
    assert algo.env_runner_group.foreach_env_runner(
        lambda r: type(r).__name__, local_env_runner=False
    ) == ["ApexEnvRunner"]
    for _ in range(3):
        algo.train()
    assert algo._sampled() > 0 and len(algo.replay) > 0
    warm.park_or_stop(algo, apex, startup_s=0.1)
    warm.reset()

    algo, start, _ = warm.build(_config("IMPALA", 0), enabled=False)
    assert start == "cold"
    cold_start = _start_state(algo)
    algo.stop()
    _assert_same_start(warm_start, cold_start)


def test_each_learner_count_is_a_shape_of_its_own():
    """A trial's learner actors (RLlib's ``num_learners``, GORILA's) start anew with every
    trial, so a warm trial is charged the cold start-up of its own learner count, never that
    of the same algorithm with fewer learners; the learners do not change which parked env
    runners it may take."""
    from sweeps.engine import warm

    ppo = [_config("PPO", 0, num_learners=m, num_cpus_per_learner=0.125) for m in (0, 1, 2)]
    gorila = [_config("GORILA", 0, num_learners=m, num_cpus_per_learner=0.125) for m in (1, 2)]
    shapes = [warm.shape_key(c) for c in ppo + gorila]
    assert len(set(shapes)) == len(shapes)
    assert len({warm.slot_key(c) for c in ppo}) == 1

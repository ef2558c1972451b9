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

    warm.release_parked()
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

    warm.release_parked()
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

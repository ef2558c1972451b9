"""The suite's DQN and Gorila explore on their ε schedule's clock: the env steps sampled so far.

Their algorithm turns off RLlib's state sync after each iteration (the one place RLlib's env
runner learns how many env steps have been sampled), so the driver hands the count to every
sample call. Without it ε stayed at the schedule's start, ~1 for ever: the DQN of rl-zoo's
CartPole-v1 preset explored at random after 200 k env steps and its training episodes kept the
random policy's ~22 return while its greedy return passed 475.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.parallel, pytest.mark.slow]

#: ε decays from 1.0 to FINAL over the first DECAY env steps
DECAY, FINAL = 400, 0.05


def _epsilons(algo) -> list[float]:
    """ε of every env runner's module now (the driver's when it samples itself)."""
    if algo.env_runner_group.num_remote_env_runners() == 0:
        return [float(algo.env_runner.module.epsilon_schedule.get_current_value())]
    return [
        float(e)
        for e in algo.env_runner_group.foreach_env_runner(
            lambda er: er.module.epsilon_schedule.get_current_value(), local_env_runner=False
        )
    ]


@pytest.mark.parametrize(("algorithm", "num_env_runners"), [("DQN", 0), ("DQN", 1), ("GORILA", 1)])
def test_epsilon_decays_over_the_env_steps_sampled(
    local_ray, algorithm: str, num_env_runners: int
) -> None:
    from sweeps.engine.algorithms import build_config

    config = build_config(
        {
            "algorithm": algorithm,
            "num_env_runners": num_env_runners,
            "num_envs_per_env_runner": 1,
            "rollout_fragment_length": 50,
            "epsilon": [[0, 1.0], [DECAY, FINAL]],
            "num_steps_sampled_before_learning_starts": 100,
            "train_batch_size": 32,
            "min_time_s_per_iteration": 0,
            "seed": 0,
        },
        "CartPole-v1",
        {},
    )
    algo = config.build_algo()
    try:
        sampled = 0
        # well past the decay: the rounds in flight when the count was handed over were
        # asked for at most two rounds (100 env steps) before
        while sampled < DECAY + 300:
            result = algo.train().get("env_runners", {})  # none before the first round
            sampled = result.get("num_env_steps_sampled_lifetime", 0)
        epsilons = _epsilons(algo)
    finally:
        algo.stop()
    assert epsilons and all(e == pytest.approx(FINAL) for e in epsilons), (sampled, epsilons)

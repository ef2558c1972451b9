"""RLlib sees our env names: Tune's registry on the driver and inside a Ray worker process."""

from __future__ import annotations

import pytest

import envs

pytestmark = [pytest.mark.ray, pytest.mark.parallel, pytest.mark.timeout(180)]

EXPECTED = {
    "ContosoCabs-v0": ({"num_cities": 3}, (34,), 9),
    "PongNoFrameskip-v4": ({"frame_size": 64}, (64, 64, 4), 6),
    "ALE/Pong-v5": ({}, (42, 42, 4), 6),
}


def test_registered_creators_build_the_right_spaces_on_driver_and_worker(local_ray):
    from ray.tune.registry import ENV_CREATOR, _global_registry

    def spaces_from_registry(name, env_config):
        # Nested, so Ray ships it by value (the tests folder is not importable on workers).
        from ray.tune.registry import ENV_CREATOR, _global_registry

        env = _global_registry.get(ENV_CREATOR, name)(env_config)
        try:
            return env.observation_space.shape, env.action_space.n
        finally:
            env.close()

    envs.register_rllib_envs()
    envs.register_rllib_envs()  # idempotent
    assert set(envs.RLLIB_ENVS) == set(EXPECTED)
    remote_spaces = local_ray.remote(spaces_from_registry)
    for name, (env_config, obs_shape, num_actions) in EXPECTED.items():
        assert _global_registry.contains(ENV_CREATOR, name)
        assert spaces_from_registry(name, env_config) == (obs_shape, num_actions)
        on_worker = local_ray.get(remote_spaces.remote(name, env_config), timeout=120)
        assert on_worker == (obs_shape, num_actions)


def test_rllib_env_runner_samples_contoso_cabs(local_ray):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    envs.register_rllib_envs()
    config = (
        PPOConfig()
        .environment("ContosoCabs-v0", env_config={"num_cities": 3, "time_matrix_seed": 1})
        .env_runners(num_envs_per_env_runner=2)
    )
    runner = SingleAgentEnvRunner(config=config)
    try:
        episodes = runner.sample(num_timesteps=400, random_actions=True)
        assert sum(len(e) for e in episodes) >= 400
        done = [e for e in episodes if e.is_done]
        assert done, "random rides average ~17 h, so a month is ~40 steps: 200 per env must end one"
        for episode in done:
            assert episode.get_infos(-1)["elapsed_hours"] >= 720
    finally:
        runner.stop()

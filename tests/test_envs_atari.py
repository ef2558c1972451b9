"""Atari Pong through ale-py (bundled ROMs, offline) with RLlib's DeepMind preprocessing."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.atari import check_atari_config

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("env_id", ["PongNoFrameskip-v4", "ALE/Pong-v5"])
@pytest.mark.parametrize("frame_size", [42, 64])
def test_preprocessed_pong_shapes_and_dtypes(env_id, frame_size):
    env = envs.RLLIB_ENVS[env_id]({"frame_size": frame_size})
    expected = (frame_size, frame_size, 4)
    assert env.observation_space.shape == expected
    assert env.observation_space.dtype == np.float32
    assert env.action_space == gym.spaces.Discrete(6)
    obs, info = env.reset(seed=0)
    assert obs.shape == expected and obs.dtype == np.float32
    assert -1.0 <= obs.min() and obs.max() <= 1.0
    for _ in range(20):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert obs.shape == expected and obs.dtype == np.float32
        assert reward in (-1.0, 0.0, 1.0)
        assert not truncated
    env.close()


def test_framestack_and_frameskip_are_configurable():
    env = envs.RLLIB_ENVS["PongNoFrameskip-v4"]({"framestack": 2, "frameskip": 2})
    obs, _ = env.reset(seed=1)
    assert obs.shape == (42, 42, 2)
    *_, info = env.step(0)
    frames = info["frame_number"]
    *_, info = env.step(0)
    assert info["frame_number"] - frames == 2
    env.close()


def test_v5_skips_frames_once():
    """ALE/Pong-v5's own frameskip (4) is replaced by the wrapper's: 4 frames a step, not 16."""
    env = envs.RLLIB_ENVS["ALE/Pong-v5"]({"repeat_action_probability": 0.0})
    env.reset(seed=2)
    *_, info = env.step(0)
    frames = info["frame_number"]
    *_, info = env.step(0)
    assert info["frame_number"] - frames == 4
    env.close()


def test_raw_gymnasium_id_stays_unprocessed():
    env = gym.make("PongNoFrameskip-v4")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (210, 160, 3) and obs.dtype == np.uint8
    env.close()


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"frame_size": 84}, "frame_size"),
        ({"frame_size": True}, "frame_size"),
        ({"framestack": 0}, "framestack"),
        ({"frameskip": 1.5}, "frameskip"),
    ],
)
def test_bad_preprocessing_keys_name_the_key(config, key):
    with pytest.raises(ValueError, match=f"'{key}'"):
        envs.check_env_config("PongNoFrameskip-v4", config)
    with pytest.raises(ValueError, match=f"'{key}'"):
        envs.RLLIB_ENVS["ALE/Pong-v5"](config)


def test_ale_arguments_pass_through_and_unknown_ones_are_refused():
    settings, ale = check_atari_config("ALE/Pong-v5", {"repeat_action_probability": 0.0})
    assert settings == {"frame_size": 42, "framestack": 4, "frameskip": 4}
    assert ale == {"repeat_action_probability": 0.0}
    with pytest.raises(ValueError, match="ALE argument"):
        envs.RLLIB_ENVS["PongNoFrameskip-v4"]({"no_such_ale_argument": 1})

"""Atari Pong with the DeepMind preprocessing RLlib's new API stack uses.

Seed 001 trains on ``PongNoFrameskip-v4``. Both that id and ``ALE/Pong-v5`` come from ale-py,
whose ROMs ship inside the package (nothing is downloaded at run time).

**Names.** The RLlib env name equals the gymnasium id, and under RLlib it means
*preprocessed*: ``RLLIB_ENVS["PongNoFrameskip-v4"]`` (and ``"ALE/Pong-v5"``) builds
``gym.make(id)`` wrapped by RLlib's
:func:`ray.rllib.env.wrappers.atari_wrappers.wrap_atari_for_new_api_stack`: 108 000-frame time
limit, grayscale + resize to ``frame_size`` x ``frame_size``, pixels scaled to [-1, 1] float32,
max-and-skip over ``frameskip`` frames, up to 30 no-op starts, end of life = end of episode,
FIRE on reset, and a stack of the last ``framestack`` frames (Mnih et al., "Human-level control
through deep reinforcement learning", Nature 2015). ``gym.make("PongNoFrameskip-v4")`` itself
stays the raw 210x160x3 ALE env. Rewards are not clipped here (Pong's are already -1, 0, +1).

**env_config keys** (all optional):

- ``frame_size``: 42 or 64 (default 42), pixels per side.
- ``framestack``: frames stacked in the observation (default 4).
- ``frameskip``: frames per agent step, max-pooled over the last two (default 4). For
  ``ALE/Pong-v5`` the ALE's own frameskip is set to 1 so that skipping happens once, here.
- any other key goes to ``gym.make`` as an ALE argument (for example
  ``repeat_action_probability``; ``ALE/Pong-v5`` keeps its sticky-action default of 0.25,
  Machado et al. 2018, ``PongNoFrameskip-v4`` its 0.0).

Observation: float32 ``(frame_size, frame_size, framestack)`` in [-1, 1]; action:
``Discrete(6)`` (Pong's minimal action set).

This module does not import Ray at import time; the RLlib wrapper (and OpenCV, which it needs
for resizing) is imported when an env is built.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import ale_py
import gymnasium as gym

__all__ = [
    "FRAME_SIZES",
    "PONG_IDS",
    "check_atari_config",
    "make_atari",
    "make_pong_v5",
    "make_pong_noframeskip_v4",
]

gym.register_envs(ale_py)

#: Gymnasium ids that RLlib knows (under the same names) as preprocessed Pong.
PONG_IDS = ("PongNoFrameskip-v4", "ALE/Pong-v5")
#: Frame sizes RLlib's default Atari CNN encoders support.
FRAME_SIZES = (42, 64)
PREPROCESSING_DEFAULTS = {"frame_size": 42, "framestack": 4, "frameskip": 4}


def _positive_int(env_id: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{env_id} env_config {key!r}: expected an integer ≥ 1, got {value!r}")
    return int(value)


def check_atari_config(
    env_id: str, env_config: Mapping[str, Any] | None
) -> tuple[dict[str, int], dict[str, Any]]:
    """Split and validate an Atari env_config (no env is built).

    Args:
        env_id: a gymnasium ALE id, e.g. ``"PongNoFrameskip-v4"``.
        env_config: the keys listed in the module docstring; ``None`` = defaults.

    Returns:
        (preprocessing settings ``{"frame_size", "framestack", "frameskip"}``, ALE kwargs for
        ``gym.make``).

    Raises:
        ValueError: naming the key, for a ``frame_size`` other than 42 or 64, or a
            ``framestack``/``frameskip`` that is not an integer ≥ 1.
    """
    config = dict(env_config or {})
    config.pop("num_envs", None)  # RLlib adds it in its (unused here) vector_entry_point mode
    settings = {key: config.pop(key, default) for key, default in PREPROCESSING_DEFAULTS.items()}
    if settings["frame_size"] not in FRAME_SIZES or isinstance(settings["frame_size"], bool):
        raise ValueError(
            f"{env_id} env_config 'frame_size': must be one of {FRAME_SIZES}, "
            f"got {settings['frame_size']!r}"
        )
    for key in ("framestack", "frameskip"):
        settings[key] = _positive_int(env_id, key, settings[key])
    settings["frame_size"] = int(settings["frame_size"])
    return settings, config


def make_atari(env_id: str, env_config: Mapping[str, Any] | None = None) -> gym.Env:
    """Build an ALE env with RLlib's new-API-stack DeepMind preprocessing.

    Args:
        env_id: gymnasium ALE id (``"PongNoFrameskip-v4"``, ``"ALE/Pong-v5"``, or another game).
        env_config: see the module docstring.

    Returns:
        The wrapped env: observations float32 (frame_size, frame_size, framestack) in [-1, 1].

    Raises:
        ValueError: for a bad preprocessing key (see :func:`check_atari_config`) or an ALE
            argument that ``gym.make`` rejects.
        ModuleNotFoundError: when OpenCV (``opencv-python-headless``) is not installed.
    """
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    settings, ale_kwargs = check_atari_config(env_id, env_config)
    if env_id.startswith("ALE/"):
        ale_kwargs["frameskip"] = 1  # skipping happens once, in the wrapper
    try:
        env = gym.make(env_id, **ale_kwargs)
    except TypeError as e:
        raise ValueError(f"{env_id} env_config: an ALE argument was rejected ({e})") from None
    return wrap_atari_for_new_api_stack(
        env,
        dim=settings["frame_size"],
        frameskip=settings["frameskip"],
        framestack=settings["framestack"],
    )


def make_pong_noframeskip_v4(env_config: Mapping[str, Any] | None = None) -> gym.Env:
    """RLlib creator for ``"PongNoFrameskip-v4"`` (preprocessed); see :func:`make_atari`."""
    return make_atari("PongNoFrameskip-v4", env_config)


def make_pong_v5(env_config: Mapping[str, Any] | None = None) -> gym.Env:
    """RLlib creator for ``"ALE/Pong-v5"`` (preprocessed); see :func:`make_atari`."""
    return make_atari("ALE/Pong-v5", env_config)

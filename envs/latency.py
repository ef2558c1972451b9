"""Env step latency: ``env_config={"step_latency_ms": L}`` for any env of the suite.

Each ``env.step()`` then waits ``L`` milliseconds without using a CPU (``time.sleep``), as an
env does that waits on a slow simulator, a remote service or a renderer. It is a model of that
regime, not a property of the env: the articles this project reproduces say experience
collection dominates (slow simulators), and that regime can be reproduced honestly on a
2-core machine because a waiting env runner leaves its CPU to others. The evaluation protocol
(:mod:`sweeps.evaluation`) plays its episodes without the latency: it measures the policy, not
the simulator, and its time is recorded apart (``eval_time_s``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import gymnasium

#: The env_config key every env of the suite accepts.
STEP_LATENCY_KEY = "step_latency_ms"


def split_step_latency(env_config: Mapping[str, Any] | None) -> tuple[float, dict[str, Any]]:
    """``(latency in ms, the env's own config)`` from a suite ``env_config``.

    Raises:
        ValueError: ``step_latency_ms`` is not a finite number >= 0.
    """
    rest = dict(env_config or {})
    value = rest.pop(STEP_LATENCY_KEY, 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value) or value < 0:
        raise ValueError(f"{STEP_LATENCY_KEY}: must be a finite number of milliseconds >= 0, "
                         f"got {value!r}")
    return float(value), rest


class StepLatency(gymnasium.Wrapper):
    """Wait ``latency_ms`` milliseconds (sleeping, no CPU) in every ``step()``.

    Args:
        env: the env to wrap.
        latency_ms: milliseconds per step, >= 0.
    """

    def __init__(self, env: gymnasium.Env, latency_ms: float):
        super().__init__(env)
        self.latency_s = float(latency_ms) / 1000.0

    def step(self, action):
        time.sleep(self.latency_s)
        return self.env.step(action)

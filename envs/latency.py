"""Env step costs for any env of the suite: waiting (``step_latency_ms``) and busy
(``step_cpu_ms``).

``env_config={"step_latency_ms": L}``: each ``env.step()`` waits ``L`` milliseconds without
using a CPU (``time.sleep``), as an env does that waits on a slow simulator, a remote service
or a renderer; a waiting env runner leaves its CPU to others.

``env_config={"step_cpu_ms": c}``: each ``env.step()`` burns ``c`` milliseconds of one core
(busy arithmetic in the stepping thread, timed by the thread's CPU clock), as a CPU-bound
simulator does, so ``c`` means milliseconds of CPU on the machine it runs on; when
env runners outnumber the cores they queue for them and each step takes longer in wall-clock:
the contention a scaling study on CPU-bound envs has to show (docs/design.md, *step CPU
cost*).

Both model a regime, not a property of the env; both can be set together. The evaluation
protocol (:mod:`sweeps.engine.evaluation`) plays its episodes without them: it measures the policy,
not the simulator, and its time is recorded apart (``eval_time_s``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium

#: The env_config keys every env of the suite accepts: waiting and busy milliseconds per step.
STEP_LATENCY_KEY = "step_latency_ms"
STEP_CPU_KEY = "step_cpu_ms"


@dataclass(frozen=True)
class StepCost:
    """An env's modelled cost per step, in milliseconds: ``latency_ms`` waiting (no CPU),
    ``cpu_ms`` busy on one core."""

    latency_ms: float = 0.0
    cpu_ms: float = 0.0

    def __bool__(self) -> bool:
        return self.latency_ms > 0 or self.cpu_ms > 0


def _milliseconds(key: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{key}: must be a finite number of milliseconds >= 0, got {value!r}")
    return float(value)


def split_step_cost(env_config: Mapping[str, Any] | None) -> tuple[StepCost, dict[str, Any]]:
    """``(the step cost, the env's own config)`` from a suite ``env_config``.

    Raises:
        ValueError: ``step_latency_ms`` or ``step_cpu_ms`` is not a finite number >= 0.
    """
    rest = dict(env_config or {})
    cost = StepCost(
        latency_ms=_milliseconds(STEP_LATENCY_KEY, rest.pop(STEP_LATENCY_KEY, 0.0)),
        cpu_ms=_milliseconds(STEP_CPU_KEY, rest.pop(STEP_CPU_KEY, 0.0)),
    )
    return cost, rest


def _work(units: int) -> float:
    """The busy work: ``units`` rounds of float arithmetic a compiler cannot skip."""
    x = 0.0
    for i in range(units):
        x = (x + i) * 0.5
    return x


_WORK_PER_MS: float | None = None


def cpu_work_per_ms(min_cpu_s: float = 0.02) -> float:
    """Units of :func:`_work` one millisecond of this thread's CPU time does (measured once per
    process, then cached).

    Timed with ``time.thread_time`` (CPU time of the calling thread, not wall-clock), so the
    calibration holds when other processes share the core; the work is doubled until it takes
    at least ``min_cpu_s`` seconds of CPU.

    Returns:
        Work units per CPU millisecond (> 0).
    """
    global _WORK_PER_MS
    if _WORK_PER_MS is None:
        units = 1000
        while True:
            start = time.thread_time()
            _work(units)
            spent = time.thread_time() - start
            if spent >= min_cpu_s:
                break
            units *= 2
        _WORK_PER_MS = units / (spent * 1000.0)
    return _WORK_PER_MS


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


class StepCpuCost(gymnasium.Wrapper):
    """Burn ``cpu_ms`` milliseconds of one core in every ``step()``.

    The work runs in chunks of ~50 microseconds (sized by :func:`cpu_work_per_ms`) until the
    stepping thread's CPU clock (``time.thread_time``) has advanced by ``cpu_ms``: the cost is
    exact in CPU time whatever the core's speed, frequency or calibration error, and stretches
    in wall-clock when other processes share the core.

    Args:
        env: the env to wrap.
        cpu_ms: CPU milliseconds per step, >= 0.
    """

    def __init__(self, env: gymnasium.Env, cpu_ms: float):
        super().__init__(env)
        self.cpu_ms = float(cpu_ms)
        self.chunk = max(1, round(0.05 * cpu_work_per_ms()))

    def step(self, action):
        end = time.thread_time() + self.cpu_ms / 1000.0
        while time.thread_time() < end:
            _work(self.chunk)
        return self.env.step(action)


def with_step_cost(env: gymnasium.Env, cost: StepCost) -> gymnasium.Env:
    """``env`` wrapped in :class:`StepCpuCost` and :class:`StepLatency` where ``cost`` has
    them."""
    if cost.cpu_ms > 0:
        env = StepCpuCost(env, cost.cpu_ms)
    if cost.latency_ms > 0:
        env = StepLatency(env, cost.latency_ms)
    return env

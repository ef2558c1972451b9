"""Env faults (docs/design.md, *env fault*): an env whose ``step`` or ``reset`` raises, as a
simulator behind a connection does now and then, is re-made and its episode dropped, not the
trial ended; every recovery is counted (``env_restarts``), since a user pays for it.

Three places step envs, and each recovers the same way:

- RLlib's env runners (every RLlib-based algorithm, the suite's DQN and APEX included): each
  sub-env is a :class:`RecoveringEnv` (:func:`register_recovering_env`, the trial parameter
  ``recover_env_faults``, on by default), so a fault re-makes that sub-env alone and ends only
  its own episode, as truncated; an :func:`on_episode_end` callback counts them
  (``env_runners/num_env_faults``). Not RLlib's ``restart_failed_sub_environments``: it
  re-makes all of an env runner's envs and starts its sample call over, so a vector of 8 envs
  whose simulator fails once in 500 steps never completes a PPO sample call of 4,000 env steps
  (measured: 1,727 re-makes in 10 minutes, no iteration ended). An env runner that dies is
  restarted by RLlib (``restart_failed_env_runners``, RLlib's default) and counted apart
  (``env_runner_restarts``).
- The single-process reference (:mod:`sweeps.engine.reference`): :class:`RecoveringEnv`.
- The evaluation protocol (:mod:`sweeps.engine.evaluation`): a faulted evaluation episode is
  re-run from its own seed on a re-made env, so the protocol's returns are never partial.

- SEED's actors (:mod:`sweeps.engine.algorithms.seed_actor`): each sub-env a
  :class:`RecoveringEnv`, its faults counted by the actor.

Past ``max_env_restarts`` recoveries a trial ends as an error with
``error_kind = "env_faults"``: an env that fails on every step would otherwise never end.

A step that *hangs* is a fault too when the trial sets ``env_step_timeout_s``: the env's
``step`` and ``reset`` then run in a helper thread of the env's process, and one that has not
returned after that many seconds is abandoned (the thread is left to its blocked call, as a
daemon) and the env re-made, as for an error. Re-making the env, not its env runner, is what
recovers: the env runner's process, its model and its other envs are sound. What this cannot
stop is a call that blocks the whole process (native code holding Python's GIL); the trial's
budget watchdog (:class:`sweeps.engine.trainable.BudgetWatchdog`) still ends such a trial at
its budget.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import gymnasium

__all__ = [
    "DEFAULT_MAX_ENV_RESTARTS",
    "FAULTS_METRIC",
    "MAX_FAILED_RESETS",
    "EnvFaultLimit",
    "EnvStepTimeout",
    "RecoveringEnv",
    "fault_limit_reason",
    "on_episode_end",
    "parse_recovering_name",
    "recovering_env_name",
    "register_recovering_env",
]

#: The env runners' lifetime count of env faults their sub-envs recovered from (a key of
#: RLlib's ``env_runners`` results).
FAULTS_METRIC = "num_env_faults"

#: Env restarts a trial may recover from before it ends as an error (``max_env_restarts``):
#: enough for a simulator that drops a connection every few hundred env steps through a
#: whole study's trial, few enough that an env failing on every step ends in seconds.
DEFAULT_MAX_ENV_RESTARTS = 1000


#: Failed resets in a row after which a :class:`RecoveringEnv` gives up.
MAX_FAILED_RESETS = 10


class EnvFaultLimit(RuntimeError):
    """More env faults than a trial may recover from (``max_env_restarts``)."""


class EnvStepTimeout(TimeoutError):
    """An env's ``step`` or ``reset`` ran longer than ``env_step_timeout_s``."""


class _CallThread:
    """One daemon thread that runs an env's calls, so that the caller can stop waiting."""

    def __init__(self) -> None:
        self._calls: queue.Queue = queue.Queue()
        self._results: queue.Queue = queue.Queue()
        threading.Thread(target=self._loop, name="env-step", daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, args, kwargs = self._calls.get()
            try:
                self._results.put((True, fn(*args, **kwargs)))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                self._results.put((False, e))

    def call(self, timeout_s: float, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in the thread; raises :class:`EnvStepTimeout` after
        ``timeout_s`` seconds (the thread is then left to the call: use a new one)."""
        self._calls.put((fn, args, kwargs))
        try:
            ok, value = self._results.get(timeout=timeout_s)
        except queue.Empty:
            raise EnvStepTimeout(
                f"{getattr(fn, '__name__', 'call')} did not return within "
                f"env_step_timeout_s={timeout_s:g} s"
            ) from None
        if ok:
            return value
        raise value


def fault_limit_reason(restarts: int, limit: int) -> str:
    """The one-line reason of a trial that ended on its env faults."""
    return (
        f"env faults: {restarts} env restarts, more than max_env_restarts={limit} "
        "(the env's step or reset kept raising; the first tracebacks are in the trial's "
        "log)"
    )


def _close_quietly(env: gymnasium.Env) -> None:
    try:
        env.close()
    except Exception:  # noqa: BLE001 - a broken env may fail to close too
        pass


class RecoveringEnv(gymnasium.Wrapper):
    """An env that re-makes itself when its ``step`` or ``reset`` raises.

    A failed ``step`` re-makes the env, resets it and returns the new episode's first
    observation as a *truncated* transition with reward 0 and ``info["env_fault"]`` (the
    faulted episode ends there; its steps so far stay sampled, as a user would have paid for
    them). A failed ``reset`` re-makes the env and resets again; the info it returns then says
    ``env_fault_on_reset``.

    Args:
        make: builds a fresh env (called once now, again after each fault).
        max_restarts: faults tolerated before :class:`EnvFaultLimit` is raised (None: no limit).
        recover: False: an error of the env's is raised as it is (``recover_env_faults``).
        step_timeout_s: seconds a ``step`` or ``reset`` may run before it counts as a fault
            (:class:`EnvStepTimeout`, module docstring); None: no limit, calls run in the
            caller's thread.

    Attributes:
        restarts: faults recovered so far.
        recover: as the argument; may be changed between episodes.

    Raises:
        EnvFaultLimit: past ``max_restarts``, or when ``reset`` failed
            :data:`MAX_FAILED_RESETS` times in a row (an env that cannot start an episode
            would otherwise be re-made for ever).
    """

    def __init__(
        self,
        make: Callable[[], gymnasium.Env],
        max_restarts: int | None = None,
        recover: bool = True,
        step_timeout_s: float | None = None,
    ):
        super().__init__(make())
        self._make = make
        self.max_restarts = max_restarts
        self.recover = recover
        self.restarts = 0
        self.step_timeout_s = step_timeout_s
        self._thread: _CallThread | None = None

    def _call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """``fn(...)``, in the helper thread with ``step_timeout_s`` when it is set."""
        if not self.step_timeout_s:
            return fn(*args, **kwargs)
        if self._thread is None:
            self._thread = _CallThread()
        try:
            return self._thread.call(float(self.step_timeout_s), fn, *args, **kwargs)
        except EnvStepTimeout:
            self._thread = None  # the hung call keeps its thread; the next call gets a new one
            raise

    def _restart(self, error: Exception) -> None:
        if not self.recover:
            raise error
        self.restarts += 1
        if self.max_restarts is not None and self.restarts > self.max_restarts:
            raise EnvFaultLimit(fault_limit_reason(self.restarts, self.max_restarts)) from error
        if isinstance(error, EnvStepTimeout):  # its close may hang as its step did
            threading.Thread(target=_close_quietly, args=(self.env,), daemon=True).start()
        else:
            _close_quietly(self.env)
        self.env = self._make()

    def reset(self, **kwargs: Any):
        fault = ""
        for _ in range(MAX_FAILED_RESETS):
            try:
                obs, info = self._call(self.env.reset, **kwargs)
                return obs, ({**info, "env_fault_on_reset": fault} if fault else info)
            except Exception as e:  # noqa: BLE001 - any error of the env's is a fault
                self._restart(e)
                fault = f"{type(e).__name__}: {e}"
        raise EnvFaultLimit(
            f"env faults: reset failed {MAX_FAILED_RESETS} times in a row (last: {fault})"
        )

    def step(self, action):
        try:
            return self._call(self.env.step, action)
        except Exception as e:  # noqa: BLE001 - any error of the env's is a fault
            self._restart(e)
            obs, info = self.reset()
            info.pop("env_fault_on_reset", None)  # this episode's fault is the step's
            return obs, 0.0, False, True, {**info, "env_fault": f"{type(e).__name__}: {e}"}


def recovering_env_name(env_id: str, step_timeout_s: float | None = None) -> str:
    """The name under which :func:`register_recovering_env` registers ``env_id``:
    ``"<env_id>+recovering"``, with ``"+step_timeout_s=<t>"`` after it when set."""
    name = f"{env_id}+recovering"
    return f"{name}+step_timeout_s={float(step_timeout_s):g}" if step_timeout_s else name


def parse_recovering_name(name: str) -> tuple[str, bool, float | None]:
    """``(env_id, recover, step_timeout_s)`` of an env name :func:`register_recovering_env`
    made (``recover`` False and no timeout for any other name)."""
    timeout = None
    head, sep, tail = name.rpartition("+step_timeout_s=")
    if sep and head.endswith("+recovering"):
        name, timeout = head, float(tail)
    if name.endswith("+recovering"):
        return name[: -len("+recovering")], True, timeout
    return name, False, None


def register_recovering_env(env_id: str, step_timeout_s: float | None = None) -> str:
    """Register, with Tune's registry, ``env_id`` as the suite builds it
    (:func:`envs.make_env`: the suite's envs, a user's module, step costs) inside a
    :class:`RecoveringEnv` without a limit (the trial counts and limits faults), a hung step
    being a fault after ``step_timeout_s`` seconds when set; returns the name RLlib's env
    runners then make each sub-env by (:func:`recovering_env_name`)."""
    from ray.tune.registry import register_env

    name = recovering_env_name(env_id, step_timeout_s)
    register_env(
        name,
        lambda cfg, _id=env_id, _t=step_timeout_s: RecoveringEnv(
            lambda: _make_env(_id, cfg), step_timeout_s=_t
        ),
    )
    return name


def _make_env(env_id: str, env_config) -> gymnasium.Env:
    """One sub-env as RLlib's env runner would make it: a creator registered with Tune's
    registry under ``env_id`` (a user's ``register_env``) first, as RLlib looks there first;
    else :func:`envs.make_env` (the suite's envs, a user's module, gymnasium ids, step costs)."""
    from ray.tune.registry import ENV_CREATOR, _global_registry

    import envs

    if (
        env_id not in envs.RLLIB_ENVS
        and not envs.split_step_cost(env_config)[0]
        and _global_registry.contains(ENV_CREATOR, env_id)
    ):
        return _global_registry.get(ENV_CREATOR, env_id)(env_config)
    return envs.make_env(env_id, env_config)


def on_episode_end(*, episode, metrics_logger, **_: Any) -> None:
    """RLlib callback: count the faults a :class:`RecoveringEnv` recovered from in an episode
    (a failed reset before it, its first info says ``env_fault_on_reset``; a failed step that
    ended it, its last info says ``env_fault``) into :data:`FAULTS_METRIC`."""
    try:
        first, last = episode.get_infos(0), episode.get_infos(-1)
    except (IndexError, KeyError, AttributeError):  # an episode with no step
        return
    faults = (isinstance(first, dict) and "env_fault_on_reset" in first) + (
        isinstance(last, dict) and "env_fault" in last
    )
    if faults:
        metrics_logger.log_value(FAULTS_METRIC, faults, reduce="lifetime_sum")

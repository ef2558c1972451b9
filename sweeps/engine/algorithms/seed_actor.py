"""SEED RL's actor: an env runner that only steps envs (Espeholt et al. 2020, arXiv 1910.06591).

It holds no model: each step it sends its envs' observations (and the rewards and episode ends
of the step before) to the inference server (:class:`~sweeps.engine.algorithms.seed_rl.InferenceServer`)
and steps its envs with the actions it gets back. Nothing on its import path imports torch or
RLlib (``tests/test_seed.py`` checks it), so a process starts in the time Ray takes to start a
worker, and costs a worker's memory plus its envs'.

Its envs are a gymnasium vector env (``sync``: stepped in turn in this process; ``async``: one
process per env, stepped at once), resetting an ended env in the same step
(``AutoresetMode.SAME_STEP``), so every observation sent is one the next action is for. Each
sub-env is a :class:`~sweeps.engine.env_faults.RecoveringEnv` unless the trial turned recovery
off; the faults it recovered from are counted and sent with each request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np

__all__ = ["SeedEnvRunner", "make_vector_env", "tree_peak_rss_mib"]


def tree_peak_rss_mib() -> float:
    """Peak RSS (MiB) of this process plus each of its live child processes (an async
    layout's sub-env processes), each its own peak (Linux ``VmHWM``; 0 where it cannot be
    read)."""
    import os

    import psutil

    from sweeps.engine.peak_memory import vm_hwm_mib

    pids = [os.getpid()]
    try:
        pids += [c.pid for c in psutil.Process().children(recursive=True)]
    except psutil.Error:
        pass
    return float(sum(vm_hwm_mib(pid) or 0.0 for pid in pids))


def make_vector_env(
    env_id: str,
    env_config: Mapping[str, Any] | None,
    num_envs: int,
    mode: str,
    recover: bool,
    creator: Callable[[dict], gymnasium.Env] | None = None,
    step_timeout_s: float | None = None,
):
    """``num_envs`` sub-envs of ``env_id`` as one gymnasium vector env that resets an ended
    sub-env in the same step (its last observation in ``info["final_obs"]``).

    Args:
        env_id: as :func:`envs.make_env` takes it (the suite's envs, ``"module:..."``, gymnasium
            ids, step costs in ``env_config``).
        env_config: the env's config dict.
        num_envs: sub-envs (>= 1).
        mode: ``"sync"`` (stepped in turn, in this process) or ``"async"`` (one process each,
            stepped at once: gymnasium's ``AsyncVectorEnv``).
        recover: each sub-env in a :class:`~sweeps.engine.env_faults.RecoveringEnv`.
        creator: a user's env creator (a ``register_env`` of theirs) to call instead of
            :func:`envs.make_env`.
        step_timeout_s: a recovering sub-env's ``env_step_timeout_s`` (None: no limit).

    Raises:
        ValueError: an unknown ``mode``.
    """
    from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

    cfg = dict(env_config or {})

    def make_one() -> gymnasium.Env:
        if creator is not None:
            return creator(cfg)
        import envs

        return envs.make_env(env_id, cfg)

    def make() -> gymnasium.Env:
        if not recover:
            return make_one()
        from sweeps.engine.env_faults import RecoveringEnv

        return RecoveringEnv(make_one, step_timeout_s=step_timeout_s)

    fns = [make] * int(num_envs)
    if mode == "sync":
        return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    if mode == "async":
        return AsyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    raise ValueError(f"gym_env_vectorize_mode must be 'sync' or 'async', got {mode!r}")


def _faults(info: Mapping[str, Any]) -> int:
    """Env faults a vector step's ``info`` reports: a failed step (``env_fault``, in the ended
    episode's ``final_info``) and a failed reset (``env_fault_on_reset``)."""
    n = 0
    for where in (info, info.get("final_info") or {}):
        for key in ("_env_fault", "_env_fault_on_reset"):
            mask = where.get(key)
            if mask is not None:
                n += int(np.count_nonzero(mask))
    return n


class SeedEnvRunner:
    """One SEED actor: ``num_envs`` envs stepped with the inference server's actions.

    Run as a Ray actor (:class:`~sweeps.engine.algorithms.seed_rl.SEED` starts them);
    :meth:`run` loops until the server answers None (the trial ended) and returns the env
    steps it took.

    Args:
        index: this actor's index (0-based), the server's key for its envs.
        env_id, env_config, num_envs, mode, recover, creator, step_timeout_s: its envs
            (:func:`make_vector_env`).
        seed: the first sub-env's seed; sub-env ``j`` is seeded ``seed + j`` (gymnasium's rule).
        server: the inference server's actor handle.
    """

    def __init__(
        self,
        index: int,
        env_id: str,
        env_config: Mapping[str, Any] | None,
        num_envs: int,
        mode: str,
        recover: bool,
        seed: int | None,
        server: Any,
        creator: Callable[[dict], gymnasium.Env] | None = None,
        step_timeout_s: float | None = None,
    ):
        self._t0 = time.time()
        import os

        self._pid_start = os.path.getmtime(f"/proc/{os.getpid()}")
        self.index, self.seed, self.server = int(index), seed, server
        self.env = make_vector_env(
            env_id, env_config, num_envs, mode, recover, creator, step_timeout_s
        )
        self.first_step_at: float | None = None  # time.time() of the first env step

    def ready(self) -> bool:
        """True once built (the envs are made): a handle to wait on."""
        import sys

        return (
            "torch" in sys.modules,
            "ray.rllib" in sys.modules,
            round(time.time() - self._t0, 2),
        )

    def run(self) -> int:
        """Step the envs until the server answers None; returns the env steps taken."""
        import ray

        env, n = self.env, self.env.num_envs
        obs, _ = env.reset(seed=self.seed)
        rewards = terminateds = truncateds = final_obs = None
        faults, steps = 0, 0
        while True:
            actions = ray.get(
                self.server.infer.remote(
                    self.index, obs, rewards, terminateds, truncateds, final_obs, faults
                )
            )
            if actions is None:
                return steps
            if self.first_step_at is None:
                self.first_step_at = time.time()
            obs, rewards, terminateds, truncateds, info = env.step(actions)
            steps += n
            faults += _faults(info)
            done = np.logical_or(terminateds, truncateds)
            if done.any():
                # the ended episodes' last observations (for the value bootstrap of a truncated
                # one); the others' rows are the observation itself
                final_obs = np.array(obs, copy=True)
                ended = info["final_obs"]
                for j in np.flatnonzero(done):
                    final_obs[j] = ended[j]
            else:
                final_obs = None

    def peak_rss_mib(self) -> float:
        """This actor's peak RSS with its sub-env processes, MiB (:func:`tree_peak_rss_mib`)."""
        return tree_peak_rss_mib()

    def imported_frameworks(self) -> list[str]:
        """Which of torch and RLlib this actor's process has imported (none, by design)."""
        import sys

        return [m for m in ("torch", "ray.rllib") if m in sys.modules]

    def first_step(self) -> float | None:
        """``time.time()`` of this actor's first env step (None before it)."""
        return self.first_step_at

    def close(self) -> None:
        """Close the envs (an async layout's sub-env processes with them)."""
        try:
            self.env.close()
        except Exception:  # noqa: BLE001 - a broken env may fail to close
            pass

"""SEED RL's inference server (:mod:`sweeps.engine.algorithms.seed_rl`): central batched
inference and trajectory assembly.

Its module imports neither torch nor RLlib at the top: the actors hold a handle to the server,
and a Ray worker that unpickles a handle imports the module of its class. With the class beside
RLlib's imports, every light actor imported RLlib and torch before its ``__init__`` (measured
on 2 cores: 8 actors ready 19 s after they were asked for, against 3 s without).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import numpy as np

__all__ = ["InferenceServer"]


class InferenceServer:
    """SEED's central inference and trajectory assembly, as an asyncio Ray actor.

    Each :meth:`infer` call carries one actor's ``n`` observations (``obs``: array
    ``[n, *obs_shape]``) and the outcome of the actions it was given last (``rewards``,
    ``terminateds``, ``truncateds``: arrays ``[n]``; ``final_obs``: the ended episodes' last
    observations, ``[n, *obs_shape]``, or None when none ended; all None on the first call).
    Calls wait until ``batch_size`` observations are waiting, or ``timeout_s`` after the first
    of them; then one forward pass of the module samples every waiting env's action
    (array ``[n]``, returned to each caller) and its log-probability, kept for the trajectory.

    Trajectories are cut like an RLlib env runner's: each env's steps go into an episode chunk
    that ends when the episode ends or when the env has stepped ``fragment`` times since its
    last cut (a ``SingleAgentEpisode`` with ``action_logp`` as extra model output; the learner
    bootstraps a cut chunk's last value). :meth:`take` hands the finished chunks to the learner.

    Args:
        module_spec: the RLModule's spec (``AlgorithmConfig.get_rl_module_spec``).
        state: the module's initial weights (the learner's).
        observation_space, action_space: one env's.
        num_envs: envs per actor.
        fragment: ``rollout_fragment_length``, env steps.
        batch_size: observations per forward pass (>= 1).
        timeout_s: seconds a partial batch waits.
        seed: torch's seed for the action sampling (None: unseeded).
    """

    def __init__(
        self,
        module_spec,
        state: dict,
        observation_space,
        action_space,
        num_envs: int,
        fragment: int,
        batch_size: int,
        timeout_s: float,
        seed: int | None = None,
    ):
        import torch

        torch.set_num_threads(1)  # one core's worth; the learner owns the trial's others
        if seed is not None:
            torch.manual_seed(seed)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.module = module_spec.build()
        self.module.set_state(state)
        self.module.to(self.device)
        self.module.eval()
        self.dist_cls = self.module.get_exploration_action_dist_cls()
        self.obs_space, self.act_space = observation_space, action_space
        self.num_envs, self.fragment = int(num_envs), int(fragment)
        self.batch_size, self.timeout_s = int(batch_size), float(timeout_s)
        self.stopping = False
        self._waiting: list[tuple[int, np.ndarray, asyncio.Future]] = []
        self._waiting_rows = 0
        self._batch_no = 0
        self._last: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # actor → (actions, logp)
        self._traj: dict[int, dict[str, Any]] = {}  # env → its open chunk
        self._chunks: list = []
        self._chunk_steps = 0
        self._ready = asyncio.Event()
        self._want = 1
        self._returns: deque = deque()
        self._faults: dict[int, int] = {}
        self.env_steps = 0
        self.batches = 0
        self.batch_rows = 0

    # ---------------------------------- trajectories ----------------------------------
    def _open(
        self,
        g: int,
        obs: np.ndarray,
        episode_id: str | None = None,
        t: int = 0,
        ret: float = 0.0,
        length: int = 0,
    ) -> None:
        import uuid

        self._traj[g] = {
            "id": episode_id or uuid.uuid4().hex,
            "t": t,
            "obs": [obs],
            "act": [],
            "rew": [],
            "logp": [],
            "ret": ret,
            "len": length,
            "win": self._traj[g]["win"] if g in self._traj else 0,
        }

    def _emit(self, g: int, terminated: bool, truncated: bool) -> None:
        from ray.rllib.env.single_agent_episode import SingleAgentEpisode

        tr = self._traj[g]
        if not tr["act"]:
            return
        ep = SingleAgentEpisode(
            id_=tr["id"],
            observations=tr["obs"],
            actions=tr["act"],
            rewards=tr["rew"],
            extra_model_outputs={"action_logp": tr["logp"]},
            terminated=terminated,
            truncated=truncated,
            observation_space=self.obs_space,
            action_space=self.act_space,
            t_started=tr["t"],
            len_lookback_buffer=0,
        )
        self._chunks.append(ep.to_numpy())
        self._chunk_steps += len(tr["act"])
        if self._chunk_steps >= self._want:
            self._ready.set()

    def _record(
        self, actor: int, obs, rewards, terminateds, truncateds, final_obs, faults: int
    ) -> None:
        self._faults[actor] = int(faults)
        base = actor * self.num_envs
        if rewards is None:  # the actor's first call: its envs' first observations
            for j in range(len(obs)):
                self._open(base + j, obs[j])
            return
        actions, logp = self._last[actor]
        for j in range(len(obs)):
            g, tr = base + j, self._traj[base + j]
            r = float(rewards[j])
            tr["act"].append(actions[j])
            tr["logp"].append(float(logp[j]))
            tr["rew"].append(r)
            tr["ret"] += r
            tr["len"] += 1
            tr["win"] += 1
            done = bool(terminateds[j]) or bool(truncateds[j])
            tr["obs"].append(final_obs[j] if done else obs[j])
            if done:
                self._emit(g, bool(terminateds[j]), bool(truncateds[j]) and not terminateds[j])
                self._returns.append((tr["ret"], tr["len"]))
                self._open(g, obs[j])
            if self._traj[g]["win"] >= self.fragment:
                cur = self._traj[g]
                if cur["act"]:  # cut: the next chunk goes on from this observation
                    self._emit(g, False, False)
                    self._open(
                        g,
                        cur["obs"][-1],
                        cur["id"],
                        cur["t"] + len(cur["act"]),
                        cur["ret"],
                        cur["len"],
                    )
                self._traj[g]["win"] = 0
        self.env_steps += len(obs)

    # ----------------------------------- inference -----------------------------------
    def _serve(self) -> None:
        import torch
        from ray.rllib.core.columns import Columns

        waiting, self._waiting, self._waiting_rows = self._waiting, [], 0
        self._batch_no += 1
        if not waiting:
            return
        obs = np.concatenate([w[1] for w in waiting], axis=0)
        with torch.no_grad():
            out = self.module.forward_exploration(
                {Columns.OBS: torch.as_tensor(obs, dtype=torch.float32, device=self.device)}
            )
            dist = self.dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
            actions = dist.sample()
            logp = dist.logp(actions)
        actions, logp = actions.cpu().numpy(), logp.cpu().numpy()
        self.batches += 1
        self.batch_rows += len(obs)
        i = 0
        for actor, o, fut in waiting:
            k = len(o)
            self._last[actor] = (actions[i : i + k], logp[i : i + k])
            if not fut.done():
                fut.set_result(actions[i : i + k])
            i += k

    def _serve_late(self, batch_no: int) -> None:
        if self._batch_no == batch_no:  # that batch was not served in the meantime
            self._serve()

    async def infer(
        self, actor: int, obs, rewards, terminateds, truncateds, final_obs, faults: int
    ):
        """One actor's step (class docstring); returns its actions, or None once the trial
        is ending (the actor then stops)."""
        if self.stopping:
            return None
        obs = np.asarray(obs)
        self._record(actor, obs, rewards, terminateds, truncateds, final_obs, faults)
        fut = asyncio.get_running_loop().create_future()
        self._waiting.append((actor, obs, fut))
        self._waiting_rows += len(obs)
        if self._waiting_rows >= self.batch_size:
            self._serve()
        elif len(self._waiting) == 1:
            asyncio.get_running_loop().call_later(self.timeout_s, self._serve_late, self._batch_no)
        return await fut

    async def set_weights(self, state: dict) -> None:
        """The learner's newest weights (a module state)."""
        self.module.set_state(state)

    async def take(self, min_steps: int, timeout_s: float) -> dict[str, Any]:
        """The finished episode chunks once they hold ``min_steps`` env steps, or whatever is
        finished after ``timeout_s`` seconds, with what happened since the last call.

        Returns:
            ``chunks`` (list of ``SingleAgentEpisode``), ``env_steps`` (int, env steps the
            actors took since the last call), ``returns`` (list of ``(episode return,
            length)`` of the episodes that ended), ``env_faults`` (int, lifetime, all
            actors), ``batches`` and ``batch_rows`` (forward passes and observations served
            since the last call).
        """
        self._want = max(1, int(min_steps))
        if self._chunk_steps < self._want:
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout=timeout_s)
            except asyncio.TimeoutError:
                pass
        chunks, self._chunks, self._chunk_steps = self._chunks, [], 0
        returns = list(self._returns)
        self._returns.clear()
        out = {
            "chunks": chunks,
            "env_steps": self.env_steps,
            "returns": returns,
            "env_faults": sum(self._faults.values()),
            "batches": self.batches,
            "batch_rows": self.batch_rows,
        }
        self.env_steps = self.batches = self.batch_rows = 0
        return out

    async def peak_rss_mib(self) -> float:
        """This process's peak RSS, MiB."""
        from sweeps.engine.algorithms.seed_actor import tree_peak_rss_mib

        return tree_peak_rss_mib()

    async def stop(self) -> None:
        """Answer None to every waiting and later call: the actors stop."""
        self.stopping = True
        waiting, self._waiting = self._waiting, []
        for _, _, fut in waiting:
            if not fut.done():
                fut.set_result(None)

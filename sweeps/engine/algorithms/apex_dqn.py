"""Ape-X DQN (Horgan et al. 2018, "Distributed Prioritized Experience Replay", arXiv 1803.00933)
on RLlib's new API stack, which no longer ships ApexDQN.

Read top to bottom, like CleanRL's ``dqn.py``:

1. how env runners (the paper's *actors*) get their fixed ε_i  — :func:`actor_epsilon`,
   :class:`ApexEnvRunner` — and turn their experience into n-step transitions
   (:func:`~sweeps.engine.algorithms.apex_replay.n_step_transitions`);
2. how samples reach replay: each actor sends its transitions with the initial priorities it
   computed from its own copy of the network (:meth:`ApexEnvRunner.sample_transitions`); the
   driver adds whichever actors' samples are ready, never waiting for a slow one —
   :meth:`ApexDQN.training_step`, step 1;
3. how the learner trains: on prioritized minibatches, ``updates_per_learner_call`` per call
   of RLlib's DQN learner (:mod:`sweeps.engine.algorithms.dqn_learner`), then their priorities
   back to replay — step 2;
4. how the replay ratio is kept in bounds: above ``training_intensity`` the learner waits for
   samples, below ``min_replay_ratio`` the learner catches up before the driver collects
   again — step 2;
5. when weights are broadcast: every ``weights_sync_period`` learner updates, fire-and-forget —
   step 3.

Replay and learning share the driver's one thread, as in
:class:`~sweeps.engine.algorithms.replay_dqn.ReplayDQN`; steps 1-3 run in turn in
:meth:`ApexDQN.training_step`. The paper's layout, replay in actors of its own and the learner
in a thread apart, ran fewer learner updates per second than this one at every actor count on
2 cores (docs/benchmarks.md, "APEX's learner as actors are added") and on a 16-core node with
the learner on a GPU (docs/device_16cpu.md), so the suite does not carry it.

Replay holds transitions in flat arrays (:class:`~sweeps.engine.algorithms.apex_replay.PrioritizedReplay`),
as in the paper, not RLlib's episode buffer: sampling a minibatch and building its train batch
there cost ~11 ms per 64 transitions on 2 cores, which capped the learner at ~40 updates/s
(docs/benchmarks.md, "Learner updates"). That data path (replay, the learner call, priority
updates) is the suite's DQN's, :class:`~sweeps.engine.algorithms.replay_dqn.ReplayDQN`, which Ape-X
extends with asynchronous actors, each with its own fixed ε.

Comments mark "ALGO LOGIC" where the method lives and "PLUMBING" where RLlib is wired in.
What a sweep can set (and the tuned defaults) is in :mod:`sweeps.engine.algorithms.apex`.

Deviations from the paper, on purpose:

- A chunk's last n − 1 transitions bootstrap after fewer than n steps (the next chunk of the
  episode arrives in another message) instead of waiting for it.
- The learner takes several minibatches per call and updates their priorities after the call
  (up to ``updates_per_learner_call`` − 1 updates late; the paper's learner also trains on
  prefetched batches).
- The target network is copied every ``target_network_update_freq`` *env steps sampled*
  (RLlib's DQN learner), not every 2500 learner updates.
- Replay and the learner in the driver's thread, not in processes of their own (measured
  faster here; see above).
- No evaluation of its own: the greedy (ε = 0) return a sweep compares is measured by the
  suite's evaluation protocol, the same for every algorithm (:mod:`sweeps.engine.evaluation`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.dqn.dqn_learner import QF_PREDS
from ray.rllib.core.columns import Columns
from ray.rllib.utils.schedules.scheduler import Scheduler

from sweeps.engine.algorithms.apex_defaults import APEX_ALGO_DEFAULTS
from sweeps.engine.algorithms.apex_replay import n_step_td_errors
from sweeps.engine.algorithms.replay_dqn import (
    ReplayDQN,
    ReplayDQNConfig,
    TransitionEnvRunner,
)

__all__ = ["ApexDQN", "ApexDQNConfig", "ApexEnvRunner", "actor_epsilon"]

#: Key of the APEX-only metrics in a training result (the replay's are under "replay").
APEX_RESULTS = "apex"
_SAMPLE_TAG = "apex_sample"


# ============================== 1. each actor's fixed ε (ALGO LOGIC) ==============================
def actor_epsilon(i: int, num_actors: int, epsilon: float = 0.4, alpha: float = 7.0) -> float:
    """Exploration rate of actor ``i`` of ``num_actors``: ε_i = ε^(1 + α·i/(N−1)).

    Horgan et al. 2018, section 4 (ε = 0.4, α = 7). With one actor, ε_0 = ε.

    Args:
        i: actor index, 0 ≤ i < num_actors.
        num_actors: N ≥ 1.
        epsilon: base ε in (0, 1].
        alpha: spread exponent α ≥ 0.

    Raises:
        ValueError: for an index outside [0, N), N < 1, ε outside (0, 1], or α < 0.
    """
    if num_actors < 1 or not 0 <= i < num_actors:
        raise ValueError(f"actor index {i} out of range for {num_actors} actors")
    if not 0 < epsilon <= 1 or alpha < 0:
        raise ValueError(
            f"need 0 < epsilon <= 1 and alpha >= 0, got epsilon={epsilon}, alpha={alpha}"
        )
    if num_actors == 1:
        return float(epsilon)
    return float(epsilon ** (1 + alpha * i / (num_actors - 1)))


class ApexEnvRunner(TransitionEnvRunner):
    """An Ape-X actor: the DQN env runner (n-step transitions) whose ε-greedy module explores
    with its own fixed ε_i.

    Env runner ``worker_index`` k = 1..N is actor i = k − 1 of N; the driver's local env runner
    (k = 0, sampling when ``num_env_runners=0``) is the single actor i = 0 of N = 1.
    """

    ALGORITHM = "APEX"
    #: as TransitionEnvRunner's (sweeps.engine.warm.family)
    WARM_SWAPPABLE = True

    def make_module(self):
        super().make_module()  # PLUMBING: RLlib builds the DQN RLModule (ε-greedy exploration)
        n = self.config.num_env_runners
        i, n = (0, 1) if not self.worker_index or n == 0 else (self.worker_index - 1, n)
        self.epsilon = actor_epsilon(i, n, self.config.epsilon, self.config.epsilon_alpha)
        # ALGO LOGIC: replace the module's ε schedule by this actor's constant ε_i. RLlib's DQN
        # module draws a random action with probability epsilon_schedule.get_current_value().
        if self.module is not None:
            self.module.epsilon_schedule = Scheduler(
                fixed_value_or_schedule=self.epsilon, framework="torch"
            )

    def sample_transitions(
        self, env_steps_sampled_lifetime: int | None = None
    ) -> tuple[dict[str, np.ndarray], dict]:
        """One sample call's n-step transitions, each with its initial priority's TD error
        (``"td_errors"``, :func:`~sweeps.engine.algorithms.apex_replay.n_step_td_errors`) computed here
        with the actor's own copy of the network, as in the paper (section 3), and the env
        runner's metrics."""
        transitions, metrics = super().sample_transitions(env_steps_sampled_lifetime)
        if transitions and self.module is not None:
            # ALGO LOGIC: the actor, not the learner, prices its new experience.
            with torch.no_grad():
                q = self.module.compute_q_values(
                    {Columns.OBS: torch.as_tensor(transitions["obs"])}
                )[QF_PREDS]
                q_next = self.module.compute_q_values(
                    {Columns.OBS: torch.as_tensor(transitions["new_obs"])}
                )[QF_PREDS]
            transitions["td_errors"] = n_step_td_errors(
                q.cpu().numpy(),
                q_next.cpu().numpy(),
                transitions,
                self.config.gamma,
                float(self.config.reward_scale),
            )
        return transitions, metrics


# ==================================== config (PLUMBING) ====================================
class ApexDQNConfig(ReplayDQNConfig):
    """The DQN config (:class:`~sweeps.engine.algorithms.replay_dqn.ReplayDQNConfig`) with Ape-X's
    defaults and knobs.

    Extra ``training()`` keys:
        epsilon: base ε of the actors' ε_i (default 0.4; a float, not a schedule).
        epsilon_alpha: α of ε_i = ε^(1 + α·i/(N−1)) (default 7).
        weights_sync_period: learner updates between weight broadcasts to the actors (default 10).
        updates_per_learner_call: prioritized minibatches of ``train_batch_size`` sampled at
            once and trained on in one call of the learner (default 8); their priorities are
            updated after the call.
        training_intensity: if set, an upper bound on replayed / sampled transitions: the
            learner waits for fresh samples instead of exceeding it (None = unbounded, as in
            the paper, where the learner runs as fast as it can).
        min_replay_ratio: if set, a lower bound on replayed / sampled transitions once
            learning has started, so more actors cannot dilute each transition's replays
            towards 0 (None = unbounded, as in the paper): the learner takes the updates it
            is behind (up to 64 calls' worth) before the driver collects again.
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or ApexDQN)
        # ALGO LOGIC defaults: the paper's (sweeps.engine.algorithms.apex_defaults).
        d = APEX_ALGO_DEFAULTS
        self.epsilon = d["epsilon"]
        self.epsilon_alpha = d["epsilon_alpha"]
        self.n_step = d["n_step"]
        self.double_q = d["double_q"]
        self.dueling = d["dueling"]
        self.replay_buffer_config = {
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": d["buffer_size"],
            "alpha": d["prioritized_replay_alpha"],
            "beta": d["prioritized_replay_beta"],
        }
        self.weights_sync_period = d["weights_sync_period"]
        self.updates_per_learner_call = d["updates_per_learner_call"]
        self.training_intensity = d["training_intensity"]
        self.min_replay_ratio = d["min_replay_ratio"]
        # PLUMBING: actors are ApexEnvRunners. Two sample() calls queued per actor: it starts
        # the next one as soon as it returns one, without waiting for the driver to collect
        # the result and ask again.
        self.env_runner_cls = ApexEnvRunner
        self.max_requests_in_flight_per_env_runner = 2

    def training(
        self,
        *,
        epsilon_alpha=NotProvided,
        weights_sync_period=NotProvided,
        min_replay_ratio=NotProvided,
        **kwargs,
    ):
        super().training(**kwargs)
        if min_replay_ratio is not NotProvided:
            self.min_replay_ratio = None if min_replay_ratio is None else float(min_replay_ratio)
        if epsilon_alpha is not NotProvided:
            self.epsilon_alpha = float(epsilon_alpha)
        if weights_sync_period is not NotProvided:
            self.weights_sync_period = int(weights_sync_period)
        return self

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.epsilon, (int, float)) or not 0 < self.epsilon <= 1:
            self._value_error(
                f"APEX `epsilon` is the actors' base ε, a number in (0, 1]; got {self.epsilon!r}"
            )
        if self.epsilon_alpha < 0:
            self._value_error(f"APEX `epsilon_alpha` must be >= 0; got {self.epsilon_alpha}")
        if self.weights_sync_period < 1:
            self._value_error(
                f"APEX `weights_sync_period` must be >= 1; got {self.weights_sync_period}"
            )
        if self.min_replay_ratio is not None and not self.min_replay_ratio > 0:
            self._value_error(
                "APEX `min_replay_ratio` (replayed / sampled transitions) must be "
                f"> 0 or None; got {self.min_replay_ratio!r}"
            )
        if (
            self.min_replay_ratio is not None
            and self.training_intensity is not None
            and self.min_replay_ratio > self.training_intensity
        ):
            self._value_error(
                f"APEX `min_replay_ratio` {self.min_replay_ratio} exceeds "
                f"`training_intensity` {self.training_intensity}: no replay "
                "ratio satisfies both"
            )
        if not issubclass(self.env_runner_cls, ApexEnvRunner):
            self._value_error("APEX needs `env_runner_cls` to be ApexEnvRunner (or a subclass)")


# ===================================== the algorithm =====================================
class ApexDQN(ReplayDQN):
    """Ape-X DQN: asynchronous ε_i-greedy actors → prioritized replay → one learner.

    Registered for Tune as ``"APEX"`` (:func:`sweeps.engine.algorithms.register_with_tune`).
    Result keys: DQN's and ``replay/`` (:class:`~sweeps.engine.algorithms.replay_dqn.ReplayDQN`), plus
    ``apex/actor_epsilons`` (ε_i by env runner index).
    """

    @classmethod
    def get_default_config(cls) -> ApexDQNConfig:
        return ApexDQNConfig()

    def setup(self, config: AlgorithmConfig) -> None:
        super().setup(config)
        self._updates_since_sync = 0
        remote = self.env_runner_group.num_remote_env_runners() > 0
        if remote:
            eps = self.env_runner_group.foreach_env_runner(
                lambda er: (er.worker_index, er.epsilon), local_env_runner=False
            )
        else:
            eps = [(0, self.env_runner.epsilon)]
        self.actor_epsilons = {int(k): float(e) for k, e in eps}

    def _updates_allowed(self, updates_done: int, sampled: int) -> int:
        """How many learner updates the replay ratio allows now (up to
        ``updates_per_learner_call``; 0 before learning starts or once ``training_intensity``
        replayed / sampled transitions are reached), after ``updates_done`` updates and
        ``sampled`` env steps."""
        cfg = self.config
        if sampled < max(cfg.num_steps_sampled_before_learning_starts, 1):
            return 0
        k = cfg.updates_per_learner_call
        if cfg.training_intensity is not None:
            k = min(
                k,
                int(cfg.training_intensity * sampled) // cfg.total_train_batch_size - updates_done,
            )
        return max(0, k)

    # ------------------------------------------------------------------------------------
    def training_step(self) -> None:
        cfg = self.config

        # ============ 1. samples reach replay as they arrive (ALGO LOGIC) ============
        # Every actor always has one sample() call in flight; we take whichever results are
        # ready now (timeout 0) and immediately send those actors their next call. A slow
        # actor only delays its own samples, never the learner.
        if self.env_runner_group.num_remote_env_runners() > 0:
            ready = self.env_runner_group.foreach_env_runner_async_fetch_ready(
                "sample_transitions", tag=_SAMPLE_TAG, timeout_seconds=0.0
            )
        else:  # num_env_runners=0: the driver is the only actor and samples synchronously.
            ready = [self.env_runner.sample_transitions()]
        self._add_to_replay(ready)

        sampled, batch = self._sampled(), cfg.total_train_batch_size
        # as many of `updates_per_learner_call` updates as the replay ratio bound allows now
        k = self._updates_allowed(self._num_updates, sampled) if len(self.replay) else 0
        may_update = k >= 1
        if may_update and cfg.min_replay_ratio is not None:
            # below the lower bound, the learner catches up before the driver collects again
            behind = -(-int(cfg.min_replay_ratio * sampled) // batch) - self._num_updates
            k = max(k, min(behind, 64 * cfg.updates_per_learner_call))
        if not may_update:
            if not ready:
                time.sleep(0.002)  # PLUMBING: nothing to do until an actor delivers
            return

        # ============ 2. k learner updates on prioritized minibatches (ALGO LOGIC) ============
        while k > 0:  # `updates_per_learner_call` at a time (more only below min_replay_ratio)
            learner_results = self._learn(min(k, cfg.updates_per_learner_call))
            self._updates_since_sync += min(k, cfg.updates_per_learner_call)
            k -= cfg.updates_per_learner_call

        # ============ 3. broadcast weights every `weights_sync_period` updates (ALGO LOGIC) ======
        # Fire-and-forget (timeout 0): each actor applies the newest weights before its next
        # sample() call; a busy actor is not waited for.
        if self._updates_since_sync >= cfg.weights_sync_period:
            self._updates_since_sync = 0
            self._broadcast_weights(learner_results)

    # --------------------------------- metrics (PLUMBING) ---------------------------------
    def step(self) -> dict[str, Any]:
        results = super().step()
        results[APEX_RESULTS] = {"actor_epsilons": dict(self.actor_epsilons)}
        return results

"""Ape-X DQN (Horgan et al. 2018, "Distributed Prioritized Experience Replay", arXiv 1803.00933)
on RLlib's new API stack, which no longer ships ApexDQN.

Read top to bottom, like CleanRL's ``dqn.py``:

1. how env runners (the paper's *actors*) get their fixed ε_i  — :func:`actor_epsilon`,
   :class:`ApexEnvRunner` — and turn their experience into n-step transitions
   (:func:`~sweeps.engine.algorithms.apex_replay.n_step_transitions`);
2. how samples reach replay: each actor adds its transitions, with the initial priorities it
   computed from its own copy of the network, straight to a replay shard, its own Ray actor
   (:class:`~sweeps.engine.algorithms.apex_replay.ReplayShard`,
   :meth:`ApexEnvRunner.sample_transitions`); the driver only hears how many —
   :meth:`ApexDQN.training_step`, step 1;
3. how the learner trains: in a thread of its own (:class:`LearnerThread`), on prioritized
   minibatches it asked the shards for while the previous call trained,
   ``updates_per_learner_call`` per call of RLlib's DQN learner
   (:mod:`sweeps.engine.algorithms.dqn_learner`), then their priorities back to the shard; it
   never waits for an actor — step 2;
4. how the replay ratio is kept in bounds: above ``training_intensity`` the learner waits for
   samples, below ``min_replay_ratio`` the actors wait for the learner — steps 1 and 2;
5. when weights are broadcast: every ``weights_sync_period`` learner updates, fire-and-forget —
   step 3.

With ``num_replay_shards=0`` (the default: its learner ran more updates/s on 2 cores,
docs/benchmarks.md, and on a 16-core node with a GPU learner, docs/device_16cpu.md), or without
env runners (the driver is the only actor), replay and learning share the driver's one thread,
as in :class:`~sweeps.engine.algorithms.replay_dqn.ReplayDQN`; steps 1-3 then run in turn in
:meth:`ApexDQN.training_step`.

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
- No evaluation of its own: the greedy (ε = 0) return a sweep compares is measured by the
  suite's evaluation protocol, the same for every algorithm (:mod:`sweeps.engine.evaluation`).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import numpy as np
import ray
import torch
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.dqn.dqn_learner import QF_PREDS
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.schedules.scheduler import Scheduler

from sweeps.engine.algorithms.apex_defaults import APEX_ALGO_DEFAULTS
from sweeps.engine.algorithms.apex_replay import ReplayShard, n_step_td_errors
from sweeps.engine.algorithms.replay_dqn import (
    REPLAY_RESULTS,
    ReplayDQN,
    ReplayDQNConfig,
    TransitionEnvRunner,
)

__all__ = ["ApexDQN", "ApexDQNConfig", "ApexEnvRunner", "LearnerThread", "actor_epsilon"]

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
        raise ValueError(f"need 0 < epsilon <= 1 and alpha >= 0, got epsilon={epsilon}, alpha={alpha}")
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

    def make_module(self):
        super().make_module()  # PLUMBING: RLlib builds the DQN RLModule (ε-greedy exploration)
        n = self.config.num_env_runners
        i, n = (0, 1) if not self.worker_index or n == 0 else (self.worker_index - 1, n)
        self.epsilon = actor_epsilon(i, n, self.config.epsilon, self.config.epsilon_alpha)
        # ALGO LOGIC: replace the module's ε schedule by this actor's constant ε_i. RLlib's DQN
        # module draws a random action with probability epsilon_schedule.get_current_value().
        if self.module is not None:
            self.module.epsilon_schedule = Scheduler(
                fixed_value_or_schedule=self.epsilon, framework="torch")
        self._replay_shard = None
        self._pending_add = None

    def set_replay_shards(self, shards: list) -> None:
        """Send this actor's transitions to replay directly: to shard ``worker_index mod S``
        of the ``S`` replay shard actors (handles of
        :class:`~sweeps.engine.algorithms.apex_replay.ReplayShard`)."""
        self._replay_shard = shards[self.worker_index % len(shards)] if shards else None

    def sample_transitions(self) -> tuple[dict[str, np.ndarray], dict]:
        """One sample call's n-step transitions, each with its initial priority's TD error
        (``"td_errors"``, :func:`~sweeps.engine.algorithms.apex_replay.n_step_td_errors`) computed here
        with the actor's own copy of the network, as in the paper (section 3), and the env
        runner's metrics."""
        transitions, metrics = super().sample_transitions()
        if transitions and self.module is not None:
            # ALGO LOGIC: the actor, not the learner, prices its new experience.
            with torch.no_grad():
                q = self.module.compute_q_values(
                    {Columns.OBS: torch.as_tensor(transitions["obs"])})[QF_PREDS]
                q_next = self.module.compute_q_values(
                    {Columns.OBS: torch.as_tensor(transitions["new_obs"])})[QF_PREDS]
            transitions["td_errors"] = n_step_td_errors(
                q.cpu().numpy(), q_next.cpu().numpy(), transitions, self.config.gamma,
                float(self.config.reward_scale))
        if self._replay_shard is not None:
            # ALGO LOGIC: the transitions go to replay, not through the driver. One add in
            # flight: an actor that outpaces its shard waits for it (backpressure).
            if self._pending_add is not None:
                ray.get(self._pending_add)
                self._pending_add = None
            if transitions:
                td_errors = transitions.pop("td_errors", None)
                self._pending_add = self._replay_shard.add.remote(transitions, td_errors)
            return {}, metrics
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
            towards 0 (None = unbounded, as in the paper). With replay shards the actors get
            no new sample request while the ratio is below it; in the driver's thread the
            learner takes the updates it is behind (up to 64 calls' worth) before the driver
            collects again.
        num_replay_shards: replay shard actors the actors add to and a learner thread samples
            from (the paper's layout); 0 (the default) keeps replay and learning in the
            driver's thread, which kept the learner faster on 2 cores (docs/benchmarks.md,
            "APEX's learner as actors are added"). Ignored without env runners
            (``num_env_runners=0``: the driver is the actor).
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
            "type": "PrioritizedEpisodeReplayBuffer", "capacity": d["buffer_size"],
            "alpha": d["prioritized_replay_alpha"], "beta": d["prioritized_replay_beta"]}
        self.weights_sync_period = d["weights_sync_period"]
        self.updates_per_learner_call = d["updates_per_learner_call"]
        self.training_intensity = d["training_intensity"]
        self.min_replay_ratio = d["min_replay_ratio"]
        self.num_replay_shards = d["num_replay_shards"]
        # PLUMBING: actors are ApexEnvRunners. Two sample() calls queued per actor: it starts
        # the next one as soon as it returns one, without waiting for the driver to collect
        # the result and ask again.
        self.env_runner_cls = ApexEnvRunner
        self.max_requests_in_flight_per_env_runner = 2

    def training(self, *, epsilon_alpha=NotProvided, weights_sync_period=NotProvided,
                 min_replay_ratio=NotProvided, num_replay_shards=NotProvided, **kwargs):
        super().training(**kwargs)
        if min_replay_ratio is not NotProvided:
            self.min_replay_ratio = None if min_replay_ratio is None else float(min_replay_ratio)
        if num_replay_shards is not NotProvided:
            self.num_replay_shards = int(num_replay_shards)
        if epsilon_alpha is not NotProvided:
            self.epsilon_alpha = float(epsilon_alpha)
        if weights_sync_period is not NotProvided:
            self.weights_sync_period = int(weights_sync_period)
        return self

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.epsilon, (int, float)) or not 0 < self.epsilon <= 1:
            self._value_error(f"APEX `epsilon` is the actors' base ε, a number in (0, 1]; got {self.epsilon!r}")
        if self.epsilon_alpha < 0:
            self._value_error(f"APEX `epsilon_alpha` must be >= 0; got {self.epsilon_alpha}")
        if self.weights_sync_period < 1:
            self._value_error(f"APEX `weights_sync_period` must be >= 1; got {self.weights_sync_period}")
        if self.num_replay_shards < 0:
            self._value_error(f"APEX `num_replay_shards` must be >= 0; got {self.num_replay_shards}")
        if self.min_replay_ratio is not None and not self.min_replay_ratio > 0:
            self._value_error("APEX `min_replay_ratio` (replayed / sampled transitions) must be "
                              f"> 0 or None; got {self.min_replay_ratio!r}")
        if (self.min_replay_ratio is not None and self.training_intensity is not None
                and self.min_replay_ratio > self.training_intensity):
            self._value_error(f"APEX `min_replay_ratio` {self.min_replay_ratio} exceeds "
                              f"`training_intensity` {self.training_intensity}: no replay "
                              "ratio satisfies both")
        if not issubclass(self.env_runner_cls, ApexEnvRunner):
            self._value_error("APEX needs `env_runner_cls` to be ApexEnvRunner (or a subclass)")


# ============================ 2. the learner's own thread (ALGO LOGIC) ============================
class LearnerThread(threading.Thread):
    """Ape-X's learner, apart from sampling (Horgan et al. 2018, section 3): it trains on
    prioritized minibatches from the replay shards, ``updates_per_learner_call`` per call of
    the learner, asking the next shard for its next batch before it trains on this one
    (prefetch), and sends each batch's new priorities back to the shard it came from. It never
    waits for an actor; it waits only for replay (an empty shard, or ``training_intensity``
    reached: :meth:`ApexDQN._updates_allowed`; a batch prefetched before the bound was reached
    is still trained on, so the bound may be passed by one learner call).

    The learner's results and the weights to broadcast are handed to the driver's thread, which
    owns RLlib's metrics and the env runners (neither is thread-safe). ``lock`` is held during
    each learner call, so whoever reads the learner's weights (the evaluation protocol, the
    broadcast) reads those of a whole update.

    Args:
        algo: the :class:`ApexDQN` whose ``learner_group`` this thread trains.
        shards: handles of the replay shard actors (:class:`~sweeps.engine.algorithms.apex_replay.ReplayShard`).
    """

    def __init__(self, algo: ApexDQN, shards: list):
        super().__init__(name="apex-learner", daemon=True)
        self.algo, self.shards = algo, shards
        self.results: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self.updates = 0  # learner updates (gradient steps), lifetime
        self.waiting_s = 0.0  # seconds spent waiting for replay, lifetime
        self._weights: dict | None = None
        self._weights_lock = threading.Lock()  # a handover between the two threads
        self._updates_since_sync = 0
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Ask the thread to end after its current learner call, and wait for it."""
        self._stopping.set()
        if self.is_alive():
            self.join(timeout=30)

    def take_weights(self) -> dict | None:
        """The learner's weights (an RLModule state, inference only) due to be broadcast since
        the last call, or None."""
        with self._weights_lock:
            weights, self._weights = self._weights, None
        return weights

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # noqa: BLE001 - re-raised in the driver's thread
            self.error = e

    def _loop(self) -> None:
        algo, cfg = self.algo, self.algo.config
        batch = cfg.total_train_batch_size
        shard, pending = 0, None  # the shard asked, and its batch on the way
        while not self._stopping.is_set():
            k = algo._updates_allowed(self.updates)
            if k < 1:
                t = time.perf_counter()
                self._stopping.wait(0.002)
                self.waiting_s += time.perf_counter() - t
                continue
            if pending is None:
                pending = self.shards[shard].sample.remote(k * batch)
            t = time.perf_counter()
            replayed = ray.get(pending)
            self.waiting_s += time.perf_counter() - t
            this_shard = shard
            shard = (shard + 1) % len(self.shards)
            # prefetch: the next batch is drawn while this one trains
            pending = self.shards[shard].sample.remote(k * batch)
            if replayed is None:  # an empty shard: its actors' first adds are on the way
                self._stopping.wait(0.001)
                continue
            indices, weights, data = replayed
            with self.lock:
                results, td_errors = algo._update_learner(
                    indices, weights, data, algo._sampled_for_learner,
                    algo._agent_steps_for_learner)
                self.updates += len(indices) // batch
                self._updates_since_sync += len(indices) // batch
                if self._updates_since_sync >= cfg.weights_sync_period:
                    self._updates_since_sync = 0
                    weights = algo.learner_group.get_state(
                        components=[f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}"],
                        inference_only=True)[COMPONENT_LEARNER]
                    with self._weights_lock:
                        self._weights = weights
            self.shards[this_shard].update_priorities.remote(indices, td_errors)
            self.results.put(results)


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
                lambda er: (er.worker_index, er.epsilon), local_env_runner=False)
        else:
            eps = [(0, self.env_runner.epsilon)]
        self.actor_epsilons = {int(k): float(e) for k, e in eps}
        self.replay_shards: list = []
        self.learner_thread: LearnerThread | None = None
        if remote and self.config.num_replay_shards > 0:
            self._setup_replay_shards()

    def _setup_replay_shards(self) -> None:
        """PLUMBING: the replay shard actors, each actor told its shard, the learner thread."""
        cfg = self.config
        capacity, alpha, beta = self._replay_settings()
        n = cfg.num_replay_shards
        shard_cls = ray.remote(num_cpus=0)(ReplayShard)
        self.replay_shards = [
            shard_cls.remote(max(1, capacity // n), alpha=alpha, beta=beta,
                             seed=None if cfg.seed is None else cfg.seed * 1000 + i)
            for i in range(n)]
        shards = self.replay_shards
        self.env_runner_group.foreach_env_runner(
            lambda er: er.set_replay_shards(shards), local_env_runner=False)
        self._sampled_for_learner = 0
        self._agent_steps_for_learner: dict = {}
        self.learner_thread = LearnerThread(self, shards)
        # the evaluation protocol reads the learner's weights from the driver's thread: never
        # in the middle of a learner call
        get_weights = self.learner_group.get_weights

        def get_weights_between_updates(*args, **kwargs):
            with self.learner_thread.lock:
                return get_weights(*args, **kwargs)

        self.learner_group.get_weights = get_weights_between_updates

    def _updates_allowed(self, updates_done: int, sampled: int | None = None) -> int:
        """How many learner updates the replay ratio allows now (up to
        ``updates_per_learner_call``; 0 before learning starts or once ``training_intensity``
        replayed / sampled transitions are reached), after ``updates_done`` updates and
        ``sampled`` env steps (default: what the driver last told the learner thread)."""
        cfg = self.config
        sampled = self._sampled_for_learner if sampled is None else sampled
        if sampled < max(cfg.num_steps_sampled_before_learning_starts, 1):
            return 0
        k = cfg.updates_per_learner_call
        if cfg.training_intensity is not None:
            k = min(k, int(cfg.training_intensity * sampled) // cfg.total_train_batch_size
                    - updates_done)
        return max(0, k)

    def _replay_ratio_too_low(self) -> bool:
        """``min_replay_ratio`` set, learning started and replayed / sampled below it."""
        cfg = self.config
        sampled = self._sampled_for_learner
        if cfg.min_replay_ratio is None or sampled < cfg.num_steps_sampled_before_learning_starts:
            return False
        replayed = self.learner_thread.updates * cfg.total_train_batch_size
        return replayed < cfg.min_replay_ratio * sampled

    def cleanup(self) -> None:
        if self.learner_thread is not None:
            self.learner_thread.stop()
        super().cleanup()  # the actors first: none is left adding to a shard
        for shard in self.replay_shards:
            ray.kill(shard)

    # ------------------------------------------------------------------------------------
    def training_step(self) -> None:
        if self.learner_thread is not None:
            return self._training_step_with_replay_shards()
        cfg = self.config

        # ============ 1. samples reach replay as they arrive (ALGO LOGIC) ============
        # Every actor always has one sample() call in flight; we take whichever results are
        # ready now (timeout 0) and immediately send those actors their next call. A slow
        # actor only delays its own samples, never the learner.
        if self.env_runner_group.num_remote_env_runners() > 0:
            ready = self.env_runner_group.foreach_env_runner_async_fetch_ready(
                "sample_transitions", tag=_SAMPLE_TAG, timeout_seconds=0.0)
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

    def _training_step_with_replay_shards(self) -> None:
        """The driver's part when replay and learning run apart: route the actors' requests
        and metrics, the learner's results and weights; it neither replays nor learns."""
        thread = self.learner_thread
        if thread.error is not None:
            raise RuntimeError(f"APEX's learner thread failed: {type(thread.error).__name__}: "
                               f"{thread.error}") from thread.error
        if not thread.is_alive():
            thread.start()

        # ============ 1. the actors' samples went to replay; their metrics come here ============
        ready = self.env_runner_group.fetch_ready_async_reqs(tags=_SAMPLE_TAG, timeout_seconds=0.0)
        for _, (_, env_runner_metrics) in ready:
            self.metrics.aggregate([env_runner_metrics], key=ENV_RUNNER_RESULTS)
        self._sampled_for_learner = self._sampled()
        self._agent_steps_for_learner = self.metrics.peek(
            (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={})
        # ALGO LOGIC: below `min_replay_ratio`, the actors wait for the learner to catch up
        # (each actor has at most `max_requests_in_flight_per_env_runner` requests).
        if not self._replay_ratio_too_low():
            self.env_runner_group.foreach_env_runner_async("sample_transitions", tag=_SAMPLE_TAG)

        # ============ 2. what the learner thread did since the last step ============
        learned = 0
        while True:
            try:
                self.metrics.aggregate(thread.results.get_nowait(), key=LEARNER_RESULTS)
                learned += 1
            except queue.Empty:
                break
        self._num_updates = thread.updates
        self._log_replay_ratio()

        # ============ 3. its newest weights to the actors, fire-and-forget (ALGO LOGIC) =====
        weights = thread.take_weights()
        if weights is not None:
            with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
                # as RLlib's EnvRunnerGroup.sync_weights: one copy in the object store, at
                # most `max_requests_in_flight_per_env_runner` set_state calls per actor
                state = {k: v for k, v in weights.items()
                         if k in (COMPONENT_RL_MODULE, WEIGHTS_SEQ_NO)}
                self.env_runner_group.foreach_env_runner_async_fetch_ready(
                    func="set_state", tag="set_state", kwargs={"state": ray.put(state)},
                    timeout_seconds=0.0)
        if not ready and not learned:
            time.sleep(0.002)  # PLUMBING: nothing to route until an actor or the learner is done

    # --------------------------------- metrics (PLUMBING) ---------------------------------
    def step(self) -> dict[str, Any]:
        if self.learner_thread is None:
            results = super().step()
        else:
            waited0, t0 = self.learner_thread.waiting_s, time.perf_counter()
            results = super().step()
            waited = (self.learner_thread.waiting_s - waited0) / max(time.perf_counter() - t0, 1e-9)
            sizes = ray.get([shard.size.remote() for shard in self.replay_shards])
            results[REPLAY_RESULTS]["replay_size"] = int(sum(sizes))
            results[REPLAY_RESULTS]["learner_waiting_share"] = min(1.0, waited)
        results[APEX_RESULTS] = {"actor_epsilons": dict(self.actor_epsilons)}
        return results

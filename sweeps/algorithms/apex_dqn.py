"""Ape-X DQN (Horgan et al. 2018, "Distributed Prioritized Experience Replay", arXiv 1803.00933)
on RLlib's new API stack, which no longer ships ApexDQN.

Read top to bottom, like CleanRL's ``dqn.py``:

1. how env runners (the paper's *actors*) get their fixed ε_i  — :func:`actor_epsilon`,
   :class:`ApexEnvRunner` — and turn their experience into n-step transitions
   (:func:`~sweeps.algorithms.apex_replay.n_step_transitions`);
2. how samples reach replay: asynchronously, as they arrive; the learner never waits for the
   slowest actor — :meth:`ApexDQN.training_step`, step 1;
3. how the learner trains: ``updates_per_learner_call`` prioritized minibatches per call of
   RLlib's DQN learner, then their priorities from the TD errors — step 2;
4. when weights are broadcast: every ``weights_sync_period`` learner updates, fire-and-forget —
   step 3.

Replay holds transitions in flat arrays (:class:`~sweeps.algorithms.apex_replay.PrioritizedReplay`),
as in the paper, not RLlib's episode buffer: sampling a minibatch and building its train batch
there cost ~11 ms per 64 transitions on 2 cores, which capped the learner at ~40 updates/s
(docs/benchmarks.md, "Learner updates").

Comments mark "ALGO LOGIC" where the method lives and "PLUMBING" where RLlib is wired in.
What a sweep can set (and the tuned defaults) is in :mod:`sweeps.algorithms.apex`.

Deviations from the paper, on purpose:

- New transitions enter replay with the buffer's maximum priority (as in Schaul et al. 2016)
  instead of actor-computed initial priorities.
- A chunk's last n − 1 transitions bootstrap after fewer than n steps (the next chunk of the
  episode arrives in another message) instead of waiting for it.
- The learner takes several minibatches per call and updates their priorities after the call
  (up to ``updates_per_learner_call`` − 1 updates late; the paper's learner also trains on
  prefetched batches).
- The target network is copied every ``target_network_update_freq`` *env steps sampled*
  (RLlib's DQN learner), not every 2500 learner updates.
- No evaluation of its own: the greedy (ε = 0) return a sweep compares is measured by the
  suite's evaluation protocol, the same for every algorithm (:mod:`sweeps.evaluation`).
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.dqn import DQN, DQNConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_SAMPLE_TIMER,
    REPLAY_BUFFER_UPDATE_PRIOS_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TD_ERROR_KEY,
    TIMERS,
)
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.schedules.scheduler import Scheduler

from sweeps.algorithms.apex import APEX_ALGO_DEFAULTS
from sweeps.algorithms.apex_replay import PrioritizedReplay, n_step_transitions

__all__ = ["ApexDQN", "ApexDQNConfig", "ApexEnvRunner", "actor_epsilon"]

#: Key of the APEX-only metrics in a training result.
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


class ApexEnvRunner(SingleAgentEnvRunner):
    """An Ape-X actor: RLlib's env runner whose ε-greedy module explores with its own fixed ε_i.

    Env runner ``worker_index`` k = 1..N is actor i = k − 1 of N; the driver's local env runner
    (k = 0, sampling when ``num_env_runners=0``) is the single actor i = 0 of N = 1.
    """

    def make_module(self):
        space = getattr(getattr(self, "env", None), "single_observation_space", None)
        if space is not None and not isinstance(space, gym.spaces.Box):
            # Replay stores observations as arrays (sweeps.algorithms.apex_replay).
            raise ValueError(f"APEX needs a Box observation space, got {space}")
        super().make_module()  # PLUMBING: RLlib builds the DQN RLModule (ε-greedy exploration)
        n = self.config.num_env_runners
        i, n = (0, 1) if not self.worker_index or n == 0 else (self.worker_index - 1, n)
        self.epsilon = actor_epsilon(i, n, self.config.epsilon, self.config.epsilon_alpha)
        # ALGO LOGIC: replace the module's ε schedule by this actor's constant ε_i. RLlib's DQN
        # module draws a random action with probability epsilon_schedule.get_current_value().
        if self.module is not None:
            self.module.epsilon_schedule = Scheduler(
                fixed_value_or_schedule=self.epsilon, framework="torch")

    def sample_with_metrics(self) -> tuple[dict[str, np.ndarray], dict]:
        """One ``sample()`` call (``rollout_fragment_length`` × envs steps) as n-step
        transitions (arrays keyed by :data:`~sweeps.algorithms.apex_replay.TRANSITION_KEYS`,
        rewards in the env's units), and the env runner's metrics."""
        # ALGO LOGIC: the actor, not the learner, builds the n-step transitions (paper, sec. 3).
        parts = [n_step_transitions(ep.get_observations(), ep.get_actions(), ep.get_rewards(),
                                    ep.is_terminated, self.config.n_step, self.config.gamma)
                 for ep in self.sample() if len(ep) > 0]
        transitions = ({k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts
                       else {})
        return transitions, self.get_metrics()


# ==================================== config (PLUMBING) ====================================
class ApexDQNConfig(DQNConfig):
    """DQNConfig with Ape-X's defaults and knobs.

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
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or ApexDQN)
        # ALGO LOGIC defaults: the paper's (sweeps.algorithms.apex.APEX_ALGO_DEFAULTS).
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
        # PLUMBING: actors are ApexEnvRunners; iterations are timed, not sized in env steps.
        self.env_runner_cls = ApexEnvRunner
        # Two sample() calls queued per actor: it starts the next one as soon as it returns
        # one, without waiting for the driver to collect the result and ask again.
        self.max_requests_in_flight_per_env_runner = 2
        # RLlib's Algorithm.step() would otherwise gather every actor's connector state after
        # each iteration with a blocking call, i.e. wait for the slowest actor. Ape-X's actors
        # use RLlib's stateless default connectors, so there is nothing to merge.
        self._dont_auto_sync_env_runner_states = True
        self.min_sample_timesteps_per_iteration = 0
        self.min_time_s_per_iteration = 1.0

    def training(self, *, epsilon_alpha=NotProvided, weights_sync_period=NotProvided,
                 updates_per_learner_call=NotProvided, **kwargs):
        super().training(**kwargs)
        if epsilon_alpha is not NotProvided:
            self.epsilon_alpha = float(epsilon_alpha)
        if weights_sync_period is not NotProvided:
            self.weights_sync_period = int(weights_sync_period)
        if updates_per_learner_call is not NotProvided:
            self.updates_per_learner_call = int(updates_per_learner_call)
        return self

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.epsilon, (int, float)) or not 0 < self.epsilon <= 1:
            self._value_error(f"APEX `epsilon` is the actors' base ε, a number in (0, 1]; got {self.epsilon!r}")
        if self.epsilon_alpha < 0:
            self._value_error(f"APEX `epsilon_alpha` must be >= 0; got {self.epsilon_alpha}")
        if self.weights_sync_period < 1:
            self._value_error(f"APEX `weights_sync_period` must be >= 1; got {self.weights_sync_period}")
        if self.updates_per_learner_call < 1:
            self._value_error(f"APEX `updates_per_learner_call` must be >= 1; got {self.updates_per_learner_call}")
        if not isinstance(self.n_step, int) or self.n_step < 1:
            self._value_error(f"APEX `n_step` must be an integer >= 1; got {self.n_step!r}")
        if self.env_runner_cls is None or not issubclass(self.env_runner_cls, ApexEnvRunner):
            self._value_error("APEX needs `env_runner_cls` to be ApexEnvRunner (or a subclass)")
        if self._env_to_module_connector is not None:
            self._value_error("APEX builds its train batches from the env's observations: a "
                              "custom env-to-module connector is not supported")
        if self._learner_connector is not None and not hasattr(self._learner_connector, "scale"):
            self._value_error("APEX builds its train batches without RLlib's learner connector "
                              "pipeline: only `reward_scale` is supported there")

    @property
    def reward_scale(self) -> float:
        """The learner's reward factor (:class:`sweeps.algorithms.connectors.RewardScaleConnector`)."""
        return float(getattr(self._learner_connector, "scale", 1.0))


# ===================================== the algorithm =====================================
class ApexDQN(DQN):
    """Ape-X DQN: asynchronous ε_i-greedy actors → prioritized replay → one learner.

    Registered for Tune as ``"APEX"`` (:func:`sweeps.algorithms.register_with_tune`).
    Result keys: DQN's, plus ``apex/``: ``learner_updates_lifetime``, ``learner_updates_per_s``,
    ``env_steps_sampled_per_s``, ``replay_ratio`` (replayed / sampled transitions, lifetime),
    ``replay_size`` (transitions stored), ``actor_epsilons`` (ε_i by env runner index).
    """

    @classmethod
    def get_default_config(cls) -> ApexDQNConfig:
        return ApexDQNConfig()

    def _create_local_replay_buffer_if_necessary(self, config):
        # PLUMBING: Ape-X's replay is `self.replay` (transitions), not RLlib's episode buffer.
        return None

    def setup(self, config: AlgorithmConfig) -> None:
        super().setup(config)
        rb = self.config.replay_buffer_config
        prioritized = "Prioritized" in str(rb.get("type", ""))
        self.replay = PrioritizedReplay(
            int(rb.get("capacity", APEX_ALGO_DEFAULTS["buffer_size"])),
            alpha=float(rb.get("alpha", 0.6)) if prioritized else 0.0,
            beta=float(rb.get("beta", 0.4)) if prioritized else 0.0,
            seed=self.config.seed)
        self._reward_scale = np.float32(self.config.reward_scale)
        self._num_updates = 0  # learner updates (gradient steps), lifetime
        self._updates_since_sync = 0
        if self.env_runner_group.num_remote_env_runners() > 0:
            eps = self.env_runner_group.foreach_env_runner(
                lambda er: (er.worker_index, er.epsilon), local_env_runner=False)
        else:
            eps = [(0, self.env_runner.epsilon)]
        self.actor_epsilons = {int(k): float(e) for k, e in eps}

    # ------------------------------------------------------------------------------------
    def training_step(self) -> None:
        cfg = self.config

        # ============ 1. samples reach replay as they arrive (ALGO LOGIC) ============
        # Every actor always has one sample() call in flight; we take whichever results are
        # ready now (timeout 0) and immediately send those actors their next call. A slow
        # actor only delays its own samples, never the learner.
        if self.env_runner_group.num_remote_env_runners() > 0:
            ready = self.env_runner_group.foreach_env_runner_async_fetch_ready(
                "sample_with_metrics", tag=_SAMPLE_TAG, timeout_seconds=0.0)
        else:  # num_env_runners=0: the driver is the only actor and samples synchronously.
            ready = [self.env_runner.sample_with_metrics()]
        for transitions, env_runner_metrics in ready:
            self.metrics.aggregate([env_runner_metrics], key=ENV_RUNNER_RESULTS)
            if transitions:
                with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
                    self.replay.add(transitions)

        sampled = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        batch, k = cfg.total_train_batch_size, cfg.updates_per_learner_call
        may_update = len(self.replay) > 0 and sampled >= cfg.num_steps_sampled_before_learning_starts
        if may_update and cfg.training_intensity is not None:
            # as many of the k updates as the replay ratio bound allows now
            k = min(k, int(cfg.training_intensity * sampled) // batch - self._num_updates)
            may_update = k >= 1
        if not may_update:
            if not ready:
                time.sleep(0.002)  # PLUMBING: nothing to do until an actor delivers
            return

        # ============ 2. k learner updates on prioritized minibatches (ALGO LOGIC) ============
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
            indices, weights, data = self.replay.sample(k * batch)
            data["rewards"] = data["rewards"] * self._reward_scale  # the learner's units
            data["weights"] = weights
            train_batch = MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)},
                                          env_steps=k * batch)
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            # PLUMBING: RLlib's DQN learner, k minibatches in order (no shuffle), so the TD
            # errors come back in the order of `indices`.
            learner_results = self.learner_group.update(
                batch=train_batch, minibatch_size=batch, num_epochs=1,
                shuffle_batch_per_epoch=False,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: sampled,
                    NUM_AGENT_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}),
                },
            )
        self._num_updates += k
        self._updates_since_sync += k
        # Priorities p_i = |δ_i| of the transitions just trained on (the buffer applies α).
        td_errors = []
        for res in learner_results:
            for module_results in res.values():
                if TD_ERROR_KEY in module_results:
                    td = convert_to_numpy(module_results.pop(TD_ERROR_KEY).peek())
                    td_errors.extend(np.ravel(x) for x in (td if isinstance(td, list) else [td]))
        self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        td_errors = np.concatenate(td_errors) if td_errors else np.zeros(0)
        if td_errors.shape != indices.shape:
            raise RuntimeError(
                f"APEX: the learner returned {td_errors.size} TD errors for {indices.size} "
                f"replayed transitions; priorities need one per transition, in order "
                f"(num_learners={cfg.num_learners}: use 0 or 1)")
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_UPDATE_PRIOS_TIMER)):
            self.replay.update_priorities(indices, td_errors)

        # ============ 3. broadcast weights every `weights_sync_period` updates (ALGO LOGIC) ======
        # Fire-and-forget (timeout 0): each actor applies the newest weights before its next
        # sample() call; a busy actor is not waited for.
        if self._updates_since_sync >= cfg.weights_sync_period:
            self._updates_since_sync = 0
            with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
                self.env_runner_group.sync_weights(
                    from_worker_or_learner_group=self.learner_group,
                    policies=set(learner_results[0].keys()) - {ALL_MODULES},
                    inference_only=True,
                    timeout_seconds=0.0,
                )

    # --------------------------------- metrics (PLUMBING) ---------------------------------
    def step(self) -> dict[str, Any]:
        t0, u0 = time.perf_counter(), self._num_updates
        s0 = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        results = super().step()
        dt = max(time.perf_counter() - t0, 1e-9)
        s1 = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        results[APEX_RESULTS] = {
            "learner_updates_lifetime": self._num_updates,
            "learner_updates_per_s": (self._num_updates - u0) / dt,
            "env_steps_sampled_per_s": (s1 - s0) / dt,
            "replay_ratio": (self._num_updates * self.config.total_train_batch_size / s1
                             if s1 else float("nan")),
            "replay_size": len(self.replay),
            "actor_epsilons": dict(self.actor_epsilons),
        }
        return results

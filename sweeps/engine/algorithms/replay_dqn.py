"""DQN (Mnih et al. 2015, "Human-level control through deep reinforcement learning") on RLlib's
new API stack with the suite's replay data path: the sweeps' ``DQN`` and the baseline.

RLlib's DQN, read in site-packages (``DQN._training_step_new_api_stack``, Ray 2.60), samples
its ``PrioritizedEpisodeReplayBuffer`` once per learner update: the buffer builds a
``SingleAgentEpisode`` per sampled transition and the learner connector pipeline turns those
episodes back into a train batch, ~28 ms per 64-transition update on 2 cores against ~5 ms for
the gradient step itself (docs/benchmarks.md, "Learner updates"). It has no knob for several
minibatches per learner call. That data path, not DQN, capped it at 20-28 learner updates/s;
``RLLIB-DQN`` (:mod:`sweeps.engine.algorithms.dqn`) keeps it as shipped, for comparison.

This module is the same algorithm with the Ape-X paper's data path (Horgan et al. 2018,
section 3; :mod:`sweeps.engine.algorithms.apex_replay`). Read top to bottom, like CleanRL's ``dqn.py``:

1. how experience reaches replay: every env runner samples one round (``rollout_fragment_length``
   × envs env steps) with the module's decaying ε schedule, turns it into n-step transitions
   (:meth:`TransitionEnvRunner.sample_transitions`), and the driver adds every env runner's
   round to one flat prioritized replay — :meth:`ReplayDQN.training_step`, step 1;
2. how the learner trains: as many prioritized minibatches as the replay ratio
   (``training_intensity`` = replayed / sampled transitions) allows, ``updates_per_learner_call``
   at a time through RLlib's DQN learner (double Q, dueling, n-step, Huber loss; per-update
   overhead trimmed, same results: :mod:`sweeps.engine.algorithms.dqn_learner`), then their
   priorities from the TD errors — :meth:`ReplayDQN._learn`;
3. when weights reach the env runners: after every round's updates, as RLlib's DQN does.

Comments mark "ALGO LOGIC" where the method lives and "PLUMBING" where RLlib is wired in.
:mod:`sweeps.engine.algorithms.apex_dqn` (Ape-X) reuses steps 1-2 with asynchronous actors, each
with its own fixed ε.

Deviations from RLlib's DQN, on purpose (each measured in docs/benchmarks.md):

- Replay holds n-step transitions built by the env runners in flat arrays
  (:class:`~sweeps.engine.algorithms.apex_replay.PrioritizedReplay`), not episodes; a chunk's last
  n − 1 transitions bootstrap after fewer than n steps.
- ``training_intensity`` is the replay ratio itself, counted from the first update
  (RLlib rounds it to whole sample or update calls: 2.0 gave ~3.2 with 1 env runner); None is
  one learner call per round.
- With env runners, sampling and learning overlap: each env runner has
  ``max_requests_in_flight_per_env_runner`` (default 2) rounds asked for, so it samples the
  next round while the driver trains on this one (RLlib's DQN asks for a round, waits for it,
  then learns). A round is sampled with weights up to that many rounds old, as in any
  distributed DQN whose actors are not stopped while the learner runs; a step still takes
  exactly one round from every env runner and waits for the slowest.
- No evaluation of its own: the greedy (ε = 0) return a sweep compares is measured by the
  suite's evaluation protocol, the same for every algorithm (:mod:`sweeps.engine.evaluation`).
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
    ENV_RUNNER_SAMPLING_TIMER,
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

from sweeps.engine.algorithms.apex_replay import PrioritizedReplay, n_step_transitions

__all__ = ["REPLAY_RESULTS", "ReplayDQN", "ReplayDQNConfig", "TransitionEnvRunner"]

#: Key of the replay data path's metrics in a training result (DQN and APEX).
REPLAY_RESULTS = "replay"
_ROUND_TAG = "dqn_round"


# ======================= 1. env runners hand over n-step transitions =======================
class TransitionEnvRunner(SingleAgentEnvRunner):
    """RLlib's env runner whose ``sample_transitions()`` returns one sample call's experience as
    n-step transitions (the module's own ε-greedy exploration, RLlib's DQN module).

    Raises:
        ValueError: (when the module is built) an observation space other than a Box.
    """

    #: the algorithm's name in errors
    ALGORITHM = "DQN"
    #: a parked process of RLlib's SingleAgentEnvRunner family may be re-initialised as this
    #: class and back (sweeps.engine.warm.family): it overrides only what the algorithm calls
    #: through the env runner group (make_module from __init__; sample_transitions)
    WARM_SWAPPABLE = True

    def make_module(self):
        space = getattr(getattr(self, "env", None), "single_observation_space", None)
        if space is not None and not isinstance(space, gym.spaces.Box):
            # Replay stores observations as arrays (sweeps.engine.algorithms.apex_replay).
            raise ValueError(f"{self.ALGORITHM} needs a Box observation space, got {space}")
        super().make_module()  # PLUMBING: RLlib builds the DQN RLModule

    def sample_transitions(
        self, env_steps_sampled_lifetime: int | None = None
    ) -> tuple[dict[str, np.ndarray], dict]:
        """One ``sample()`` call (``rollout_fragment_length`` × envs env steps) as n-step
        transitions (arrays keyed by :data:`~sweeps.engine.algorithms.apex_replay.TRANSITION_KEYS`,
        rewards in the env's units; empty dict if no env step), and the env runner's metrics.

        Args:
            env_steps_sampled_lifetime: env steps all env runners have sampled so far, as the
                driver counts them: the clock of the module's ε schedule. RLlib's env runner
                learns it only from the state sync that ``Algorithm.step`` runs after each
                iteration, which this algorithm turns off; without it, every round would explore
                at the schedule's start (ε ≈ 1 for ever).
        """
        if env_steps_sampled_lifetime is not None:
            # PLUMBING: SingleAgentEnvRunner._sample reads ε's clock from this attribute.
            self.num_env_steps_sampled_lifetime = int(env_steps_sampled_lifetime)
        # ALGO LOGIC: the env runner, not the learner, builds the n-step transitions.
        parts = [
            n_step_transitions(
                ep.get_observations(),
                ep.get_actions(),
                ep.get_rewards(),
                ep.is_terminated,
                self.config.n_step,
                self.config.gamma,
            )
            for ep in self.sample()
            if len(ep) > 0
        ]
        transitions = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
        return transitions, self.get_metrics()


# ==================================== config (PLUMBING) ====================================
class ReplayDQNConfig(DQNConfig):
    """``DQNConfig`` for :class:`ReplayDQN`.

    Extra ``training()`` key:
        updates_per_learner_call: prioritized minibatches of ``train_batch_size`` sampled at
            once and trained on in one call of the learner (default 8); their priorities are
            updated after the call.

    ``training_intensity`` is the replay ratio (replayed / sampled transitions, counted from
    the first learner update); None: one learner call per sample round.
    ``replay_buffer_config``'s ``type`` only says prioritized (a name with "Prioritized") or
    uniform; its ``capacity``, ``alpha`` and ``beta`` size and shape the flat replay.
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or ReplayDQN)
        self.updates_per_learner_call = 8
        # PLUMBING: env runners hand over transitions; iterations are timed, not sized.
        self.env_runner_cls = TransitionEnvRunner
        # Rounds asked for per env runner: with 2, it samples the next round while the driver
        # collects this one and trains on it (1: it waits for the driver's next request).
        self.max_requests_in_flight_per_env_runner = 2
        # RLlib's Algorithm.step() would otherwise gather every env runner's connector state
        # after each iteration with a blocking call. DQN's env runners use RLlib's stateless
        # default connectors, so there is nothing to merge.
        self._dont_auto_sync_env_runner_states = True
        self.min_sample_timesteps_per_iteration = 0
        self.min_time_s_per_iteration = 1.0

    def get_default_learner_class(self):
        """:class:`~sweeps.engine.algorithms.dqn_learner.ReplayDQNTorchLearner` (torch only)."""
        if self.framework_str != "torch":
            raise ValueError(
                f"{self.algo_class.__name__} needs framework 'torch', got {self.framework_str!r}"
            )
        from sweeps.engine.algorithms.dqn_learner import ReplayDQNTorchLearner

        return ReplayDQNTorchLearner

    def training(self, *, updates_per_learner_call=NotProvided, **kwargs):
        super().training(**kwargs)
        if updates_per_learner_call is not NotProvided:
            self.updates_per_learner_call = int(updates_per_learner_call)
        return self

    def validate(self) -> None:
        super().validate()
        name = self.algo_class.__name__
        if self.updates_per_learner_call < 1:
            self._value_error(
                f"{name} `updates_per_learner_call` must be >= 1; got "
                f"{self.updates_per_learner_call}"
            )
        if self.training_intensity is not None and not self.training_intensity > 0:
            self._value_error(
                f"{name} `training_intensity` (replayed / sampled transitions) "
                f"must be > 0 or None; got {self.training_intensity!r}"
            )
        if not isinstance(self.n_step, int) or self.n_step < 1:
            self._value_error(f"{name} `n_step` must be an integer >= 1; got {self.n_step!r}")
        if self.env_runner_cls is None or not issubclass(self.env_runner_cls, TransitionEnvRunner):
            self._value_error(f"{name} needs `env_runner_cls` to be a TransitionEnvRunner")
        if self._env_to_module_connector is not None:
            self._value_error(
                f"{name} builds its train batches from the env's observations: "
                "a custom env-to-module connector is not supported"
            )
        if self._learner_connector is not None and not hasattr(self._learner_connector, "scale"):
            self._value_error(
                f"{name} builds its train batches without RLlib's learner "
                "connector pipeline: only `reward_scale` is supported there"
            )

    @property
    def reward_scale(self) -> float:
        """The learner's reward factor (:class:`sweeps.engine.algorithms.connectors.RewardScaleConnector`)."""
        return float(getattr(self._learner_connector, "scale", 1.0))


# ===================================== the algorithm =====================================
class ReplayDQN(DQN):
    """DQN: env runners → n-step transitions → flat prioritized replay → RLlib's DQN learner
    (:class:`~sweeps.engine.algorithms.dqn_learner.ReplayDQNTorchLearner`).

    Result keys: DQN's, plus ``replay/``: ``learner_updates_lifetime``,
    ``learner_updates_per_s`` (this iteration), ``env_steps_sampled_per_s``, ``replay_ratio``
    (replayed / sampled transitions, lifetime) and ``replay_size`` (transitions stored).
    """

    @classmethod
    def get_default_config(cls) -> ReplayDQNConfig:
        return ReplayDQNConfig()

    def _create_local_replay_buffer_if_necessary(self, config):
        # PLUMBING: the replay is `self.replay` (transitions), not RLlib's episode buffer.
        return None

    def setup(self, config: AlgorithmConfig) -> None:
        super().setup(config)
        capacity, alpha, beta = self._replay_settings()
        self.replay = PrioritizedReplay(capacity, alpha=alpha, beta=beta, seed=self.config.seed)
        self._reward_scale = np.float32(self.config.reward_scale)
        self._num_updates = 0  # learner updates (gradient steps), lifetime
        self._pipeline_depth = max(1, int(self.config.max_requests_in_flight_per_env_runner))
        self._rounds_requested = self._rounds_collected = 0

    def _replay_settings(self) -> tuple[int, float, float]:
        """(capacity in transitions, α, β) from ``replay_buffer_config``: α = β = 0 (uniform)
        unless its ``type`` names a prioritized buffer."""
        rb = self.config.replay_buffer_config
        prioritized = "Prioritized" in str(rb.get("type", ""))
        return (
            int(rb.get("capacity", 50_000)),
            float(rb.get("alpha", 0.6)) if prioritized else 0.0,
            float(rb.get("beta", 0.4)) if prioritized else 0.0,
        )

    # --------------------------------------------------------------------------------------
    def training_step(self) -> None:
        cfg = self.config

        # ============ 1. one round from every env runner into replay (ALGO LOGIC) ============
        # Synchronous, as RLlib's DQN: a step takes one round from every env runner and waits
        # for the slowest. Pipelined: each env runner has `max_requests_in_flight_per_env_runner`
        # rounds asked for, so it samples the next round while the driver trains on this one.
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            if self.env_runner_group.num_remote_env_runners() > 0:
                self._request_rounds()
                tag = f"{_ROUND_TAG}{self._rounds_collected % self._pipeline_depth}"
                ready = [
                    r
                    for _, r in self.env_runner_group.fetch_ready_async_reqs(
                        tags=tag, timeout_seconds=cfg.sample_timeout_s
                    )
                ]
                self._rounds_collected += 1
                self._request_rounds()
            else:  # num_env_runners=0: the driver samples, then learns.
                ready = [self.env_runner.sample_transitions(self._sampled())]
        self._add_to_replay(ready)

        # ============ 2. learner updates at the replay ratio (ALGO LOGIC) ============
        due = self._updates_due()
        learner_results = None
        while due > 0:
            k = min(due, cfg.updates_per_learner_call)
            learner_results = self._learn(k)
            due -= k

        # ============ 3. the new weights to the env runners (ALGO LOGIC) ============
        # Fire-and-forget, as RLlib's DQN: each env runner applies them before its next round.
        if learner_results is not None:
            self._broadcast_weights(learner_results)

    def _request_rounds(self) -> None:
        """Ask every env runner for rounds until ``max_requests_in_flight_per_env_runner`` are
        in flight; round r carries the tag ``dqn_round{r mod depth}``, so a fetch by tag
        takes exactly the oldest round of each env runner."""
        while self._rounds_requested - self._rounds_collected < self._pipeline_depth:
            tag = f"{_ROUND_TAG}{self._rounds_requested % self._pipeline_depth}"
            self.env_runner_group.foreach_env_runner_async(
                "sample_transitions",
                tag=tag,
                kwargs={"env_steps_sampled_lifetime": self._sampled()},
            )
            self._rounds_requested += 1

    def _sampled(self) -> int:
        return int(
            self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        )

    def _updates_due(self) -> int:
        """Learner updates to do now: with ``training_intensity`` ρ, enough that replayed /
        sampled transitions since learning started reach ρ; without, one learner call."""
        cfg = self.config
        sampled = self._sampled()
        start = cfg.num_steps_sampled_before_learning_starts
        if len(self.replay) == 0 or sampled < start:
            return 0
        if cfg.training_intensity is None:
            return cfg.updates_per_learner_call
        replayed_due = cfg.training_intensity * (sampled - start)
        return max(0, int(replayed_due // cfg.total_train_batch_size) - self._num_updates)

    # ----------------------------- shared with Ape-X (ALGO LOGIC) -----------------------------
    def _add_to_replay(self, ready: list[tuple[dict[str, np.ndarray], dict]]) -> None:
        """Add each ``(transitions, env runner metrics)`` pair's transitions to replay."""
        for transitions, env_runner_metrics in ready:
            self.metrics.aggregate([env_runner_metrics], key=ENV_RUNNER_RESULTS)
            if transitions:
                # Ape-X's actors send their transitions' TD errors (initial priorities); the
                # suite's DQN's do not, and its new transitions enter at the largest priority
                td_errors = transitions.pop("td_errors", None)
                with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
                    self.replay.add(transitions, td_errors)
        self._log_replay_ratio()

    def _log_replay_ratio(self) -> None:
        """The replay ratio so far (replayed / sampled transitions) into RLlib's metrics, so
        that a result read between two training steps (the evaluation's) has it too."""
        sampled = self._sampled()
        if sampled:
            self.metrics.log_value(
                (REPLAY_RESULTS, "replay_ratio"),
                self._num_updates * self.config.total_train_batch_size / sampled,
                reduce="mean",
                window=1,
            )

    def _learn(self, k: int) -> list[dict]:
        """``k`` learner updates on ``k`` prioritized minibatches of ``train_batch_size``, in one
        call of RLlib's DQN learner; then their priorities p_i = |δ_i| (the buffer applies α).

        Returns:
            The learner group's results (TD errors removed).

        Raises:
            RuntimeError: as :meth:`_update_learner`.
        """
        batch = self.config.total_train_batch_size
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
            indices, weights, data = self.replay.sample(k * batch)
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results, td_errors = self._update_learner(
                indices,
                weights,
                data,
                self._sampled(),
                self.metrics.peek(
                    (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}
                ),
            )
        self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_UPDATE_PRIOS_TIMER)):
            self.replay.update_priorities(indices, td_errors)
        self._log_replay_ratio()
        return learner_results

    def _update_learner(
        self,
        indices: np.ndarray,
        weights: np.ndarray,
        data: dict[str, np.ndarray],
        env_steps_sampled: int,
        agent_steps_sampled: dict,
    ) -> tuple[list[dict], np.ndarray]:
        """One call of RLlib's DQN learner on a replayed batch of k × ``train_batch_size``
        transitions (``indices`` and importance ``weights``, shape (k·batch,)), k minibatches in
        order. Touches neither replay nor ``self.metrics``.

        Returns:
            (the learner group's results, TD errors removed; the TD errors, shape (k·batch,), in
            the order of ``indices``).

        With M = ``num_learners`` > 1 (RLlib's synchronous data-parallel learners: torch DDP
        averages the gradients of every minibatch over them), learner j takes the j-th of M
        equal slices of each minibatch, so each update still trains on the whole minibatch of
        ``train_batch_size`` transitions, and the TD errors are put back in the order of
        ``indices``.

        Raises:
            RuntimeError: the learners returned a TD error count other than k × batch.
        """
        batch = self.config.total_train_batch_size
        n = len(indices)
        m = max(1, int(self.config.num_learners or 0))
        data = dict(data)
        data["rewards"] = data["rewards"] * self._reward_scale  # the learner's units
        data["weights"] = weights
        # learner j's rows: the j-th slice of each of the k minibatches (one learner: all)
        rows = [r.ravel() for r in np.arange(n).reshape(n // batch, m, batch // m).swapaxes(0, 1)]
        shards = [
            MultiAgentBatch(
                {
                    DEFAULT_MODULE_ID: SampleBatch(
                        data if m == 1 else {k: v[r] for k, v in data.items()}
                    )
                },
                env_steps=n // m,
            )
            for r in rows
        ]
        # PLUMBING: RLlib's DQN learner(s), the minibatches in order (no shuffle), so each
        # learner's TD errors come back in the order of its rows.
        learner_results = self.learner_group.update(
            **({"batch": shards[0]} if m == 1 else {"batches": shards}),
            minibatch_size=batch // m,
            num_epochs=1,
            shuffle_batch_per_epoch=False,
            timesteps={
                NUM_ENV_STEPS_SAMPLED_LIFETIME: env_steps_sampled,
                NUM_AGENT_STEPS_SAMPLED_LIFETIME: agent_steps_sampled,
            },
        )
        self._num_updates += n // batch
        per_learner = []
        for res in learner_results:
            td_errors = []
            for module_results in res.values():
                if TD_ERROR_KEY in module_results:
                    td = convert_to_numpy(module_results.pop(TD_ERROR_KEY).peek())
                    td_errors.extend(np.ravel(x) for x in (td if isinstance(td, list) else [td]))
            if td_errors:
                per_learner.append(np.concatenate(td_errors))
        if [x.size for x in per_learner] != [n // m] * m:
            raise RuntimeError(
                f"{type(self).__name__}: the learners returned "
                f"{[x.size for x in per_learner]} TD errors for {n} replayed transitions over "
                f"{m} learner(s); priorities need one per transition, in order"
            )
        if m == 1:
            return learner_results, per_learner[0]
        td_errors = np.empty(n)
        for r, x in zip(rows, per_learner, strict=True):
            td_errors[r] = x
        return learner_results, td_errors

    def _broadcast_weights(self, learner_results: list[dict]) -> None:
        """The learner's weights to every env runner, fire-and-forget (timeout 0): each applies
        them before its next sample call; a busy one is not waited for."""
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group,
                policies=set(learner_results[0].keys()) - {ALL_MODULES},
                inference_only=True,
                timeout_seconds=0.0,
            )

    # --------------------------------- metrics (PLUMBING) ---------------------------------
    def step(self) -> dict[str, Any]:
        t0, u0, s0 = time.perf_counter(), self._num_updates, self._sampled()
        results = super().step()
        dt = max(time.perf_counter() - t0, 1e-9)
        s1 = self._sampled()
        results[REPLAY_RESULTS] = {
            "learner_updates_lifetime": self._num_updates,
            "learner_updates_per_s": (self._num_updates - u0) / dt,
            "env_steps_sampled_per_s": (s1 - s0) / dt,
            "replay_ratio": (
                self._num_updates * self.config.total_train_batch_size / s1 if s1 else float("nan")
            ),
            "replay_size": len(self.replay),
        }
        return results

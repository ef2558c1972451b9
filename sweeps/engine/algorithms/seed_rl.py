"""SEED RL (Espeholt et al. 2020, "SEED RL: Scalable and Efficient Deep-RL with Accelerated
Central Inference", arXiv 1910.06591) on RLlib's new API stack.

The paper's architecture: actors only step envs; every actor sends its observation to a central
inference server that batches the observations of all actors, runs the policy once per batch
on the learner's accelerator and sends the actions back; trajectories are assembled next to the
learner, which trains on them with V-trace. Actors are then light (no model, no framework):
many envs can wait at once on a machine whose cores would otherwise each hold a model.

Here:

- actors are :class:`~sweeps.engine.algorithms.seed_actor.SeedEnvRunner` Ray actors (no torch,
  no RLlib), ``num_env_runners`` of them with ``num_envs_per_env_runner`` envs each, stepped
  ``sync`` (in turn) or ``async`` (one process per env) as ``gym_env_vectorize_mode`` says;
- the inference server is one Ray actor, :class:`InferenceServer`, holding a copy of the
  RLModule: it answers when ``inference_batch_size`` observations wait or
  ``inference_timeout_ms`` passed since the first of them, and cuts each env's trajectory into
  episode chunks of ``rollout_fragment_length`` env steps (RLlib's own layout, so that
  IMPALA's loss reads them as it reads an env runner's);
- the learner is RLlib's IMPALA learner (V-trace loss, the suite's reward scale and clocks) in
  the trial's process; it trains on ``train_batch_size`` env steps at a time and sends its
  weights to the server every ``broadcast_interval`` updates.

Deviations from the paper (docs/design.md, "SEED"): Ray actor calls, not gRPC streams; the
inference server is a process beside the learner, not the learner's own accelerator (its
weights are a copy, refreshed every ``broadcast_interval`` updates); no R2D2 (recurrent,
replay) variant, V-trace only; one learner.
"""

from __future__ import annotations

import time
from typing import Any

import ray
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.impala import IMPALA, IMPALAConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.training_data import TrainingData
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    EPISODE_LEN_MEAN,
    EPISODE_RETURN_MEAN,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_EPISODES_LIFETIME,
)

from sweeps.engine.algorithms.impala import without_state_server
from sweeps.engine.algorithms.seed_inference import InferenceServer

__all__ = ["SEED", "SEEDConfig", "InferenceServer", "default_inference_batch_size"]

#: Key of the SEED results: the inference server's batches (``SEED_RESULTS`` in ``train()``).
SEED_RESULTS = "seed"


def default_inference_batch_size(concurrent_envs: int) -> int:
    """``inference_batch_size`` when a sweep sets none: half the trial's concurrent envs
    (at least 1).

    Why half: a batch of all of them would make every actor wait for the slowest one's step
    each time (the envs would step in lock-step across actors, the sync layout's limit this
    architecture exists to lift); a batch of one would run the policy once per observation.
    With half, one half of the actors step while the other half's observations are served;
    the paper tunes it per setup (its ``inference_batch_size`` flag, auto-tuned by default).
    """
    return max(1, int(concurrent_envs) // 2)


class SEEDConfig(IMPALAConfig):
    """IMPALA's config plus SEED's own settings (paper names where RLlib has none).

    Args (of :meth:`training`):
        inference_batch_size: observations the server waits for before it runs the policy
            (None: :func:`default_inference_batch_size` of the trial's concurrent envs).
        inference_timeout_ms: milliseconds the server waits, after the first observation of a
            batch, for the rest (paper's timeout on the batch). Default 2 ms: one Cabs env
            step costs ~0.05 ms and one Ray actor call ~0.5 ms on 2 cores, so a waiting batch
            never holds the first actor for more than a few calls' time.
        inference_num_cpus, inference_num_gpus: what Ray reserves for the inference server
            (default 0 CPUs: it shares the learner's, as the paper's shares the learner's
            accelerator; set ``inference_num_gpus`` to run the policy on a GPU).
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SEED)
        self.inference_batch_size: int | None = None
        self.inference_timeout_ms = 2.0
        self.inference_num_cpus = 0.0
        self.inference_num_gpus = 0.0
        # weights go to the server after every update: it is the learner's policy (the paper's
        # inference uses the learner's parameters themselves)
        self.broadcast_interval = 1
        without_state_server(self)

    def training(
        self,
        *,
        inference_batch_size=NotProvided,
        inference_timeout_ms=NotProvided,
        inference_num_cpus=NotProvided,
        inference_num_gpus=NotProvided,
        **kwargs,
    ):
        super().training(**kwargs)
        if inference_batch_size is not NotProvided:
            self.inference_batch_size = (
                None if inference_batch_size is None else int(inference_batch_size)
            )
        if inference_timeout_ms is not NotProvided:
            self.inference_timeout_ms = float(inference_timeout_ms)
        if inference_num_cpus is not NotProvided:
            self.inference_num_cpus = float(inference_num_cpus)
        if inference_num_gpus is not NotProvided:
            self.inference_num_gpus = float(inference_num_gpus)
        return self

    def validate(self) -> None:
        super().validate()
        if self.inference_batch_size is not None and self.inference_batch_size < 1:
            self._value_error(
                f"SEED `inference_batch_size` must be >= 1 or None; got {self.inference_batch_size}"
            )
        if not self.inference_timeout_ms >= 0:
            self._value_error(
                f"SEED `inference_timeout_ms` must be >= 0; got {self.inference_timeout_ms}"
            )
        if self.inference_num_cpus < 0 or self.inference_num_gpus < 0:
            self._value_error("SEED `inference_num_cpus` and `inference_num_gpus` must be >= 0")
        if self.num_learners > 0:
            self._value_error(
                "SEED has one learner, in the trial's process: num_learners must "
                f"be 0; got {self.num_learners}"
            )


class SEED(IMPALA):
    """SEED RL (module docstring): light actors, central batched inference, V-trace learner.

    ``train()`` results carry, besides RLlib's, ``seed/inference_batch_mean`` (observations
    per forward pass, mean over the iteration) and ``seed/first_env_step_s`` (seconds from the
    Algorithm's setup start to the first actor's first env step).
    """

    @classmethod
    def get_default_config(cls) -> SEEDConfig:
        return SEEDConfig()

    @classmethod
    def default_resource_request(cls, config):
        """IMPALA's request (the trial's process, one bundle per actor with
        ``num_cpus_per_env_runner``) plus one bundle for the inference server when it reserves
        anything (``inference_num_cpus``/``inference_num_gpus``)."""
        from ray.tune import PlacementGroupFactory

        pgf = super().default_resource_request(config)
        cfg = (
            config
            if isinstance(config, AlgorithmConfig)
            else cls.get_default_config().update_from_dict(config)
        )
        bundles = [dict(b) for b in pgf.bundles]
        if cfg.inference_num_cpus > 0 or cfg.inference_num_gpus > 0:
            bundles.append({"CPU": cfg.inference_num_cpus, "GPU": cfg.inference_num_gpus})
        return PlacementGroupFactory(bundles=bundles, strategy=cfg.placement_strategy)

    def setup(self, config: AlgorithmConfig) -> None:
        t0 = time.time()
        cfg = self.config
        self._actors_n = int(cfg.num_env_runners)
        self._envs_n = int(cfg.num_envs_per_env_runner)
        mode = str(getattr(cfg.gym_env_vectorize_mode, "value", cfg.gym_env_vectorize_mode))
        self._mode = mode.lower()
        # RLlib's part runs with no remote env runner and one sync env in the trial's process
        # (its spaces and connectors; never sampled): the actors are SEED's own.
        local = cfg.copy(copy_frozen=False)
        local.env_runners(
            num_env_runners=0, num_envs_per_env_runner=1, gym_env_vectorize_mode="sync"
        )
        local.freeze()
        self.config = local
        super().setup(local)
        self._start_actors(cfg, t0)

    def _env_and_creator(self) -> tuple[str, bool, float | None, Any]:
        """The env as :func:`envs.make_env` takes it, whether sub-envs recover from faults,
        their step timeout (``env_step_timeout_s``), and a user's own registered creator (None
        for the suite's and gymnasium's envs)."""
        import envs
        from sweeps.engine.env_faults import parse_recovering_name

        name, recover, timeout = parse_recovering_name(str(self.config.env))
        name = envs.env_id_of_step_cost_name(name)
        creator = None
        if name not in envs.RLLIB_ENVS and ":" not in name:
            from ray.tune.registry import ENV_CREATOR, _global_registry

            if _global_registry.contains(ENV_CREATOR, name):
                creator = _global_registry.get(ENV_CREATOR, name)
        return name, recover, timeout, creator

    def _start_actors(self, cfg: AlgorithmConfig, t0: float) -> None:
        from sweeps.engine.algorithms.seed_actor import SeedEnvRunner

        runner = self.env_runner
        obs_space = runner.env.single_observation_space
        act_space = runner.env.single_action_space
        spec = self.config.get_rl_module_spec(
            spaces={DEFAULT_MODULE_ID: (obs_space, act_space)}, inference_only=False
        )
        state = self.learner_group.get_weights(module_ids=[DEFAULT_MODULE_ID])[DEFAULT_MODULE_ID]
        concurrent = self._actors_n * self._envs_n
        batch = cfg.inference_batch_size or default_inference_batch_size(concurrent)
        seed = cfg.seed
        server_cls = ray.remote(num_cpus=cfg.inference_num_cpus, num_gpus=cfg.inference_num_gpus)(
            InferenceServer
        )
        self._server = server_cls.options(max_concurrency=max(16, 4 * self._actors_n)).remote(
            spec,
            state,
            obs_space,
            act_space,
            self._envs_n,
            int(cfg.get_rollout_fragment_length()),
            batch,
            cfg.inference_timeout_ms / 1000.0,
            seed,
        )
        env_id, recover, timeout, creator = self._env_and_creator()
        actor_cls = ray.remote(num_cpus=cfg.num_cpus_per_env_runner, max_concurrency=2)(
            SeedEnvRunner
        )
        self._actors = [
            actor_cls.remote(
                i,
                env_id,
                dict(cfg.env_config),
                self._envs_n,
                self._mode,
                recover,
                None if seed is None else seed * 10_000 + i * self._envs_n,
                self._server,
                creator,
                timeout,
            )
            for i in range(self._actors_n)
        ]
        ray.get([a.ready.remote() for a in self._actors] + [self._server.take.remote(0, 0.0)])
        self._runs = [a.run.remote() for a in self._actors]
        self._setup_started = t0
        self._first_env_step_s = float("nan")
        self._buffer: list = []
        self._buffered_steps = 0
        self._updates_since_sync = 0
        self._faults_logged = 0  # the actors' fault count already logged (theirs is lifetime)

    # ------------------------------------------------------------------------------------
    def _check_actors(self) -> None:
        done, _ = ray.wait(self._runs, num_returns=len(self._runs), timeout=0)
        for ref in done:
            ray.get(ref)  # raises the actor's error
            raise RuntimeError("a SEED actor stopped while the trial runs")

    def training_step(self) -> None:
        cfg = self.config
        want = cfg.total_train_batch_size
        got = ray.get(self._server.take.remote(want - self._buffered_steps, 0.5))
        self._log_sampling(got)
        self._buffer.extend(got["chunks"])
        self._buffered_steps += sum(len(c) for c in got["chunks"])
        self._check_actors()
        # asked as soon as env steps arrive, so an iteration that reports env steps reports this
        if self._first_env_step_s != self._first_env_step_s and got["env_steps"]:  # NaN
            firsts = [t for t in ray.get([a.first_step.remote() for a in self._actors]) if t]
            if firsts:
                self._first_env_step_s = min(firsts) - self._setup_started
        if self._buffered_steps < want:
            return
        episodes, self._buffer, self._buffered_steps = self._buffer, [], 0
        timesteps = {
            NUM_ENV_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0
            ),
            NUM_ENV_STEPS_TRAINED_LIFETIME: self.metrics.peek(
                (LEARNER_RESULTS, ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME), default=0
            ),
        }
        results = self.learner_group.update(
            training_data=TrainingData(episodes=episodes),
            timesteps=timesteps,
            num_epochs=cfg.num_epochs,
            minibatch_size=cfg.minibatch_size,
            shuffle_batch_per_epoch=cfg.shuffle_batch_per_epoch,
        )
        self.metrics.aggregate(results, key=LEARNER_RESULTS)
        self._updates_since_sync += 1
        if self._updates_since_sync >= cfg.broadcast_interval:
            self._updates_since_sync = 0
            state = self.learner_group.get_weights(module_ids=[DEFAULT_MODULE_ID])
            self._server.set_weights.remote(state[DEFAULT_MODULE_ID])

    def _log_sampling(self, got: dict[str, Any]) -> None:
        from sweeps.engine.env_faults import FAULTS_METRIC

        m = self.metrics
        m.log_value(
            (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME),
            got["env_steps"],
            reduce="lifetime_sum",
            with_throughput=True,
        )
        m.log_value(
            (ENV_RUNNER_RESULTS, NUM_EPISODES_LIFETIME), len(got["returns"]), reduce="lifetime_sum"
        )
        win = self.config.metrics_num_episodes_for_smoothing
        for ret, length in got["returns"]:
            m.log_value((ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN), ret, window=win)
            m.log_value((ENV_RUNNER_RESULTS, EPISODE_LEN_MEAN), length, window=win)
        faults = got["env_faults"] - self._faults_logged
        self._faults_logged = got["env_faults"]
        if faults:
            m.log_value((ENV_RUNNER_RESULTS, FAULTS_METRIC), faults, reduce="lifetime_sum")
        if got["batches"]:
            m.log_value(
                (SEED_RESULTS, "inference_batch_mean"),
                got["batch_rows"] / got["batches"],
                window=20,
            )

    def remote_peak_rss_mib(self, timeout_s: float = 2.0) -> float:
        """Peak RSS (MiB) of the actors (with their async sub-env processes) and the inference
        server, each its own peak, summed; those that do not answer in ``timeout_s`` count 0."""
        refs = [a.peak_rss_mib.remote() for a in self._actors] + [
            self._server.peak_rss_mib.remote()
        ]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        return float(sum(ray.get(ready)))

    def step(self) -> dict[str, Any]:
        results = super().step()
        results.setdefault(SEED_RESULTS, {})["first_env_step_s"] = self._first_env_step_s
        return results

    def cleanup(self) -> None:
        server, actors = getattr(self, "_server", None), getattr(self, "_actors", [])
        if server is not None:
            try:
                ray.get(server.stop.remote(), timeout=5)
            except Exception:  # noqa: BLE001 - the trial ends whatever the server says
                pass
        for a in actors:
            try:
                ray.get(a.close.remote(), timeout=5)
            except Exception:  # noqa: BLE001
                pass
            ray.kill(a)
        if server is not None:
            ray.kill(server)
        super().cleanup()

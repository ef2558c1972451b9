"""Gorila DQN (Nair et al. 2015, "Massively Parallel Methods for Deep Reinforcement Learning",
arXiv 1507.04296) on RLlib's new API stack.

The paper's architecture: actors act with ε-greedy copies of the Q-network and feed replay
memory; M learners each sample minibatches from replay, compute DQN gradients with their own
copy of the network and send them to a parameter server, which applies them asynchronously;
learners and actors pull the server's parameters every few updates; the server holds the
target network. It asks a question no single-learner design can: when the learner is the
bottleneck, do more learners help, and at what communication cost?

Read top to bottom, like CleanRL's ``dqn.py``:

1. the parameter server (:class:`ParameterServer`, one Ray actor): Adam on the online
   network, a version counter, the target network copied every ``target_update_period``
   applied updates, and gradients older than ``max_gradient_staleness`` versions dropped and
   counted;
2. the learners (:class:`GorilaLearner`, ``num_learners`` Ray actors): each holds its own
   replay shard, samples uniform minibatches of ``train_batch_size``, computes the DQN loss's
   gradient (double Q, n-step, Huber: RLlib's DQN module's heads) and sends it with the version
   of the parameters it used; it pulls the server's parameters every
   ``parameter_sync_period`` of its own updates;
3. the driver (:class:`Gorila`): env runners (the paper's actors; the suite's DQN env runners,
   their own decaying ε) sample n-step transitions, which the driver deals out to the learners'
   shards in turn; it broadcasts the server's weights to the actors every
   ``weights_sync_period`` applied updates.

Replay: one shard per learner (the paper's "local replay memory", its bundled layout), not
one shared buffer: a shared buffer is one process every learner's minibatches pass through,
the bottleneck Gorila exists to spread. Each transition goes to one shard, so each learner
replays 1/M of the experience, and ``training_intensity`` bounds each shard's replay ratio:
the M learners together replay at most ``training_intensity`` × sampled transitions, the same
bound as the suite's DQN whatever M. More learners then pay only where one learner could not
keep that ratio.

Deviations from the paper (docs/design.md, "Gorila"): Adam at the server (the paper's
AdaGrad/RMSProp: the suite's DQN's optimiser, so learner counts compare at equal settings);
uniform replay per shard as in the paper (no prioritization); the server is one actor, not
sharded by parameter (the Cabs network is 9 k parameters); actors pull weights when the
driver broadcasts them rather than on their own step count; the greedy return a sweep
compares is the suite's evaluation protocol's (:mod:`sweeps.engine.evaluation`), on the
server's weights.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import ray
import torch
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS

from sweeps.engine.algorithms.replay_dqn import ReplayDQN, ReplayDQNConfig

__all__ = [
    "GORILA_RESULTS",
    "Gorila",
    "GorilaConfig",
    "GorilaLearner",
    "ParameterServer",
    "dqn_loss",
    "online_parameters",
]

#: Key of Gorila's own results in a training result.
GORILA_RESULTS = "gorila"
_SAMPLE_TAG = "gorila_sample"


def _param_bytes(arrays) -> int:
    return int(sum(np.asarray(a).nbytes for a in arrays))


def online_parameters(module) -> list:
    """The online network's parameters of a DQN RLModule, in ``module.parameters()`` order:
    the target networks' are left out (the server copies them, gradients never reach them)."""
    target = {id(p) for _, t in module.get_target_network_pairs() for p in t.parameters()}
    return [p for p in module.parameters() if id(p) not in target]


def dqn_loss(module, batch: dict[str, np.ndarray], gamma: float, double_q: bool, scale: float):
    """The DQN loss of one minibatch of n-step transitions (Mnih et al. 2015, with van Hasselt
    et al. 2016's double Q when ``double_q``): mean Huber(Q(s, a) − y) with
    y = scale · r + γ^n · (1 − terminated) · Q_target(s', a*), a* = argmax_a Q(s', a) (double Q)
    or argmax_a Q_target(s', a).

    Args:
        module: RLlib's DQN RLModule (learner-side, target networks made).
        batch: arrays keyed by :data:`~sweeps.engine.algorithms.apex_replay.TRANSITION_KEYS`,
            each of B rows.
        gamma: discount.
        double_q: use the online network to pick a*.
        scale: the learner's reward factor (``reward_scale``).

    Returns:
        The scalar loss tensor (its graph on ``module``'s online parameters).
    """
    from ray.rllib.algorithms.dqn.dqn_learner import (
        QF_NEXT_PREDS,
        QF_PREDS,
        QF_TARGET_NEXT_PREDS,
    )
    from ray.rllib.core.columns import Columns

    obs = torch.as_tensor(batch["obs"], dtype=torch.float32)
    new_obs = torch.as_tensor(batch["new_obs"], dtype=torch.float32)
    actions = torch.as_tensor(batch["actions"]).long().reshape(-1, 1)
    out = module.forward_train({Columns.OBS: obs, Columns.NEXT_OBS: new_obs})
    q = out[QF_PREDS].gather(1, actions).squeeze(1)
    with torch.no_grad():
        target_next = out[QF_TARGET_NEXT_PREDS]
        if double_q:
            pick = out[QF_NEXT_PREDS].argmax(dim=-1, keepdim=True)
        else:
            pick = target_next.argmax(dim=-1, keepdim=True)
        q_next = target_next.gather(1, pick).squeeze(1)
        rewards = torch.as_tensor(batch["rewards"], dtype=torch.float32) * scale
        done = torch.as_tensor(batch["terminateds"], dtype=torch.float32)
        n = torch.as_tensor(batch["n_step"], dtype=torch.float32)
        y = rewards + gamma**n * (1.0 - done) * q_next
    return torch.nn.functional.huber_loss(q, y)


# ================================ 1. the parameter server ================================
class ParameterServer:
    """Gorila's parameter server (Nair et al. 2015, section 4): applies learners' gradients
    asynchronously, holds the target network.

    Args:
        spec: the RLModule spec (learner-side) of the trial's DQN module.
        state: its initial weights (``RLModule.get_state()``).
        lr: Adam's learning rate.
        grad_clip: global-norm clip of each gradient (None: none).
        target_update_period: applied updates between two copies of the online network into
            the target network (paper: N; ≥ 1).
        max_gradient_staleness: a gradient computed on parameters more than this many versions
            old is dropped and counted (None: none dropped).
    """

    def __init__(
        self,
        spec,
        state: dict,
        lr: float,
        grad_clip: float | None,
        target_update_period: int,
        max_gradient_staleness: int | None,
    ):
        torch.set_num_threads(1)
        self.module = spec.build()
        self.module.make_target_networks()
        self.module.set_state(state)
        self._params = online_parameters(self.module)
        self._opt = torch.optim.Adam(self._params, lr=lr)
        self.grad_clip = grad_clip
        self.target_update_period = int(target_update_period)
        self.max_gradient_staleness = max_gradient_staleness
        self.version = 0  # applied updates, lifetime
        self.target_updates = 0
        self.dropped = 0
        self.staleness_sum = 0
        self.staleness_max = 0
        self.bytes_in = 0  # gradients received
        self.bytes_out = 0  # parameters sent
        self.busy_s = 0.0  # seconds inside apply(): how near the server is to its bound
        self._sync_target()

    def _sync_target(self) -> None:
        for main, target in self.module.get_target_network_pairs():
            target.load_state_dict(main.state_dict())
        self.target_updates += 1

    def apply(self, gradients: list[np.ndarray], version: int) -> int:
        """Apply one learner's gradient (one array per online parameter, in
        :func:`online_parameters` order) computed on parameters of ``version``; returns the server's version after it.
        A gradient more than ``max_gradient_staleness`` versions old is dropped and counted."""
        t0 = time.perf_counter()
        self.bytes_in += _param_bytes(gradients)
        staleness = self.version - int(version)
        if self.max_gradient_staleness is not None and staleness > self.max_gradient_staleness:
            self.dropped += 1
            self.busy_s += time.perf_counter() - t0
            return self.version
        self.staleness_sum += staleness
        self.staleness_max = max(self.staleness_max, staleness)
        for p, g in zip(self._params, gradients, strict=True):
            p.grad = torch.as_tensor(g)
        if self.grad_clip:
            torch.nn.utils.clip_grad_norm_(self._params, self.grad_clip)
        self._opt.step()
        self.version += 1
        if self.version % self.target_update_period == 0:
            self._sync_target()
        self.busy_s += time.perf_counter() - t0
        return self.version

    def pull(self, inference_only: bool = False) -> tuple[int, dict]:
        """(version, weights): the online network (``inference_only``: the actors' part) or the
        whole module with its target network (what a learner needs)."""
        state = self.module.get_state(inference_only=inference_only)
        self.bytes_out += _param_bytes(state.values())
        return self.version, state

    def stats(self) -> dict[str, float]:
        """Lifetime counters: ``applied`` updates, ``dropped`` stale gradients, staleness mean
        and max (versions) of the applied ones, ``target_updates``, bytes in and out, and
        ``busy_s`` (seconds spent applying gradients)."""
        return {
            "applied": self.version,
            "dropped": self.dropped,
            "staleness_mean": self.staleness_sum / self.version if self.version else float("nan"),
            "staleness_max": self.staleness_max,
            "target_updates": self.target_updates,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "busy_s": self.busy_s,
        }

    def peak_rss_mib(self) -> float:
        from sweeps.engine.algorithms.seed_actor import tree_peak_rss_mib

        return tree_peak_rss_mib()


# ===================================== 2. the learners =====================================
class GorilaLearner:
    """One Gorila learner: a replay shard, a copy of the network, gradients to the server.

    Args:
        index: the learner's index (0..M−1), for its replay's seed.
        server: the :class:`ParameterServer` actor.
        spec: the RLModule spec (learner-side).
        batch_size: transitions per minibatch (``train_batch_size``; each learner its own).
        capacity: the shard's replay capacity, transitions.
        gamma, double_q, reward_scale: the loss's (:func:`dqn_loss`).
        training_intensity: bound on the shard's replayed / added transitions (None: none).
        learning_starts: transitions the shard holds before the first update.
        parameter_sync_period: own updates between two pulls of the server's parameters.
        seed: of the shard's sampling.
    """

    def __init__(
        self,
        index: int,
        server,
        spec,
        batch_size: int,
        capacity: int,
        gamma: float,
        double_q: bool,
        reward_scale: float,
        training_intensity: float | None,
        learning_starts: int,
        parameter_sync_period: int,
        seed: int | None,
    ):
        from sweeps.engine.algorithms.apex_replay import PrioritizedReplay

        torch.set_num_threads(1)
        self.index = index
        self.server = server
        self.module = spec.build()
        self.module.make_target_networks()
        self._params = online_parameters(self.module)
        self.replay = PrioritizedReplay(
            capacity, alpha=0.0, beta=0.0, seed=None if seed is None else seed * 1000 + index
        )
        self.batch_size = int(batch_size)
        self.gamma, self.double_q, self.scale = float(gamma), bool(double_q), float(reward_scale)
        self.training_intensity = training_intensity
        self.learning_starts = int(learning_starts)
        self.sync_period = int(parameter_sync_period)
        self.version = -1  # of the parameters held; -1: none pulled yet
        self.updates = 0  # gradients sent, lifetime
        self.pulls = 0
        self.cpu_s = 0.0  # CPU seconds computing gradients
        self._pending = None  # the last gradient's apply() call

    def add(self, transitions: dict[str, np.ndarray]) -> None:
        """Add transitions (arrays keyed by ``TRANSITION_KEYS``) to this learner's shard."""
        self.replay.add(transitions)

    def _pull(self) -> None:
        self.version, state = ray.get(self.server.pull.remote())
        self.module.set_state(state)
        self.pulls += 1

    def _may_update(self) -> bool:
        added = self.replay.added
        if len(self.replay) < max(self.batch_size, self.learning_starts):
            return False
        if self.training_intensity is None:
            return True
        return (self.updates + 1) * self.batch_size <= self.training_intensity * added

    def train(self, max_s: float) -> dict[str, float]:
        """Compute and send gradients for up to ``max_s`` seconds, as the replay ratio allows;
        returns this learner's lifetime counters."""
        start = time.perf_counter()
        if not self._may_update():  # wait for samples here, not in a flood of calls
            time.sleep(min(max_s, 0.02))
        while time.perf_counter() - start < max_s and self._may_update():
            if self.version < 0 or self.updates % self.sync_period == 0:
                self._pull()
            cpu0 = time.process_time()
            _, _, batch = self.replay.sample(self.batch_size)
            loss = dqn_loss(self.module, batch, self.gamma, self.double_q, self.scale)
            grads = [
                g.detach().numpy().copy() if g is not None else np.zeros(p.shape, np.float32)
                for p, g in zip(
                    self._params,
                    torch.autograd.grad(loss, self._params, allow_unused=True),
                    strict=True,
                )
            ]
            self.cpu_s += time.process_time() - cpu0
            if self._pending is not None:  # one gradient in flight: the server sets the pace
                ray.get(self._pending)
            self._pending = self.server.apply.remote(grads, self.version)
            self.updates += 1
        return self.stats()

    def stats(self) -> dict[str, float]:
        return {
            "updates": self.updates,
            "pulls": self.pulls,
            "cpu_s": self.cpu_s,
            "added": self.replay.added,
        }

    def peak_rss_mib(self) -> float:
        from sweeps.engine.algorithms.seed_actor import tree_peak_rss_mib

        return tree_peak_rss_mib()


# ==================================== config (PLUMBING) ====================================
class GorilaConfig(ReplayDQNConfig):
    """The suite's DQN config (:class:`~sweeps.engine.algorithms.replay_dqn.ReplayDQNConfig`)
    plus Gorila's settings, by the paper's names where RLlib has none.

    ``learners(num_learners=M, num_cpus_per_learner=c)``: M Gorila learner actors (≥ 1), each
    reserving c CPUs; RLlib's own learner group stays the driver's one local learner (it
    trains nothing; it holds the server's weights for the evaluation protocol).
    ``train_batch_size`` is each learner's minibatch, not a total split over learners.

    Extra ``training()`` keys:
        parameter_sync_period: a learner's own updates between two pulls of the server's
            parameters (default 4).
        max_gradient_staleness: gradients computed on parameters more than this many server
            versions old are dropped and counted (default 64; None: none dropped).
        target_update_period: applied updates between two target network copies at the
            server (default 125: RLlib's DQN copies every 1,000 env steps, which at the
            suite's replay ratio of 8 and minibatch of 64 is 125 updates).
        weights_sync_period: applied updates between two broadcasts of the server's weights
            to the actors (default 10, as APEX).
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or Gorila)
        self.gorila_num_learners = 1
        self.gorila_cpus_per_learner = 0.5
        self.parameter_sync_period = 4
        self.max_gradient_staleness: int | None = 64
        self.target_update_period = 125
        self.weights_sync_period = 10

    def learners(self, *, num_learners=NotProvided, num_cpus_per_learner=NotProvided, **kwargs):
        # Gorila's learners are its own actors: RLlib's learner group stays local (0).
        if num_learners is not NotProvided:
            self.gorila_num_learners = int(num_learners)
        if num_cpus_per_learner is not NotProvided:
            self.gorila_cpus_per_learner = float(num_cpus_per_learner)
        return super().learners(**kwargs)

    def training(
        self,
        *,
        parameter_sync_period=NotProvided,
        max_gradient_staleness=NotProvided,
        target_update_period=NotProvided,
        weights_sync_period=NotProvided,
        **kwargs,
    ):
        super().training(**kwargs)
        if parameter_sync_period is not NotProvided:
            self.parameter_sync_period = int(parameter_sync_period)
        if max_gradient_staleness is not NotProvided:
            self.max_gradient_staleness = (
                None if max_gradient_staleness is None else int(max_gradient_staleness)
            )
        if target_update_period is not NotProvided:
            self.target_update_period = int(target_update_period)
        if weights_sync_period is not NotProvided:
            self.weights_sync_period = int(weights_sync_period)
        return self

    def validate(self) -> None:
        super().validate()
        if self.gorila_num_learners < 1:
            self._value_error(
                f"GORILA needs num_learners >= 1 (its learner actors); got "
                f"{self.gorila_num_learners}"
            )
        if not self.gorila_cpus_per_learner > 0:
            self._value_error(
                f"GORILA `num_cpus_per_learner` must be > 0; got {self.gorila_cpus_per_learner}"
            )
        for key in ("parameter_sync_period", "target_update_period", "weights_sync_period"):
            if getattr(self, key) < 1:
                self._value_error(f"GORILA `{key}` must be >= 1; got {getattr(self, key)}")
        if self.max_gradient_staleness is not None and self.max_gradient_staleness < 0:
            self._value_error(
                f"GORILA `max_gradient_staleness` must be >= 0 or None; got "
                f"{self.max_gradient_staleness}"
            )


# ===================================== 3. the driver =====================================
class Gorila(ReplayDQN):
    """Gorila DQN (module docstring): actors → per-learner replay shards → M learners →
    parameter server.

    Result keys: DQN's (``replay/learner_updates_lifetime`` counts the server's applied
    updates) and ``gorila/``: ``num_learners``, ``applied_updates``, ``dropped_gradients``,
    ``staleness_mean`` and ``staleness_max`` (server versions), ``target_updates``,
    ``bytes_per_update`` (gradients in and parameters out of the server per applied update,
    bytes), ``learner_updates_per_s`` (applied, this iteration), ``learner_cpu_s`` (lifetime,
    summed over learners), ``server_busy_s`` (lifetime seconds the server spent applying
    gradients: near the wall-clock, the server is the bound).
    """

    @classmethod
    def get_default_config(cls) -> GorilaConfig:
        return GorilaConfig()

    @classmethod
    def default_resource_request(cls, config):
        """DQN's request (the trial's process, its env runners) plus one bundle of
        ``num_cpus_per_learner`` CPUs per Gorila learner; the server reserves none (it applies
        one small gradient at a time)."""
        from ray.tune import PlacementGroupFactory

        pgf = super().default_resource_request(config)
        cfg = (
            config
            if isinstance(config, AlgorithmConfig)
            else cls.get_default_config().update_from_dict(config)
        )
        bundles = [dict(b) for b in pgf.bundles]
        bundles += [{"CPU": cfg.gorila_cpus_per_learner}] * cfg.gorila_num_learners
        return PlacementGroupFactory(bundles=bundles, strategy=cfg.placement_strategy)

    def setup(self, config: AlgorithmConfig) -> None:
        super().setup(config)
        cfg = self.config
        spaces = self.env_runner_group.get_spaces()[DEFAULT_MODULE_ID]
        spec = cfg.get_rl_module_spec(spaces={DEFAULT_MODULE_ID: spaces}, inference_only=False)
        state = self.learner_group.get_weights(module_ids=[DEFAULT_MODULE_ID])[DEFAULT_MODULE_ID]
        self._server = (
            ray.remote(num_cpus=0)(ParameterServer)
            .options(max_concurrency=1)
            .remote(
                spec,
                state,
                cfg.lr,
                cfg.grad_clip,
                cfg.target_update_period,
                cfg.max_gradient_staleness,
            )
        )
        capacity, _, _ = self._replay_settings()
        m = cfg.gorila_num_learners
        learner_cls = ray.remote(num_cpus=cfg.gorila_cpus_per_learner)(GorilaLearner)
        self._learners = [
            learner_cls.remote(
                i,
                self._server,
                spec,
                cfg.total_train_batch_size,
                max(1, capacity // m),
                cfg.gamma,
                cfg.double_q,
                cfg.reward_scale,
                cfg.training_intensity,
                max(1, cfg.num_steps_sampled_before_learning_starts // m),
                cfg.parameter_sync_period,
                cfg.seed,
            )
            for i in range(m)
        ]
        started, _ = ray.wait(
            [lr.stats.remote() for lr in self._learners], num_returns=m, timeout=120
        )
        if len(started) < m:  # a learner Ray cannot place would otherwise wait forever
            raise RuntimeError(
                f"GORILA: {m - len(started)} of {m} learner actors did not start within 120 s: "
                f"each asks Ray for num_cpus_per_learner={cfg.gorila_cpus_per_learner} CPUs, "
                "which the cluster may not have free"
            )
        self._training = {}  # learner index -> its train() call in flight
        self._learner_stats = [{"updates": 0, "cpu_s": 0.0} for _ in range(m)]
        self._next_shard = 0
        self._broadcast_version = 0
        self._pending_weights = None
        self._server_stats: dict[str, float] = {}

    # ------------------------------------------------------------------------------------
    def training_step(self) -> None:
        # ============ 1. samples to the learners' shards, in turn (ALGO LOGIC) ============
        if self.env_runner_group.num_remote_env_runners() > 0:
            ready = self.env_runner_group.foreach_env_runner_async_fetch_ready(
                "sample_transitions",
                tag=_SAMPLE_TAG,
                timeout_seconds=0.0,
                kwargs={"env_steps_sampled_lifetime": self._sampled()},  # ε's clock
            )
        else:  # num_env_runners=0: the driver is the only actor and samples synchronously
            ready = [self.env_runner.sample_transitions(self._sampled())]
        for transitions, env_runner_metrics in ready:
            self.metrics.aggregate([env_runner_metrics], key=ENV_RUNNER_RESULTS)
            if transitions:
                transitions.pop("td_errors", None)
                self._learners[self._next_shard].add.remote(transitions)
                self._next_shard = (self._next_shard + 1) % len(self._learners)

        # ============ 2. every learner always computing gradients (ALGO LOGIC) ============
        for i, learner in enumerate(self._learners):
            ref = self._training.get(i)
            if ref is not None:
                done, _ = ray.wait([ref], timeout=0)
                if not done:
                    continue
                self._learner_stats[i] = ray.get(ref)  # raises a learner's error
            self._training[i] = learner.train.remote(0.25)

        # ============ 3. the server's weights to the actors (ALGO LOGIC) ============
        self._sync_actors()
        if not ready:
            time.sleep(0.002)  # PLUMBING: nothing to do until an actor delivers

    def _sync_actors(self, wait: bool = False) -> None:
        """Ask the server for the actors' weights once ``weights_sync_period`` updates were
        applied since the last broadcast; broadcast them when they arrive (fire-and-forget),
        and load the whole module into the driver's learner for the evaluation protocol."""
        if self._pending_weights is None:
            self._server_stats = ray.get(self._server.stats.remote())
            applied = int(self._server_stats["applied"])
            self._num_updates = applied
            if applied - self._broadcast_version < self.config.weights_sync_period and not wait:
                return
            self._pending_weights = self._server.pull.remote(False)
        done, _ = ray.wait([self._pending_weights], timeout=None if wait else 0)
        if not done:
            return
        version, state = ray.get(self._pending_weights)
        self._pending_weights = None
        self._broadcast_version = version
        self.learner_group.set_weights({DEFAULT_MODULE_ID: state})
        actor_state = {DEFAULT_MODULE_ID: self._inference_part(state)}
        from ray.rllib.core import COMPONENT_RL_MODULE

        if self.env_runner_group.num_remote_env_runners() > 0:
            ref = ray.put(actor_state)
            self.env_runner_group.foreach_env_runner(
                lambda er: er.set_state({COMPONENT_RL_MODULE: ray.get(ref)}),
                local_env_runner=False,
                timeout_seconds=0.0,
            )
        else:
            self.env_runner.set_state({COMPONENT_RL_MODULE: actor_state})

    def _inference_part(self, state: dict) -> dict:
        module = self.env_runner.module
        keep = set(module.state_dict()) if module is not None else set(state)
        return {k: v for k, v in state.items() if k in keep}

    # --------------------------------- metrics (PLUMBING) ---------------------------------
    def step(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        u0 = self._num_updates
        results = super().step()
        self._sync_actors(wait=True)  # the evaluation protocol reads the newest weights
        s = self._server_stats
        applied = int(s.get("applied", 0))
        results[GORILA_RESULTS] = {
            "num_learners": len(self._learners),
            "applied_updates": applied,
            "dropped_gradients": int(s.get("dropped", 0)),
            "staleness_mean": float(s.get("staleness_mean", float("nan"))),
            "staleness_max": int(s.get("staleness_max", 0)),
            "target_updates": int(s.get("target_updates", 0)),
            "bytes_per_update": (
                (s.get("bytes_in", 0) + s.get("bytes_out", 0)) / applied
                if applied
                else float("nan")
            ),
            "learner_updates_per_s": (applied - u0) / max(time.perf_counter() - t0, 1e-9),
            "learner_cpu_s": float(sum(x.get("cpu_s", 0.0) for x in self._learner_stats)),
            "server_busy_s": float(s.get("busy_s", 0.0)),
        }
        results.setdefault("replay", {})["learner_updates_lifetime"] = applied
        return results

    def remote_peak_rss_mib(self, timeout_s: float = 2.0) -> float:
        """Peak RSS (MiB) of the learners and the server, each its own peak, summed; those that
        do not answer in ``timeout_s`` count 0."""
        refs = [lr.peak_rss_mib.remote() for lr in self._learners] + [
            self._server.peak_rss_mib.remote()
        ]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        return float(sum(ray.get(ready)))

    def cleanup(self) -> None:
        for actor in [*getattr(self, "_learners", []), getattr(self, "_server", None)]:
            if actor is not None:
                ray.kill(actor)
        super().cleanup()

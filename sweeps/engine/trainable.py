"""One trial = one RLlib Algorithm (or the single-process reference) on one env, timed from
before it is built.

The Tune function trainable :func:`run_trial` starts its clock (``time.perf_counter``) right
before ``build_algo()``, so the Algorithm's start-up (env runner actors, learner, replay
buffer) counts, as in MLPerf's timed region; importing RLlib/torch into the trial's process,
resolving its config and building the evaluation envs happen before the clock starts. Tune
reuses a trial's actor process for the next trial with the same resource request
(:func:`begin_trial_in_process` resets what a trial leaves behind), so only the first trial of
each shape pays the process start and imports, none of it timed. It then
calls ``Algorithm.train()`` and runs the evaluation protocol (:mod:`sweeps.engine.evaluation`, inside
the timed region) after every iteration, or on the protocol's own cadence between training
steps (:class:`sweeps.engine.sweep_spec.Evaluation`), until the target metric is ≥ the target
(time-to-target = wall-clock at the end of that evaluation) or the per-trial budget (seconds,
env steps) is spent (censored). A reference trial (``is_reference``) runs
:func:`sweeps.engine.reference.run_reference` instead, timed the same way. Every evaluation (every
iteration when the target metric is not the protocol's) is reported to Tune with the progress
columns of docs/results.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sweeps.engine.search import META_KEYS, censored_objective
from sweeps.engine.sweep_spec import (
    EPISODE_RETURN,
    EVALUATION,
    TRAINING,
    Budget,
    Evaluation,
    Stall,
    Sweep,
    Target,
)


@dataclass(frozen=True)
class TrialSetup:
    """What every trial of one sweep shares, bound to the Tune trainable
    (``tune.with_parameters(run_trial, setup=...)``) and pickled to each trial's process.

    Attributes:
        env: the env as every process of a trial builds it (:func:`envs.forms.runner_env`):
            a gymnasium id, an RLlib env name, ``"module:EnvId"`` or ``"module:Factory"``.
        target: the sweep's :class:`~sweeps.engine.sweep_spec.Target` with its ``value``
            resolved (env units of episode return; ``fraction_of_optimal`` made absolute by
            :func:`sweeps.engine.sweep_file.sweep_target`).
        budget: the sweep's per-trial :class:`~sweeps.engine.sweep_spec.Budget`.
        evaluation: the sweep's evaluation protocol
            (:class:`~sweeps.engine.sweep_spec.Evaluation`, :mod:`sweeps.engine.evaluation`).
        env_config: the env's config (callers pass copies of it on).
        stall: when a trial counts as stalled (:class:`~sweeps.engine.sweep_spec.Stall`), or
            None: never stalled.
        max_node_cpus: CPUs of the largest node.
        max_node_gpus: GPUs of the largest node, or None when unknown.
        cluster_cpus: CPUs of all nodes together (oversubscription scaling), or None: the
            cluster is one node of ``max_node_cpus``.
        allow_oversubscription: scale down a trial's CPU request that exceeds the cluster.
        placement_strategy: Ray's strategy for the trial's bundles (``PACK``, ``SPREAD``,
            ``STRICT_PACK``; :mod:`sweeps.engine.placement`).
        quiet: RLlib logs errors only in the trials.
        warm_trials: a trial may reuse the env runner processes of the previous trial of
            its shape on its actor (:mod:`sweeps.engine.warm`); False: every trial cold.
        cold_every: with warm trials, every ``cold_every``-th trial of a shape on an actor is
            cold all the same (``Search.cold_every``); None: only the first.
        shared_bundles: the placement group every trial that fits in it asks for
            (:func:`sweeps.engine.placement.shared_bundles`), or None: each its own.
    """

    env: str
    target: Target
    budget: Budget
    evaluation: Evaluation = field(default_factory=Evaluation)
    env_config: Mapping[str, Any] = field(default_factory=dict)
    stall: Stall | None = None
    max_node_cpus: float = 1.0
    max_node_gpus: float | None = None
    cluster_cpus: float | None = None
    allow_oversubscription: bool = False
    placement_strategy: str = "PACK"
    quiet: bool = True
    warm_trials: bool = True
    cold_every: int | None = None
    shared_bundles: list[dict[str, float]] | None = None

    @classmethod
    def of(
        cls,
        sweep: Sweep,
        target: Mapping[str, Any],
        max_node_cpus: float,
        quiet: bool = True,
        max_node_gpus: float | None = None,
        cluster_cpus: float | None = None,
    ) -> TrialSetup:
        """The setup of ``sweep``'s trials; ``target``: the resolved ``{"metric", "value"}``
        (:func:`sweeps.engine.sweep_file.sweep_target`)."""
        from envs.forms import runner_env

        return cls(
            env=runner_env(sweep.env),
            target=Target(metric=str(target["metric"]), value=float(target["value"])),
            budget=sweep.budget,
            evaluation=sweep.evaluation,
            env_config=dict(sweep.env_config),
            stall=sweep.stall,
            max_node_cpus=float(max_node_cpus),
            max_node_gpus=max_node_gpus,
            cluster_cpus=cluster_cpus,
            allow_oversubscription=sweep.allow_oversubscription,
            placement_strategy=sweep.placement_strategy,
            quiet=quiet,
            warm_trials=sweep.search.warm_trials,
            cold_every=sweep.search.cold_every,
        )

    def with_(self, **changes: Any) -> TrialSetup:
        """A copy with ``changes`` (field names as above)."""
        return replace(self, **changes)


def lookup_metric(result: dict[str, Any], key: str) -> float:
    """Value of an RLlib result key like ``env_runners/episode_return_mean`` (NaN if absent)."""
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, dict) or part not in node:
            return math.nan
        node = node[part]
    try:
        return float(node)
    except (TypeError, ValueError):
        return math.nan


def algorithm_params(config: dict[str, Any]) -> dict[str, Any]:
    """The trial's vocabulary params (``algorithm``, ``num_env_runners``, ..., ``seed``)."""
    params = {k: v for k, v in config.items() if k not in META_KEYS}
    params["seed"] = config.get("seed", 0)
    return params


def is_sb3_trial(config: Mapping[str, Any]) -> bool:
    """Whether a trial config runs Stable-Baselines3 in the trial's own process
    (:mod:`sweeps.engine.reference`): the reference, or a configuration that names an SB3
    algorithm (``"SB3-DQN"``) in the sweep's ``algorithms`` or ``baseline``."""
    from sweeps.engine.reference import REFERENCE_ALGORITHMS

    return bool(config.get("is_reference")) or config.get("algorithm") in REFERENCE_ALGORITHMS


def trial_algorithm_config(config: dict[str, Any], setup: TrialSetup):
    """The RLlib ``AlgorithmConfig`` of one trial, its CPU request scaled down to the cluster's
    CPUs when the sweep allows oversubscription.

    Returns:
        (algorithm_config, info): info = ``{"num_cpus", "num_gpus", "oversubscribed",
        "requested_cpus", "num_learners"}`` (CPUs of the whole trial: driver + env runners + learners) and
        its sampling layout as built (:func:`sampling_layout`).
    """
    if is_sb3_trial(config):  # single process: the trial's own CPU, no actors
        from sweeps.engine.reference import sampling_layout as sb3_layout

        return None, {
            "requested_cpus": 1.0,
            "num_cpus": 1.0,
            "num_gpus": 0.0,
            "oversubscribed": False,
            "num_learners": 0,
            **sb3_layout(config),
        }
    from sweeps.engine.algorithms import build_config

    params = algorithm_params(config)
    algo_config = build_config(params, setup.env, dict(setup.env_config))
    if setup.quiet:
        algo_config.debugging(log_level="ERROR")  # RLlib's level in the trial and its env runners
    algo_config.resources(placement_strategy=setup.placement_strategy)
    cpus, gpus = request_totals(algo_config)
    info = {
        "requested_cpus": cpus,
        "num_cpus": cpus,
        "num_gpus": gpus,
        "oversubscribed": False,
        # Gorila's learners are its own actors; RLlib's are its learner group's
        "num_learners": int(
            getattr(algo_config, "gorila_num_learners", algo_config.num_learners) or 0
        ),
        **sampling_layout(algo_config),
    }
    limit = (
        setup.max_node_cpus
        if setup.placement_strategy == "STRICT_PACK"
        else setup.cluster_cpus or setup.max_node_cpus
    )
    if limit and cpus > limit and setup.allow_oversubscription:
        runners = algo_config.num_env_runners
        others = cpus - runners * algo_config.num_cpus_per_env_runner
        if runners > 0 and others < limit:
            per_runner = (limit - others) / runners
            algo_config.env_runners(num_cpus_per_env_runner=per_runner)
            info.update(num_cpus=limit, oversubscribed=True)
    return algo_config, info


def sampling_layout(algo_config) -> dict[str, Any]:
    """How a trial samples (docs/design.md, *sampling layout*), read from its built RLlib config.

    Returns:
        ``{"vectorize_mode": "sync" | "async", "concurrent_envs": int, "env_processes": int}``:
        the env steps that can wait at once
        (:func:`sweeps.engine.rundir.schema.concurrent_envs`) and the processes an async
        layout starts besides the trial's own (one per sub-env of every env runner, the
        driver's own when there are none; 0 when sync).
    """
    from sweeps.engine.rundir.schema import concurrent_envs

    mode = str(
        getattr(algo_config.gym_env_vectorize_mode, "value", algo_config.gym_env_vectorize_mode)
    )
    runners, envs = algo_config.num_env_runners, algo_config.num_envs_per_env_runner
    return {
        "vectorize_mode": mode,
        "concurrent_envs": concurrent_envs(runners, envs, mode),
        "env_processes": max(1, runners) * envs if mode == "async" else 0,
    }


def request_bundles(algo_config) -> list[dict[str, float]]:
    """The trial's placement-group bundles (RLlib's own request): driver, env runners,
    learners, each ``{"CPU": .., "GPU": ..}``."""
    pgf = algo_config.algo_class.default_resource_request(algo_config)
    return [dict(b) for b in pgf.bundles]


def request_totals(algo_config) -> tuple[float, float]:
    """(CPUs, GPUs) summed over the trial's placement-group bundles (RLlib's own request)."""
    bundles = request_bundles(algo_config)
    return (sum(b.get("CPU", 0) for b in bundles), sum(b.get("GPU", 0) for b in bundles))


def bundles_fit(inner: Sequence[Mapping[str, float]], outer: Sequence[Mapping[str, float]]) -> bool:
    """Whether a placement group of ``outer``'s bundles can host a trial that asks for
    ``inner``'s: the first bundle (where Tune places the trainable) within the first, and
    every other bundle of ``inner`` within its own bundle of ``outer`` (largest with largest;
    a mismatch there only means the groups are not shared)."""
    if not inner or not outer or len(inner) > len(outer):
        return False

    def within(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
        return all(v <= b.get(k, 0.0) + 1e-9 for k, v in a.items() if v)

    def size(b: Mapping[str, float]) -> tuple:
        return (b.get("GPU", 0.0), b.get("CPU", 0.0), sorted(b.items()))

    rest_in = sorted(inner[1:], key=size, reverse=True)
    rest_out = sorted(outer[1:], key=size, reverse=True)
    return within(inner[0], outer[0]) and all(
        within(a, b) for a, b in zip(rest_in, rest_out, strict=False)
    )


def resources_for(setup: TrialSetup):
    """Tune ``with_resources`` callable: the trial's placement group from its own config, or
    ``setup.shared_bundles`` when its own fits inside them (one actor for a sequential
    sweep's trials, :mod:`sweeps.engine.warm`). What a trial records as its CPUs and GPUs
    stays its own request (:func:`request_totals`)."""
    from ray import tune

    def _resources(config: dict[str, Any]):
        algo_config, _ = trial_algorithm_config(config, setup)
        if algo_config is None:  # the reference: one process, one CPU
            own = tune.PlacementGroupFactory([{"CPU": 1}])
        else:
            own = algo_config.algo_class.default_resource_request(algo_config)
        shared = setup.shared_bundles
        if shared and bundles_fit(own.bundles, shared):
            return tune.PlacementGroupFactory(shared, strategy=own.strategy)
        return own

    return _resources


def preload_libraries(*, rllib: bool = True) -> None:
    """Import what a trial's process needs before its timed region starts.

    torch and RLlib's Algorithm (~1.5 s in a fresh process); ``torch._dynamo``, which torch
    imports lazily when the process builds its first optimizer (``torch.optim.Optimizer``
    checks whether it is being compiled): ~1.1 s that would otherwise land inside the clock of
    every trial whose process builds a learner, the reference's included; and
    ``scipy.signal``, which RLlib's prioritized episode replay buffer imports lazily at its
    first ``sample()`` (its n-step discounting uses ``scipy.signal.lfilter``): ~0.5-1 s that
    would otherwise land inside the first training iteration of every DQN/APEX trial.
    ``rllib=False`` (reference trials) skips RLlib. ``benchmarks/bench_overhead.py`` calls
    this in its bare RLlib loop too, so both sides of that comparison start their clocks with
    the same libraries loaded.
    """
    import scipy.signal  # noqa: F401
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401

    if rllib:
        from ray.rllib.algorithms.algorithm import Algorithm  # noqa: F401


def reuse_prestarted_workers() -> None:
    """Let trial actors and their env runners start in Ray's already-running worker processes.

    Tune gives every trainable actor ``runtime_env={"env_vars": {"PL_DISABLE_FORK": "1"}}``
    (``ray/tune/execution/class_cache.py``, a PyTorch Lightning workaround, ray#28197), and the
    actors a trial creates (RLlib's env runners) inherit it. A worker process Ray started for
    the job's default runtime env cannot host an actor with another one, so every trial
    actor got a freshly spawned Python process, and so did its env runners (measured with
    plain Ray actors: 1.62 s instead of 0.49 s to a first call; docs/benchmarks.md). With the
    variable dropped the trial actor takes a prestarted process; its env runners may still
    need new ones, because Ray keeps idle workers only up to the CPUs no placement group
    reserves. We use no Lightning, so the variable is dropped; the environment
    variables Tune copies from the driver (cloud credentials, Ray Train settings) still go.
    Call it in the driver before the first trial starts.
    """
    from ray.tune.execution import class_cache

    getattr(class_cache, "DEFAULT_ENV_VARS", {}).pop("PL_DISABLE_FORK", None)


#: Seconds Tune waits for a finished trial's thread (its ``algo.stop()``) before it reuses the
#: trial's actor for the next trial; past it Tune starts a fresh actor instead
#: (``FunctionTrainable.reset_config`` reads this variable; its default, 2 s, is shorter than
#: stopping an Algorithm with several env runners on a busy 2-core machine).
TRIAL_THREAD_TIMEOUT_S = 30

_process_torch_threads: int | None = None


def begin_trial_in_process() -> None:
    """Put a trial's process in the same state whether it is fresh or Tune reuses it.

    Sweeps run with Tune's ``reuse_actors=True``: a trial whose resource request equals the
    previous trial's runs in that trial's actor process, which saves the process start and
    the imports (``preload_libraries``: ~3 s) between trials; both happen before the clock, so
    time-to-target means the same either way. What a previous trial could leave behind is
    reset here, before the clock: garbage (collected; then ``gc.freeze()`` moves what
    survives, the libraries' objects, out of later collections, so the next trial's reset
    costs ~0 s instead of ~0.27 s, and the collector's full passes inside every trial's clock
    scan the trial's own objects only, in a fresh process and a reused one alike; frozen
    objects are still freed by reference counting, only reference cycles among them stay),
    torch's intra-op thread count (restored to the process's first value; the reference
    sets 1), and the process's peak
    RSS, which :func:`process_peak_rss_mib` reports per trial (Linux: ``/proc/self/clear_refs``
    ``5`` resets the high-water mark ``VmHWM`` to the current RSS; elsewhere it stays a
    per-process peak, an upper bound). Also sets ``TUNE_FUNCTION_THREAD_TIMEOUT_S``
    (:data:`TRIAL_THREAD_TIMEOUT_S`) for Tune's reuse in this process.
    """
    import gc
    import os

    import torch

    global _process_torch_threads
    os.environ.setdefault("TUNE_FUNCTION_THREAD_TIMEOUT_S", str(TRIAL_THREAD_TIMEOUT_S))
    if _process_torch_threads is None:
        _process_torch_threads = torch.get_num_threads()
    elif torch.get_num_threads() != _process_torch_threads:
        torch.set_num_threads(_process_torch_threads)
    gc.collect()
    gc.freeze()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def process_peak_rss_mib() -> float:
    """Peak resident set size of the calling process, MiB, since the process started or since
    :func:`begin_trial_in_process` reset it.

    Linux: ``VmHWM`` of ``/proc/self/status`` (the memory map's high-water mark, which
    ``/proc/self/clear_refs`` resets). Not ``getrusage``'s ``ru_maxrss``: that keeps a
    per-process maximum no reset clears, and it starts at the peak of the process that forked
    before ``exec`` (a child of a 700 MiB Python reports >= 700 MiB at its first line).
    Elsewhere ``ru_maxrss`` (KiB on Linux, bytes on macOS), the whole process's peak.
    """
    from sweeps.engine.peak_memory import vm_hwm_mib

    peak_mib = vm_hwm_mib()
    if peak_mib is not None:
        return peak_mib
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024.0


class TrialPeakMemory:
    """Peak RSS (MiB) of a trial's processes: its own (driver side: the Algorithm, a local
    learner, the evaluation envs) plus each remote env runner's and learner's, each its own
    peak so far (:func:`process_peak_rss_mib`), and the processes an Algorithm reports itself
    (``remote_peak_rss_mib(timeout_s)``: SEED's actors with their async sub-env processes, and
    its inference server), summed: an upper bound on the trial's simultaneous peak.

    The remote actors answer between their other calls, so asking them is a synchronisation
    point: it waits for an env runner's in-flight ``sample()``, and an env runner blocked in
    ``env.step()`` would block the trial (and hide a stall) until it wakes. So they are asked
    at most every ``every_s`` seconds and at the trial's last iteration, each ask waiting at
    most ``timeout_s``; in between, and for an actor that did not answer in time, the last
    answers count. Peaks only grow, so a late answer loses at most the growth since the last.

    Args:
        algo: the trial's built RLlib ``Algorithm``.
        every_s: seconds of wall-clock between two asks of the remote actors.
        timeout_s: seconds one ask waits for the actors' answers.
    """

    def __init__(self, algo, every_s: float = 10.0, timeout_s: float = 2.0):
        self.algo = algo
        self.every_s, self.timeout_s = float(every_s), float(timeout_s)
        self._asked_at = -math.inf
        self._remote_mib = 0.0

    def _ask_remote(self) -> float:
        runners = getattr(self.algo, "env_runner_group", None)
        learners = getattr(self.algo, "learner_group", None)
        total = 0.0
        if runners is not None and runners.num_remote_env_runners() > 0:
            total += sum(
                runners.foreach_env_runner(
                    lambda _runner: process_peak_rss_mib(),
                    local_env_runner=False,
                    timeout_seconds=self.timeout_s,
                )
            )
        if learners is not None and not learners.is_local:
            results = learners.foreach_learner(
                lambda _learner: process_peak_rss_mib(), timeout_seconds=self.timeout_s
            )
            total += sum(r.get() for r in results if r.ok)  # RemoteCallResults
        own = getattr(self.algo, "remote_peak_rss_mib", None)  # SEED's actors and server
        if callable(own):
            total += own(self.timeout_s)
        return total

    def __call__(self, now: float, final: bool = False) -> float:
        """The trial's peak RSS so far, MiB; ``now``: monotonic seconds (``perf_counter``);
        ``final``: the trial's last iteration (the remote actors are asked whatever the
        time)."""
        if final or now - self._asked_at >= self.every_s:
            self._asked_at = now
            try:
                self._remote_mib = max(self._remote_mib, self._ask_remote())
            except Exception:  # noqa: BLE001 - memory is reported, never a reason to fail
                pass
        return float(process_peak_rss_mib() + self._remote_mib)


def trial_nodes(algo, timeout_s: float = 2.0) -> str:
    """Where a trial's env runners run: the first 12 hex digits of each Ray node id, sorted,
    comma-separated (the ``nodes_used`` column); the trial process's own node when it has no
    remote env runner (``algo`` None: the reference) or they do not answer in ``timeout_s``."""
    import ray

    ids: set[str] = set()
    runners = getattr(algo, "env_runner_group", None)
    if runners is not None and runners.num_remote_env_runners() > 0:
        try:
            ids.update(
                runners.foreach_env_runner(
                    lambda _runner: ray.get_runtime_context().get_node_id(),
                    local_env_runner=False,
                    timeout_seconds=timeout_s,
                )
            )
        except Exception:  # noqa: BLE001 - where it ran is reported, never a reason to fail
            pass
    if not ids:
        ids.add(ray.get_runtime_context().get_node_id())
    return ",".join(sorted(i[:12] for i in ids if i))


def stall_min_time_s(
    min_time_s: float, fragment_steps: int, num_envs: int, step_cost_ms: float
) -> float:
    """The stall detector's minimum time (seconds) for one trial: the spec's ``min_time_s``,
    or two rollout fragments at the env's declared cost when that is longer.

    An env runner steps its ``num_envs`` envs in turn and reports no env step before a
    fragment of ``fragment_steps`` steps per env is complete, so with ``step_cost_ms``
    milliseconds per env step (``step_latency_ms + step_cpu_ms``) a healthy trial may show
    no new env step for ``fragment_steps x num_envs x step_cost_ms`` (30.7 s for 32 x 8 at
    120 ms): a slow simulator, not a stall.
    """
    fragment_s = (
        max(int(fragment_steps), 1) * max(int(num_envs), 1) * max(float(step_cost_ms), 0.0) / 1000.0
    )
    return max(float(min_time_s), 2.0 * fragment_s)


class StallDetector:
    """Tells a stalled trial from a slow one (:class:`sweeps.engine.sweep_spec.Stall`).

    Fed the lifetime counters after every training iteration; a counter is stalled when it
    has not moved for ``iterations`` consecutive iterations and ``min_time_s`` seconds since
    it last moved. Env steps are watched from the start of sampling (an env runner that never
    delivers is a stall too); learner updates only once they have moved (warm-up before the
    first update is normal) and never when the algorithm does not report them (NaN). A NaN
    update count after finite ones (an iteration in which no learner result arrived) counts
    as not moved.

    Args:
        iterations: K, consecutive iterations without progress (>= 1).
        min_time_s: seconds without progress, at least.
        wall: seconds since the trial's start when sampling could begin (the Algorithm built).
    """

    def __init__(self, iterations: int, min_time_s: float, wall: float = 0.0):
        self.iterations = int(iterations)
        self.min_time_s = float(min_time_s)
        # counter -> [last value, wall-clock when it last moved, iterations since]
        self._state: dict[str, list[float]] = {"env steps": [0.0, wall, 0]}

    def update(self, wall: float, env_steps: float, learner_updates: float) -> str | None:
        """Feed one iteration's counters (``wall``: seconds since the trial started);
        returns the one-line reason once a counter is stalled, else None."""
        if (
            "learner updates" not in self._state
            and math.isfinite(learner_updates)
            and learner_updates > 0
        ):  # armed at the first update, as if it just moved
            self._state["learner updates"] = [0.0, wall, 0]
        for name, value in (("env steps", env_steps), ("learner updates", learner_updates)):
            state = self._state.get(name)
            if state is None:
                continue
            if math.isfinite(value) and value > state[0]:
                state[:] = [value, wall, 0]
                continue
            state[2] += 1
            still = wall - state[1]
            if state[2] >= self.iterations and still >= self.min_time_s:
                return (
                    f"stalled: {name} stayed at {state[0]:.0f} for {int(state[2])} "
                    f"iterations ({still:.0f} s)"
                )
        return None


class _IterationReporter:
    """Reports one trial's iterations to Tune (the progress columns of docs/results.md), for
    RLlib trials and the reference alike: tracks the best target metric and the env steps/s
    of each iteration, and decides whether an iteration ends the trial (target reached or
    budget spent) and the Optuna objective so far."""

    def __init__(self, setup: TrialSetup, info: dict[str, Any], node_ip: str, wall: float = 0.0):
        self.target = float(setup.target.value)
        self.budget = setup.budget
        self.fixed = {
            "node_ip": node_ip,
            "num_cpus": info["num_cpus"],
            "num_gpus": info["num_gpus"],
            "oversubscribed": info["oversubscribed"],
            "num_learners": info.get("num_learners", 0),
            "vectorize_mode": info["vectorize_mode"],
            "concurrent_envs": info["concurrent_envs"],
        }
        self.best = -math.inf
        self.last_steps, self.last_wall = 0, wall  # wall: when sampling could start

    def spent(self, wall: float, steps: int) -> bool:
        """True when the budget is used up at ``wall`` seconds and ``steps`` env steps."""
        budget_s, budget_steps = self.budget.time_s, self.budget.env_steps
        return (budget_s is not None and wall >= budget_s) or (
            budget_steps is not None and steps >= budget_steps
        )

    def report(
        self,
        *,
        wall: float,
        steps: int,
        value: float,
        out_of_steps: bool = False,
        stalled: str = "",
        **columns: Any,
    ) -> bool:
        """Report one iteration (``columns``: episodes, episode_return_mean,
        evaluation_return, eval_time_s, learner_updates); returns True when the trial ends.
        ``stalled``: the :class:`StallDetector`'s reason, which ends the trial as an error
        (the recorder reads it from this last result). A ``peak_rss_mib`` column may be a
        callable of ``final`` (True when this iteration ends the trial), e.g.
        :class:`TrialPeakMemory`."""
        from ray import tune

        if math.isfinite(value):
            self.best = max(self.best, value)
        budget_s = self.budget.time_s
        # an evaluation that ends after the budget (an iteration that overran it) is censored
        reached = (
            math.isfinite(value) and value >= self.target and (budget_s is None or wall <= budget_s)
        )
        done = reached or bool(stalled) or out_of_steps or self.spent(wall, steps)
        if callable(columns.get("peak_rss_mib")):
            columns["peak_rss_mib"] = columns["peak_rss_mib"](final=bool(done))
        if callable(columns.get("nodes_used")):  # asked once, at the trial's last iteration
            columns["nodes_used"] = columns["nodes_used"]() if done else ""
        tune.report(
            {
                "wall_time_s": wall,
                "env_steps": steps,
                **columns,
                "target_metric_value": value,
                "env_steps_per_s_iter": (steps - self.last_steps)
                / max(wall - self.last_wall, 1e-9),
                "best_return": self.best if math.isfinite(self.best) else math.nan,
                "reached": bool(reached),
                "done": bool(done),
                "stalled": stalled,
                "objective": wall
                if reached
                else censored_objective(budget_s or wall, self.best, self.target),
                **self.fixed,
            }
        )
        self.last_steps, self.last_wall = steps, wall
        return bool(done)


#: Set by :class:`BudgetWatchdog` once it has ended the trial of this process: the trial's
#: body may still be blocked (a hung step), and :func:`run_trial` returns without it.
_ABANDONED = None


def run_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    """Tune function trainable: train until the target or the budget, reporting each evaluation.

    ``config``: the trial's flat params (Tune's config); ``setup`` (bound with
    ``tune.with_parameters``): what all trials of the sweep share, :class:`TrialSetup`.

    The trial's body runs in a helper thread, and this function returns when it ends, or ends
    its thread when the budget's watchdog has ended the trial while the body is blocked (a
    hung env step):
    Tune then reuses the actor for the next trial (it cannot while its training thread is
    blocked: the next trial would fail with "Could not re-use actor"), and the blocked body,
    when it wakes, reports nothing and stops its Algorithm without parking it.
    """
    import threading

    global _ABANDONED
    abandoned = _ABANDONED = threading.Event()
    done = threading.Event()
    outcome: dict[str, BaseException] = {}

    def body() -> None:
        try:
            _run_trial_body(config, setup)
        except BaseException as e:  # noqa: BLE001 - handed to Tune's thread as it is
            outcome["error"] = e
        finally:
            done.set()

    threading.Thread(target=body, name="trial", daemon=True).start()
    while not done.wait(0.1):
        if abandoned.is_set():
            # as Tune's own stop does (its session's sys.exit(0)): a function that returned
            # would report a last, duplicate result, and Tune, which has taken the watchdog's
            # report as the last, would never read it, so this thread would never end
            raise SystemExit(0)
    if "error" in outcome:
        raise outcome["error"]


def _run_trial_body(config: dict[str, Any], setup: TrialSetup) -> None:
    """:func:`run_trial`'s work, in its helper thread."""
    if setup.quiet:
        import logging

        logging.getLogger("ray.rllib").setLevel(logging.ERROR)
    if is_sb3_trial(config):
        return _run_reference_trial(config, setup)
    import ray

    from sweeps.engine.algorithms import extract_metrics
    from sweeps.engine.env_faults import (
        DEFAULT_MAX_ENV_RESTARTS,
        EnvFaultLimit,
        fault_limit_reason,
    )
    from sweeps.engine.evaluation import Cadence, rllib_greedy_policy, trial_evaluator

    algo_name = config["algorithm"]
    target_metric = setup.target.metric
    # Libraries are imported (RLlib, torch, scipy.signal: ~2.5 s in a fresh trial process),
    # the config is resolved and the evaluation envs are built before the clock starts, as
    # MLPerf's timed region excludes framework start-up; building the Algorithm (its env
    # runner actors, learner, replay buffer) is timed, and so is every evaluation.
    preload_libraries()
    begin_trial_in_process()
    algo_config, info = trial_algorithm_config(config, setup)
    evaluator = None
    if target_metric == EVALUATION:
        evaluator = trial_evaluator(
            setup.env,
            dict(setup.env_config),
            episodes=setup.evaluation.episodes,
            seed=setup.evaluation.seed,
        )
    from sweeps.engine import warm

    # a cold trial's parked predecessors exit before its clock starts: their teardown is no
    # part of the start-up a user pays on a fresh cluster
    warm.prepare(algo_config, enabled=setup.warm_trials, cold_every=setup.cold_every)
    start = time.perf_counter()  # the trial's timed region starts before the Algorithm is built
    cpu_start = time.process_time()
    algo, start_kind, charged = warm.build(
        algo_config, enabled=setup.warm_trials, cold_every=setup.cold_every
    )
    built_at = time.perf_counter()
    startup_s = built_at - start
    # a warm trial is charged its shape's cold start-up (sweeps.engine.warm): its wall times
    # are those of a cold trial, what a user pays on a fresh cluster
    start = warm.clock_start(start, built_at, charged)
    built = built_at - start
    reporter = _IterationReporter(setup, info, ray.util.get_node_ip_address(), wall=built)
    reporter.fixed.update(
        start=start_kind,
        startup_s=startup_s,
        cold_startup_s=charged if charged is not None else startup_s,
    )
    stall = None
    if setup.stall is not None:
        from envs.latency import split_step_cost

        cost, _ = split_step_cost(setup.env_config)
        fragment = algo_config.get_rollout_fragment_length()
        min_time = stall_min_time_s(
            setup.stall.min_time_s,
            fragment,
            algo_config.num_envs_per_env_runner,
            cost.latency_ms + cost.cpu_ms,
        )
        stall = StallDetector(setup.stall.iterations, min_time, wall=built)
    greedy_policy = rllib_greedy_policy(algo, evaluator) if evaluator else None
    peak_memory = TrialPeakMemory(algo)
    cadence = Cadence(setup.evaluation.every_s, setup.evaluation.every_env_steps)
    counters = _Counters()

    max_env_restarts = int(config.get("max_env_restarts") or DEFAULT_MAX_ENV_RESTARTS)
    if evaluator is not None:
        evaluator.recover = bool(config.get("recover_env_faults", True))
        evaluator.step_timeout_s = config.get("env_step_timeout_s")

    def measure(m: dict[str, Any], stalled: str | None = None) -> bool:
        """Evaluate (when the target metric is the protocol's) and report; True: trial ends."""
        m = counters.update(m)
        evaluation_return = math.nan
        error_kind = "stalled" if stalled else ""
        if evaluator is not None:  # ALGO-INDEPENDENT: the evaluation protocol
            try:
                evaluation_return = evaluator.evaluate(greedy_policy())
            except EnvFaultLimit as e:
                stalled, error_kind = str(e), "env_faults"
        restarts = int(m["env_restarts"]) + (evaluator.restarts if evaluator else 0)
        if restarts > max_env_restarts and not stalled:
            stalled = fault_limit_reason(restarts, max_env_restarts)
            error_kind = "env_faults"
        wall = time.perf_counter() - start
        cadence.ended(wall, m["env_steps"])
        if target_metric == EVALUATION:
            value = evaluation_return
        elif target_metric in (TRAINING, EPISODE_RETURN):
            value = m["episode_return_mean"]
        else:
            value = lookup_metric(m["result"], target_metric)
        columns = dict(
            episodes=int(m["episodes"]),
            episode_return_mean=float(m["episode_return_mean"]),
            evaluation_return=evaluation_return,
            eval_time_s=evaluator.total_time_s if evaluator else 0.0,
            learner_updates=float(m["learner_updates"]),
            grad_noise_scale=m["grad_noise_scale"],
            grad_norm_sq=m["grad_norm_sq"],
            grad_trace_cov=m["grad_trace_cov"],
            replay_ratio=float(m.get("replay_ratio", math.nan)),
            driver_cpu_s=time.process_time() - cpu_start,
            learner_cpu_s=float(m.get("learner_cpu_s", math.nan)),
            gradient_staleness=float(m.get("gradient_staleness", math.nan)),
            dropped_gradients=int(m.get("dropped_gradients", 0) or 0),
            bytes_per_update=float(m.get("bytes_per_update", math.nan)),
            server_busy_s=float(m.get("server_busy_s", math.nan)),
            env_restarts=restarts,
            env_runner_restarts=env_runner_restarts(algo),
        )
        with watchdog.lock:
            if watchdog.fired:  # the budget's watchdog has ended the trial
                raise _TrialEnded
            watchdog.alive()
            watchdog.last = (int(m["env_steps"]), columns)
            return reporter.report(
                wall=wall,
                steps=int(m["env_steps"]),
                value=value,
                stalled=stalled or "",
                error_kind=error_kind,
                **columns,
                peak_rss_mib=lambda final: peak_memory(time.perf_counter(), final),
                nodes_used=lambda: trial_nodes(algo),
            )

    def due() -> bool:  # after every training step: the metrics are read only when needed
        watchdog.alive()
        steps = env_steps_so_far(algo) if cadence.every_env_steps is not None else None
        return cadence.due(time.perf_counter() - start, steps)

    on_cadence = evaluator is not None and cadence.active
    watchdog = BudgetWatchdog(reporter, start, setup.budget.time_s)
    stalled = None
    try:
        if on_cadence:
            # the initial policy, so that the first crossing is a gap between two evaluations
            if measure({**counters.last, "result": {}}):
                return
            evaluate_between_training_steps(
                algo,
                due,
                lambda: measure({**extract_metrics(algo_name, algo.metrics.peek()), "result": {}}),
            )
        while True:
            try:
                result = algo.train()
            except _TrialEnded:
                break
            watchdog.alive()
            m = extract_metrics(algo_name, result)
            wall = time.perf_counter() - start
            updates = float(m.get("learner_updates", math.nan))
            stalled = stall.update(wall, m["env_steps"], updates) if stall else None
            if on_cadence and not (stalled or reporter.spent(wall, m["env_steps"])):
                continue  # evaluated between the training steps; the budget is not spent
            if measure({**m, "result": result}, stalled):
                break
    except _TrialEnded:
        return
    finally:
        watchdog.cancel()
        # a body the watchdog ended wakes while a later trial may own the actor: it parks
        # nothing (its env runners are stopped with it); a stalled trial's env runners are
        # killed, since one may still be blocked in a step that stopping it, or a later trial
        # taking it, would wait behind
        warm.park_or_stop(
            algo,
            algo_config,
            startup_s=startup_s,
            enabled=setup.warm_trials and not watchdog.fired,
            kill=bool(stalled),
        )


#: Seconds a trial's loop may go without a sign of life (a training step, an evaluation)
#: once its time budget is spent before :class:`BudgetWatchdog` ends it from outside: the
#: trial's own loop ends it at the first training step or evaluation after the budget.
WATCHDOG_GRACE_S = 10.0


class BudgetWatchdog:
    """Ends a trial whose loop is blocked past its time budget (a hung env step, a stuck
    sample). A thread checks twice a second; once the budget plus ``grace_s`` has passed and
    the loop has shown no sign of life (:meth:`alive`: a training step or an evaluation) for
    ``grace_s`` seconds, it reports the trial's last measured row again at the current
    wall-clock with no target metric, ``done`` and censored (its objective the censored one),
    so that Tune stops the trial and the study goes on; the blocked thread, when it wakes,
    reports nothing more (``fired``). A slow start-up is not a hang: the loop's first sign of
    life is its start, after the Algorithm is built. A trial that reached the target before its
    budget is never touched.

    Args:
        reporter: the trial's :class:`_IterationReporter`.
        start: the trial clock's ``time.perf_counter()`` origin.
        budget_s: the trial's time budget (seconds), or None: no watchdog.
        grace_s: seconds, :data:`WATCHDOG_GRACE_S` by default.
    """

    def __init__(
        self,
        reporter: _IterationReporter,
        start: float,
        budget_s: float | None,
        grace_s: float = WATCHDOG_GRACE_S,
    ):
        import threading

        self.lock = threading.Lock()
        self.fired = False
        self.last: tuple[int, dict[str, Any]] = (
            0,
            {"episodes": 0, "episode_return_mean": math.nan, "learner_updates": 0.0},
        )
        self._reporter, self._start, self._grace = reporter, start, grace_s
        self._last_alive = time.perf_counter()
        self._ended = threading.Event()
        if budget_s is not None:
            self._deadline = start + float(budget_s) + grace_s
            threading.Thread(target=self._watch, daemon=True, name="budget-watchdog").start()

    def alive(self) -> None:
        """The trial's loop made progress (called after every training step)."""
        self._last_alive = time.perf_counter()

    def _watch(self) -> None:
        while not self._ended.wait(0.5):
            now = time.perf_counter()
            if now >= self._deadline and now - self._last_alive >= self._grace:
                self._fire()
                return

    def _fire(self) -> None:
        with self.lock:  # the trial's own report, if one is under way, goes first
            if self._ended.is_set() or self.fired:
                return
            self.fired = True
            steps, columns = self.last
        import logging

        logging.getLogger(__name__).warning(
            "trial blocked %.0f s past its budget: ended by the watchdog (censored)", self._grace
        )
        # outside the lock: Tune's report blocks this thread until it stops the trial (and
        # ends this thread then); either way the trial's thread may return to Tune
        try:
            self._reporter.report(
                wall=time.perf_counter() - self._start, steps=steps, value=math.nan, **columns
            )
        finally:
            if _ABANDONED is not None:
                _ABANDONED.set()

    def cancel(self) -> None:
        """The trial ended on its own: the watchdog will not fire."""
        with self.lock:
            self._ended.set()


def env_runner_restarts(algo) -> int:
    """Env runners RLlib restarted after their process died, over the trial so far (0 when
    it has none, or cannot say)."""
    group = getattr(algo, "env_runner_group", None)
    try:
        return int(group.num_remote_worker_restarts()) if group is not None else 0
    except Exception:  # noqa: BLE001 - a count for the record, never a reason to fail
        return 0


class _TrialEnded(Exception):
    """Raised out of ``Algorithm.train()`` by an evaluation between two training steps that
    ended the trial (target reached, budget spent)."""


class _Counters:
    """The lifetime counters of a trial's measurements, never going back, and its training
    episodes' running mean return kept while no episode ended: a result read between training
    steps may lack the learner's counters of an iteration just begun."""

    KEYS = ("env_steps", "episodes", "learner_updates", "learner_cpu_s", "env_restarts")

    def __init__(self):
        self.last: dict[str, Any] = {
            "env_steps": 0,
            "episodes": 0,
            "learner_updates": math.nan,
            "episode_return_mean": math.nan,
            "grad_noise_scale": math.nan,
            "grad_norm_sq": math.nan,
            "grad_trace_cov": math.nan,
            "replay_ratio": math.nan,
            "learner_cpu_s": math.nan,
            "env_restarts": 0,
        }

    def update(self, m: dict[str, Any]) -> dict[str, Any]:
        out = dict(m)
        for k in self.KEYS:
            prev, now = float(self.last[k]), float(m.get(k, math.nan))
            out[k] = prev if not math.isfinite(now) or (math.isfinite(prev) and now < prev) else now
        if not math.isfinite(float(out.get("episode_return_mean", math.nan))):
            out["episode_return_mean"] = self.last["episode_return_mean"]  # a running mean
        self.last = {k: out[k] for k in self.last}
        return out


def env_steps_so_far(algo) -> int:
    """Lifetime env steps sampled by ``algo``'s env runners, read between two training steps
    (0 before the first sample arrived)."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    try:
        return int(algo.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)))
    except (KeyError, TypeError, ValueError):
        return 0


def evaluate_between_training_steps(
    algo, due: Callable[[], bool], measure: Callable[[], bool]
) -> None:
    """Make ``algo`` run ``measure`` after each of its training steps when ``due()``.

    ``Algorithm.train()`` runs ``training_step()`` until ``min_time_s_per_iteration`` has
    passed; the protocol's cadence (:class:`sweeps.engine.evaluation.Cadence`) must not depend on
    that, and short iterations are no answer (each costs RLlib's result compilation; an
    asynchronous algorithm's iteration may hold no sample at all). So the evaluation runs
    where the training does, between two of its steps, in the trial's thread: the learner
    is idle while it runs, as it would be at an iteration's end. ``measure`` returning True
    (the trial ends) raises :class:`_TrialEnded` out of ``train()``.
    """
    original = algo.training_step

    def training_step():
        out = original()
        if due() and measure():
            raise _TrialEnded
        return out

    algo.training_step = training_step


def _run_reference_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    """An SB3 trial, the reference's or a configuration's (:mod:`sweeps.engine.reference`),
    reported like an RLlib trial."""
    import ray

    from sweeps.engine.reference import run_reference

    preload_libraries(rllib=False)
    begin_trial_in_process()
    evaluation = setup.target.metric == EVALUATION
    _, info = trial_algorithm_config(config, setup)
    reporter = _IterationReporter(setup, info, ray.util.get_node_ip_address())
    params = {k: v for k, v in config.items() if k not in META_KEYS or k == "seed"}

    last: dict[str, Any] = {}
    # the budget holds while the reference's env step hangs, as for RLlib trials
    watchdog: list[BudgetWatchdog] = []

    def started(clock_start: float) -> None:
        watchdog.append(BudgetWatchdog(reporter, clock_start, setup.budget.time_s))

    def report(r: dict[str, Any], fault: str = "") -> bool:
        last.update(r)
        columns = dict(
            episodes=r["episodes"],
            episode_return_mean=r["training_return"],
            evaluation_return=r["evaluation_return"],
            eval_time_s=r["eval_time_s"],
            learner_updates=r["learner_updates"],
            driver_cpu_s=r["driver_cpu_s"],
            env_restarts=int(r.get("env_restarts", 0)),
            env_runner_restarts=0,
        )
        dog = watchdog[0] if watchdog else None
        if dog is not None:
            with dog.lock:
                if dog.fired:  # the watchdog ended the trial while this step hung
                    return True
                dog.alive()
                dog.last = (int(r["env_steps"]), columns)
        return reporter.report(
            wall=r["wall_time_s"],
            steps=r["env_steps"],
            out_of_steps=r["done"],
            value=r["evaluation_return"] if evaluation else r["training_return"],
            stalled=fault,
            error_kind="env_faults" if fault else "",
            censor_reason=r.get("stop_reason", ""),
            **columns,
            peak_rss_mib=process_peak_rss_mib(),
            nodes_used=trial_nodes(None),
        )

    from sweeps.engine.env_faults import EnvFaultLimit

    try:
        run_reference(
            params,
            env_id=setup.env,
            env_config=dict(setup.env_config),
            evaluation=setup.evaluation.model_dump(),
            report=report,
            budget_env_steps=setup.budget.env_steps,
            started=started,
        )
    except EnvFaultLimit as e:  # its env kept failing: an error of the env's, said in one line
        if not last:
            raise
        report({**last, "env_restarts": last.get("env_restarts", 0) + 1}, fault=str(e))
    finally:
        for dog in watchdog:
            dog.cancel()

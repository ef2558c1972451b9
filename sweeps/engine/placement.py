"""Whether a trial's placement group can be placed on a cluster: Ray's rule, before Ray starts.

A trial asks Ray for a placement group: one bundle for its driver (and a local learner), one
per env runner, one per remote learner (RLlib's ``default_resource_request``). Ray places
bundles on any nodes that have room, so a trial larger than one node is normal on a cluster
(the Pong how-to runs 13 env runners over 5 VMs). With the strategy

- ``PACK`` (RLlib's default) and ``SPREAD``: every bundle must fit on some node and all of
  them together in the cluster (checked by first-fit-decreasing packing, which finds a
  placement whenever the bundles are uniform, as RLlib's are);
- ``STRICT_PACK``: all bundles on one node;

(`Ray docs, placement groups
<https://docs.ray.io/en/latest/ray-core/scheduling/placement-group.html>`_). A trial that cannot
be placed is *oversubscribed*: it asks for more than the cluster has.

Example:
    >>> nodes = [{"CPU": 2.0}] * 3
    >>> placement_problem([{"CPU": 1.0}] * 5, nodes) is None
    True
    >>> placement_problem([{"CPU": 1.0}] * 5, nodes, "STRICT_PACK")
    'STRICT_PACK needs all 5 CPUs on one node, and the largest node has 2'
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from sweeps.engine.sweep_spec import Choice, IntRange, Sweep

if TYPE_CHECKING:
    from sweeps.engine.trainable import TrialSetup

__all__ = [
    "STRATEGIES",
    "TrialRequest",
    "cluster_nodes",
    "cluster_shape",
    "describe_cluster",
    "env_runner_counts",
    "feasibility",
    "placement_problem",
    "trial_requests",
    "trial_setup",
]

#: Placement strategies a sweep can choose (``STRICT_SPREAD`` would need a node per bundle).
STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK")

_NAMES = {"CPU": "CPUs", "GPU": "GPUs"}


def _name(key: str) -> str:
    return _NAMES.get(key, key)


def cluster_nodes(nodes: Sequence[Mapping]) -> list[dict[str, float]]:
    """Ray's node dicts (``cluster.local.alive_nodes``: ``num_cpus``, ``num_gpus``) → the
    resource dicts :func:`placement_problem` takes (``{"CPU": .., "GPU": ..}``)."""
    return [{"CPU": float(n.get("num_cpus", 0)), "GPU": float(n.get("num_gpus", 0))} for n in nodes]


def describe_cluster(nodes: Sequence[Mapping[str, float]]) -> str:
    """One line: node count, CPUs and GPUs in total, the largest node."""
    cpus = sum(n.get("CPU", 0) for n in nodes)
    gpus = sum(n.get("GPU", 0) for n in nodes)
    big = max(nodes, key=lambda n: (n.get("CPU", 0), n.get("GPU", 0)))
    return (
        f"{len(nodes)} node(s), {cpus:g} CPUs and {gpus:g} GPUs in total "
        f"(largest node: {big.get('CPU', 0):g} CPUs, {big.get('GPU', 0):g} GPUs)"
    )


def placement_problem(
    bundles: Sequence[Mapping[str, float]],
    nodes: Sequence[Mapping[str, float]],
    strategy: str = "PACK",
) -> str | None:
    """Why Ray could never place ``bundles`` on ``nodes`` with ``strategy``, or None if it can.

    Args:
        bundles: resource dicts of one placement group, e.g. ``[{"CPU": 1}, {"CPU": 1}]``.
        nodes: each node's total resources, e.g. ``[{"CPU": 2, "GPU": 0}] * 3``.
        strategy: one of :data:`STRATEGIES`.

    Returns:
        None, or one clause naming the resource that is short (no trailing period).

    Raises:
        ValueError: an unknown strategy, or no nodes.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"placement_strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    if not nodes:
        raise ValueError("a cluster of no nodes")
    keys = sorted({k for b in bundles for k, v in b.items() if v > 0})
    total = {k: sum(b.get(k, 0.0) for b in bundles) for k in keys}
    if strategy == "STRICT_PACK":
        if any(all(total[k] <= n.get(k, 0.0) + 1e-9 for k in keys) for n in nodes):
            return None
        largest = {k: max(n.get(k, 0.0) for n in nodes) for k in keys}
        k = next((k for k in keys if total[k] > largest[k] + 1e-9), keys[0])
        return (
            f"STRICT_PACK needs all {total[k]:g} {_name(k)} on one node, and the largest "
            f"node has {largest[k]:g}"
        )
    for k in keys:
        have = sum(n.get(k, 0.0) for n in nodes)
        if total[k] > have + 1e-9:
            return f"it asks for {total[k]:g} {_name(k)} and the cluster has {have:g} in all"
    for b in bundles:
        if not any(all(v <= n.get(k, 0.0) + 1e-9 for k, v in b.items()) for n in nodes):
            k = next(iter(k for k, v in b.items() if v > 0))
            return (
                f"one of its bundles asks for {b[k]:g} {_name(k)} and no node has that "
                f"many (largest: {max(n.get(k, 0.0) for n in nodes):g})"
            )
    free = [dict(n) for n in nodes]
    for b in sorted(bundles, key=lambda b: tuple(-b.get(k, 0.0) for k in ("GPU", "CPU"))):
        for n in free:
            if all(v <= n.get(k, 0.0) + 1e-9 for k, v in b.items()):
                for k, v in b.items():
                    n[k] = n.get(k, 0.0) - v
                break
        else:
            asked = ", ".join(f"{total[k]:g} {_name(k)}" for k in keys)
            return f"its {len(bundles)} bundles ({asked}) do not pack onto the cluster's nodes"
    return None


#: Memory of one async sub-env's process (MiB): its proportional set size (PSS: its own pages
#: plus its share of those it still shares with the env runner it was forked from), rounded up
#: from the larger of CartPole's and Contoso Cabs' as ``benchmarks/bench_async_env_memory.py``
#: measures them (``benchmarks/results/bench_async_env_memory.json``); a heavier simulator
#: costs more, and pages a long run writes stop being shared.
ENV_PROCESS_MIB = 45.0


def _param_values(sweep: Sweep, algorithm: str, key: str) -> list:
    """Every value of ``key`` a trial of ``algorithm`` can get: a choice's values, a range's
    bounds, the fixed value, else none (the algorithm's default)."""
    p = sweep.params_for(algorithm).get(key)
    fixed = sweep.fixed_for(algorithm).get(key)
    if isinstance(p, Choice):
        return list(p.values)
    if isinstance(p, IntRange):
        return [p.low, p.high]
    return [fixed] if fixed is not None else []


def env_runner_counts(sweep: Sweep, algorithm: str) -> list[int]:
    """Every num_env_runners value a trial of ``algorithm`` can get (for the feasibility check)."""
    return [int(v) for v in _param_values(sweep, algorithm, "num_env_runners")]


def trial_requests(sweep: Sweep, setup: TrialSetup, scaled: bool = False) -> list[TrialRequest]:
    """What each kind of trial asks Ray for, one :class:`TrialRequest` per algorithm ×
    ``num_env_runners`` × sampling layout the sweep can produce (the baseline first): RLlib's
    own placement-group request (:func:`sweeps.engine.trainable.trial_algorithm_config`),
    unscaled (``scaled``: as the trial runs, scaled down where ``setup`` allows
    oversubscription). A layout is a vectorize mode and, for ``"async"`` (whose sub-envs are
    processes Ray does not count), each ``num_envs_per_env_runner`` value. An SB3
    configuration (:mod:`sweeps.engine.reference`) asks for its one CPU, 0 env runners, one
    request per ``vec_env`` × ``n_envs`` value; ``subproc`` sub-envs are its env processes."""
    from sweeps.engine.reference import REFERENCE_ALGORITHMS
    from sweeps.engine.trainable import request_bundles, trial_algorithm_config

    combos = []
    sb3 = []
    for a in sweep.algorithms:
        if a in REFERENCE_ALGORITHMS:  # one process, its vectorized env's sub-envs beside it
            for vec in _param_values(sweep, a, "vec_env") or ["dummy"]:
                for k in _param_values(sweep, a, "n_envs") or [1]:
                    sb3.append({"algorithm": a, **sweep.fixed_for(a), "vec_env": vec, "n_envs": k})
            continue
        for n in env_runner_counts(sweep, a) or [None]:
            for mode in _param_values(sweep, a, "gym_env_vectorize_mode") or [None]:
                for k in (
                    _param_values(sweep, a, "num_envs_per_env_runner") or [None]
                    if mode == "async"
                    else [None]
                ):
                    for m in _param_values(sweep, a, "num_learners") or [None]:
                        combos.append((a, n, mode, k, m))
    if sweep.baseline and sweep.baseline["algorithm"] in REFERENCE_ALGORITHMS:
        sb3.insert(0, dict(sweep.baseline))
    elif sweep.baseline:
        combos.insert(
            0,
            (
                sweep.baseline["algorithm"],
                sweep.baseline.get("num_env_runners"),
                sweep.baseline.get("gym_env_vectorize_mode"),
                sweep.baseline.get("num_envs_per_env_runner"),
                sweep.baseline.get("num_learners"),
            ),
        )
    sb3_out = []
    for cfg in sb3:
        _, info = trial_algorithm_config(cfg, setup)
        sb3_out.append(
            TrialRequest(
                cfg["algorithm"],
                0,
                1.0,
                0.0,
                [{"CPU": 1.0}],
                info["vectorize_mode"],
                int(cfg.get("n_envs", 1)),
                info["concurrent_envs"],
                info["env_processes"],
            )
        )
    rllib_baseline = sweep.baseline and sweep.baseline["algorithm"] not in REFERENCE_ALGORITHMS
    baseline_combo = combos[0] if rllib_baseline else None
    out = []
    for combo in dict.fromkeys(combos):
        algo, n, mode, k, m = combo
        cfg = {"algorithm": algo, **sweep.fixed_for(algo)}
        for key, value in (
            ("num_env_runners", n),
            ("gym_env_vectorize_mode", mode),
            ("num_envs_per_env_runner", k),
            ("num_learners", m),
        ):
            if value is not None:
                cfg[key] = value
        # only the baseline's own request takes its values: a searched configuration of the
        # same algorithm and env runner count keeps its own (its num_learners, say)
        if combo == baseline_combo:
            cfg.update(sweep.baseline)
        algo_config, info = trial_algorithm_config(
            cfg, setup if scaled else setup.with_(allow_oversubscription=False)
        )
        out.append(
            TrialRequest(
                algo,
                n,
                float(info["requested_cpus"]),
                float(info["num_gpus"]),
                request_bundles(algo_config),
                info["vectorize_mode"],
                algo_config.num_envs_per_env_runner,
                info["concurrent_envs"],
                info["env_processes"],
                info["num_learners"],
            )
        )
    if sweep.baseline and sweep.baseline["algorithm"] in REFERENCE_ALGORITHMS:
        return sb3_out + out
    return out + sb3_out


class TrialRequest(NamedTuple):
    """One kind of trial's request: ``cpus``/``gpus`` summed over its ``bundles``; its sampling
    layout (``vectorize_mode``, ``num_envs_per_env_runner``, ``concurrent_envs``) and the
    processes an async layout starts outside Ray's request (``env_processes``)."""

    algorithm: str
    num_env_runners: int | None
    cpus: float
    gpus: float
    bundles: list[dict[str, float]]
    vectorize_mode: str = "sync"
    num_envs_per_env_runner: int = 1
    concurrent_envs: int = 1
    env_processes: int = 0
    num_learners: int = 0

    def layout(self) -> str:
        """``""`` for RLlib's default (sync) layout and no learner process, else
        ``" x 16 envs async"`` and/or ``", 4 learners"``."""
        s = "" if self.num_learners == 1 else "s"
        learners = f", {self.num_learners} learner{s}" if self.num_learners else ""
        if self.vectorize_mode == "sync":
            return learners
        return f" x {self.num_envs_per_env_runner} envs {self.vectorize_mode}{learners}"

    def outside_ray(self, step_cpu_ms: float = 0.0) -> str:
        """What the trial starts beside Ray's request: its async sub-env processes and their
        memory (:data:`ENV_PROCESS_MIB` each), ``""`` when none. With ``step_cpu_ms`` > 0 (a
        CPU-bound env) it says their CPU is not reserved."""
        if not self.env_processes:
            return ""
        cpu = (
            "; their env steps' CPU (step_cpu_ms) is not in Ray's request"
            if step_cpu_ms > 0
            else ""
        )
        return (
            f", +{self.env_processes} env processes "
            f"(~{self.env_processes * ENV_PROCESS_MIB:,.0f} MiB{cpu})"
        )


def shared_bundles(sweep: Sweep, setup: TrialSetup) -> list[dict[str, float]] | None:
    """The one placement group every trial of a sequential sweep may ask for, so that Tune
    runs them all on one actor and its parked env runners serve every later trial
    (:mod:`sweeps.engine.warm`): the largest request among the sweep's trial kinds
    (:func:`trial_requests`, as they run) when all the others, the reference's one CPU
    included, fit inside it (:func:`sweeps.engine.trainable.bundles_fit`); None when they
    do not, when trials run concurrently (``Search.max_concurrent`` > 1: each would hold the
    largest group) or without warm trials. :func:`trial_setup` uses it on a one-node cluster
    only (the embedded Ray): on several nodes a node lost mid-sweep could leave the largest
    group unplaceable while every smaller trial still fits. A trial never asks for less than
    its own request: one that does not fit (a resource its search space varies besides the
    env runners) keeps its own group."""
    from sweeps.engine.trainable import bundles_fit

    if not sweep.search.warm_trials or sweep.search.max_concurrent != 1:
        return None
    requests = [r.bundles for r in trial_requests(sweep, setup, scaled=True)]
    if sweep.reference:
        requests.append([{"CPU": 1.0}])
    largest = max(requests, key=lambda b: (sum(x.get("CPU", 0.0) for x in b), len(b)))
    if all(bundles_fit(r, largest) for r in requests):
        return [dict(b) for b in largest]
    return None


def cluster_shape(text: str) -> list[dict[str, float]]:
    """``--cluster``: ``"1x6+4x2:1"`` → one resource dict per node (``{"CPU", "GPU"}``).

    Raises:
        argparse.ArgumentTypeError: a malformed shape (argparse prints it in one line).
    """

    nodes: list[dict[str, float]] = []
    for part in text.replace(" ", "").split("+"):
        m = re.fullmatch(r"(\d+)x(\d+(?:\.\d+)?)(?::(\d+(?:\.\d+)?))?", part)
        if m is None or int(m.group(1)) < 1 or float(m.group(2)) <= 0:
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected NODESxCPUS[:GPUS] joined by '+', e.g. '1x6+4x2' or '4x16:1'"
            )
        nodes += [{"CPU": float(m.group(2)), "GPU": float(m.group(3) or 0)}] * int(m.group(1))
    return nodes


def trial_setup(sweep: Sweep, target: dict, nodes: list[dict[str, float]], quiet: bool = True):
    """The sweep's :class:`sweeps.engine.trainable.TrialSetup` on a cluster of ``nodes`` (resource
    dicts, ``{"CPU": .., "GPU": ..}``), for ``target`` (:func:`sweeps.engine.sweep_file.sweep_target`)."""
    from sweeps.engine.trainable import TrialSetup

    setup = TrialSetup.of(
        sweep,
        target,
        max(n["CPU"] for n in nodes),
        quiet=quiet,
        max_node_gpus=max(n.get("GPU", 0.0) for n in nodes),
        cluster_cpus=sum(n["CPU"] for n in nodes),
    )
    # on one node only: where a node can be lost mid-sweep, the largest group may no longer
    # be placeable while every smaller trial still is
    return setup.with_(shared_bundles=shared_bundles(sweep, setup) if len(nodes) == 1 else None)


def feasibility(
    sweep: Sweep, setup: TrialSetup, source: str, nodes: list[dict[str, float]], strict: bool = True
) -> list[str]:
    """Check every algorithm × num_env_runners against the cluster by Ray's placement rule
    (:func:`sweeps.engine.placement.placement_problem`: each bundle on some node, all of them in the
    cluster, over several nodes unless the strategy is STRICT_PACK).

    Args:
        nodes: the cluster's nodes as resource dicts (``{"CPU": .., "GPU": ..}``).
        strict: raise for a trial that cannot be placed (False: only describe it).

    Returns:
        lines describing each (algorithm, num_env_runners): CPUs asked, fits or oversubscribed.
    Raises:
        SpecError: a trial asks for GPUs no node has, or cannot be placed and the sweep does
            not allow oversubscription.
    """
    from sweeps.engine.sweep_file import SpecError

    strategy = sweep.placement_strategy
    requests = trial_requests(sweep, setup)
    problems = [placement_problem(r.bundles, nodes, strategy) for r in requests]
    for r, problem in sorted(
        zip(requests, problems, strict=True), key=lambda rp: (-rp[0].cpus, -rp[0].gpus)
    ):
        gpu_problem = (
            placement_problem([{"GPU": b.get("GPU", 0.0)} for b in r.bundles], nodes, strategy)
            if r.gpus
            else None
        )
        if gpu_problem:  # the largest trial is named
            raise SpecError(
                f"{source}: num_gpus_per_learner: a trial of {r.algorithm} cannot be placed: "
                f"{gpu_problem}; drop the GPU request or run on a cluster with GPUs"
            )
        if problem and not sweep.allow_oversubscription and strict:
            # env runners that mostly wait on their env share a core well (the Cabs sweeps
            # give each 1/8 of one)
            share = (
                ", give each env runner a fraction of a CPU (num_cpus_per_env_runner, e.g. 0.5)"
                if r.num_env_runners
                else ""
            )
            raise SpecError(
                f"{source}: num_env_runners: a trial ({r.algorithm}, num_env_runners="
                f"{r.num_env_runners}{r.layout()}) cannot be placed on this cluster ({strategy}): "
                f"{problem}; lower it{share}, use a larger cluster or set "
                "allow_oversubscription=True"
            )
    lines = []
    step_cpu_ms = float(sweep.env_config.get("step_cpu_ms") or 0.0)
    for r, problem in zip(requests, problems, strict=True):
        lines.append(
            f"  {r.algorithm:<7} num_env_runners={r.num_env_runners}{r.layout()}: "
            f"{r.cpus:g} CPUs, {r.gpus:g} GPUs{r.outside_ray(step_cpu_ms)}  "
            + (
                "fits"
                if not problem
                else f"OVERSUBSCRIBED ({problem}; scaled down and flagged)"
                if sweep.allow_oversubscription
                else f"DOES NOT FIT ({problem})"
            )
        )
    return lines

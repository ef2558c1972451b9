"""The capacity plan in words: the answer to the question asked, its commands, its assumptions
and its details (:func:`plan_answer`), as the report, ``python -m analysis.plan`` and the
published pages print them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.catalogue import VMSize, load_vm_sizes
from analysis.fmt import config_phrase, fmt_ci, fmt_s, fmt_usd
from analysis.plan_model import Plan

__all__ = [
    "LaunchCommand",
    "PlanAnswer",
    "describe_row",
    "launch_lines",
    "plan_answer",
    "plan_text",
    "planned_short",
    "sweep_file_of",
]


def describe_row(r: dict[str, Any]) -> str:
    """One line for a candidate: algorithm, N, VM, TTT and cost with intervals."""
    tag = " [extrapolated]" if r["extrapolated"] else ""
    return (
        f"{config_phrase(r['algorithm'], r['num_env_runners'])} on {r['nodes']} x "
        f"{r['vm']}: TTT {fmt_ci(r['ttt_s'], r['ttt_low_s'], r['ttt_high_s'], fmt_s)}, cost "
        f"{fmt_ci(r['cost_usd'], r['cost_low_usd'], r['cost_high_usd'], fmt_usd)}"
        f", {r['source']}{tag}"
    )


def plan_text(plan: Plan) -> list[str]:
    """The plan's details as plain lines (CLI, report and published pages): the cheapest and
    fastest candidates, the knee, the scaling model per algorithm, what each algorithm's run
    asks for, and the caveats. The answer and its assumptions are :func:`plan_answer`."""
    lines = []
    for row, head, limit, key, fmt, what in (
        (
            plan.cheapest,
            "Cheapest",
            plan.deadline_s,
            "ttt_high_s",
            fmt_s,
            ("meeting the deadline", "meets the deadline", "deadline"),
        ),
        (
            plan.fastest,
            "Fastest",
            plan.budget_usd,
            "cost_high_usd",
            fmt_usd,
            ("within the budget", "fits the budget", "budget"),
        ),
    ):
        if row is None:
            continue
        line = f"{head} {what[0]} {fmt(limit)}" if limit is not None else head
        line += f": {describe_row(row)}"
        if limit is not None and math.isnan(row[key]):
            line += f" -- no interval: cannot tell how safely it {what[1]}"
        elif limit is not None and not row[key] <= limit:
            line += f" -- at risk: its interval reaches past the {what[2]}"
        lines.append(line)
    if plan.knee is not None:
        k = plan.knee
        if k["num_env_runners"] == k["relative_to_n"]:
            lines.append(
                f"Knee of the efficiency curve ({k['algorithm']}): "
                f"{k['num_env_runners']} env runner(s) -- more env runners are not "
                "predicted to reach the target sooner"
            )
        else:
            lines.append(
                f"Knee of the efficiency curve ({k['algorithm']}): "
                f"{k['num_env_runners']} env runner(s), speedup {k['speedup']:.2f}x "
                f"over {k['relative_to_n']} env runner(s), parallel efficiency "
                f"{k['efficiency']:.0%} per env runner"
                + (" [extrapolated]" if k["extrapolated"] else "")
            )
    for alg, fit in plan.fits.items():
        if alg in plan.pipeline:
            lines.append(
                f"Scaling model for {alg}: the pipeline (start-up + env steps to the "
                "target / throughput, each part fitted in N), chosen by "
                "cross-validation on the fitted N"
            )
            continue
        if alg in plan.references:
            lines.append(f"Scaling model for {alg}: none (the single-process reference)")
            continue
        lines.append(
            f"Scaling model for {alg}: "
            + (fit.describe() if fit is not None else "none (measured points only)")
        )
    lines.extend(f"{alg}: a run asks for {need.describe()}" for alg, need in plan.resources.items())
    lines.extend(f"Note: {n}" for n in plan.notes)
    return lines


@dataclass(frozen=True)
class LaunchCommand:
    """A command that would run the sweep on a plan's cluster shape (:func:`launch_lines`).

    Attributes:
        label: where it runs (``"Run it on Azure ML"``).
        command: the command line to copy, as a shell reads it.
        note: what it needs beside it, with its leading space (``" (node pool: ...)"``), or
            ``""``.

    ``str()`` gives the line as the CLI prints it: ``"label: command note"``.
    """

    label: str
    command: str
    note: str = ""

    def __str__(self) -> str:
        return f"{self.label}: {self.command}{self.note}"


@dataclass(frozen=True)
class PlanAnswer:
    """The plan as a user reads it (the report's plan section, ``python -m analysis.plan``
    and the published pages print the same text).

    Attributes:
        sentence: one sentence answering the question asked (fastest to the target, the
            cheapest within ``--deadline``, the fastest within ``--budget``), the measured and
            the planned TTT side by side, the start-up assumption named in it.
        commands: the commands that run the sweep on the answer's cluster shape.
        assumptions: ``(assumption, what the plan took)`` rows: launcher start-up and
            billing, vCPU speed, CPUs and memory per run, what was extrapolated, nodes,
            GPUs, prices.
        details: everything else (:func:`plan_text`).
    """

    sentence: str
    commands: list[LaunchCommand]
    assumptions: list[tuple[str, str]]
    details: list[str]


def _question(plan: Plan) -> str:
    if plan.deadline_s is not None:
        within = f"Cheapest run within the {fmt_s(plan.deadline_s)} deadline"
        if plan.budget_usd is not None and plan.cheapest is not None:
            ok = plan.cheapest["cost_usd"] <= plan.budget_usd
            within += f" ({'within' if ok else 'over'} the {fmt_usd(plan.budget_usd)} budget)"
        return within
    if plan.budget_usd is not None:
        return f"Fastest run within the {fmt_usd(plan.budget_usd)} budget"
    return "Fastest run to the target"


def _planned(plan: Plan, r: dict[str, Any]) -> str:
    """``planned TTT T = t measured here (CI) + s assumed start-up``: the row's two parts."""
    up = plan.launcher.startup_s
    own = r["ttt_s"] - up
    parts = []
    if r["source"] == "measured":
        where = "measured here"
    else:
        c = plan.candidates
        seen = c[(c["algorithm"] == r["algorithm"]) & (c["source"] == "measured")]
        where = f"predicted by the {r['source']}"
        if len(seen):
            best = seen.sort_values("ttt_s").iloc[0]
            parts.append(
                ("extrapolated from " if r["extrapolated"] else "best measured: ")
                + f"{fmt_s(best['ttt_s'] - up)} measured here at N="
                f"{best['num_env_runners']}"
            )
    if parts:
        where += f" ({'; '.join(parts)})"
    start = (
        f"{fmt_s(up)} start-up assumed for {plan.launcher.name}"
        if up > 0
        else f"no start-up ({plan.launcher.name}: {plan.launcher.source})"
    )
    own_ci = fmt_ci(own, r["ttt_low_s"] - up, r["ttt_high_s"] - up, fmt_s)
    return f"planned TTT {fmt_s(r['ttt_s'])} = {own_ci} {where} + {start}"


def planned_short(plan: Plan, r: dict[str, Any]) -> str:
    """``5.0 min planned (2.0 s TTT + 5.0 min assumed start-up)``, or ``TTT 2.0 s`` without a
    start-up: a plan row's time split in its two parts, for a summary card."""
    up = plan.launcher.startup_s
    if up <= 0:
        return f"TTT {fmt_s(r['ttt_s'])}"
    return (
        f"{fmt_s(r['ttt_s'])} planned ({fmt_s(r['ttt_s'] - up)} TTT + {fmt_s(up)} assumed start-up)"
    )


def plan_answer(
    plan: Plan, sweep_file: str = "FILE", vms: list[VMSize] | None = None
) -> PlanAnswer:
    """The answer, its commands, its assumptions and the details of ``plan``.

    Args:
        plan: :func:`make_plan`'s plan.
        sweep_file: the sweep file the commands name (:func:`sweep_file_of`).
        vms: the VM sizes planned with (default: every row of ``vm_sizes.csv``), for the
            commands.
    """
    vms = list(load_vm_sizes().values()) if vms is None else vms
    r = plan.answer
    lc = plan.launcher
    # the reference is one process: no Ray cluster to launch, and the sweep's commands would
    # run the whole study
    is_reference = r is not None and r["algorithm"] in plan.references
    if r is not None:
        who = (
            f"{r['algorithm']}, the single-process reference (one process, no Ray cluster to "
            "launch),"
            if is_reference
            else config_phrase(r["algorithm"], r["num_env_runners"])
        )
        sentence = (
            f"{_question(plan)}: {who} on {r['nodes']} x {r['vm']}, {_planned(plan, r)}; "
            f"{fmt_usd(r['cost_usd'])} a run."
        )
    elif plan.candidates.empty:
        sentence = ("No plan: " + "; ".join(plan.notes) + ".") if plan.notes else "No plan."
    else:
        best = plan.candidates.sort_values(["ttt_s", "cost_usd"], kind="stable").iloc[0]
        sentence = (
            "No run is predicted to reach the target within the "
            + (
                f"{fmt_s(plan.deadline_s)} deadline"
                if plan.deadline_s is not None
                else f"{fmt_usd(plan.budget_usd)} budget"
            )
            + f": the fastest, {config_phrase(best['algorithm'], best['num_env_runners'])} "
            f"on {best['nodes']} x {best['vm']}, has "
            f"{_planned(plan, best.to_dict())}; {fmt_usd(best['cost_usd'])} a run."
        )
        r = best.to_dict()
        is_reference = r["algorithm"] in plan.references
    assumptions: list[tuple[str, str]] = [
        (
            "Start-up and billing",
            f"{lc.name}: {fmt_s(lc.startup_s)} before the first trial, added to every planned "
            "TTT; billed "
            + (f"in {fmt_s(lc.billing_s)} units" if lc.billing_s > 0 else "continuously")
            + f" ({lc.source}); change with --launcher, --startup, --billing",
        )
    ]
    assumptions.append(
        (
            "vCPU speed",
            "a VM's vCPU is as fast as the measured machine's"
            + (f" ({plan.cpu_model})" if plan.cpu_model else ""),
        )
    )
    if r is not None:
        need = plan.resources.get(r["algorithm"])
        if need is not None:
            assumptions.append(("CPUs and memory per run", f"{r['algorithm']}: {need.describe()}"))
        if is_reference:
            what = "nothing: its one process was measured"
        elif r["source"] == "measured":
            what = f"nothing: {r['num_env_runners']} env runner(s) were measured"
        elif r["extrapolated"]:
            what = (
                f"N={r['num_env_runners']} lies beyond the measured env runner counts: "
                f"the {r['source']}'s prediction, not a measurement"
            )
        else:
            what = (
                f"nothing: N={r['num_env_runners']} lies inside the measured range "
                f"(interpolated by the {r['source']})"
            )
        assumptions.append(("Extrapolated", what))
        assumptions.append(
            (
                "Several nodes",
                "no communication cost is added between nodes unless such runs were measured"
                if r["nodes"] > 1
                else "one node: no communication between nodes",
            )
        )
    if plan.gpu_free:
        assumptions.append(
            (
                "GPUs",
                "the measured learners used none: GPU sizes are costed "
                "for their vCPUs only (a GPU learner might be faster)",
            )
        )
    assumptions.append(
        (
            "Prices",
            "low-priority: the documented upper-bound discount ('up to "
            "80%'); evictions and restarts are not modelled"
            if plan.low_priority
            else "pay-as-you-go Linux, analysis/vm_sizes.csv (source and date per row)",
        )
    )
    commands = launch_lines(r, vms, sweep_file) if r is not None and not is_reference else []
    return PlanAnswer(sentence, commands, assumptions, plan_text(plan))


def sweep_file_of(environment: dict[str, Any]) -> str:
    """The sweep file a run was started with (from ``environment.json``'s ``command``), or
    ``"FILE"`` when it cannot be told."""
    from sweeps.engine.cli import sweep_file_in

    return sweep_file_in(str(environment.get("command", ""))) or "FILE"


def launch_lines(
    row: dict[str, Any] | pd.Series, vms: list[VMSize], sweep_file: str
) -> list[LaunchCommand]:
    """The commands that would run the sweep on a plan's cluster shape (``row``: a candidate
    with ``vm`` and ``nodes``), one per launcher: Azure ML (:mod:`cluster.azure`, serverless
    VMs of that size) and Kubernetes (:mod:`cluster.kuberay`, one worker pod per node, one vCPU
    left to each node's kubelet and system pods, so ``--cpus-per-worker`` = vCPUs − 1)."""
    vm = next((v for v in vms if v.name == row["vm"]), None)
    if vm is None:
        return []
    nodes = int(row["nodes"])
    gpus = f" --gpus-per-worker {vm.gpus}" if vm.gpus else ""
    return [
        LaunchCommand(
            "Run it on Azure ML",
            f"python -m cluster.azure submit {sweep_file} --nodes {nodes} --vm {vm.name}",
        ),
        LaunchCommand(
            "Run it on AKS (KubeRay)",
            f"python -m cluster.kuberay rayjob {sweep_file} --workers {nodes} "
            f"--cpus-per-worker {max(1, vm.vcpus - 1)}{gpus} --results-pvc rl-results",
            f" (node pool: {nodes} x {vm.name}, plus one node for the head pod)",
        ),
    ]

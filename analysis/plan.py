"""Capacity plan: what to run, on which Azure VM size, to reach the target by a deadline or
within a budget.

Usage::

    python -m analysis.plan RESULTS_DIR [--deadline 10m] [--budget 5usd] [--vm SIZE]
                                        [--low-priority] [--target VALUE|PCT%]

Model (explicit, so it can be checked by hand):

1. **Time-to-target at N env runners**, per algorithm, from its best configuration at each
   measured N (lowest median TTT). At a measured N the measured TTT and its CI are used. At
   other N, TTT(N) = 1 / X(N) with X the Universal Scalability Law fitted to 1/TTT against N
   (Amdahl if only two distinct N were measured; no prediction with fewer -- see
   :mod:`analysis.scaling`). Its interval comes from a bootstrap over seeds (each resample
   re-estimates TTT per N and refits), or from the fit's covariance when there are too few
   seeds. Every prediction outside the measured range of N is marked *extrapolated*.
2. **Resources** (:class:`Resources`): a trial with N env runners asks for ``d + N c`` CPUs
   (the driver/learner's ``d`` and each env runner's ``c``, as the measured trials asked Ray:
   ``num_cpus_per_env_runner``, 1 unless the sweep set it) plus the GPUs its learner asked for
   (``num_gpus``), and needs ``m0 + N m1`` MiB of memory, a line fitted to the trials' peak RSS
   (``peak_rss_mib``).
3. **Nodes** of a VM size: ``ceil(CPUs / vCPUs per VM)``, at least ``ceil(GPUs / GPUs per
   VM)`` (a size without GPUs cannot host a GPU learner) and at least ``ceil(memory / (0.7 x
   memory per VM))`` (Ray keeps 30 % of a node's memory for its object store).
4. **Start-up and billing** of the launcher (``--launcher``, :data:`LAUNCHERS`): a run on
   rented machines pays a start-up time before its first trial (node provisioning, image
   pull, Ray start-up) and is billed in whole units of a granularity. The plan's time is
   ``startup + TTT`` and the billed time ``ceil((startup + TTT) / granularity) x
   granularity``. The defaults are assumptions, not measurements (``--startup`` and
   ``--billing`` override them); the plan says which it used.
5. **Cost** of one run to the target:
   ``nodes x price per hour x (1 - low-priority discount if --low-priority) x billed time / 3600``
   (US dollars; pay-as-you-go Linux prices from ``analysis/vm_sizes.csv``, which records the
   source, region and date of every price and can be edited).

Recommendations: the cheapest candidate whose predicted TTT meets ``--deadline`` (cheapest
overall without one), the fastest whose cost fits ``--budget`` (fastest overall without one),
and the knee of the predicted speedup curve of the best algorithm (Kneedle: Satopaa et al.,
"Finding a 'Kneedle' in a Haystack", ICDCS Workshops 2011). Assumptions the numbers rest on are
printed with them: a VM's vCPU is as fast as the measured machine's, nodes beyond one add no
communication cost unless multi-node runs were measured, low-priority evictions are not
modelled.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.fmt import fmt_s, fmt_usd
from analysis.plan_check import check_text, parse_holdout, plan_check
from analysis.scaling import (
    N_PARAMS,
    ScalingFit,
    bootstrap_ttt_prediction,
    fit_scaling,
    preferred,
)
from analysis.stats import MIN_SEEDS_FOR_CI, best_configs
from sweeps.cli import EXIT_BAD_INPUT, OneLineParser

__all__ = [
    "Plan",
    "Resources",
    "VMSize",
    "load_vm_sizes",
    "main",
    "make_plan",
    "nodes_for",
    "parse_duration",
    "parse_money",
    "PlanAnswer",
    "plan_answer",
    "plan_text",
    "per_runner_throughput",
    "run_cost_usd",
    "steps_plan",
    "trial_resources",
]

DEFAULT_CANDIDATE_N = (1, 2, 4, 8, 16, 32, 64)
EXTRAPOLATION_FACTOR = 4
"""Predictions reach at most this many times the largest measured N (further is guesswork)."""


@dataclass(frozen=True)
class VMSize:
    """One Azure VM size (a row of ``vm_sizes.csv``).

    Attributes:
        name: e.g. ``Standard_D4s_v5``.
        vcpus: vCPUs per VM.
        memory_gib: memory per VM (GiB).
        gpus: GPUs per VM; gpu_model: their model.
        price_per_hour_usd: pay-as-you-go Linux price per VM-hour (US dollars).
        low_priority_discount: fraction off with low-priority/spot capacity (0-1).
        region, price_source, price_date, discount_source: provenance of the numbers.
    """

    name: str
    vcpus: int
    memory_gib: float
    gpus: int
    gpu_model: str
    price_per_hour_usd: float
    low_priority_discount: float
    region: str
    price_source: str
    price_date: str
    discount_source: str

    def hourly_usd(self, low_priority: bool = False) -> float:
        """Price per VM-hour in US dollars, after the low-priority discount if asked."""
        return self.price_per_hour_usd * ((1.0 - self.low_priority_discount) if low_priority
                                          else 1.0)


def load_vm_sizes(path: str | Path | None = None) -> dict[str, VMSize]:
    """Read the VM size table (default: the shipped ``analysis/vm_sizes.csv``).

    Raises:
        ValueError: a row with a missing or non-numeric field (the message names it).
    """
    if path is None:
        text = resources.files("analysis").joinpath("vm_sizes.csv").read_text()
        where = "analysis/vm_sizes.csv"
    else:
        text = Path(path).read_text()
        where = str(path)
    out: dict[str, VMSize] = {}
    for i, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        try:
            vm = VMSize(
                name=row["name"].strip(), vcpus=int(row["vcpus"]),
                memory_gib=float(row["memory_gib"]), gpus=int(row["gpus"] or 0),
                gpu_model=row.get("gpu_model") or "",
                price_per_hour_usd=float(row["price_per_hour_usd"]),
                low_priority_discount=float(row["low_priority_discount"] or 0.0),
                region=row.get("region") or "", price_source=row.get("price_source") or "",
                price_date=row.get("price_date") or "",
                discount_source=row.get("discount_source") or "")
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} line {i}: bad or missing field ({exc})") from None
        if vm.vcpus < 1 or vm.price_per_hour_usd < 0 or not 0 <= vm.low_priority_discount < 1:
            raise ValueError(f"{where} line {i}: {vm.name}: vcpus must be >= 1, price >= 0 and "
                             "0 <= low_priority_discount < 1")
        out[vm.name] = vm
    return out


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(hours?|hr|h|minutes?|min|m|seconds?|sec|s)",
                       re.IGNORECASE)


def parse_duration(text: str) -> float:
    """Parse a duration like ``10m``, ``90s``, ``1h30m``, ``2.5h`` or ``600`` (seconds).

    Returns:
        Seconds.

    Raises:
        ValueError: unparsable or non-positive.
    """
    s = str(text).strip().replace(" ", "")
    try:
        value = float(s)
    except ValueError:
        pos, value = 0, 0.0
        for m in _DURATION.finditer(s):
            if m.start() != pos:
                break
            unit = m.group(2).lower()[0]
            value += float(m.group(1)) * {"h": 3600.0, "m": 60.0, "s": 1.0}[unit]
            pos = m.end()
        if pos != len(s) or pos == 0:
            raise ValueError(f"deadline {text!r}: expected a duration like 10m, 90s, 1h30m "
                             "or seconds") from None
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"deadline {text!r}: must be a positive duration")
    return value


def parse_money(text: str) -> float:
    """Parse an amount of US dollars like ``5usd``, ``$5``, ``5.50 USD`` or ``5``.

    Raises:
        ValueError: unparsable, another currency, or not positive.
    """
    s = str(text).strip().lower().replace(" ", "")
    m = re.fullmatch(r"\$?(\d+(?:\.\d*)?)(usd|\$|dollars?)?", s)
    if not m:
        raise ValueError(f"budget {text!r}: expected US dollars like 5usd, $5 or 5")
    value = float(m.group(1))
    if not value > 0:
        raise ValueError(f"budget {text!r}: must be positive")
    return value


USABLE_MEMORY_FRACTION = 0.7
"""Share of a node's memory the trial's processes may use: Ray gives 30 % of a node's memory to
its object store by default (Ray docs, "Memory Management": object store memory)."""


def nodes_for(cpus: float, gpus: float, vm: VMSize, memory_mib: float = math.nan) -> int | None:
    """VMs of size ``vm`` needed for ``cpus`` CPUs, ``gpus`` GPUs and ``memory_mib`` MiB of
    process memory (ignored when NaN; a node offers :data:`USABLE_MEMORY_FRACTION` of its
    memory). None if impossible (GPUs asked of a size without any)."""
    nodes = max(1, math.ceil(cpus / vm.vcpus - 1e-9))
    if math.isfinite(memory_mib) and memory_mib > 0:
        usable = USABLE_MEMORY_FRACTION * vm.memory_gib * 1024.0
        nodes = max(nodes, math.ceil(memory_mib / usable - 1e-9))
    if gpus > 0:
        if vm.gpus == 0:
            return None
        nodes = max(nodes, math.ceil(gpus / vm.gpus - 1e-9))
    return nodes


@dataclass(frozen=True)
class Resources:
    """What one run of an algorithm asks for at N env runners.

    CPUs = ``driver_cpus + N x cpus_per_env_runner`` (as the trials asked Ray for them);
    memory = ``base_mib + N x per_env_runner_mib`` MiB, a least-squares line through the
    trials' peak RSS (``peak_rss_mib``: every process of the trial) against N; NaN when the
    trials recorded none.
    """

    driver_cpus: float = 1.0
    cpus_per_env_runner: float = 1.0
    base_mib: float = math.nan
    per_env_runner_mib: float = math.nan

    def cpus(self, n: int) -> float:
        """CPUs a run with ``n`` env runners asks for."""
        return self.driver_cpus + n * self.cpus_per_env_runner

    def memory_mib(self, n: int) -> float:
        """Peak memory (MiB) of a run with ``n`` env runners; NaN when unknown."""
        return self.base_mib + n * self.per_env_runner_mib

    def describe(self) -> str:
        """One line for the plan's notes."""
        cpu = (f"{self.driver_cpus:g} + N x {self.cpus_per_env_runner:g} CPUs (as the trials "
               "asked)")
        if not math.isfinite(self.per_env_runner_mib):
            return cpu + "; memory not recorded, so not sized"
        return (f"{cpu}; memory {self.base_mib:,.0f} + N x {self.per_env_runner_mib:,.0f} MiB "
                f"(fitted to the trials' peak RSS), at most {USABLE_MEMORY_FRACTION:.0%} of a "
                "node's memory (the rest is Ray's object store)")


def trial_resources(tm: pd.DataFrame) -> Resources:
    """:class:`Resources` from one algorithm's trials (reference trials left out).

    Args:
        tm: per-trial metrics with ``num_env_runners, num_cpus`` and, when recorded,
            ``cpus_per_env_runner`` and ``peak_rss_mib``.
    """
    t = tm[~tm["is_reference"]] if "is_reference" in tm else tm
    if t.empty:
        return Resources()
    per = (float(t["cpus_per_env_runner"].median()) if "cpus_per_env_runner" in t
           else 1.0)
    n = t["num_env_runners"].to_numpy(float)
    driver = float(np.median(t["num_cpus"].to_numpy(float) - n * per))
    out = Resources(driver_cpus=max(driver, 0.0), cpus_per_env_runner=per)
    if "peak_rss_mib" not in t:
        return out
    m = t[np.isfinite(t["peak_rss_mib"].astype(float)) & (t["num_env_runners"] >= 1)]
    if m.empty:
        return out
    nn, rss = m["num_env_runners"].to_numpy(float), m["peak_rss_mib"].to_numpy(float)
    if len(np.unique(nn)) >= 2:
        slope, icpt = np.polyfit(nn, rss, 1)
        slope = max(float(slope), 0.0)
        icpt = max(float(np.mean(rss - slope * nn)), 0.0) if icpt < 0 else float(icpt)
    else:  # one N: one share per process (driver and each env runner)
        slope = icpt = float(np.median(rss / (nn + 1.0)))
    return replace(out, base_mib=icpt, per_env_runner_mib=slope)


def run_cost_usd(ttt_s: float, nodes: int, vm: VMSize, low_priority: bool = False) -> float:
    """Dollars for one run to the target: nodes x price/hour x TTT/3600."""
    return nodes * vm.hourly_usd(low_priority) * ttt_s / 3600.0


@dataclass
class AlgorithmModel:
    """What the plan knows about one algorithm: measurements per N and the fitted scaling."""

    algorithm: str
    measured: pd.DataFrame
    fits: dict[str, ScalingFit]
    fit: ScalingFit | None
    samples: dict[int, tuple[np.ndarray, np.ndarray]]
    gpus: float
    note: str = ""


def model_algorithms(tm: pd.DataFrame, summary: pd.DataFrame) -> dict[str, AlgorithmModel]:
    """Per algorithm: its best configuration per N and USL/Amdahl fits of 1/TTT against N.

    N = 0 (sampling in the driver) and N whose TTT is not finite (fewer than half the seeds
    reached the target) are left out of the fit.
    """
    out: dict[str, AlgorithmModel] = {}
    best = best_configs(summary, ("algorithm", "num_env_runners"))
    for alg, g in best.groupby("algorithm", sort=True):
        g = g.sort_values("num_env_runners")
        usable = g[(g["num_env_runners"] >= 1) & np.isfinite(g["ttt_s"].astype(float))]
        fits = fit_scaling(usable["num_env_runners"].to_numpy(float),
                           1.0 / usable["ttt_s"].to_numpy(float))
        samples = {}
        for _, r in usable.iterrows():
            t = tm[(tm["config_id"] == r["config_id"]) & (tm["status"] != "error")]
            samples[int(r["num_env_runners"])] = (t["duration_s"].to_numpy(float),
                                                  t["reached"].to_numpy(bool))
        notes = []
        left = g[~g.index.isin(usable.index)]
        if len(left):
            notes.append(f"N={', '.join(str(n) for n in left['num_env_runners'])} left out of "
                         "the fit (0 env runners, or median TTT not reached)")
        # a fit exactly determined by its points predicts whatever passes through them: the
        # plan extrapolates only from one the data could have contradicted
        out[alg] = AlgorithmModel(algorithm=alg, measured=g, fits=fits,
                                  fit=preferred(fits, testable=True),
                                  samples=samples, gpus=float(g["num_gpus"].max()),
                                  note="; ".join(notes))
    return out


def predict_ttt(model: AlgorithmModel, candidates: list[int], *, n_resamples: int = 200,
                seed: int = 0) -> pd.DataFrame:
    """Predicted TTT (seconds) with interval at each candidate N for one algorithm.

    Returns:
        Columns ``num_env_runners, ttt_s, ttt_low_s, ttt_high_s, source`` ("measured",
        "USL fit", "Amdahl fit"), ``extrapolated`` (bool), ``config_id`` (measured only).
    """
    rows = []
    meas = {int(r["num_env_runners"]): r for _, r in model.measured.iterrows()}
    fit = model.fit
    pred_n = [n for n in candidates if n not in meas]
    lows = highs = None
    if fit is not None and pred_n:
        enough = len(model.samples) >= 2 and all(
            len(d) >= MIN_SEEDS_FOR_CI for d, _ in model.samples.values())
        if enough:
            lows, highs, _ = bootstrap_ttt_prediction(model.samples, np.array(pred_n, float),
                                                      fit.model, n_resamples=n_resamples,
                                                      seed=seed,
                                                      p0=[fit.gamma, fit.alpha, fit.beta])
        if lows is None or not np.isfinite(lows).any():
            xl, xh = fit.predict_interval(np.array(pred_n, float))
            with np.errstate(divide="ignore", invalid="ignore"):
                lows = np.where(xh > 0, 1.0 / xh, np.nan)
                highs = np.where(xl > 0, 1.0 / xl, np.where(np.isfinite(xl), np.inf, np.nan))
    for n in candidates:
        if n in meas:
            r = meas[n]
            if not np.isfinite(r["ttt_s"]):
                continue
            rows.append({"num_env_runners": n, "ttt_s": float(r["ttt_s"]),
                         "ttt_low_s": float(r["ttt_low_s"]), "ttt_high_s": float(r["ttt_high_s"]),
                         "source": "measured", "extrapolated": False,
                         "config_id": r["config_id"]})
        elif fit is not None:
            x = float(fit.predict(n))
            if not x > 0:
                continue
            i = pred_n.index(n)
            rows.append({"num_env_runners": n, "ttt_s": 1.0 / x,
                         "ttt_low_s": float(lows[i]), "ttt_high_s": float(highs[i]),
                         "source": f"{fit.model.upper() if fit.model == 'usl' else 'Amdahl'} fit",
                         "extrapolated": fit.extrapolates(n), "config_id": ""})
    return pd.DataFrame(rows, columns=["num_env_runners", "ttt_s", "ttt_low_s", "ttt_high_s",
                                       "source", "extrapolated", "config_id"])


def pareto_front(df: pd.DataFrame, x: str = "ttt_s", y: str = "cost_usd") -> pd.Series:
    """Boolean mask of rows not dominated in (``x``, ``y``) (both minimised)."""
    order = df.sort_values([x, y]).index
    best = math.inf
    mask = pd.Series(False, index=df.index)
    for i in order:
        if df.at[i, y] < best - 1e-12:
            mask[i] = True
            best = df.at[i, y]
    return mask


def kneedle(n: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """Knee of an increasing, concave curve S(N) (Satopaa et al. 2011, Kneedle).

    Both axes are scaled to [0, 1]; the knee is the N where the curve rises furthest above the
    straight line joining its ends.

    Returns:
        ``(N_knee, strength)``; strength in [0, 1] (under 0.05: no clear knee).
    """
    n = np.asarray(n, float)
    s = np.asarray(s, float)
    if n.size < 3 or np.ptp(n) == 0 or np.ptp(s) == 0:
        return (float(n[-1]) if n.size else math.nan), 0.0
    xn = (n - n.min()) / np.ptp(n)
    yn = (s - s.min()) / np.ptp(s)
    diff = yn - xn
    i = int(np.argmax(diff))
    return float(n[i]), float(diff[i])


def billed_seconds(seconds: float, billing_s: float) -> float:
    """``seconds`` rounded up to whole billing units of ``billing_s`` (0: continuous); NaN
    stays NaN, inf stays inf."""
    if not math.isfinite(seconds) or billing_s <= 0:
        return seconds
    return math.ceil(seconds / billing_s - 1e-9) * billing_s


@dataclass(frozen=True)
class Launcher:
    """Where a planned run would start, and what that adds to its time and bill.

    Attributes:
        name: ``azure-ml``, ``aks``, ``ray-cluster`` or ``none``.
        startup_s: seconds from asking for the cluster to the first trial starting.
        billing_s: billing granularity in seconds (time is billed in whole units of it;
            0: continuous).
        source: where the numbers come from (one line, printed with the plan).
    """

    name: str
    startup_s: float
    billing_s: float
    source: str

    def billed_s(self, ttt_s: float) -> float:
        """Seconds billed for a run of ``startup_s + ttt_s`` (NaN stays NaN, inf stays inf)."""
        return billed_seconds(self.startup_s + ttt_s, self.billing_s)


#: Documented defaults per launcher. Assumptions (no cloud was reachable to measure them):
#: Azure ML compute scaling from 0 nodes typically takes minutes (VM allocation, image pull,
#: the MPI bootstrap); an AKS node pool that must scale up, likewise; Azure bills Linux VMs
#: by the minute here (change ``--billing`` to your agreement's unit).
LAUNCHERS = {
    "azure-ml": Launcher("azure-ml", 300.0, 60.0,
                         "assumed: compute cluster scaling from 0 nodes, image pull, Ray start"),
    "aks": Launcher("aks", 180.0, 60.0,
                    "assumed: node pool scale-up, image pull, KubeRay's Ray cluster start"),
    "ray-cluster": Launcher("ray-cluster", 0.0, 0.0,
                            "an already running Ray cluster: no start-up, no billing unit"),
    "none": Launcher("none", 0.0, 0.0, "TTT only, as if machines appeared instantly"),
}
DEFAULT_LAUNCHER = "azure-ml"


@dataclass
class Plan:
    """A capacity plan (see the module docstring for the model).

    Attributes:
        candidates: one row per (algorithm, N, VM size) with ``nodes, cpus, gpus,
            memory_gib`` (the run's fitted peak memory, NaN when not recorded), ``ttt_s,
            ttt_low_s, ttt_high_s, cost_usd, cost_low_usd, cost_high_usd, source,
            extrapolated, pareto``.
        cheapest: the row recommended for the deadline (cheapest meeting it), or None.
        fastest: the row recommended for the budget (fastest within it), or None.
        knee: ``{"algorithm", "num_env_runners", "speedup", "efficiency", "strength"}`` or None.
        fits: per algorithm, the scaling model used (``None`` = measured points only).
        notes: caveats, one line each (the assumptions are fields of their own).
        launcher: the start-up and billing added to every TTT (an assumption).
        resources: per algorithm, what a run asks for (:class:`Resources`).
        cpu_model: the measured machine's CPU ("" when not recorded).
        gpu_free: the measured learners used no GPU while GPU sizes are planned.
    """

    candidates: pd.DataFrame
    cheapest: dict[str, Any] | None
    fastest: dict[str, Any] | None
    knee: dict[str, Any] | None
    fits: dict[str, ScalingFit | None]
    deadline_s: float | None = None
    budget_usd: float | None = None
    low_priority: bool = False
    notes: list[str] = field(default_factory=list)
    launcher: Launcher = field(default_factory=lambda: LAUNCHERS[DEFAULT_LAUNCHER])
    resources: dict[str, Resources] = field(default_factory=dict)
    cpu_model: str = ""
    gpu_free: bool = False

    @property
    def answer(self) -> dict[str, Any] | None:
        """The row that answers the user's question: the cheapest meeting the deadline when
        one is given, else the fastest (within the budget when one is given)."""
        return self.cheapest if self.deadline_s is not None else self.fastest


def make_plan(tm: pd.DataFrame, summary: pd.DataFrame, *, deadline_s: float | None = None,
              budget_usd: float | None = None, vms: list[VMSize] | None = None,
              low_priority: bool = False, max_env_runners: int = 64, n_resamples: int = 200,
              seed: int = 0, cpu_model: str = "",
              launcher: Launcher | None = None,
              models: dict[str, AlgorithmModel] | None = None) -> Plan:
    """Build the capacity plan.

    Args:
        tm: per-trial metrics (:func:`analysis.metrics.trial_metrics`).
        summary: per-configuration statistics (:func:`analysis.stats.summarize_configs`).
        deadline_s: wall-clock seconds the run must finish in (None: no deadline).
        budget_usd: dollars one run may cost (None: no budget).
        vms: VM sizes to consider (default: every row of ``vm_sizes.csv``).
        low_priority: price with the low-priority discount.
        max_env_runners: largest env runner count considered.
        n_resamples, seed: bootstrap of the prediction intervals.
        cpu_model: the measured machine's CPU (for the notes).
        launcher: start-up and billing to add (default :data:`LAUNCHERS` ``azure-ml``);
            ``ttt_s`` and its bounds in the candidates include the start-up.
        models: :func:`model_algorithms` of ``tm`` and ``summary`` when already computed
            (:func:`analysis.study.analyse` computes them once); None: computed here.

    Returns:
        :class:`Plan`.
    """
    vms = list(load_vm_sizes().values()) if vms is None else vms
    launcher = launcher or LAUNCHERS[DEFAULT_LAUNCHER]
    models = model_algorithms(tm, summary) if models is None else models
    notes: list[str] = []
    needs: dict[str, Resources] = {}
    rows = []
    for alg, m in models.items():
        cand = set(int(n) for n in m.measured["num_env_runners"] if 0 <= n <= max_env_runners)
        if m.fit is not None:
            # every N inside the measured range (interpolation) and powers of two beyond it,
            # up to EXTRAPOLATION_FACTOR x the largest measured N
            horizon = min(max_env_runners, int(EXTRAPOLATION_FACTOR * m.fit.n_max))
            cand |= set(range(1, min(int(m.fit.n_max), max_env_runners) + 1))
            cand |= {n for n in DEFAULT_CANDIDATE_N if n <= horizon}
            if math.isfinite(m.fit.peak_n) and m.fit.peak_n <= horizon:
                cand |= {max(1, math.floor(m.fit.peak_n)), math.ceil(m.fit.peak_n)}
            if horizon < max_env_runners:
                notes.append(f"{alg}: predictions stop at N={horizon} "
                             f"({EXTRAPOLATION_FACTOR} x the largest measured N)")
        else:
            why = m.fits["amdahl"].reason if m.fits else "no data"
            if m.fits and m.fits["amdahl"].ok:
                why = (f"{m.fits['amdahl'].n_distinct} distinct N determine Amdahl exactly; "
                       f"measure at least {N_PARAMS['amdahl'] + 1} env runner counts")
            notes.append(f"{alg}: no scaling fit ({why}); only measured N are planned")
        if m.note:
            notes.append(f"{alg}: {m.note}")
        pred = predict_ttt(m, sorted(cand), n_resamples=n_resamples, seed=seed)
        need = needs[alg] = trial_resources(tm[tm["algorithm"] == alg])
        for _, p in pred.iterrows():
            n = int(p["num_env_runners"])
            cpus, gpus, mem = need.cpus(n), float(math.ceil(m.gpus)), need.memory_mib(n)
            for vm in vms:
                nodes = nodes_for(cpus, gpus, vm, mem)
                if nodes is None:
                    continue
                price = vm.hourly_usd(low_priority)
                up = launcher.startup_s
                rows.append({
                    "algorithm": alg, "num_env_runners": n, "vm": vm.name, "nodes": nodes,
                    "cpus": cpus, "gpus": gpus, "memory_gib": mem / 1024.0,
                    "ttt_s": up + p["ttt_s"],
                    "ttt_low_s": up + p["ttt_low_s"], "ttt_high_s": up + p["ttt_high_s"],
                    "cost_usd": nodes * price * launcher.billed_s(p["ttt_s"]) / 3600.0,
                    "cost_low_usd": nodes * price * launcher.billed_s(p["ttt_low_s"]) / 3600.0,
                    "cost_high_usd": nodes * price * launcher.billed_s(p["ttt_high_s"]) / 3600.0,
                    "source": p["source"], "extrapolated": bool(p["extrapolated"]),
                    "config_id": p["config_id"]})
    cols = ["algorithm", "num_env_runners", "vm", "nodes", "cpus", "gpus", "memory_gib", "ttt_s",
            "ttt_low_s",
            "ttt_high_s", "cost_usd", "cost_low_usd", "cost_high_usd", "source",
            "extrapolated", "config_id"]
    cands = pd.DataFrame(rows, columns=cols)
    fits = {alg: m.fit for alg, m in models.items()}
    gpu_free = bool((tm["num_gpus"] == 0).all() and any(vm.gpus for vm in vms))
    extra = {"launcher": launcher, "resources": needs, "cpu_model": cpu_model,
             "gpu_free": gpu_free}
    if cands.empty:
        notes.append("nothing to plan: no configuration reached the target in at least half "
                     "of its seeds")
        cands["pareto"] = pd.Series(dtype=bool)
        return Plan(cands, None, None, None, fits, deadline_s, budget_usd, low_priority, notes,
                    **extra)
    cands["pareto"] = pareto_front(cands)

    def pick(df: pd.DataFrame, key: list[str]) -> dict[str, Any] | None:
        return None if df.empty else df.sort_values(key, kind="stable").iloc[0].to_dict()

    ok_deadline = cands if deadline_s is None else cands[cands["ttt_s"] <= deadline_s]
    cheapest = pick(ok_deadline, ["cost_usd", "ttt_s"])
    ok_budget = cands if budget_usd is None else cands[cands["cost_usd"] <= budget_usd]
    fastest = pick(ok_budget, ["ttt_s", "cost_usd"])
    if deadline_s is not None and cheapest is None:
        notes.append(f"no candidate is predicted to reach the target within "
                     f"{fmt_s(deadline_s)} (fastest: {fmt_s(cands['ttt_s'].min())})")
    if budget_usd is not None and fastest is None:
        notes.append(f"no candidate is predicted to cost under ${budget_usd:.2f} "
                     f"(cheapest: ${cands['cost_usd'].min():.4f})")
    best_alg = (fastest or cheapest or cands.sort_values("ttt_s").iloc[0].to_dict())["algorithm"]
    knee = _knee(models[best_alg], cands[cands["algorithm"] == best_alg], launcher.startup_s)
    if knee is None:
        notes.append(f"{best_alg}: no knee (fewer than 3 env runner counts >= 1 on its curve)")
    elif knee["strength"] < 0.05:
        notes.append(f"{best_alg}: no clear knee in the speedup curve up to N="
                     f"{knee['num_env_runners']} (near-linear or too few points)")
    unknown = cands[~(np.isfinite(cands["ttt_low_s"]) | np.isfinite(cands["ttt_high_s"]))]
    if len(unknown):
        notes.append(f"{unknown[['algorithm', 'num_env_runners']].drop_duplicates().shape[0]} "
                     f"(algorithm, N) point(s) have no interval: measured with fewer than "
                     f"{MIN_SEEDS_FOR_CI} seeds, or predicted from an exactly determined fit")
    if cands["extrapolated"].any():
        ex = cands[cands["extrapolated"]]
        notes.append(f"extrapolated beyond measured N for {', '.join(sorted(ex['algorithm'].unique()))}"
                     f" (N={', '.join(str(n) for n in sorted(ex['num_env_runners'].unique()))}):"
                     " model predictions, not measurements")
    return Plan(cands, cheapest, fastest, knee, fits, deadline_s, budget_usd, low_priority, notes,
                **extra)


def _knee(model: AlgorithmModel, cands: pd.DataFrame, startup_s: float = 0.0
          ) -> dict[str, Any] | None:
    # the scaling curve itself: the launcher's start-up is the same at every N
    curve = (cands.groupby("num_env_runners")["ttt_s"].first() - startup_s).sort_index()
    curve = curve[curve.index >= 1]
    if model.fit is not None and math.isfinite(model.fit.peak_n):
        curve = curve[curve.index <= max(model.fit.peak_n, curve.index.min())]
    if len(curve) < 3:
        return None  # a knee needs at least three points on the curve
    n0 = float(curve.index[0])
    speed = curve.iloc[0] / curve.to_numpy()
    n_knee, strength = kneedle(curve.index.to_numpy(float), speed)
    s_knee = float(speed[list(curve.index).index(int(n_knee))])
    return {"algorithm": model.algorithm, "num_env_runners": int(n_knee),
            "speedup": s_knee, "efficiency": s_knee / (n_knee / n0), "strength": strength,
            "relative_to_n": int(n0),
            "extrapolated": bool(model.fit is not None and model.fit.extrapolates(n_knee))}


def _bounds(lo: float, hi: float, fmt) -> str:
    if not (math.isfinite(lo) or math.isfinite(hi)):
        return "unknown"
    return f"{fmt(lo)}-{fmt(hi)}"


def _interval(lo: float, hi: float, fmt) -> str:
    b = _bounds(lo, hi, fmt)
    return "interval unknown" if b == "unknown" else f"95% {b}"


def describe_row(r: dict[str, Any]) -> str:
    """One line for a candidate: algorithm, N, VM, TTT and cost with intervals."""
    tag = " [extrapolated]" if r["extrapolated"] else ""
    return (f"{r['algorithm']} with {r['num_env_runners']} env runner(s) on {r['nodes']} x "
            f"{r['vm']}: TTT {fmt_s(r['ttt_s'])} "
            f"({_interval(r['ttt_low_s'], r['ttt_high_s'], fmt_s)}), cost "
            f"{fmt_usd(r['cost_usd'])} ({_interval(r['cost_low_usd'], r['cost_high_usd'], fmt_usd)})"
            f", {r['source']}{tag}")


def plan_text(plan: Plan) -> list[str]:
    """The plan's details as plain lines (CLI, report and published pages): the cheapest and
    fastest candidates, the knee, the scaling model per algorithm, what each algorithm's run
    asks for, and the caveats. The answer and its assumptions are :func:`plan_answer`."""
    lines = []
    if plan.cheapest is not None:
        head = ("Cheapest meeting the deadline " + fmt_s(plan.deadline_s)
                if plan.deadline_s is not None else "Cheapest")
        line = f"{head}: {describe_row(plan.cheapest)}"
        hi = plan.cheapest["ttt_high_s"]
        if plan.deadline_s is not None and math.isnan(hi):
            line += " -- no interval: cannot tell how safely it meets the deadline"
        elif plan.deadline_s is not None and not hi <= plan.deadline_s:
            line += " -- at risk: its interval reaches past the deadline"
        lines.append(line)
    if plan.fastest is not None:
        head = ("Fastest within the budget " + fmt_usd(plan.budget_usd)
                if plan.budget_usd is not None else "Fastest")
        line = f"{head}: {describe_row(plan.fastest)}"
        hi = plan.fastest["cost_high_usd"]
        if plan.budget_usd is not None and math.isnan(hi):
            line += " -- no interval: cannot tell how safely it fits the budget"
        elif plan.budget_usd is not None and not hi <= plan.budget_usd:
            line += " -- at risk: its interval reaches past the budget"
        lines.append(line)
    if plan.knee is not None:
        k = plan.knee
        if k["num_env_runners"] == k["relative_to_n"]:
            lines.append(f"Knee of the efficiency curve ({k['algorithm']}): "
                         f"{k['num_env_runners']} env runner(s) -- more env runners are not "
                         "predicted to reach the target sooner")
        else:
            lines.append(f"Knee of the efficiency curve ({k['algorithm']}): "
                         f"{k['num_env_runners']} env runner(s), speedup {k['speedup']:.2f}x "
                         f"over {k['relative_to_n']} env runner(s), parallel efficiency "
                         f"{k['efficiency']:.0%} per env runner"
                         + (" [extrapolated]" if k["extrapolated"] else ""))
    for alg, fit in plan.fits.items():
        lines.append(f"Scaling model for {alg}: " + (fit.describe() if fit is not None else
                                                      "none (measured points only)"))
    lines.extend(f"{alg}: a run asks for {need.describe()}"
                 for alg, need in plan.resources.items())
    lines.extend(f"Note: {n}" for n in plan.notes)
    return lines


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
    commands: list[str]
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
    ci = _bounds(r["ttt_low_s"] - up, r["ttt_high_s"] - up, fmt_s)
    parts = [] if ci == "unknown" else [f"95% {ci}"]
    if r["source"] == "measured":
        where = "measured here"
    else:
        c = plan.candidates
        seen = c[(c["algorithm"] == r["algorithm"]) & (c["source"] == "measured")]
        where = f"predicted by the {r['source']}"
        if len(seen):
            best = seen.sort_values("ttt_s").iloc[0]
            parts.append(("extrapolated from " if r["extrapolated"] else "best measured: ")
                         + f"{fmt_s(best['ttt_s'] - up)} measured here at N="
                         f"{best['num_env_runners']}")
    if parts:
        where += f" ({'; '.join(parts)})"
    start = (f"{fmt_s(up)} start-up assumed for {plan.launcher.name}" if up > 0 else
             f"no start-up ({plan.launcher.name}: {plan.launcher.source})")
    return f"planned TTT {fmt_s(r['ttt_s'])} = {fmt_s(own)} {where} + {start}"


def plan_answer(plan: Plan, sweep_file: str = "FILE",
                vms: list[VMSize] | None = None) -> PlanAnswer:
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
    if r is not None:
        ref = " (the single-process reference)" if str(r["algorithm"]).startswith("SB3-") else ""
        sentence = (f"{_question(plan)}: {r['algorithm']}{ref} with {r['num_env_runners']} env "
                    f"runner(s) on {r['nodes']} x {r['vm']}, {_planned(plan, r)}; "
                    f"{fmt_usd(r['cost_usd'])} a run.")
    elif plan.candidates.empty:
        sentence = ("No plan: " + "; ".join(plan.notes) + ".") if plan.notes else "No plan."
    else:
        best = plan.candidates.sort_values(["ttt_s", "cost_usd"], kind="stable").iloc[0]
        sentence = ("No run is predicted to reach the target within the "
                    + (f"{fmt_s(plan.deadline_s)} deadline" if plan.deadline_s is not None
                       else f"{fmt_usd(plan.budget_usd)} budget")
                    + f": the fastest, {best['algorithm']} with {best['num_env_runners']} env "
                    f"runner(s) on {best['nodes']} x {best['vm']}, has "
                    f"{_planned(plan, best.to_dict())}; {fmt_usd(best['cost_usd'])} a run.")
        r = best.to_dict()
    assumptions: list[tuple[str, str]] = [
        ("Start-up and billing",
         f"{lc.name}: {fmt_s(lc.startup_s)} before the first trial, added to every planned "
         "TTT; billed " + (f"in {fmt_s(lc.billing_s)} units" if lc.billing_s > 0
                           else "continuously")
         + f" ({lc.source}); change with --launcher, --startup, --billing")]
    assumptions.append(("vCPU speed", "a VM's vCPU is as fast as the measured machine's"
                        + (f" ({plan.cpu_model})" if plan.cpu_model else "")))
    if r is not None:
        need = plan.resources.get(r["algorithm"])
        if need is not None:
            assumptions.append(("CPUs and memory per run",
                                f"{r['algorithm']}: {need.describe()}"))
        if r["source"] == "measured":
            what = f"nothing: {r['num_env_runners']} env runner(s) were measured"
        elif r["extrapolated"]:
            what = (f"N={r['num_env_runners']} lies beyond the measured env runner counts: "
                    f"the {r['source']}'s prediction, not a measurement")
        else:
            what = (f"nothing: N={r['num_env_runners']} lies inside the measured range "
                    f"(interpolated by the {r['source']})")
        assumptions.append(("Extrapolated", what))
        assumptions.append(("Several nodes", "no communication cost is added between nodes "
                            "unless such runs were measured" if r["nodes"] > 1 else
                            "one node: no communication between nodes"))
    if plan.gpu_free:
        assumptions.append(("GPUs", "the measured learners used none: GPU sizes are costed "
                            "for their vCPUs only (a GPU learner might be faster)"))
    assumptions.append(("Prices", "low-priority: the documented upper-bound discount ('up to "
                        "80%'); evictions and restarts are not modelled" if plan.low_priority
                        else "pay-as-you-go Linux, analysis/vm_sizes.csv (source and date per "
                        "row)"))
    commands = launch_lines(r, vms, sweep_file) if r is not None else []
    return PlanAnswer(sentence, commands, assumptions, plan_text(plan))


def sweep_file_of(environment: dict[str, Any]) -> str:
    """The sweep file a run was started with (from ``environment.json``'s ``command``), or
    ``"FILE"`` when it cannot be told."""
    words = str(environment.get("command", "")).split()
    if "sweeps.run" in words and words.index("sweeps.run") + 1 < len(words):
        return words[words.index("sweeps.run") + 1]
    return "FILE"


def launch_lines(row: dict[str, Any] | pd.Series, vms: list[VMSize], sweep_file: str) -> list[str]:
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
        f"Run it on Azure ML: python -m cluster.azure submit {sweep_file} --nodes {nodes} "
        f"--vm {vm.name}",
        f"Run it on AKS (KubeRay): python -m cluster.kuberay rayjob {sweep_file} --workers "
        f"{nodes} --cpus-per-worker {max(1, vm.vcpus - 1)}{gpus} --results-pvc rl-results "
        f"(node pool: {nodes} x {vm.name}, plus one node for the head pod)",
    ]


def _print_assumptions(answer: PlanAnswer, console: Any) -> None:
    from rich.table import Table

    t = Table(title="What the plan assumes")
    t.add_column("assumption")
    t.add_column("the plan took")
    for name, value in answer.assumptions:
        t.add_row(name, value)
    console.print(t)


def _print_table(plan: Plan, console: Any) -> None:
    from rich.table import Table

    t = Table(title="Pareto front: fastest run for each cost (one run to the target)")
    for c in ("algorithm", "env runners", "VM size", "nodes", "TTT", "TTT 95%", "cost",
              "cost 95%", "from"):
        t.add_column(c, justify="right" if c not in ("algorithm", "VM size", "from") else "left")
    front = plan.candidates[plan.candidates["pareto"]].sort_values("cost_usd")
    for _, r in front.iterrows():
        t.add_row(r["algorithm"], str(r["num_env_runners"]), r["vm"], str(r["nodes"]),
                  fmt_s(r["ttt_s"]), _bounds(r["ttt_low_s"], r["ttt_high_s"], fmt_s),
                  fmt_usd(r["cost_usd"]),
                  _bounds(r["cost_low_usd"], r["cost_high_usd"], fmt_usd),
                  r["source"] + (" (extrapolated)" if r["extrapolated"] else ""))
    console.print(t)


def per_runner_throughput(tm: pd.DataFrame) -> tuple[float, float, float]:
    """Env steps per second per env runner measured in a run (trials with N >= 1, errors left
    out): ``(median, min, max)`` of each trial's ``env_steps_per_s / num_env_runners``.

    Raises:
        ValueError: no trial with an env runner and a throughput.
    """
    ok = tm[(tm["status"] != "error") & (tm["num_env_runners"] >= 1)]
    per = (ok["env_steps_per_s"].astype(float) / ok["num_env_runners"].astype(float)).dropna()
    per = per[np.isfinite(per) & (per > 0)]
    if per.empty:
        raise ValueError("the run has no trial with env runners and a measured throughput")
    return float(per.median()), float(per.min()), float(per.max())


def steps_plan(steps_to_target: float, per_runner: float, vms: list[VMSize], *,
               startup_s: float = 0.0, learner_gpus: float = 0.0,
               candidates: tuple[int, ...] = DEFAULT_CANDIDATE_N, low_priority: bool = False,
               billing_s: float = 0.0) -> pd.DataFrame:
    """Plan from a known sample budget: TTT(N) = startup + steps / (N x per-runner throughput).

    For a study measured elsewhere (e.g. RLlib's tuned Pong IMPALA examples record the env steps
    to a return of 18), this turns the env steps/s per env runner measured *here* into run time
    and cost per N and VM size. It assumes sampling throughput grows linearly with N and that
    the learner keeps up (no learner bottleneck, no loss of sample efficiency with N): an
    optimistic bound, to be checked by a measurement at the chosen N.

    Args:
        steps_to_target: env steps a run needs to reach the target.
        per_runner: env steps per second per env runner (see :func:`per_runner_throughput`).
        vms: VM sizes to consider.
        startup_s: seconds before sampling starts (node provisioning, Ray, actor start-up).
        learner_gpus: GPUs the learner needs (0: it runs on a CPU of the head).
        candidates: env runner counts.
        low_priority: price low-priority capacity.
        billing_s: billing granularity in seconds (0: continuous; see :class:`Launcher`).

    Returns:
        One row per (N, VM size) that fits: ``num_env_runners, vm, nodes, cpus, ttt_s,
        cost_usd``.
    """
    rows = []
    for n in candidates:
        ttt = startup_s + steps_to_target / (n * per_runner)
        billed = billed_seconds(ttt, billing_s)
        for vm in vms:
            nodes = nodes_for(1 + n, learner_gpus, vm)
            if nodes is None:
                continue
            rows.append({"num_env_runners": n, "vm": vm.name, "nodes": nodes, "cpus": 1 + n,
                         "ttt_s": ttt,
                         "cost_usd": run_cost_usd(billed, nodes, vm, low_priority)})
    return pd.DataFrame(rows)


def _steps_main(args, res, tm, vms, deadline, console) -> int:
    median, lo, hi = per_runner_throughput(tm)
    source = f"measured in {res.path.name}: {lo:,.0f}-{hi:,.0f} over its trials"
    if args.env_steps_per_s_per_runner is not None:
        source = f"given; the run measured {median:,.0f}"
        median = args.env_steps_per_s_per_runner
    startup = parse_duration(args.startup) if args.startup else LAUNCHERS[args.launcher].startup_s
    billing = parse_duration(args.billing) if args.billing else LAUNCHERS[args.launcher].billing_s
    gpus = float(tm["num_gpus"].max() or 0.0)
    plan = steps_plan(args.steps_to_target, median, vms, startup_s=startup, learner_gpus=gpus,
                      low_priority=args.low_priority, billing_s=billing,
                      candidates=tuple(n for n in (*DEFAULT_CANDIDATE_N, 128)
                                       if n <= args.max_env_runners))
    console.print(f"[bold]Plan from a sample budget[/bold]: {args.steps_to_target:,.0f} env "
                  f"steps to the target at {median:,.0f} env steps/s per env runner ({source}), "
                  f"start-up "
                  f"{fmt_s(startup)}, billing unit {fmt_s(billing) if billing else 'none'}; {'low-priority' if args.low_priority else 'pay-as-you-go'}"
                  " prices")
    if plan.empty:
        console.print("No VM size in the table fits these runs.")
        return 0
    fits = plan if deadline is None else plan[plan["ttt_s"] <= deadline]
    console.print(f"{'env runners':>11} {'VM size':<22} {'nodes':>5} {'TTT':>10} {'cost':>9}")
    for _, r in plan.sort_values(["num_env_runners", "cost_usd"]).iterrows():
        mark = "" if deadline is None or r["ttt_s"] <= deadline else "  misses the deadline"
        console.print(f"{r['num_env_runners']:>11} {r['vm']:<22} {r['nodes']:>5} "
                      f"{fmt_s(r['ttt_s']):>10} {fmt_usd(r['cost_usd']):>9}{mark}",
                      highlight=False)
    if len(fits):
        c = fits.sort_values(["cost_usd", "ttt_s"]).iloc[0]
        console.print(f"Cheapest{' within the deadline' if deadline else ''}: "
                      f"{c['num_env_runners']} env runners on {c['nodes']} x {c['vm']}: "
                      f"{fmt_s(c['ttt_s'])}, {fmt_usd(c['cost_usd'])}", highlight=False)
    else:
        console.print("No candidate meets the deadline.")
    console.print("Assumes: sampling throughput linear in env runners at the measured rate per "
                  "runner, a learner that keeps up, sample efficiency independent of N, a VM "
                  "vCPU as fast as the measured machine's. Predicted, not measured.",
                  highlight=False)
    return 0


def _check_main(res, tm, summary, holdout, target, warns, console) -> int:
    check = plan_check(tm, summary, res.progress, holdout)
    console.print(f"[bold]Plan check[/bold] for {res.path} -- target {target.metric} >= "
                  f"{target.value:g}; held out N={','.join(map(str, holdout))}")
    for w in [*res.warnings, *warns]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    for line in check_text(check):
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    if check.rows.empty:
        console.print("Nothing could be checked.")
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 2 bad input)."""
    p = OneLineParser(prog="python -m analysis.plan",
                description="Capacity plan: predicted time-to-target and cost per env runner "
                            "count and Azure VM size, from a results directory.")
    p.add_argument("results_dir", help="results/<sweep>/<run_id>/ directory")
    p.add_argument("--deadline", help="wall-clock limit for one run, e.g. 10m, 90s, 1h30m")
    p.add_argument("--budget", help="dollars one run may cost, e.g. 5usd")
    p.add_argument("--vm", action="append",
                   help="VM size to consider (repeatable; default: all in vm_sizes.csv)")
    p.add_argument("--low-priority", action="store_true",
                   help="price low-priority (spot) capacity")
    p.add_argument("--target", help="override the target: absolute value or percent of optimum")
    p.add_argument("--max-env-runners", "--max-workers", type=int, default=64,
                   help="largest env runner count considered (default 64)")
    p.add_argument("--vm-table", help="a VM size CSV to use instead of the shipped one")
    p.add_argument("--steps-to-target", type=float,
                   help="plan from a known sample budget instead of the run's TTTs: env steps a "
                        "run needs (e.g. from a published tuned example); the run supplies its "
                        "measured env steps/s per env runner")
    p.add_argument("--launcher", choices=sorted(LAUNCHERS), default=DEFAULT_LAUNCHER,
                   help="where the run would start: its assumed start-up and billing unit "
                        f"(default {DEFAULT_LAUNCHER}: 5 min, per minute)")
    p.add_argument("--startup", help="seconds before the first trial starts, e.g. 5m (node "
                                     "provisioning, image pull, Ray start-up); overrides the "
                                     "launcher's")
    p.add_argument("--billing", help="billing granularity, e.g. 1m or 1s; overrides the "
                                     "launcher's")
    p.add_argument("--env-steps-per-s-per-runner", type=float,
                   help="with --steps-to-target: the sampling rate per env runner to assume "
                        "instead of the run's measured end-to-end rate (e.g. the sampler's own "
                        "rate when the measured run was learner-bound)")
    p.add_argument("--holdout", help="check the plan instead of making one: fit the scaling "
                                     "models without these env runner counts (e.g. 8,16), "
                                     "predict them, and compare with what was measured "
                                     "(analysis.plan_check)")
    args = p.parse_args(argv)

    from rich.console import Console

    from analysis.load import ResultsError, load_results
    from analysis.metrics import trial_metrics
    from analysis.stats import summarize_configs

    prog = p.prog
    try:
        deadline = parse_duration(args.deadline) if args.deadline else None
        budget = parse_money(args.budget) if args.budget else None
        table = load_vm_sizes(args.vm_table)
        if args.vm:
            unknown = [v for v in args.vm if v not in table]
            if unknown:
                raise ValueError(f"--vm {unknown[0]}: unknown VM size; known: "
                                 f"{', '.join(table)}")
            vms = [table[v] for v in args.vm]
        else:
            vms = list(table.values())
        if args.max_env_runners < 1:
            raise ValueError(f"--max-env-runners {args.max_env_runners}: must be >= 1")
        if args.steps_to_target is not None and not args.steps_to_target > 0:
            raise ValueError(f"--steps-to-target {args.steps_to_target:g}: must be > 0")
        if args.env_steps_per_s_per_runner is not None and not args.env_steps_per_s_per_runner > 0:
            raise ValueError(f"--env-steps-per-s-per-runner {args.env_steps_per_s_per_runner:g}: "
                             "must be > 0")
        base = LAUNCHERS[args.launcher]
        launcher = Launcher(
            base.name,
            parse_duration(args.startup) if args.startup else base.startup_s,
            parse_duration(args.billing) if args.billing else base.billing_s,
            base.source if not (args.startup or args.billing) else "given on the command line")
        holdout = parse_holdout(args.holdout) if args.holdout is not None else None
        if holdout is not None and args.steps_to_target is not None:
            raise ValueError("--holdout and --steps-to-target: choose one (the check fits the "
                             "run's own TTTs)")
        res = load_results(args.results_dir)
        tm, target, warns = trial_metrics(res, args.target)
    except (ResultsError, ValueError, OSError) as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return EXIT_BAD_INPUT
    console = Console(width=max(Console().width, 120))
    if args.steps_to_target is not None:
        try:
            return _steps_main(args, res, tm, vms, deadline, console)
        except ValueError as exc:
            sys.stderr.write(f"{prog}: error: {exc}\n")
            return EXIT_BAD_INPUT
    summary = summarize_configs(tm)
    if holdout is not None:
        return _check_main(res, tm, summary, holdout, target, warns, console)
    plan = make_plan(tm, summary, deadline_s=deadline, budget_usd=budget, vms=vms,
                     low_priority=args.low_priority, max_env_runners=args.max_env_runners,
                     cpu_model=str(res.environment.get("cpu_model", "")), launcher=launcher)
    console.print(f"[bold]Capacity plan[/bold] for {res.path} -- target {target.metric} >= "
                  f"{target.value:g} ({target.source}); "
                  f"{'low-priority' if args.low_priority else 'pay-as-you-go'} prices")
    for w in [*res.warnings, *warns]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    if plan.candidates.empty:
        console.print("No recommendation: " + "; ".join(plan.notes))
        return 0
    answer = plan_answer(plan, sweep_file_of(res.environment), vms)
    console.print(answer.sentence, highlight=False, soft_wrap=True)
    for line in answer.commands:
        console.print(line, highlight=False, soft_wrap=True)
    _print_assumptions(answer, console)
    _print_table(plan, console)
    from analysis.batch_size import batch_advice

    console.print("[bold]Details[/bold]")
    for line in [*answer.details, *batch_advice(tm, res.progress)]:
        console.print(f"- {line}", highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    from sweeps.cli import guard

    raise SystemExit(guard("python -m analysis.plan", main))

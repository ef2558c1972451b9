"""Capacity plan: what to run, on which Azure VM size, to reach the target by a deadline or
within a budget.

Usage::

    python -m analysis.plan fit RESULTS_DIR [--deadline 10m] [--budget 5usd] [--vm SIZE]
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

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.catalogue import (
    DEFAULT_LAUNCHER,
    LAUNCHERS,
    USABLE_MEMORY_FRACTION,
    Launcher,
    VMSize,
    billed_seconds,
    load_vm_sizes,
    nodes_for,
    run_cost_usd,
)
from analysis.fmt import fmt_s
from analysis.scaling import (
    N_PARAMS,
    ScalingFit,
    bootstrap_ttt_prediction,
    fit_scaling,
    preferred,
)
from analysis.stats import MIN_SEEDS_FOR_CI, best_configs, ttt_seed_samples

__all__ = [
    "AlgorithmModel",
    "Plan",
    "Resources",
    "make_plan",
    "model_algorithms",
    "per_runner_throughput",
    "predict_ttt",
    "steps_plan",
    "trial_resources",
]


DEFAULT_CANDIDATE_N = (1, 2, 4, 8, 16, 32, 64)


EXTRAPOLATION_FACTOR = 4
"""Predictions reach at most this many times the largest measured N (further is guesswork)."""


@dataclass(frozen=True)
class Resources:
    """What one run of an algorithm asks for at N env runners.

    CPUs = ``driver_cpus + N x cpus_per_env_runner`` (as the trials asked Ray for them);
    memory = ``base_mib + N x per_env_runner_mib`` MiB, a least-squares line through the
    trials' peak RSS (``peak_rss_mib``: every process of the trial) against N; NaN when the
    trials recorded none. ``single_process``: the single-process reference's one CPU (it has
    no env runners).
    """

    driver_cpus: float = 1.0
    cpus_per_env_runner: float = 1.0
    base_mib: float = math.nan
    per_env_runner_mib: float = math.nan
    single_process: bool = False

    def cpus(self, n: int) -> float:
        """CPUs a run with ``n`` env runners asks for."""
        return self.driver_cpus + n * self.cpus_per_env_runner

    def memory_mib(self, n: int) -> float:
        """Peak memory (MiB) of a run with ``n`` env runners; NaN when unknown."""
        return self.base_mib + n * self.per_env_runner_mib

    def describe(self) -> str:
        """One line for the plan's notes."""
        if self.single_process:
            return f"{self.driver_cpus:g} CPU, one process (the single-process reference)"
        cpu = f"{self.driver_cpus:g} + N x {self.cpus_per_env_runner:g} CPUs (as the trials asked)"
        if not math.isfinite(self.per_env_runner_mib):
            return cpu + "; memory not recorded, so not sized"
        return (
            f"{cpu}; memory {self.base_mib:,.0f} + N x {self.per_env_runner_mib:,.0f} MiB "
            f"(fitted to the trials' peak RSS), at most {USABLE_MEMORY_FRACTION:.0%} of a "
            "node's memory (the rest is Ray's object store)"
        )


def trial_resources(tm: pd.DataFrame) -> Resources:
    """:class:`Resources` from one algorithm's trials (reference trials left out).

    Args:
        tm: per-trial metrics with ``num_env_runners, num_cpus`` and, when recorded,
            ``cpus_per_env_runner`` and ``peak_rss_mib``.
    """
    t = tm[~tm["is_reference"]] if "is_reference" in tm else tm
    if t.empty:
        return Resources()
    per = float(t["cpus_per_env_runner"].median()) if "cpus_per_env_runner" in t else 1.0
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


@dataclass
class AlgorithmModel:
    """What the plan knows about one algorithm: measurements per N and the fitted scaling.

    Attributes:
        pipeline: the pipeline model (start-up + env steps / throughput,
            :mod:`analysis.plan_check`) when the fit range's leave-one-N-out cross-validation
            prefers it to USL/Amdahl on 1/TTT; then it predicts the unmeasured N. None: the
            plan uses :attr:`fit`.
        components: the trials' parts the pipeline was fitted on (its bootstrap resamples
            them); None without a pipeline.
        choice: one line saying which model the cross-validation preferred ("" when it was
            not run: no progress, or fewer than 3 fitted N).
        is_reference: the single-process reference (one process, no env runners): planned
            at its measured point only, with no scaling model to ask for.
    """

    algorithm: str
    measured: pd.DataFrame
    fits: dict[str, ScalingFit]
    fit: ScalingFit | None
    samples: dict[int, tuple[np.ndarray, np.ndarray]]
    gpus: float
    note: str = ""
    pipeline: Any = None
    components: pd.DataFrame | None = None
    choice: str = ""
    is_reference: bool = False

    @property
    def predicts(self) -> bool:
        """Whether a model predicts unmeasured N (the pipeline or a testable fit)."""
        return self.pipeline is not None or self.fit is not None

    @property
    def n_max(self) -> float:
        """The largest N the model was fitted on."""
        return float(max(self.samples)) if self.samples else math.nan


def model_algorithms(
    tm: pd.DataFrame, summary: pd.DataFrame, progress: pd.DataFrame | None = None
) -> dict[str, AlgorithmModel]:
    """Per algorithm: its best configuration per N, USL/Amdahl fits of 1/TTT against N and,
    with ``progress`` (the run's ``progress.parquet`` rows) and at least 3 fitted N, the
    model the fit range's cross-validation prefers (:func:`analysis.plan_check.fit_range_choice`):
    the pipeline replaces the fit of 1/TTT when it predicts the left-out N better.

    N = 0 (sampling in the driver) and N whose TTT is not finite (fewer than half the seeds
    reached the target) are left out of the fit.
    """
    from analysis.parts import trial_components
    from analysis.plan_check import fit_range_choice

    out: dict[str, AlgorithmModel] = {}
    comp = None
    if progress is not None and len(progress) and len(tm):
        ok = tm[tm["status"] != "error"]
        comp = trial_components(ok, progress).merge(
            ok[["trial_id", "config_id", "num_env_runners"]], on="trial_id"
        )
    best = best_configs(summary, ("algorithm", "num_env_runners"))
    for alg, g in best.groupby("algorithm", sort=True):
        g = g.sort_values("num_env_runners")
        usable = g[(g["num_env_runners"] >= 1) & np.isfinite(g["ttt_s"].astype(float))]
        fits = fit_scaling(
            usable["num_env_runners"].to_numpy(float), 1.0 / usable["ttt_s"].to_numpy(float)
        )
        samples = ttt_seed_samples(usable, tm)
        notes = []
        is_reference = bool(g["is_reference"].any()) if "is_reference" in g else False
        left = g[~g.index.isin(usable.index)]
        for why, out_n in (
            ("sampling in the driver: no env runner", left[left["num_env_runners"] < 1]),
            ("median TTT not reached", left[left["num_env_runners"] >= 1]),
        ):
            if len(out_n) and not is_reference:
                ns = ", ".join(str(n) for n in out_n["num_env_runners"])
                notes.append(f"N={ns} left out of the fit ({why})")
        pipeline = components = None
        choice = ""
        if comp is not None and usable["num_env_runners"].nunique() >= 3:
            pc = comp[comp["config_id"].isin(usable["config_id"])]
            chosen, choice, pipe = fit_range_choice(alg, usable, pc)
            if chosen == "pipeline" and pipe is not None and pipe.steps is not None:
                pipeline, components = pipe, pc
        # a fit exactly determined by its points predicts whatever passes through them: the
        # plan extrapolates only from one the data could have contradicted
        out[alg] = AlgorithmModel(
            algorithm=alg,
            measured=g,
            fits=fits,
            fit=preferred(fits, testable=True),
            samples=samples,
            gpus=float(g["num_gpus"].max()),
            note="; ".join(notes),
            pipeline=pipeline,
            components=components,
            choice=choice,
            is_reference=is_reference,
        )
    return out


def predict_ttt(
    model: AlgorithmModel, candidates: list[int], *, n_resamples: int = 200, seed: int = 0
) -> pd.DataFrame:
    """Predicted TTT (seconds) with interval at each candidate N for one algorithm.

    At an unmeasured N the model is the pipeline when the fit range's cross-validation chose
    it (:attr:`AlgorithmModel.pipeline`; interval: a bootstrap over seeds refitting every
    part), else the fit of 1/TTT.

    Returns:
        Columns ``num_env_runners, ttt_s, ttt_low_s, ttt_high_s, source`` ("measured",
        "USL fit", "Amdahl fit", "pipeline fit"), ``extrapolated`` (bool), ``config_id``
        (measured only).
    """
    rows = []
    meas = {int(r["num_env_runners"]): r for _, r in model.measured.iterrows()}
    fit = model.fit
    pred_n = [n for n in candidates if n not in meas]
    if model.pipeline is not None:
        return _predict_pipeline(model, candidates, meas, pred_n, n_resamples, seed)
    lows = highs = None
    if fit is not None and pred_n:
        enough = len(model.samples) >= 2 and all(
            len(d) >= MIN_SEEDS_FOR_CI for d, _ in model.samples.values()
        )
        if enough:
            lows, highs, _ = bootstrap_ttt_prediction(
                model.samples,
                np.array(pred_n, float),
                fit.model,
                n_resamples=n_resamples,
                seed=seed,
                p0=[fit.gamma, fit.alpha, fit.beta],
            )
        if lows is None or not np.isfinite(lows).any():
            xl, xh = fit.predict_interval(np.array(pred_n, float))
            with np.errstate(divide="ignore", invalid="ignore"):
                lows = np.where(xh > 0, 1.0 / xh, np.nan)
                highs = np.where(xl > 0, 1.0 / xl, np.where(np.isfinite(xl), np.inf, np.nan))
    for n in candidates:
        if n in meas:
            if np.isfinite(meas[n]["ttt_s"]):
                rows.append(_measured_row(n, meas[n]))
        elif fit is not None:
            x = float(fit.predict(n))
            if not x > 0:
                continue
            i = pred_n.index(n)
            source = f"{fit.model.upper() if fit.model == 'usl' else 'Amdahl'} fit"
            ci = (float(lows[i]), float(highs[i]))
            rows.append(_prediction_row(n, 1.0 / x, *ci, source, fit.extrapolates(n)))
    return pd.DataFrame(rows, columns=_PREDICTION_COLUMNS)


#: The columns of :func:`predict_ttt`'s frame, in order.
_PREDICTION_COLUMNS = [
    "num_env_runners",
    "ttt_s",
    "ttt_low_s",
    "ttt_high_s",
    "source",
    "extrapolated",
    "config_id",
]


def _prediction_row(
    n: int, ttt: float, low: float, high: float, source: str, extrapolated: bool, config_id=""
) -> dict[str, Any]:
    """One row of :func:`predict_ttt` (TTT and its interval in seconds)."""
    values = (n, ttt, low, high, source, extrapolated, config_id)
    return dict(zip(_PREDICTION_COLUMNS, values, strict=True))


def _measured_row(n: int, r: pd.Series) -> dict[str, Any]:
    ttt = [float(r[k]) for k in ("ttt_s", "ttt_low_s", "ttt_high_s")]
    return _prediction_row(n, *ttt, "measured", False, r["config_id"])


def _predict_pipeline(
    model: AlgorithmModel,
    candidates: list[int],
    meas: dict,
    pred_n: list[int],
    n_resamples: int,
    seed: int,
) -> pd.DataFrame:
    """:func:`predict_ttt` with the pipeline model at the unmeasured N."""
    from analysis.plan_check import pipeline_prediction

    pred: dict[int, tuple[float, float, float]] = {}
    if pred_n:
        ttt, lo, hi = pipeline_prediction(
            model.pipeline, model.components, pred_n, n_resamples=n_resamples, seed=seed
        )
        pred = {
            n: (float(t), float(a), float(b))
            for n, t, a, b in zip(pred_n, ttt, lo, hi, strict=True)
        }
    fitted = sorted(model.samples)
    rows = []
    for n in candidates:
        if n in meas:
            if np.isfinite(meas[n]["ttt_s"]):
                rows.append(_measured_row(n, meas[n]))
        elif n >= 1 and n in pred and math.isfinite(pred[n][0]) and pred[n][0] > 0:
            extrapolated = not fitted[0] <= n <= fitted[-1]
            rows.append(_prediction_row(n, *pred[n], "pipeline fit", extrapolated))
    return pd.DataFrame(rows, columns=_PREDICTION_COLUMNS)


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
        pipeline: the algorithms whose unmeasured N the pipeline model predicts (chosen by
            the fit range's cross-validation, :func:`model_algorithms`).
        references: the single-process references among the planned algorithms (no scaling
            model: one process).
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
    pipeline: tuple[str, ...] = ()
    references: tuple[str, ...] = ()

    @property
    def answer(self) -> dict[str, Any] | None:
        """The row that answers the user's question: the cheapest meeting the deadline when
        one is given, else the fastest (within the budget when one is given)."""
        return self.cheapest if self.deadline_s is not None else self.fastest


def make_plan(
    tm: pd.DataFrame,
    summary: pd.DataFrame,
    *,
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    vms: list[VMSize] | None = None,
    low_priority: bool = False,
    max_env_runners: int = 64,
    n_resamples: int = 200,
    seed: int = 0,
    cpu_model: str = "",
    launcher: Launcher | None = None,
    models: dict[str, AlgorithmModel] | None = None,
    progress: pd.DataFrame | None = None,
) -> Plan:
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
        progress: the run's ``progress.parquet`` rows, for the model choice by
            cross-validation when ``models`` is None (None: the fit of 1/TTT throughout).

    Returns:
        :class:`Plan`.
    """
    vms = list(load_vm_sizes().values()) if vms is None else vms
    launcher = launcher or LAUNCHERS[DEFAULT_LAUNCHER]
    models = model_algorithms(tm, summary, progress) if models is None else models
    notes: list[str] = []
    needs: dict[str, Resources] = {}
    rows = []
    for alg, m in models.items():
        cand = set(int(n) for n in m.measured["num_env_runners"] if 0 <= n <= max_env_runners)
        if m.predicts:
            # every N inside the measured range (interpolation) and powers of two beyond it,
            # up to EXTRAPOLATION_FACTOR x the largest measured N
            n_max = m.fit.n_max if m.pipeline is None else m.n_max
            horizon = min(max_env_runners, int(EXTRAPOLATION_FACTOR * n_max))
            cand |= set(range(1, min(int(n_max), max_env_runners) + 1))
            cand |= {n for n in DEFAULT_CANDIDATE_N if n <= horizon}
            peak = m.fit.peak_n if m.pipeline is None else math.inf
            if math.isfinite(peak) and peak <= horizon:
                cand |= {max(1, math.floor(peak)), math.ceil(peak)}
            if horizon < max_env_runners:
                notes.append(
                    f"{alg}: predictions stop at N={horizon} "
                    f"({EXTRAPOLATION_FACTOR} x the largest measured N)"
                )
        elif not m.is_reference:
            why = m.fits["amdahl"].reason if m.fits else "no data"
            if m.fits and m.fits["amdahl"].ok:
                why = (
                    f"{m.fits['amdahl'].n_distinct} distinct N determine Amdahl exactly; "
                    f"measure at least {N_PARAMS['amdahl'] + 1} env runner counts"
                )
            notes.append(f"{alg}: no scaling fit ({why}); only measured N are planned")
        if m.note:
            notes.append(f"{alg}: {m.note}")
        if m.choice:
            notes.append(
                m.choice
                + (
                    ": the plan predicts its unmeasured N with the pipeline"
                    if m.pipeline is not None
                    else ""
                )
            )
        pred = predict_ttt(m, sorted(cand), n_resamples=n_resamples, seed=seed)
        need = needs[alg] = (
            Resources(cpus_per_env_runner=0.0, single_process=True)
            if m.is_reference
            else trial_resources(tm[tm["algorithm"] == alg])
        )
        for _, p in pred.iterrows():
            n = int(p["num_env_runners"])
            cpus, gpus, mem = need.cpus(n), float(math.ceil(m.gpus)), need.memory_mib(n)
            for vm in vms:
                nodes = nodes_for(cpus, gpus, vm, mem)
                if nodes is None:
                    continue
                price = vm.hourly_usd(low_priority)
                up = launcher.startup_s
                rows.append(
                    {
                        "algorithm": alg,
                        "num_env_runners": n,
                        "vm": vm.name,
                        "nodes": nodes,
                        "cpus": cpus,
                        "gpus": gpus,
                        "memory_gib": mem / 1024.0,
                        "ttt_s": up + p["ttt_s"],
                        "ttt_low_s": up + p["ttt_low_s"],
                        "ttt_high_s": up + p["ttt_high_s"],
                        "cost_usd": nodes * price * launcher.billed_s(p["ttt_s"]) / 3600.0,
                        "cost_low_usd": nodes * price * launcher.billed_s(p["ttt_low_s"]) / 3600.0,
                        "cost_high_usd": nodes
                        * price
                        * launcher.billed_s(p["ttt_high_s"])
                        / 3600.0,
                        "source": p["source"],
                        "extrapolated": bool(p["extrapolated"]),
                        "config_id": p["config_id"],
                    }
                )
    cols = [
        "algorithm",
        "num_env_runners",
        "vm",
        "nodes",
        "cpus",
        "gpus",
        "memory_gib",
        "ttt_s",
        "ttt_low_s",
        "ttt_high_s",
        "cost_usd",
        "cost_low_usd",
        "cost_high_usd",
        "source",
        "extrapolated",
        "config_id",
    ]
    cands = pd.DataFrame(rows, columns=cols)
    fits = {alg: m.fit for alg, m in models.items()}
    gpu_free = bool((tm["num_gpus"] == 0).all() and any(vm.gpus for vm in vms))
    extra = {
        "launcher": launcher,
        "resources": needs,
        "cpu_model": cpu_model,
        "gpu_free": gpu_free,
        "pipeline": tuple(a for a, m in models.items() if m.pipeline is not None),
        "references": tuple(a for a, m in models.items() if m.is_reference),
    }
    if cands.empty:
        notes.append(
            "nothing to plan: no configuration reached the target in at least half of its seeds"
        )
        cands["pareto"] = pd.Series(dtype=bool)
        return Plan(
            cands, None, None, None, fits, deadline_s, budget_usd, low_priority, notes, **extra
        )
    cands["pareto"] = pareto_front(cands)

    def pick(df: pd.DataFrame, key: list[str]) -> dict[str, Any] | None:
        return None if df.empty else df.sort_values(key, kind="stable").iloc[0].to_dict()

    ok_deadline = cands if deadline_s is None else cands[cands["ttt_s"] <= deadline_s]
    cheapest = pick(ok_deadline, ["cost_usd", "ttt_s"])
    ok_budget = cands if budget_usd is None else cands[cands["cost_usd"] <= budget_usd]
    fastest = pick(ok_budget, ["ttt_s", "cost_usd"])
    if deadline_s is not None and cheapest is None:
        notes.append(
            f"no candidate is predicted to reach the target within "
            f"{fmt_s(deadline_s)} (fastest: {fmt_s(cands['ttt_s'].min())})"
        )
    if budget_usd is not None and fastest is None:
        notes.append(
            f"no candidate is predicted to cost under ${budget_usd:.2f} "
            f"(cheapest: ${cands['cost_usd'].min():.4f})"
        )
    best_alg = (fastest or cheapest or cands.sort_values("ttt_s").iloc[0].to_dict())["algorithm"]
    knee = _knee(models[best_alg], cands[cands["algorithm"] == best_alg], launcher.startup_s)
    if knee is None and models[best_alg].is_reference:
        notes.append(f"{best_alg} is the single-process reference: no env runners, so no knee")
    elif knee is None:
        notes.append(f"{best_alg}: no knee (fewer than 3 env runner counts >= 1 on its curve)")
    elif knee["strength"] < 0.05:
        notes.append(
            f"{best_alg}: no clear knee in the speedup curve up to N="
            f"{knee['num_env_runners']} (near-linear or too few points)"
        )
    unknown = cands[~(np.isfinite(cands["ttt_low_s"]) | np.isfinite(cands["ttt_high_s"]))]
    if len(unknown):
        notes.append(
            f"{unknown[['algorithm', 'num_env_runners']].drop_duplicates().shape[0]} "
            f"(algorithm, N) point(s) have no interval: measured with fewer than "
            f"{MIN_SEEDS_FOR_CI} seeds, or predicted from an exactly determined fit"
        )
    if cands["extrapolated"].any():
        ex = cands[cands["extrapolated"]]
        notes.append(
            f"extrapolated beyond measured N for {', '.join(sorted(ex['algorithm'].unique()))}"
            f" (N={', '.join(str(n) for n in sorted(ex['num_env_runners'].unique()))}):"
            " model predictions, not measurements"
        )
    return Plan(
        cands, cheapest, fastest, knee, fits, deadline_s, budget_usd, low_priority, notes, **extra
    )


def _knee(
    model: AlgorithmModel, cands: pd.DataFrame, startup_s: float = 0.0
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
    return {
        "algorithm": model.algorithm,
        "num_env_runners": int(n_knee),
        "speedup": s_knee,
        "efficiency": s_knee / (n_knee / n0),
        "strength": strength,
        "relative_to_n": int(n0),
        "extrapolated": bool(model.fit is not None and model.fit.extrapolates(n_knee)),
    }


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


def steps_plan(
    steps_to_target: float,
    per_runner: float,
    vms: list[VMSize],
    *,
    startup_s: float = 0.0,
    learner_gpus: float = 0.0,
    candidates: tuple[int, ...] = DEFAULT_CANDIDATE_N,
    low_priority: bool = False,
    billing_s: float = 0.0,
) -> pd.DataFrame:
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
            rows.append(
                {
                    "num_env_runners": n,
                    "vm": vm.name,
                    "nodes": nodes,
                    "cpus": 1 + n,
                    "ttt_s": ttt,
                    "cost_usd": run_cost_usd(billed, nodes, vm, low_priority),
                }
            )
    return pd.DataFrame(rows)

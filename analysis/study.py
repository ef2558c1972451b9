"""The analysis of one study, computed once: :func:`analyse` returns a frozen :class:`Study`.

Per-trial metrics (:mod:`analysis.metrics`), per-configuration statistics and speedups
(:mod:`analysis.stats`), the baseline, the scaling fits (:mod:`analysis.scaling`), the capacity
plan (:mod:`analysis.plan`), the plan check (:mod:`analysis.plan_check`), the batch-size
check (:mod:`analysis.batch_size`) and warnings are each decided here, once. The figures
(:mod:`analysis.figures`) are pure functions of a :class:`Study`; the HTML report
(:mod:`analysis.report`) and the Markdown tables (:mod:`analysis.publish`) are sibling
renderers of it, so both show the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.batch_size import BatchSizeCheck, batch_advice, batch_size_check
from analysis.fmt import config_phrase, fmt_s, fmt_speedup
from analysis.load import Results
from analysis.metrics import ResolvedTarget, judged_metrics
from analysis.plan_check import PlanCheck, auto_holdout, plan_check
from analysis.plan_model import AlgorithmModel, Plan, make_plan, model_algorithms
from analysis.scaling import ScalingFit, fit_scaling
from analysis.stats import (
    MIN_SEEDS_FOR_CI,
    best_configs,
    config_table,
    pick_baseline,
    speedup_table,
    summarize_configs,
)

__all__ = ["Study", "analyse", "reference_verdict", "throughput_fits"]


ALG_SCALES = ["Blues", "Oranges", "Greens", "Purples", "Reds", "Greys"]


ALG_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#7f7f7f"]


@dataclass(frozen=True)
class Study:
    """Everything the analysis decides once from a results directory (see :func:`analyse`).

    The figures (:mod:`analysis.figures`), the HTML report (:mod:`analysis.report`) and the
    Markdown tables (:mod:`analysis.publish`) all read from this, so the page, the exported
    PNGs and the tables show the same numbers. Frozen: a renderer never changes it.

    Attributes:
        res: the loaded results directory.
        tm: per-trial metrics (:func:`analysis.metrics.trial_metrics`), one row per trial.
        target: the target the trials are judged against.
        summary: per-configuration statistics (:func:`analysis.stats.summarize_configs`).
        speed: speedup / parallel efficiency per configuration
            (:func:`analysis.stats.speedup_table`); empty without configurations.
        configs: ``summary`` and ``speed`` joined once, one row per configuration indexed by
            ``config_id``, with ``finished_seeds`` and ``is_best_at_n``
            (:func:`analysis.stats.config_table`): what every renderer reads a
            configuration's numbers from.
        plan: the capacity plan (:func:`analysis.plan_model.make_plan`); None without configurations.
        warnings: one line each: what was missing, repaired or is not trustworthy.
        check: the plan check (:func:`analysis.plan_check.plan_check`) on the N above the
            :data:`~analysis.plan_check.MIN_FIT_N` smallest; None when no algorithm has more.
        batch: the batch-size check (:func:`analysis.batch_size.batch_size_check`) when an
            algorithm ran several batch sizes with the gradient noise scale measured; else None.
        baseline: the baseline configuration's summary row (the one with the most trials when
            several are marked, :func:`analysis.stats.pick_baseline`), or None.
        models: per algorithm, its best configuration per N and the Amdahl/USL fits of 1/TTT
            (:func:`analysis.plan_model.model_algorithms`; the plan and the speedup figure use these).
        throughput_fits: per algorithm, ``{"amdahl": fit, "usl": fit}`` of every trial's env
            steps/s of its best configurations against N (the throughput figure).
        colors: line colour per ``(algorithm, num_env_runners)``; alg_color: per algorithm.
        batch_advice: what the measured gradient noise scale says about batch size, one line
            per algorithm (:func:`analysis.batch_size.batch_advice`); empty when not measured.
        search_summary: with a confirmation stage (docs/design.md, *stage*), the search
            stage's per-configuration statistics, exploratory only (:attr:`tm`, :attr:`summary`
            and everything computed from them hold the confirmation's trials); else None.
        stage_note: one sentence saying which stage the numbers come from; None without a
            confirmation stage.
    """

    res: Results
    tm: pd.DataFrame
    target: ResolvedTarget
    summary: pd.DataFrame
    speed: pd.DataFrame
    plan: Plan | None
    warnings: list[str]
    check: PlanCheck | None = None
    batch: BatchSizeCheck | None = None
    baseline: pd.Series | None = None
    models: dict[str, AlgorithmModel] = field(default_factory=dict)
    throughput_fits: dict[str, dict[str, ScalingFit]] = field(default_factory=dict)
    colors: dict[tuple[str, int], str] = field(default_factory=dict)
    alg_color: dict[str, str] = field(default_factory=dict)
    batch_advice: list[str] = field(default_factory=list)
    search_summary: pd.DataFrame | None = None
    stage_note: str | None = None
    configs: pd.DataFrame = field(default_factory=pd.DataFrame)

    def speedup_fits(self) -> list[tuple[str, str, ScalingFit]]:
        """``(algorithm, "1/TTT", fit)``, Amdahl then USL, for every algorithm with a finite
        speedup against the baseline (those the speedup figure shows), by name; empty without
        a baseline or a finite speedup. The fits are :attr:`models`'."""
        sp = self.configs
        if (
            self.baseline is None
            or sp.empty
            or self.summary.empty
            or not np.isfinite(sp["speedup"].astype(float)).any()
        ):
            return []
        best = best_configs(self.summary, ("algorithm", "num_env_runners"))
        rows = []
        for alg, g in best.groupby("algorithm"):
            ids = g.loc[g["config_id"].isin(sp.index), "config_id"]
            if alg in self.models and np.isfinite(sp.loc[ids, "speedup"].astype(float)).any():
                rows += [(alg, "1/TTT", self.models[alg].fits[m]) for m in ("amdahl", "usl")]
        return rows

    def throughput_fit_rows(self) -> list[tuple[str, str, ScalingFit]]:
        """``(algorithm, "env steps/s", fit)``, Amdahl then USL, for every algorithm in
        :attr:`throughput_fits` (those the throughput figure shows) but the single-process
        reference (one process: nothing to fit in N), by name."""
        s = self.summary
        refs = set(s.loc[s["is_reference"], "algorithm"]) if "is_reference" in s else set()
        return [
            (alg, "env steps/s", fits[m])
            for alg, fits in sorted(self.throughput_fits.items())
            if alg not in refs
            for m in ("amdahl", "usl")
        ]

    @property
    def baseline_seeds(self) -> int:
        """Seeds of the baseline that reached the target or were censored (0: no baseline)."""
        return int(self.baseline["finished_seeds"]) if self.baseline is not None else 0

    @property
    def reference_seeds(self) -> int:
        """Seeds of the reference that reached the target or were censored (0: no reference)."""
        ref = self.summary[self.summary["is_reference"]] if len(self.summary) else self.summary
        return int(ref["finished_seeds"].iloc[0]) if len(ref) else 0


def throughput_fits(tm: pd.DataFrame, summary: pd.DataFrame) -> dict[str, dict[str, ScalingFit]]:
    """Per algorithm: Amdahl and USL fits (:func:`analysis.scaling.fit_scaling`) of every
    non-error trial's env steps/s (start-up included) of its best configuration per N."""
    out: dict[str, dict[str, ScalingFit]] = {}
    best = best_configs(summary, ("algorithm", "num_env_runners"))
    for alg, g in best.groupby("algorithm"):
        t = tm[tm["config_id"].isin(g["config_id"]) & (tm["status"] != "error")]
        t = t[np.isfinite(t["env_steps_per_s"].astype(float))]
        if len(t):
            out[str(alg)] = fit_scaling(
                t["num_env_runners"].to_numpy(float), t["env_steps_per_s"].to_numpy(float)
            )
    return out


def reference_verdict(summary: pd.DataFrame, speed: pd.DataFrame) -> str | None:
    """One plain sentence: does any distributed configuration beat the single-process
    reference on this hardware? None when the sweep ran no reference.

    The fastest configuration (lowest median TTT) *beats* the reference when its absolute
    speedup's 95 % interval lies above 1 (its lower bound > 1 when the reference's median was
    censored), and *does not* when the interval lies below 1. When the interval contains 1 (an
    unbounded upper end included: ``[0.11, inf]`` contains 1) the
    sentence says that these seeds cannot tell the two apart, whichever side the point estimate
    is on; without an interval (fewer seeds than :data:`analysis.stats.MIN_SEEDS_FOR_CI`) the
    point estimate decides. The sentence gives the fastest configuration's absolute speedup
    either way.
    """
    if "is_reference" not in summary or not summary["is_reference"].any() or speed.empty:
        return None
    ref = summary[summary["is_reference"]].iloc[0]
    sp = config_table(summary, speed)
    others = summary[~summary["is_reference"]]
    others = others.assign(_t=others["ttt_s"].astype(float).fillna(np.inf)).sort_values("_t")
    if others.empty:
        return None
    top = others.iloc[0]
    r = sp.loc[top["config_id"]]
    name = config_phrase(top["algorithm"], top["num_env_runners"])
    ref_name = f"the single-process reference ({ref['algorithm']})"
    s, lb = float(r["abs_speedup"]), float(r["abs_speedup_lower_bound"])
    low, high = float(r["abs_speedup_low"]), float(r["abs_speedup_high"])
    value = f"{fmt_speedup(r, key='abs_speedup', unit='', why=False)}x"
    times = f"(TTT {fmt_s(float(top['ttt_s']))} against {fmt_s(float(ref['ttt_s']))})"
    if math.isnan(s):
        return (
            f"Neither {ref_name} nor any distributed configuration reached the target by "
            "median: no absolute speedup can be stated."
        )
    # an unbounded upper end (the reference's median censored in resamples) still contains 1
    if math.isfinite(s) and math.isfinite(low) and not math.isnan(high) and low <= 1 <= high:
        return (
            f"The fastest configuration, {name}, cannot be told apart from {ref_name} "
            f"on this hardware with these seeds: absolute speedup {value} {times}; its "
            "95 % interval contains 1."
        )
    if (
        math.isfinite(s) and s > 1 or math.isinf(s) and lb > 1
    ):  # inf: the reference's median not reached
        return f"{name} beats {ref_name}: absolute speedup {value}" + (
            f" {times}." if math.isfinite(s) else ""
        )
    return (
        f"No configuration of the sweep beats {ref_name} on this hardware: the fastest, "
        f"{name}, has an absolute speedup of {value} {times}."
    )


def _colors(tm: pd.DataFrame) -> tuple[dict[tuple[str, int], str], dict[str, str]]:
    from plotly.colors import sample_colorscale

    colors, alg_color = {}, {}
    for i, alg in enumerate(sorted(tm["algorithm"].unique()) if len(tm) else []):
        alg_color[alg] = ALG_COLORS[i % len(ALG_COLORS)]
        ns = sorted(tm.loc[tm["algorithm"] == alg, "num_env_runners"].unique())
        shades = sample_colorscale(
            ALG_SCALES[i % len(ALG_SCALES)],
            list(np.linspace(0.45, 0.95, len(ns))) if len(ns) > 1 else [0.75],
        )
        for n, c in zip(ns, shades, strict=True):
            colors[(alg, int(n))] = c
    return colors, alg_color


def _collect_warnings(
    res: Results, tm: pd.DataFrame, summary: pd.DataFrame, extra: list[str]
) -> list[str]:
    w = list(res.warnings) + list(extra)
    if tm.empty:
        return w
    n_c = int((tm["status"] == "censored").sum())
    if n_c:
        w.append(
            f"{n_c} censored trial(s) (budget spent before the target): their TTT is "
            "'> time run'; medians use Kaplan-Meier, success rates are shown"
        )
    few = summary[summary["finished_seeds"] < MIN_SEEDS_FOR_CI]
    if len(few):
        w.append(
            f"{len(few)} configuration(s) have fewer than {MIN_SEEDS_FOR_CI} finished "
            "seeds: no confidence interval for them"
        )
    n_o = int(tm["oversubscribed"].sum())
    if n_o:
        w.append(
            f"{n_o} oversubscribed trial(s) (asked for more CPUs than the cluster had): "
            "their timings are not trustworthy"
        )
    n_capped = int((tm["censor_reason"] == "capped").sum()) if "censor_reason" in tm else 0
    if n_capped:
        n_skipped = int(summary["n_skipped"].sum())  # summarize_configs always has it
        w.append(
            f"{n_capped} trial(s) capped (censor_reason 'capped'): stopped once their "
            "elapsed time exceeded the capping margin x the fastest configuration's TTT, "
            "so they could no longer be the fastest; counted as censored at that time"
            + (
                f"; {n_skipped} more seed(s) of configurations with most of their seeds "
                "capped were not run (their median is above the cap whatever those give)"
                if n_skipped
                else ""
            )
        )
    n_horizon = int((tm["censor_reason"] == "horizon").sum()) if "censor_reason" in tm else 0
    if n_horizon:
        w.append(
            f"{n_horizon} trial(s) ended at the total_timesteps their sweep set "
            "(censor_reason 'horizon') before their budget or the target: a limit the "
            "budget did not set; leave total_timesteps unset to train until the budget"
        )
    retried = res.trials[res.trials["attempts"] > 1] if "attempts" in res.trials else []
    if len(retried):
        w.append(
            f"{len(retried)} trial(s) were retried after an error (attempts column): "
            "their time-to-target counts from the first attempt's start"
        )
    errs = tm[tm["status"] == "error"]
    stalled = errs[errs["error_kind"] == "stalled"] if "error_kind" in errs else errs.iloc[:0]
    if len(stalled):
        w.append(
            f"{len(stalled)} trial(s) stalled (their env steps or learner updates stopped "
            "moving; listed under 'Stalled trials') and are left out of TTT statistics: "
            "neither reached nor censored evidence"
        )
    errs = errs.drop(stalled.index)
    if len(errs):
        first = str(errs["error"].iloc[0]) if "error" in errs else ""
        w.append(
            f"{len(errs)} trial(s) ended in an error and are left out of TTT statistics"
            + (f" (e.g. {first})" if first else "")
        )
    if summary["num_env_runners"].nunique() < 2:
        w.append("only one env runner count measured: no scaling fit or extrapolation")
    w.extend(fault_warnings(res.trials[res.trials["trial_id"].isin(tm["trial_id"])]))
    return w


#: Configurations whose env fault rates differ by more than this factor are flagged.
FAULT_RATE_RATIO = 2.0


def fault_warnings(trials: pd.DataFrame) -> list[str]:
    """Env faults the trials recovered from (``env_restarts``, ``env_runner_restarts``), as
    warnings: how many trials had any (the time lost is inside their TTT), and, when the
    configurations' faults per 1,000 env steps differ by more than :data:`FAULT_RATE_RATIO`
    (more env runners, more restarts), which ones: their times-to-target were measured under
    different fault loads.

    Args:
        trials: trials.parquet rows (``config_id``, ``algorithm``, ``num_env_runners``,
            ``total_env_steps`` and the two restart columns; older runs without them: none).

    Returns:
        Zero, one or two lines.
    """
    cols = [c for c in ("env_restarts", "env_runner_restarts") if c in trials]
    if not cols or trials.empty:
        return []
    t = trials.assign(faults=trials[cols].fillna(0).sum(axis=1))
    if not (t["faults"] > 0).any():
        return []
    out = [
        f"{int((t['faults'] > 0).sum())} trial(s) recovered from env faults "
        f"({int(t['faults'].sum())} restarts in all; env_restarts, env_runner_restarts): "
        "the time they lost is inside their time-to-target"
    ]
    by = t.groupby("config_id", sort=False).agg(
        algorithm=("algorithm", "first"),
        n=("num_env_runners", "first"),
        faults=("faults", "sum"),
        steps=("total_env_steps", "sum"),
    )
    by = by[by["steps"] > 0]
    rate = 1000.0 * by["faults"] / by["steps"]
    if (
        len(rate) >= 2
        and rate.max() > 0
        and (rate.min() == 0 or rate.max() / rate.min() > FAULT_RATE_RATIO)
    ):
        parts = [
            f"{r.algorithm} N={int(r.n)}: {1000.0 * r.faults / r.steps:.2f}"
            for r in by.sort_values(["algorithm", "n"]).itertuples()
        ]
        out.append(
            "env faults per 1,000 env steps differ between configurations ("
            + "; ".join(parts)
            + "): their times-to-target were measured under "
            "different fault loads"
        )
    return out


def analyse(res: Results, target: str | float | None = None) -> Study:
    """Everything the report shows, computed once: per-trial metrics, per-configuration
    statistics, speedups, the capacity plan (default: no deadline or budget), the plan check
    and warnings.

    Args:
        res: a loaded results directory (:func:`analysis.load.load_results`).
        target: ``None`` for the sweep's target, or an override (absolute value or ``"95%"``
            of the optimum; see :func:`analysis.metrics.parse_target`).

    Returns:
        :class:`Study`.

    Raises:
        ValueError: no usable target (see :func:`analysis.metrics.resolve_target`).
    """
    tm, explored, tgt, warns = judged_metrics(res, target)
    search_summary, stage_note = None, None
    if explored is not None:
        search_summary = summarize_configs(explored, seeds=res.seeds)
        seeds = sorted(int(x) for x in tm["seed"].unique())
        confirmed = tm.loc[~tm["is_baseline"] & ~tm["is_reference"], "config_id"].nunique()
        per = ((res.spec.get("search") or {}).get("confirm") or {}).get("per_env_runners")
        varied = (
            "num_env_runners" in explored
            and explored[~explored["is_reference"]]
            .groupby("algorithm")["num_env_runners"]
            .nunique()
            .max()
            > 1
        )
        cells = per is True or (
            per is None
            and bool(varied)
            and "per_env_runners" in ((res.spec.get("search") or {}).get("confirm") or {})
        )
        what = [
            f"the search's fastest configuration of each algorithm at each env runner "
            f"count ({confirmed} configurations)"
            if cells
            else f"the search's best {confirmed} configuration(s)"
        ] + [
            name
            for name, col in (("the baseline", "is_baseline"), ("the reference", "is_reference"))
            if tm[col].any()
        ]
        stage_note = (
            f"Every number below comes from the confirmation stage: {len(tm)} trials of "
            f"{', '.join(what[:-1]) + ' and ' + what[-1] if len(what) > 1 else what[0]} on "
            f"seeds {seeds[0]}-{seeds[-1]}, none of which the search used; the search stage's "
            f"{len(explored)} trials chose them and are exploratory only."
        )
    summary = summarize_configs(tm, seeds=res.seeds)
    speed, w2 = speedup_table(tm, summary) if len(summary) else (pd.DataFrame(), [])
    plan, models = None, {}
    if len(summary):
        models = model_algorithms(tm, summary, res.progress)
        plan = make_plan(
            tm, summary, cpu_model=str(res.environment.get("cpu_model", "")), models=models
        )
    holdout = auto_holdout(summary) if len(summary) else []
    check = plan_check(tm, summary, res.progress, holdout) if holdout else None
    batch = None
    prog = res.progress
    if (
        "grad_noise_scale" in prog
        and prog["grad_noise_scale"].notna().any()
        and "train_batch_size" in tm
        and tm.groupby([c for c in ("algorithm", "num_env_runners") if c in tm])["train_batch_size"]
        .nunique()
        .max()
        >= 2
    ):
        batch = batch_size_check(tm, prog)
    colors, alg_color = _colors(tm)
    return Study(
        res=res,
        tm=tm,
        target=tgt,
        summary=summary,
        speed=speed,
        plan=plan,
        warnings=_collect_warnings(res, tm, summary, [*warns, *w2]),
        check=check,
        batch=batch,
        baseline=pick_baseline(summary) if len(summary) else None,
        models=models,
        throughput_fits=throughput_fits(tm, summary) if len(summary) else {},
        colors=colors,
        alg_color=alg_color,
        batch_advice=batch_advice(tm, prog, batch) if len(summary) else [],
        search_summary=search_summary,
        stage_note=stage_note,
        configs=config_table(summary, speed),
    )

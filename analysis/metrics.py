"""Per-trial metrics, recomputed from ``progress.parquet``.

Time-to-target (TTT, docs/design.md): wall-clock seconds from the trial's start to the end of the
first training iteration whose target metric is >= the target; steps-to-target: env steps
sampled by then. A trial that never crosses the target is *censored* at the time it stopped
(its TTT is "> elapsed_s"), unless it ended in an error.

Because TTT is recomputed from the learning curve, a different target can be analysed without
re-running (``--target``). A target *above* the one the sweep ran with cannot be judged for
trials that stopped at the old target: they become censored at their stop time, and
:func:`trial_metrics` says so in its warnings.

Example::

    from analysis.load import load_results
    from analysis.metrics import resolve_target, trial_metrics
    res = load_results(path)
    tm, target, warnings = trial_metrics(res)                # the sweep's own target
    tm, target, warnings = trial_metrics(res, target=150.0)  # an absolute override
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.load import Results
from sweeps.engine import rundir
from sweeps.engine.rundir.schema import VOCAB_COLUMNS, as_float, first_crossing, ttt_resolution

__all__ = [
    "ResolvedTarget",
    "describe_metric",
    "first_crossing",
    "judged_metrics",
    "metric_column",
    "parse_target",
    "resolve_target",
    "trial_metrics",
]

# Parameter columns that describe a configuration (besides param_*), in display order: the
# vocabulary columns of trials.parquet.
CONFIG_COLUMNS = VOCAB_COLUMNS


@dataclass(frozen=True)
class ResolvedTarget:
    """The threshold trials are judged against.

    Attributes:
        metric: the metric's name as the sweep gave it (e.g. ``episode_return_mean``).
        column: the ``progress.parquet`` column holding it (``target_metric_value`` when
            recorded, else see :func:`metric_column`).
        value: the absolute threshold (metric units, e.g. episode return).
        source: where ``value`` came from (``--target``, ``spec.json``, ``trials.parquet``).
        original: the value the sweep ran with (NaN if unknown).
    """

    metric: str
    column: str
    value: float
    source: str
    original: float = math.nan

    @property
    def overridden(self) -> bool:
        """True when ``value`` differs from the target the sweep ran with."""
        return math.isfinite(self.original) and not math.isclose(self.value, self.original)


def describe_metric(metric: str, spec: dict[str, Any]) -> str:
    """One phrase saying what the target metric measures, for every table and figure.

    Args:
        metric: the sweep's ``target.metric`` (``evaluation``, ``training``, or an RLlib key).
        spec: spec.json (its ``evaluation`` section gives the episodes and seeds).
    """
    if metric == "evaluation":
        ev = spec.get("evaluation") or {}
        n, seed = ev.get("episodes", "?"), ev.get("seed", "?")
        return (
            f"greedy evaluation return (mean of {n} episodes, seeds {seed}..; "
            "the same protocol for every algorithm)"
        )
    if metric in ("training", "episode_return_mean"):
        return "training return (exploring episodes, as each implementation explores)"
    return f"RLlib metric {metric}"


def metric_column(metric: str) -> str:
    """The ``progress.parquet`` column of a target metric name.

    ``episode_return_mean`` and RLlib keys ending in it (``env_runners/episode_return_mean``)
    map to ``episode_return_mean``; any other metric is stored in ``target_metric_value``
    (docs/results.md).
    """
    return (
        "episode_return_mean"
        if str(metric).endswith("episode_return_mean")
        else ("target_metric_value")
    )


def parse_target(text: str | float, spec: dict[str, Any]) -> float:
    """Parse a ``--target`` value.

    Args:
        text: an absolute threshold (``"150"``, ``150.0``) or a percentage of the env's optimal
            return (``"95%"``), which needs ``spec["target"]["optimal_return"]``.
        spec: the resolved sweep (``spec.json``).

    Returns:
        The absolute threshold (metric units).

    Raises:
        ValueError: unparsable text, non-finite value, or a percentage without an optimum.
    """
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = str(text).strip()
        if s.endswith("%"):
            try:
                frac = float(s[:-1]) / 100.0
            except ValueError:
                raise ValueError(
                    f"--target {text!r}: expected a number or a percentage like 95%"
                ) from None
            opt = (spec.get("target") or {}).get("optimal_return")
            if opt is None or not math.isfinite(float(opt)):
                raise ValueError(
                    f"--target {text!r}: a percentage needs the env's optimal "
                    "return, and spec.json has no target.optimal_return"
                )
            value = frac * float(opt)
        else:
            try:
                value = float(s)
            except ValueError:
                raise ValueError(
                    f"--target {text!r}: expected a number or a percentage like 95%"
                ) from None
    if not math.isfinite(value):
        raise ValueError(f"--target {text!r}: must be finite")
    return value


def resolve_target(res: Results, override: str | float | None = None) -> ResolvedTarget:
    """The target to judge trials against: ``override`` if given, else the sweep's.

    Raises:
        ValueError: no override and neither spec.json nor trials.parquet gives a target value,
            or an unparsable override (see :func:`parse_target`).
    """
    spec_target = res.spec.get("target") or {}
    metric = spec_target.get("metric")
    if not metric:
        metrics = res.trials["target_metric"].dropna().astype(str).unique()
        metric = metrics[0] if len(metrics) else "episode_return_mean"
    original = spec_target.get("value")
    source = rundir.SPEC
    if original is None:
        vals = pd.to_numeric(res.trials["target_value"], errors="coerce").dropna().unique()
        original = float(vals[0]) if len(vals) else math.nan
        source = rundir.TRIALS
    original = float(original) if original is not None else math.nan
    if override is not None:
        return ResolvedTarget(
            metric=str(metric),
            column=metric_column(metric),
            value=parse_target(override, res.spec),
            source="--target",
            original=original,
        )
    if not math.isfinite(original):
        raise ValueError(
            f"{res.path}: no target value in spec.json or trials.parquet; give one with --target"
        )
    return ResolvedTarget(
        metric=str(metric),
        column=metric_column(metric),
        value=original,
        source=source,
        original=original,
    )


def _describe(row: pd.Series, param_cols: list[str]) -> str:
    parts = []
    for col in [*CONFIG_COLUMNS[1:], *param_cols]:
        if col in row.index and pd.notna(row[col]):
            val = row[col]
            name = col.removeprefix("param_")
            if isinstance(val, float) and val.is_integer() and abs(val) < 1e15:
                val = int(val)
            parts.append(f"{name}={val:.3g}" if isinstance(val, float) else f"{name}={val}")
    if str(row.get("vectorize_mode") or "sync") != "sync":  # RLlib's default goes unsaid
        parts.append(f"vectorize_mode={row['vectorize_mode']}")
    return ", ".join(parts)


def _float(value: Any, default: float) -> float:
    """``value`` as a float (:func:`~sweeps.engine.rundir.schema.as_float`), ``default`` when
    it is missing or NaN."""
    v = as_float(value)
    return default if math.isnan(v) else v


def trial_metrics(
    res: Results, target: str | float | None = None
) -> tuple[pd.DataFrame, ResolvedTarget, list[str]]:
    """Per-trial time-to-target, censoring, throughput and returns.

    Args:
        res: a loaded results directory.
        target: ``None`` for the sweep's target, or an override (see :func:`parse_target`).

    Returns:
        ``(tm, target, warnings)``. ``tm`` has one row per trial with columns ``trial_id,
        config_id, algorithm, num_env_runners, seed, is_baseline, status`` (recomputed:
        reached | censored | error), ``reached`` (bool), ``time_to_target_s``,
        ``steps_to_target`` (NaN unless reached), ``duration_s`` (TTT if reached, else the
        censoring time = seconds the trial ran), ``env_steps_per_s`` (total env steps / elapsed
        seconds), ``best_return``, ``final_return``, ``has_episodes``, ``n_iterations``,
        ``num_cpus``, ``num_gpus``, ``oversubscribed``, ``budget_s``, ``elapsed_s``,
        ``total_env_steps``, ``is_reference``, ``eval_time_s`` (seconds of evaluation inside
        the trial's wall-clock), ``cpus_per_env_runner`` (CPUs each env runner asked for),
        ``peak_rss_mib`` (peak resident memory of the trial's processes, MiB; NaN when not
        recorded), ``step_latency_ms`` (each env step's wait, 0 without one), ``step_cpu_ms``
        (each env step's busy CPU milliseconds, 0 without), ``stage`` (``search`` or
        ``confirm``), ``cold_startup_s`` (the start-up its wall times count, seconds, as the
        trial recorded it: its own for a cold trial, its shape's cold start-up for a warm one;
        NaN for the reference and for runs recorded before the column), ``config_label``
        and the configuration's parameter columns.

    Raises:
        ValueError: no usable target (see :func:`resolve_target`).
    """
    tgt = resolve_target(res, target)
    warnings: list[str] = []
    trials = res.trials
    prog = res.progress
    # The sweep runner records the target metric, as each algorithm defines it, in
    # target_metric_value on every iteration; older/other writers only when it is not the
    # episode return. Use it whenever it is there.
    if "target_metric_value" in prog.columns and prog["target_metric_value"].notna().any():
        tgt = replace(tgt, column="target_metric_value")
    col = tgt.column
    if col not in prog.columns:
        prog = prog.assign(**{col: np.nan})
        if len(prog):
            warnings.append(
                f"progress.parquet has no {col!r} column: target metric "
                f"{tgt.metric!r} cannot be recomputed"
            )
    groups = {tid: g for tid, g in prog.groupby("trial_id", sort=False)}
    param_cols = sorted(c for c in trials.columns if c.startswith("param_"))
    rows = []
    no_progress, inconsistent = [], []
    for _, t in trials.iterrows():
        g = groups.get(t["trial_id"])
        elapsed = float(t["elapsed_s"]) if pd.notna(t["elapsed_s"]) else math.nan
        total_steps = float(t["total_env_steps"]) if pd.notna(t["total_env_steps"]) else math.nan
        status = t["status"]
        ttt, steps, resolution = math.nan, math.nan, math.nan
        best, final, has_episodes, n_iter = math.nan, math.nan, False, 0
        if g is not None and len(g):
            g = g.sort_values("iteration", kind="stable")
            times = g["wall_time_s"].to_numpy(dtype=float)
            env_steps = g["env_steps"].to_numpy(dtype=float)
            values = g[col].to_numpy(dtype=float)
            n_iter = len(g)
            has_episodes = bool(np.isfinite(values).any())
            if has_episodes:
                best = float(np.nanmax(values))
                final = float(values[np.isfinite(values)][-1])
            if not math.isfinite(elapsed):
                elapsed = float(np.nanmax(times))
            if not math.isfinite(total_steps) and np.isfinite(env_steps).any():
                total_steps = float(np.nanmax(env_steps))
            budget_s = _float(t.get("budget_s"), math.nan)
            ttt, steps, crossed = first_crossing(times, env_steps, values, tgt.value, budget_s)
            resolution = ttt_resolution(times, crossed)
            if math.isfinite(ttt):
                status = "reached"
            else:
                if t["status"] == "reached" and not tgt.overridden:
                    inconsistent.append(t["trial_id"])
                status = "error" if t["status"] == "error" else "censored"
        else:
            no_progress.append(t["trial_id"])
            if t["status"] == "reached" and not tgt.overridden:
                ttt = float(t["time_to_target_s"])
                steps = float(t["steps_to_target"])
                resolution = _float(t.get("ttt_resolution_s"), math.nan)
            elif t["status"] == "reached":
                status = "censored"  # cannot tell when it crossed a changed target
            best = float(t["best_return"]) if pd.notna(t["best_return"]) else math.nan
            final = float(t["final_return"]) if pd.notna(t["final_return"]) else math.nan
            has_episodes = math.isfinite(best)
        reached = status == "reached"
        duration = ttt if reached else elapsed
        tput = float(t["env_steps_per_s"]) if pd.notna(t["env_steps_per_s"]) else math.nan
        if not math.isfinite(tput) and math.isfinite(total_steps) and elapsed > 0:
            tput = total_steps / elapsed
        row = {
            "trial_id": t["trial_id"],
            "config_id": t["config_id"],
            "algorithm": t["algorithm"],
            "num_env_runners": int(t["num_env_runners"]),
            "seed": t["seed"],
            "is_baseline": bool(t["is_baseline"]),
            "is_reference": bool(t["is_reference"]),
            "status": status,
            # why a censored trial stopped: "budget", or "capped" by adaptive capping
            "censor_reason": (str(t["censor_reason"]) or "budget") if status == "censored" else "",
            "reached": reached,
            "time_to_target_s": ttt if reached else math.nan,
            "steps_to_target": steps if reached else math.nan,
            "duration_s": duration,
            # the gap between the evaluation that crossed the target and the one before
            "ttt_resolution_s": resolution if reached else math.nan,
            "env_steps_per_s": tput,
            "best_return": best,
            "final_return": final,
            "has_episodes": has_episodes,
            "n_iterations": n_iter,
            "num_cpus": float(t["num_cpus"]),
            "num_gpus": float(t["num_gpus"]),
            "oversubscribed": bool(t["oversubscribed"]),
            "budget_s": t["budget_s"],
            "elapsed_s": elapsed,
            "total_env_steps": total_steps,
            "eval_time_s": float(t["eval_time_s"]) if pd.notna(t["eval_time_s"]) else math.nan,
            "node_count": t["node_count"],
            "error": t["error"],
            # "stalled" (sweeps.engine.trainable.StallDetector) or "exception"; never censored evidence
            "error_kind": (str(t.get("error_kind") or "exception")) if status == "error" else "",
            "config_label": _describe(t, param_cols),
            # CPUs each env runner asked for (RLlib's default 1 unless the sweep set it)
            "cpus_per_env_runner": _float(t.get("param_num_cpus_per_env_runner"), 1.0),
            "peak_rss_mib": _float(t.get("peak_rss_mib"), math.nan),
            "step_latency_ms": _float(t.get("step_latency_ms"), 0.0),
            "step_cpu_ms": _float(t.get("step_cpu_ms"), 0.0),
            "stage": str(t.get("stage") or "search"),
            # the sampling layout: "sync" (RLlib's default) or "async", and the env steps
            # that can wait at once
            "vectorize_mode": str(t.get("vectorize_mode") or "sync"),
            "concurrent_envs": _float(t.get("concurrent_envs"), math.nan),
            # the start-up its wall times count, as recorded (sweeps.engine.warm)
            "cold_startup_s": _float(t.get("cold_startup_s"), math.nan),
        }
        for c in [*CONFIG_COLUMNS[1:], *param_cols]:
            if c in t.index:
                row[c] = t[c]
        rows.append(row)
    tm = pd.DataFrame(rows)
    if tm.empty:
        tm = pd.DataFrame(
            columns=[
                "trial_id",
                "config_id",
                "algorithm",
                "num_env_runners",
                "seed",
                "is_baseline",
                "is_reference",
                "status",
                "reached",
                "time_to_target_s",
                "steps_to_target",
                "duration_s",
                "env_steps_per_s",
                "best_return",
                "final_return",
                "has_episodes",
                "n_iterations",
                "num_cpus",
                "num_gpus",
                "oversubscribed",
                "config_label",
            ]
        )
        warnings.append("trials.parquet has no trials yet")
    if no_progress and len(prog):
        warnings.append(
            f"{len(no_progress)} trial(s) have no rows in progress.parquet; their "
            "time-to-target is taken from trials.parquet"
        )
    if inconsistent:
        warnings.append(
            f"{len(inconsistent)} trial(s) marked reached in trials.parquet never "
            f"cross the target in progress.parquet (e.g. {inconsistent[0]}); "
            "progress.parquet wins"
        )
    if tgt.overridden and tgt.value > tgt.original:
        warnings.append(
            f"target {tgt.value:g} is above the one the sweep ran with "
            f"({tgt.original:g}): trials that stopped at the old target are "
            "censored at their stop time"
        )
    n_missing = int((~tm["has_episodes"]).sum()) if len(tm) else 0
    if n_missing:
        warnings.append(f"{n_missing} trial(s) finished no episode, so have no return")
    return tm, tgt, warnings


def judged_metrics(
    res: Results, target: str | float | None = None
) -> tuple[pd.DataFrame, pd.DataFrame | None, ResolvedTarget, list[str]]:
    """The trials every page and command judges a run on, as :func:`trial_metrics` rows:
    with a confirmation stage, its trials (re-indexed) and the search's apart (exploratory
    only, docs/design.md *stage*); else all, and None. The one entry point, so that no
    command reads the search's trials where a page reads fresh seeds.

    Returns:
        ``(judged, explored, target, warnings)``; ``target`` and ``warnings`` as
        :func:`trial_metrics` returns them.

    Raises:
        ValueError: no usable target (:func:`resolve_target`).
    """
    tm, tgt, warnings = trial_metrics(res, target)
    if "stage" in tm and (tm["stage"] == "confirm").any():
        confirm = tm["stage"] == "confirm"
        return tm[confirm].reset_index(drop=True), tm[~confirm], tgt, warnings
    return tm, None, tgt, warnings

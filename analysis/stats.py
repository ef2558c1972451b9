"""Statistics across seeds: time-to-target per configuration, speedup, parallel efficiency.

Rules (docs/design.md):

- A configuration is the set of trials sharing ``config_id`` (one per seed).
- Censored trials are never replaced by the budget. With no censoring, TTT is summarised by
  the median and the interquartile mean (IQM; Agarwal et al. 2021, "Deep Reinforcement Learning
  at the Edge of the Statistical Precipice", NeurIPS) with 95 % percentile-bootstrap confidence
  intervals (``scipy.stats.bootstrap``). With any censoring, the median comes from the
  Kaplan-Meier estimator (``lifelines.KaplanMeierFitter``; Kaplan & Meier 1958) and its CI from
  lifelines' exponential Greenwood bounds; the success rate is shown beside it.
- With >= 5 seeds the MLPerf-style olympic mean is given too: drop the fastest and the slowest
  run and average the rest; one run that did not reach the target counts as the slowest and is
  the one dropped; more than one makes it undefined (MLPerf Training rules, "Results").
- With fewer than :data:`MIN_SEEDS_FOR_CI` seeds no CI is shown; the ``note`` column says so.
- Error trials are left out of TTT statistics and counted in ``n_error``.
- Speedup S = TTT(baseline) / TTT(config), with a bootstrap CI that resamples the seeds of both
  configurations independently (they are not paired). Parallel efficiency E = S / resources
  ratio, given twice: per env runner (``num_env_runners`` ratio) and per CPU (``num_cpus``
  ratio). Decomposition: S ~= throughput ratio x sample-efficiency ratio, where throughput
  ratio = median env steps/s (config / baseline) and sample-efficiency ratio = median
  steps-to-target (baseline / config); ``residual`` = S / (their product) is what neither
  explains (start-up time, iteration granularity).
"""

from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats as sps

from sweeps.engine.rundir.schema import VOCAB_COLUMNS, skipped_seeds

__all__ = [
    "MIN_SEEDS_FOR_CI",
    "OLYMPIC_MIN_SEEDS",
    "best_configs",
    "bootstrap_ci",
    "config_table",
    "draw_seeds",
    "iqm",
    "km_median",
    "km_median_batch",
    "median_or_nan",
    "olympic_mean",
    "percentile_interval",
    "Note",
    "pick_baseline",
    "speedup_table",
    "summarize_configs",
    "ttt_seed_samples",
]

MIN_SEEDS_FOR_CI = 3
"""Fewest seeds for which a confidence interval is reported."""

OLYMPIC_MIN_SEEDS = 5
"""Fewest seeds for the olympic mean (MLPerf uses 5 or more runs per result)."""


def iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean: mean of the middle 50 % (``scipy.stats.trim_mean(x, 0.25)``).

    Agarwal et al. 2021 (NeurIPS), "Deep RL at the Edge of the Statistical Precipice". With
    fewer than 4 values nothing is trimmed (it is the mean).
    """
    return sps.trim_mean(np.asarray(x, dtype=float), 0.25, axis=axis)


def bootstrap_ci(
    x: np.ndarray,
    statistic: Callable[..., np.ndarray],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of ``statistic`` over one sample.

    Args:
        x: shape (n,), e.g. TTT in seconds of one configuration's seeds.
        statistic: vectorised over ``axis`` (``np.median``, :func:`iqm`).
        confidence: two-sided level.
        n_resamples: bootstrap resamples.
        seed: RNG seed (results are reproducible).

    Returns:
        ``(low, high)``; ``(nan, nan)`` with fewer than :data:`MIN_SEEDS_FOR_CI` values.
    """
    x = np.asarray(x, dtype=float)
    if x.size < MIN_SEEDS_FOR_CI:
        return math.nan, math.nan
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    res = sps.bootstrap(
        (x,),
        statistic,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def km_median(
    durations: np.ndarray, reached: np.ndarray, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Kaplan-Meier median time-to-target with its confidence interval (lifelines).

    Args:
        durations: shape (n,), seconds: TTT for reached trials, time run for censored ones.
        reached: shape (n,), True where the target was reached (the "event").
        confidence: level of lifelines' (exponential Greenwood) interval.

    Returns:
        ``(median, low, high)`` in seconds; ``median = inf`` when fewer than half reached the
        target within the observed time, ``high = inf`` when the upper bound is not reached.
    """
    from lifelines import KaplanMeierFitter
    from lifelines.utils import median_survival_times

    durations = np.asarray(durations, dtype=float)
    reached = np.asarray(reached, dtype=bool)
    kmf = KaplanMeierFitter(alpha=1.0 - confidence)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        kmf.fit(durations, event_observed=reached)
        ci = median_survival_times(kmf.confidence_interval_)
    # lifelines' median is the first time with S(t) <= 0.5, compared in floating point, so a
    # product that is exactly 0.5 (e.g. 5/6 * 4/5 * 3/4) can be missed; compare with a
    # tolerance instead (same rule as km_median_batch).
    sf = kmf.survival_function_.iloc[:, 0]
    below = sf[sf <= 0.5 + 1e-12]
    median = float(below.index[0]) if len(below) else math.inf
    return median, float(ci.iloc[0, 0]), float(ci.iloc[0, 1])


def km_median_batch(durations: np.ndarray, reached: np.ndarray) -> np.ndarray:
    """Kaplan-Meier median of many samples at once (for bootstrap loops).

    Same convention as lifelines: the first event time at which the survival function is
    <= 0.5; ``inf`` if it never is. Tied times: events before censorings.

    Args:
        durations: shape (B, n) seconds.
        reached: shape (B, n) bool.

    Returns:
        shape (B,) medians in seconds.
    """
    d = np.atleast_2d(np.asarray(durations, dtype=float))
    e = np.atleast_2d(np.asarray(reached, dtype=bool))
    n = d.shape[1]
    order = np.lexsort((~e, d), axis=-1)
    d = np.take_along_axis(d, order, axis=-1)
    e = np.take_along_axis(e, order, axis=-1)
    at_risk = n - np.arange(n)
    surv = np.cumprod(1.0 - e / at_risk, axis=-1)
    hit = e & (surv <= 0.5 + 1e-12)
    first = np.argmax(hit, axis=-1)
    out = d[np.arange(d.shape[0]), first]
    out[~hit.any(axis=-1)] = np.inf
    return out


def olympic_mean(durations: np.ndarray, reached: np.ndarray) -> tuple[float, str]:
    """MLPerf-style olympic mean: drop fastest and slowest run, average the rest.

    A run that did not reach the target is the slowest (and dropped); with more than one such
    run the mean is undefined (MLPerf Training rules). Needs >= :data:`OLYMPIC_MIN_SEEDS` runs.

    Returns:
        ``(mean_seconds, note)``; ``(nan, reason)`` when undefined.
    """
    durations = np.asarray(durations, dtype=float)
    reached = np.asarray(reached, dtype=bool)
    if durations.size < OLYMPIC_MIN_SEEDS:
        return math.nan, f"olympic mean needs >= {OLYMPIC_MIN_SEEDS} seeds"
    n_miss = int((~reached).sum())
    if n_miss > 1:
        return math.nan, f"olympic mean undefined: {n_miss} runs missed the target"
    t = np.sort(np.where(reached, durations, np.inf))
    return float(np.mean(t[1:-1])), ""


def finite_median(values: pd.Series | np.ndarray) -> float:
    """Median of the finite numbers among ``values`` (non-numbers, NaN and inf left out);
    NaN when none is left."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(float)
    v = v[np.isfinite(v)]
    return float(np.median(v)) if len(v) else math.nan


def median_or_nan(values: pd.Series) -> float:
    """Median of a pandas Series, NaN skipped; NaN when nothing is left (without the
    "Mean of empty slice" warning numpy gives then)."""
    return float(values.median()) if values.notna().any() else math.nan


def summarize_configs(
    tm: pd.DataFrame,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    seeds: int | None = None,
) -> pd.DataFrame:
    """Time-to-target per configuration across seeds.

    Args:
        tm: per-trial metrics from :func:`analysis.metrics.trial_metrics`.
        confidence: level of all intervals.
        n_resamples: bootstrap resamples.
        seed: RNG seed.
        seeds: the sweep's seeds per configuration (``spec["search"]["seeds"]``), to note the
            seeds adaptive capping left unrun (:func:`sweeps.engine.rundir.schema.skipped_seeds`); None:
            ``n_skipped`` is 0.

    Returns:
        One row per ``config_id`` with ``algorithm, num_env_runners, is_baseline,
        config_label, n_trials, n_reached, n_censored, finished_seeds`` (reached or
        censored: the seeds an interval counts), ``n_error`` (trials that ended in an error),
        ``n_stalled`` (of those, the ones the stall detector ended), ``n_skipped`` (seeds adaptive
        capping left unrun; 0 without ``seeds``), ``success_rate``, the headline
        ``estimator`` ("median" or "KM median"), ``ttt_s, ttt_low_s, ttt_high_s`` (seconds;
        ``inf`` = not reached by half the seeds), ``ttt_iqm_s, ttt_iqm_low_s, ttt_iqm_high_s``
        (NaN with censoring), ``ttt_olympic_s``, ``max_censor_s``, ``steps_to_target``,
        ``ttt_resolution_s`` (median over reached seeds of :func:`sweeps.engine.rundir.schema.ttt_resolution`)
        (median over reached seeds), ``env_steps_per_s`` (median), ``num_cpus``, ``num_gpus``,
        ``cpus_per_env_runner``, ``peak_rss_mib`` (median; MiB), ``oversubscribed`` (any),
        ``note`` (what is missing and why).
    """
    rows = []
    skipped = skipped_seeds(tm, seeds) if seeds and "censor_reason" in tm else {}
    for cid, g in tm.groupby("config_id", sort=False):
        ok = g[g["status"] != "error"]
        d = ok["duration_s"].to_numpy(dtype=float)
        r = ok["reached"].to_numpy(dtype=bool)
        n = len(ok)
        notes: list[Note] = []
        row = {
            "config_id": cid,
            "algorithm": g["algorithm"].iloc[0],
            "num_env_runners": int(g["num_env_runners"].iloc[0]),
            "is_baseline": bool(g["is_baseline"].any()),
            "is_reference": bool(g["is_reference"].any()) if "is_reference" in g else False,
            "config_label": g["config_label"].iloc[0],
            "n_trials": len(g),
            "n_reached": int(r.sum()),
            "n_censored": int((~r).sum()),
            # seeds that ended with a time (reached or censored): what intervals count
            "finished_seeds": n,
            "n_error": int((g["status"] == "error").sum()),
            # of those, the trials the stall detector ended (no progress), counted apart
            "n_stalled": int((g["error_kind"] == "stalled").sum()) if "error_kind" in g else 0,
            "n_skipped": skipped.get(cid, 0),
            "success_rate": float(r.mean()) if n else math.nan,
            "estimator": "",
            "ttt_s": math.nan,
            "ttt_low_s": math.nan,
            "ttt_high_s": math.nan,
            "ttt_iqm_s": math.nan,
            "ttt_iqm_low_s": math.nan,
            "ttt_iqm_high_s": math.nan,
            "ttt_olympic_s": math.nan,
            "max_censor_s": float(np.max(d[~r])) if (~r).any() else math.nan,
            "steps_to_target": median_or_nan(ok.loc[ok["reached"], "steps_to_target"]),
            # how finely the TTTs were measured (seconds between evaluations at the crossing)
            "ttt_resolution_s": median_or_nan(ok.loc[ok["reached"], "ttt_resolution_s"])
            if "ttt_resolution_s" in ok
            else math.nan,
            "env_steps_per_s": median_or_nan(ok["env_steps_per_s"]),
            # share of the trials' wall-clock spent in the evaluation protocol (median)
            "eval_share": median_or_nan(ok["eval_time_s"] / ok["elapsed_s"])
            if "eval_time_s" in ok
            else math.nan,
            "num_cpus": median_or_nan(g["num_cpus"]),
            "num_gpus": median_or_nan(g["num_gpus"]),
            "cpus_per_env_runner": median_or_nan(g["cpus_per_env_runner"])
            if "cpus_per_env_runner" in g
            else 1.0,
            "peak_rss_mib": median_or_nan(g["peak_rss_mib"]) if "peak_rss_mib" in g else math.nan,
            "oversubscribed": bool(g["oversubscribed"].any()),
        }
        for c in g.columns:
            if c.startswith("param_") or c in (
                *VOCAB_COLUMNS[1:],
                "vectorize_mode",
                "concurrent_envs",
            ):
                row[c] = g[c].iloc[0]
        if n == 0:
            notes.append(Note("all_failed", "every trial failed with an error"))
        elif r.all():
            row["estimator"] = "median"
            t = d
            row["ttt_s"] = float(np.median(t))
            row["ttt_iqm_s"] = float(iqm(t))
            if n >= MIN_SEEDS_FOR_CI:
                row["ttt_low_s"], row["ttt_high_s"] = bootstrap_ci(
                    t, np.median, confidence=confidence, n_resamples=n_resamples, seed=seed
                )
                row["ttt_iqm_low_s"], row["ttt_iqm_high_s"] = bootstrap_ci(
                    t, iqm, confidence=confidence, n_resamples=n_resamples, seed=seed
                )
        else:
            row["estimator"] = "KM median"
            med, lo, hi = km_median(d, r, confidence)
            row["ttt_s"] = med
            if n >= MIN_SEEDS_FOR_CI:
                row["ttt_low_s"], row["ttt_high_s"] = lo, hi
            if not r.any():
                notes.append(Note("none_reached", "no seed reached the target"))
            elif math.isinf(med):
                notes.append(
                    Note(
                        "median_not_reached",
                        "median not reached: fewer than half the seeds reached the target",
                    )
                )
            notes.append(
                Note(
                    "censored_km", f"{int((~r).sum())} of {n} censored: Kaplan-Meier median, no IQM"
                )
            )
            n_capped = int((ok["censor_reason"] == "capped").sum()) if "censor_reason" in ok else 0
            if n_capped:
                notes.append(
                    Note(
                        "capped",
                        f"{n_capped} of {n} capped: stopped when they could "
                        "no longer beat the fastest configuration (adaptive capping), "
                        "censored there",
                    )
                )
            if row["n_skipped"]:
                notes.append(
                    Note(
                        "skipped",
                        f"{row['n_skipped']} more seed(s) not run: with most "
                        "of its seeds capped, its median TTT is above the cap "
                        "whatever they give",
                    )
                )
        if 0 < n < MIN_SEEDS_FOR_CI:
            notes.append(
                Note("too_few_seeds", f"too few seeds for a CI (n={n} < {MIN_SEEDS_FOR_CI})")
            )
        if n >= OLYMPIC_MIN_SEEDS:
            row["ttt_olympic_s"], why = olympic_mean(d, r)
            if why:
                notes.append(Note("olympic", why))
        if row["n_error"]:
            notes.append(Note("errors_left_out", f"{row['n_error']} error trial(s) left out"))
        if row["oversubscribed"]:
            notes.append(Note("oversubscribed", "oversubscribed: timings not trustworthy"))
        row["note"] = "; ".join(notes)
        row["notes"] = notes
        rows.append(row)
    cols = [
        "config_id",
        "algorithm",
        "num_env_runners",
        "is_baseline",
        "is_reference",
        "config_label",
        "n_trials",
        "n_reached",
        "n_censored",
        "finished_seeds",
        "n_error",
        "n_stalled",
        "n_skipped",
        "success_rate",
        "estimator",
        "ttt_s",
        "ttt_low_s",
        "ttt_high_s",
        "ttt_iqm_s",
        "ttt_iqm_low_s",
        "ttt_iqm_high_s",
        "ttt_olympic_s",
        "max_censor_s",
        "steps_to_target",
        "ttt_resolution_s",
        "env_steps_per_s",
        "num_cpus",
        "num_gpus",
        "cpus_per_env_runner",
        "peak_rss_mib",
        "oversubscribed",
        "eval_share",
        "note",
        "notes",
    ]
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=cols)
    return out[cols + [c for c in out.columns if c not in cols]]


def best_configs(
    summary: pd.DataFrame, by: tuple[str, ...] = ("algorithm", "num_env_runners")
) -> pd.DataFrame:
    """The best configuration per group: lowest headline TTT, then highest success rate.

    Args:
        summary: from :func:`summarize_configs`.
        by: grouping columns; ``("algorithm",)`` gives one row per algorithm.

    Returns:
        One row per group (rows with no usable TTT rank last).
    """
    if summary.empty:
        return summary
    s = summary.assign(
        _ttt=summary["ttt_s"].fillna(np.inf), _succ=-summary["success_rate"].fillna(0.0)
    )
    s = s.sort_values([*by, "_ttt", "_succ"], kind="stable")
    return (
        s.groupby(list(by), sort=True)
        .head(1)
        .drop(columns=["_ttt", "_succ"])
        .reset_index(drop=True)
    )


def draw_seeds(n: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of ``n`` seeds drawn with replacement (shape ``(n,)``): the draw behind every
    resample, :func:`analysis.parts.resample_seeds`' for data frames and the break-even model's for its
    per-trial parts."""
    return rng.integers(0, n, size=n)


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile-bootstrap interval of ``samples`` (one statistic per resample; ``inf``
    allowed): its ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles, each an
    observed resample (``inverted_cdf``), in the samples' unit."""
    a = (1.0 - confidence) / 2.0
    return (
        float(np.quantile(samples, a, method="inverted_cdf")),
        float(np.quantile(samples, 1.0 - a, method="inverted_cdf")),
    )


def config_table(summary: pd.DataFrame, speed: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: its statistics and its speedups, joined once.

    Args:
        summary: from :func:`summarize_configs`.
        speed: from :func:`speedup_table` (one row per configuration of ``summary``, or empty).

    Returns:
        ``summary``'s rows indexed by ``config_id`` (the column kept), with ``speed``'s columns
        (NaN where ``speed`` has no row) and ``is_best_at_n``: the configuration is its
        algorithm's best at its env runner count (:func:`best_configs`; never the reference).
    """
    if summary.empty:
        return summary.assign(is_best_at_n=pd.Series(dtype=bool))
    t = summary.set_index("config_id", drop=False)
    t.index.name = None
    if len(speed):
        sp = speed.set_index("config_id")
        t = t.join(sp[[c for c in sp.columns if c not in t.columns]])
    best = best_configs(summary[~summary["is_reference"]], ("algorithm", "num_env_runners"))
    return t.assign(is_best_at_n=t["config_id"].isin(best["config_id"]))


def _boot_stat(d: np.ndarray, r: np.ndarray, idx: np.ndarray) -> np.ndarray:
    dd, rr = d[idx], r[idx]
    if r.all():
        return np.median(dd, axis=-1)
    return km_median_batch(dd, rr)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(num, dtype=float) / np.asarray(den, dtype=float)
    both_inf = np.isinf(num) & np.isinf(den)
    return np.where(both_inf, np.nan, out)


def versus(
    base: pd.Series,
    bd: np.ndarray,
    br: np.ndarray,
    c: pd.Series,
    cd: np.ndarray,
    cr: np.ndarray,
    rng: np.random.Generator,
    *,
    confidence: float,
    n_resamples: int,
    who: str,
) -> tuple[dict[str, float], list[Note]]:
    """S = TTT(base) / TTT(c) with its bootstrap CI, or a bound when a median is censored.

    Args:
        base, c: rows of :func:`summarize_configs` (``ttt_s``).
        bd, br / cd, cr: shape (n,) durations (s) and reached flags of their trials.
        who: the base's name in the notes ("baseline", "reference").

    Returns:
        ``({"speedup", "low", "high", "lower_bound", "upper_bound"}, notes)``.
    """
    out = dict.fromkeys(("speedup", "low", "high", "lower_bound", "upper_bound"), math.nan)
    notes: list[Note] = []
    s = float(_ratio(np.array(base["ttt_s"]), np.array(c["ttt_s"])))
    out["speedup"] = s
    if math.isnan(s):
        notes.append(
            Note("neither_reached", f"neither this nor the {who} reached the target by median")
        )
    elif math.isinf(s):
        # the base's median TTT is beyond everything observed: only a lower bound
        out["lower_bound"] = float(np.max(bd)) / float(c["ttt_s"])
        notes.append(
            Note(
                "base_not_reached",
                f"{who} median not reached within "
                f"{np.max(bd):.0f} s: S > {floor_to(out['lower_bound'], 2):.2f}",
            )
        )
    elif s == 0.0:
        out["upper_bound"] = float(base["ttt_s"]) / float(np.max(cd))
        notes.append(
            Note(
                "not_reached",
                f"median not reached within {np.max(cd):.0f} s: "
                f"S < {ceil_to(out['upper_bound'], 2):.2f} against the {who}",
            )
        )
    if len(bd) >= MIN_SEEDS_FOR_CI and len(cd) >= MIN_SEEDS_FOR_CI:
        ib = rng.integers(0, len(bd), size=(n_resamples, len(bd)))
        ic = rng.integers(0, len(cd), size=(n_resamples, len(cd)))
        boot = _ratio(_boot_stat(bd, br, ib), _boot_stat(cd, cr, ic))
        boot = boot[~np.isnan(boot)]
        if boot.size >= n_resamples // 2:
            a = (1.0 - confidence) / 2.0
            out["low"] = float(np.quantile(boot, a, method="inverted_cdf"))
            out["high"] = float(np.quantile(boot, 1 - a, method="inverted_cdf"))
            if not math.isfinite(out["high"]) or out["low"] == 0:
                notes.append(
                    Note(
                        "ci_unbounded",
                        "CI unbounded: censored seeds (some resamples never reach the target)",
                    )
                )
        else:
            notes.append(
                Note(
                    "ci_undefined",
                    f"CI undefined: most resamples reach the target in neither this nor the {who}",
                )
            )
    else:
        notes.append(
            Note("too_few_seeds", f"too few seeds for a CI ({who} {len(bd)}, this {len(cd)})")
        )
    return out, notes


def floor_to(x: float, digits: int) -> float:
    """``x`` rounded *down* to ``digits`` decimals: how a lower bound is printed (a bound
    rounded up would claim more than the data show: S > 3.07 must not read "> 3.1")."""
    f = 10.0**digits
    return math.floor(x * f + 1e-9) / f  # 1e-9: 2.05 * 100 is 204.999... in binary


def ceil_to(x: float, digits: int) -> float:
    """``x`` rounded *up* to ``digits`` decimals: how an upper bound is printed."""
    f = 10.0**digits
    return math.ceil(x * f - 1e-9) / f


class Note(str):
    """A note of the analysis: its text (the ``str``) and a stable :attr:`code`, so a renderer
    decides by code which notes to show (e.g. leaves out what a table cell already says) and
    rewording a note never changes that.

    The summary's ``notes`` and the speedup table's ``speedup_notes`` columns hold lists of
    them; ``note`` / ``speedup_note`` hold the same texts joined by ``"; "``.
    """

    code: str

    def __new__(cls, code: str, text: str) -> Note:
        obj = super().__new__(cls, text)
        obj.code = code
        return obj

    def __reduce__(self):
        return (Note, (self.code, str(self)))


def _absolute(notes: list[Note]) -> list[Note]:
    """Notes on the speedup against the reference, marked as such (code ``abs_<code>``)."""
    return [Note(f"abs_{x.code}", f"absolute: {x}") for x in notes]


def _pick(summary: pd.DataFrame, flag: str, who: str, warns: list[str]) -> pd.Series | None:
    rows = summary[summary[flag]] if flag in summary.columns else summary.iloc[0:0]
    if rows.empty:
        return None
    if len(rows) > 1:
        warns.append(
            f"{len(rows)} configurations are marked {who}; using the one with the most trials"
        )
    return rows.sort_values("n_trials", ascending=False).iloc[0]


def pick_baseline(summary: pd.DataFrame, warns: list[str] | None = None) -> pd.Series | None:
    """The baseline configuration's summary row: among the configurations marked
    ``is_baseline``, the one with the most trials (a warning appended to ``warns`` when
    several are marked); None when none is."""
    return _pick(summary, "is_baseline", "baseline", [] if warns is None else warns)


def trial_durations(tm: pd.DataFrame, config_id: str) -> tuple[np.ndarray, np.ndarray]:
    """A configuration's finished trials (errors left out): ``(durations, reached)``, each
    shape (n,): seconds to the target, or run before censoring; whether it was reached."""
    t = tm[(tm["config_id"] == config_id) & (tm["status"] != "error")]
    return t["duration_s"].to_numpy(dtype=float), t["reached"].to_numpy(dtype=bool)


def ttt_seed_samples(
    configs: pd.DataFrame, tm: pd.DataFrame
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """:func:`analysis.scaling.bootstrap_ttt_prediction`'s ``samples``: each configuration of
    ``configs`` (one row per env runner count, with ``config_id`` and ``num_env_runners``) by
    its N, as :func:`trial_durations` gives its trials."""
    return {
        int(r["num_env_runners"]): trial_durations(tm, r["config_id"])
        for _, r in configs.iterrows()
    }


def speedup_table(
    tm: pd.DataFrame,
    summary: pd.DataFrame,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[pd.DataFrame, list[str]]:
    """Speedup, parallel efficiency and its decomposition for every configuration.

    Args:
        tm: per-trial metrics (:func:`analysis.metrics.trial_metrics`).
        summary: per-configuration table (:func:`summarize_configs`).
        confidence, n_resamples, seed: bootstrap settings.

    Returns:
        ``(table, warnings)``. ``table`` has one row per ``config_id`` with ``speedup,
        speedup_low, speedup_high`` (relative speedup S = TTT(baseline)/TTT(config)),
        ``abs_speedup, abs_speedup_low, abs_speedup_high`` (absolute speedup =
        TTT(reference)/TTT(config), the single-process reference of docs/design.md; NaN without
        one), ``runner_ratio, efficiency_per_runner`` (+ ``_low/_high``), ``cpu_ratio,
        efficiency_per_cpu`` (+ ``_low/_high``) — parallel efficiency E = S / resources ratio,
        only for configurations of the baseline's algorithm (across algorithms it would mix
        the algorithm with the resources) — ``throughput_ratio, sample_efficiency_ratio,
        residual``, ``speedup_lower_bound`` / ``abs_speedup_lower_bound`` (when the base's
        median TTT was not reached: S > the base's longest observed time / this TTT),
        ``speedup_upper_bound`` / ``abs_speedup_upper_bound`` (when this configuration's was
        not: S < base TTT / its longest observed time) and a ``speedup_note``. Empty values
        mean "not computable" and the note says why.
    """
    warns: list[str] = []
    cols = [
        "config_id",
        "speedup",
        "speedup_low",
        "speedup_high",
        "runner_ratio",
        "efficiency_per_runner",
        "efficiency_per_runner_low",
        "efficiency_per_runner_high",
        "cpu_ratio",
        "efficiency_per_cpu",
        "efficiency_per_cpu_low",
        "efficiency_per_cpu_high",
        "throughput_ratio",
        "sample_efficiency_ratio",
        "residual",
        "speedup_lower_bound",
        "speedup_upper_bound",
        "abs_speedup",
        "abs_speedup_low",
        "abs_speedup_high",
        "abs_speedup_lower_bound",
        "abs_speedup_upper_bound",
        "speedup_note",
        "speedup_notes",
    ]
    base = pick_baseline(summary, warns)
    ref = _pick(summary, "is_reference", "reference", warns)
    if base is None:
        warns.append(
            "no baseline trials (is_baseline): relative speedups and efficiencies are not shown"
        )
    if base is None and ref is None:
        return pd.DataFrame({"config_id": summary["config_id"]}).reindex(columns=cols), warns
    bd, br = trial_durations(tm, base["config_id"]) if base is not None else (None, None)
    rd, rr = trial_durations(tm, ref["config_id"]) if ref is not None else (None, None)
    rng = np.random.default_rng(seed)
    rows = []
    kw = {"confidence": confidence, "n_resamples": n_resamples}
    for _, c in summary.iterrows():
        cd, cr = trial_durations(tm, c["config_id"])
        row = dict.fromkeys(cols, math.nan)
        row["config_id"] = c["config_id"]
        if len(cd) == 0:
            row["speedup_notes"] = [Note("no_finished_trials", "no finished trials")]
            row["speedup_note"] = "; ".join(row["speedup_notes"])
            rows.append(row)
            continue
        is_ref = ref is not None and c["config_id"] == ref["config_id"]
        if ref is not None and len(rd) and not is_ref:
            v, n = versus(ref, rd, rr, c, cd, cr, rng, who="reference", **kw)
            row.update(
                {
                    "abs_speedup": v["speedup"],
                    "abs_speedup_low": v["low"],
                    "abs_speedup_high": v["high"],
                    "abs_speedup_lower_bound": v["lower_bound"],
                    "abs_speedup_upper_bound": v["upper_bound"],
                }
            )
            abs_notes = [x for x in n if x.code != "too_few_seeds"]
        else:
            abs_notes = []
        if base is None or len(bd) == 0 or is_ref:
            notes = _absolute(abs_notes)
            row["speedup_note"] = "; ".join(notes)
            row["speedup_notes"] = notes
            rows.append(row)
            continue
        v, n = versus(base, bd, br, c, cd, cr, rng, who="baseline", **kw)
        row.update(
            {
                "speedup": v["speedup"],
                "speedup_low": v["low"],
                "speedup_high": v["high"],
                "speedup_lower_bound": v["lower_bound"],
                "speedup_upper_bound": v["upper_bound"],
            }
        )
        # a sentence true of both speedups is said once, not again behind "absolute:"
        both = [x for x in n if x in abs_notes]
        notes = [Note(x.code, f"both speedups: {x}") if x in both else x for x in n]
        notes += _absolute([x for x in abs_notes if x not in both])
        s = v["speedup"]
        if c["algorithm"] != base["algorithm"]:
            notes.append(
                Note(
                    "other_algorithm",
                    f"no parallel efficiency: {c['algorithm']} "
                    f"is not the baseline's algorithm ({base['algorithm']})",
                )
            )
        else:
            nb, nc = float(base["num_env_runners"]), float(c["num_env_runners"])
            if nb > 0:
                row["runner_ratio"] = nc / nb
                for k in ("", "_low", "_high"):
                    row[f"efficiency_per_runner{k}"] = (
                        row[f"speedup{k}"] / row["runner_ratio"]
                        if row["runner_ratio"] > 0
                        else math.nan
                    )
            else:
                notes.append(
                    Note(
                        "baseline_in_driver",
                        "per-runner efficiency undefined: the "
                        "baseline samples in the driver (0 env runners)",
                    )
                )
            if base["num_cpus"] > 0:
                row["cpu_ratio"] = float(c["num_cpus"]) / float(base["num_cpus"])
                for k in ("", "_low", "_high"):
                    row[f"efficiency_per_cpu{k}"] = row[f"speedup{k}"] / row["cpu_ratio"]
        row["throughput_ratio"] = (
            float(c["env_steps_per_s"]) / float(base["env_steps_per_s"])
            if base["env_steps_per_s"] > 0
            else math.nan
        )
        if c["n_reached"] and base["n_reached"]:
            row["sample_efficiency_ratio"] = float(base["steps_to_target"]) / float(
                c["steps_to_target"]
            )
            prod = row["throughput_ratio"] * row["sample_efficiency_ratio"]
            row["residual"] = s / prod if prod > 0 and math.isfinite(s) else math.nan
        else:
            notes.append(
                Note("no_sample_efficiency", "no reached seeds: sample efficiency unknown")
            )
        row["speedup_note"] = "; ".join(notes)
        row["speedup_notes"] = notes
        rows.append(row)
    return pd.DataFrame(rows, columns=cols), warns

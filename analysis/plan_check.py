"""Plan check: fit the scaling models on some env runner counts, predict the held-out ones,
and compare the predictions with what was measured there.

Usage::

    python -m analysis.plan holdout RESULTS_DIR 8,16

Two models predict time-to-target (TTT, seconds) at a held-out N from the trials at the other
N (per algorithm, its best configuration at each N, as in :mod:`analysis.plan`):

1. **USL on 1/TTT**: Gunther's Universal Scalability Law (Amdahl with two distinct N) fitted to
   1/TTT against N, TTT(N) = 1/X(N) -- what the capacity plan uses (:mod:`analysis.scaling`).
2. **Pipeline**: TTT(N) = S(N) + E(N) / R(N), the trial's own decomposition into the parts it
   can measure (docs/design.md: TTT counts actor start-up):

   - S(N), start-up seconds: the start-up the trial recorded (``cold_startup_s``: its
     Algorithm built, or for a warm trial its shape's cold build; runs recorded without it:
     the time at which its env steps, extrapolated back along its steady sampling rate, were
     zero -- :func:`analysis.parts.trial_components`); fitted as ``a + b N`` (start-up grows
     with N on one node: one process per env runner);
   - R(N), steady sampling rate in env steps/s (wall-clock, evaluation included) after the
     first iteration: USL fitted to the per-trial rates;
   - E(N), env steps to the target (Kaplan-Meier median over seeds, censored trials count
     their env steps as a lower bound): a power law ``E = c N^d`` in N (sample efficiency
     falls as the replay ratio or the policy lag changes with N), ``d = 0`` with one fitted N.

Beside them, the throughput models (:data:`THROUGHPUT_MODELS`): USL and Amdahl fitted to every
trial's steady env steps/s against N (the pipeline's R(N) is whichever fits better), each
checked on the held-out N with its own seed-bootstrap interval.

Every model also reports how it fits the N it was fitted on (:data:`FIT_COLUMNS`): the
residual at each fitted N (in-sample prediction / measured median - 1) and the
leave-one-N-out cross-validation error there (the model refitted without that N, then asked
for it). The check names the TTT model with the smaller median absolute cross-validation error
(:attr:`PlanCheck.chosen`): a choice made on the fit range, never on the held-out N (Hastie,
Tibshirani & Friedman, *The Elements of Statistical Learning*, 2nd ed., section 7.10).

Intervals are 95 % percentile bootstraps over seeds: each resample draws the trials at every
fitted N with replacement and refits every part. A prediction "holds" when the measured median
TTT lies inside its interval; the throughput check compares R(N) with the measured median rate
(relative error; the issue's goal is within 20 %).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from analysis.fmt import fmt_error, fmt_interval
from analysis.parts import (
    Pipeline,
    SeedResampler,
    band,
    fit_pipeline,
    trial_components,
)
from analysis.scaling import ScalingFit, bootstrap_ttt_prediction, fit_scaling, preferred, starts
from analysis.stats import best_configs, ttt_seed_samples

__all__ = [
    "CHECK_COLUMNS",
    "FIT_CAPTION",
    "FIT_COLUMNS",
    "FIT_HEADERS",
    "MAX_HOLDOUT",
    "MIN_FIT_N",
    "PlanCheck",
    "TABLE_HEADERS",
    "THROUGHPUT_MODELS",
    "auto_holdout",
    "check_text",
    "fit_range_choice",
    "pipeline_prediction",
    "fit_table_rows",
    "parse_holdout",
    "plan_check",
    "table_rows",
]

MIN_FIT_N = 3
"""Distinct env runner counts (>= 1) the models are fitted on, at least (the USL has three
parameters)."""

MAX_HOLDOUT = 2
"""Env runner counts the report and the pages hold out, at most: the largest ones."""

CHECK_COLUMNS = [
    "algorithm",
    "num_env_runners",
    "model",
    "quantity",
    "predicted",
    "low",
    "high",
    "measured",
    "measured_low",
    "measured_high",
    "error",
    "inside",
    "fit_n",
]

FIT_COLUMNS = [
    "algorithm",
    "model",
    "quantity",
    "num_env_runners",
    "predicted",
    "measured",
    "residual",
    "cv_predicted",
    "cv_error",
]

#: The throughput models checked beside the TTT models (on env steps/s), by their fit's name.
THROUGHPUT_MODELS = {"usl": "USL on throughput", "amdahl": "Amdahl on throughput"}


@dataclass
class PlanCheck:
    """Held-out predictions against measurements.

    Attributes:
        rows: one row per (algorithm, held-out N, model, quantity) with :data:`CHECK_COLUMNS`:
            ``quantity`` "TTT" (seconds) or "env steps/s"; ``predicted, low, high`` the
            prediction and its 95 % interval; ``measured`` the median (TTT: Kaplan-Meier median
            when seeds were censored) and ``measured_low/high`` its CI (TTT) or range over seeds
            (rate); ``error`` = predicted / measured - 1; ``inside`` whether the measured value
            lies in [low, high] (None when either is unknown); ``fit_n`` the N the models were fitted on, e.g. "1,2,4".
        components: per trial, :func:`trial_components`.
        notes: what could not be checked and why, one line each.
        fit: one row per (algorithm, model, fitted N) with :data:`FIT_COLUMNS`; ``quantity``
            "TTT" (seconds: USL/Amdahl on 1/TTT, the pipeline) or "env steps/s" (USL and
            Amdahl on throughput): ``predicted`` by the model fitted on every fitted N,
            ``measured`` the median there (TTT: inf when not reached), ``residual`` =
            predicted / measured - 1; ``cv_predicted`` by the model refitted without that N,
            ``cv_error`` = cv_predicted / measured - 1 (NaN where a refit or the measurement
            is missing).
        chosen: per algorithm, the TTT model with the smaller median absolute ``cv_error``
            (at least two finite ones), or None when no model has them.
    """

    rows: pd.DataFrame
    components: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    fit: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FIT_COLUMNS))
    chosen: dict[str, str | None] = field(default_factory=dict)


def parse_holdout(text: str) -> list[int]:
    """``"8,16"`` -> ``[8, 16]``.

    Raises:
        ValueError: not a comma-separated list of integers >= 1.
    """
    try:
        ns = sorted({int(x) for x in str(text).split(",") if x.strip()})
    except ValueError:
        raise ValueError(
            f"held-out counts {text!r}: expected env runner counts like 8,16"
        ) from None
    if not ns or ns[0] < 1:
        raise ValueError(f"held-out counts {text!r}: expected env runner counts >= 1, like 8,16")
    return ns


def auto_holdout(summary: pd.DataFrame) -> list[int]:
    """The N the report holds out: the :data:`MAX_HOLDOUT` largest N (N >= 1) of the algorithm
    with the most distinct N, keeping its :data:`MIN_FIT_N` smallest in the fit; empty when no
    algorithm has more than :data:`MIN_FIT_N`.

    With N = 1, 2, 4, 8, 16 that is 8 and 16 (fitted on three N); with N = 1-6 and 8, 6 and 8
    (fitted on five N, so every model has residuals and cross-validation has points to choose
    on).
    """
    best = best_configs(summary, ("algorithm", "num_env_runners"))
    best = best[best["num_env_runners"] >= 1]
    out: list[int] = []
    for _, g in best.groupby("algorithm"):
        ns = sorted(int(n) for n in g["num_env_runners"].unique())
        held = ns[max(MIN_FIT_N, len(ns) - MAX_HOLDOUT) :]
        if len(held) > len(out):
            out = held
    return out


def _rate_trials(comp: pd.DataFrame) -> pd.DataFrame:
    """The trials whose steady rate (and start-up) the throughput models are fitted to."""
    return comp[np.isfinite(comp["startup_s"]) & np.isfinite(comp["rate"])]


def _rate_fits(
    comp: pd.DataFrame, *, precise: bool = True, p0: dict[str, list[float]] | None = None
) -> dict[str, ScalingFit]:
    """USL and Amdahl fitted to every trial's steady env steps/s against N (those that could
    be fitted, by :data:`THROUGHPUT_MODELS` key); empty with fewer than two N. ``precise``,
    ``p0``: :func:`analysis.scaling.fit_scaling`'s, for a bootstrap's refits."""
    ok = _rate_trials(comp)
    if ok["num_env_runners"].nunique() < 2:
        return {}
    fits = fit_scaling(
        ok["num_env_runners"].to_numpy(float),
        ok["rate"].to_numpy(float),
        precise=precise,
        p0=p0,
    )
    return {k: f for k, f in fits.items() if f.ok}


def _rate_of(f: ScalingFit | None, n: float) -> float:
    return math.nan if f is None else float(f.predict(np.array([float(n)]))[0])


def _bootstrap_rates(
    comp: pd.DataFrame, cand: np.ndarray, n_resamples: int, seed: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """95 % interval of each throughput model's (:data:`THROUGHPUT_MODELS`) prediction at
    ``cand``: each resample draws every N's trials with replacement and refits both models."""
    rng = np.random.default_rng(seed)
    resample = SeedResampler([g for _, g in _rate_trials(comp).groupby("num_env_runners")])
    preds: dict[str, list[np.ndarray]] = {key: [] for key in THROUGHPUT_MODELS}
    p0 = starts(_rate_fits(comp))
    for _ in range(n_resamples):
        draw = resample(rng)
        fits = _rate_fits(draw, precise=False, p0=p0)
        for key, out in preds.items():
            f = fits.get(key)
            out.append(f.predict(cand) if f is not None else np.full(cand.shape, np.nan))
    return {key: band(np.array(v), n_resamples) for key, v in preds.items()}


def _bootstrap_pipeline(
    comp: pd.DataFrame, cand: np.ndarray, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    resample = SeedResampler([g for _, g in comp.groupby("num_env_runners")])
    ttts, rates = [], []
    p0 = starts(_rate_fits(comp))
    for _ in range(n_resamples):
        draw = resample(rng)
        p = fit_pipeline(draw, precise=False, p0=p0)
        if p is not None:
            t, r = p.predict(cand)
            ttts.append(t)
            rates.append(r)
    nan = np.full(cand.shape, np.nan)
    if not ttts:
        return nan, nan, nan, nan

    t_lo, t_hi = band(np.array(ttts), n_resamples)
    r_lo, r_hi = band(np.array(rates), n_resamples)
    return t_lo, t_hi, r_lo, r_hi


def _relative_error(predicted: float, measured: float) -> float:
    """predicted / measured - 1; NaN unless both are finite and measured > 0."""
    if math.isfinite(predicted) and math.isfinite(measured) and measured > 0:
        return predicted / measured - 1.0
    return math.nan


def _fit_ttt(rows: pd.DataFrame) -> ScalingFit | None:
    """USL (or Amdahl) on 1/TTT fitted to configurations' median TTTs (finite ones), or None."""
    rows = rows[np.isfinite(rows["ttt_s"].astype(float))]
    if rows["num_env_runners"].nunique() < 2:
        return None
    return preferred(
        fit_scaling(rows["num_env_runners"].to_numpy(float), 1.0 / rows["ttt_s"].to_numpy(float))
    )


def _ttt_of(f: ScalingFit | None, n: float) -> float:
    if f is None:
        return math.nan
    with np.errstate(divide="ignore"):
        return float(1.0 / f.predict(np.array([float(n)]))[0])


def _pipeline_ttt_of(p: Pipeline | None, n: float) -> float:
    return math.nan if p is None else float(p.predict(np.array([float(n)]))[0][0])


def _fit_range(
    alg: str,
    fit_rows: pd.DataFrame,
    usl_name: str,
    f: ScalingFit | None,
    pc: pd.DataFrame,
    pipe: Pipeline | None,
) -> list[dict]:
    """Residuals and leave-one-N-out errors at every fitted N (:data:`FIT_COLUMNS`): of both
    TTT models, and of USL and Amdahl on the trials' throughput."""
    out = []
    for _, r in fit_rows.sort_values("num_env_runners").iterrows():
        n = int(r["num_env_runners"])
        measured = float(r["ttt_s"])
        others = fit_rows[fit_rows["num_env_runners"] != n]
        for model, pred, cv in (
            (usl_name, _ttt_of(f, n), _ttt_of(_fit_ttt(others), n)),
            (
                "pipeline",
                _pipeline_ttt_of(pipe, n),
                _pipeline_ttt_of(fit_pipeline(pc[pc["config_id"].isin(others["config_id"])]), n),
            ),
        ):
            out.append(
                {
                    "algorithm": alg,
                    "model": model,
                    "quantity": "TTT",
                    "num_env_runners": n,
                    "predicted": pred,
                    "measured": measured,
                    "residual": _relative_error(pred, measured),
                    "cv_predicted": cv,
                    "cv_error": _relative_error(cv, measured),
                }
            )
    # the throughput models, on every trial's steady env steps/s
    rates = _rate_trials(pc)
    fits = _rate_fits(pc)
    for n in sorted(int(k) for k in rates["num_env_runners"].unique()):
        measured = float(rates.loc[rates["num_env_runners"] == n, "rate"].median())
        left = _rate_fits(pc[pc["num_env_runners"] != n])
        for key, model in THROUGHPUT_MODELS.items():
            pred, cv = _rate_of(fits.get(key), n), _rate_of(left.get(key), n)
            out.append(
                {
                    "algorithm": alg,
                    "model": model,
                    "quantity": "env steps/s",
                    "num_env_runners": n,
                    "predicted": pred,
                    "measured": measured,
                    "residual": _relative_error(pred, measured),
                    "cv_predicted": cv,
                    "cv_error": _relative_error(cv, measured),
                }
            )
    return out


def _choose(alg: str, fit: pd.DataFrame) -> tuple[str | None, str]:
    """The TTT model with the smaller median absolute leave-one-N-out error (at least two
    finite ones), and a note saying so."""
    scores = {}
    ttt = fit[fit["quantity"] == "TTT"] if "quantity" in fit else fit
    for model, g in ttt.groupby("model", sort=False):
        e = g["cv_error"].astype(float).abs().dropna()
        if len(e) >= 2:
            scores[model] = (float(e.median()), len(e))
    if not scores:
        return None, (
            f"{alg}: no model chosen: cross-validation on the fit range needs at least "
            "two fitted N that can each be left out and predicted"
        )
    best = min(scores, key=lambda m: scores[m][0])
    told = "; ".join(f"{m} {v:.0%} over {k} N" for m, (v, k) in scores.items())
    return best, (
        f"{alg}: leave-one-N-out cross-validation on the fit range prefers {best} "
        f"(median |error|: {told}); the held-out N play no part in it"
    )


def fit_range_choice(
    alg: str, fit_rows: pd.DataFrame, comp: pd.DataFrame
) -> tuple[str | None, str, Pipeline | None]:
    """The model the fit range's cross-validation prefers for one algorithm, as the capacity
    plan uses it: ``(chosen, note, pipeline)``.

    Args:
        alg: the algorithm (for the note).
        fit_rows: its best configuration per fitted N (summary rows: ``config_id,
            num_env_runners, ttt_s``), N >= 1 with a finite median TTT.
        comp: :func:`trial_components` of their trials, with ``config_id`` and
            ``num_env_runners``.

    Returns:
        ``chosen``: ``"pipeline"``, ``"USL on 1/TTT"`` / ``"Amdahl on 1/TTT"`` or None (fewer
        than two fitted N can be left out and predicted); ``note``: one line saying which and
        by how much; ``pipeline``: the pipeline fitted on every fitted N (None when it cannot
        be fitted).
    """
    f = _fit_ttt(fit_rows)
    name = ("USL" if f is not None and f.model == "usl" else "Amdahl") + " on 1/TTT"
    pipe = fit_pipeline(comp)
    fit = pd.DataFrame(_fit_range(alg, fit_rows, name, f, comp, pipe), columns=FIT_COLUMNS)
    chosen, note = _choose(alg, fit)
    return chosen, note.replace("; the held-out N play no part in it", ""), pipe


def pipeline_prediction(
    pipe: Pipeline, comp: pd.DataFrame, n: Sequence[int], *, n_resamples: int = 200, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(TTT, low, high)`` in seconds at each of ``n``: the pipeline ``pipe`` and its 95 %
    interval from a bootstrap over the seeds of ``comp`` (the trials it was fitted on,
    :func:`trial_components` with ``num_env_runners``), each resample refitting every part."""
    cand = np.asarray(n, dtype=float)
    ttt, _ = pipe.predict(cand)
    lo, hi, _, _ = _bootstrap_pipeline(comp, cand, n_resamples, seed)
    return ttt, lo, hi


def plan_check(
    tm: pd.DataFrame,
    summary: pd.DataFrame,
    progress: pd.DataFrame,
    holdout: Sequence[int],
    *,
    n_resamples: int = 300,
    seed: int = 0,
) -> PlanCheck:
    """Fit on the N not in ``holdout``, predict at ``holdout``, compare with the measurements.

    Args:
        tm: per-trial metrics (:func:`analysis.metrics.trial_metrics`).
        summary: per-configuration statistics (:func:`analysis.stats.summarize_configs`).
        progress: the run's ``progress.parquet`` rows.
        holdout: env runner counts to hold out (each >= 1).
        n_resamples, seed: the bootstrap behind the intervals.

    Returns:
        :class:`PlanCheck` (with the fit range's residuals and cross-validation errors, and
        the model chosen by them); an algorithm that cannot be checked (fewer than two fitted
        N, no held-out N measured) gets a note instead of rows.
    """
    hold = sorted(set(int(n) for n in holdout))
    comp = trial_components(tm, progress).merge(
        tm[["trial_id", "config_id", "algorithm", "num_env_runners", "status"]], on="trial_id"
    )
    comp = comp[comp["status"] != "error"]
    best = best_configs(summary, ("algorithm", "num_env_runners"))
    best = best[best["num_env_runners"] >= 1]
    rows, notes, fit, chosen = [], [], [], {}
    for alg, g in best.groupby("algorithm", sort=True):
        fit_rows = g[~g["num_env_runners"].isin(hold)]
        test_rows = g[g["num_env_runners"].isin(hold)]
        fit_n = sorted(int(n) for n in fit_rows["num_env_runners"])
        label = ",".join(map(str, fit_n))
        if test_rows.empty:
            notes.append(
                f"{alg}: no held-out N was measured (measured N="
                f"{','.join(str(int(n)) for n in sorted(g['num_env_runners']))})"
            )
            continue
        if len(fit_n) < 2:
            notes.append(
                f"{alg}: {len(fit_n)} env runner count(s) left to fit on; the check "
                "needs at least 2 (3 for the USL)"
            )
            continue
        cand = test_rows["num_env_runners"].to_numpy(float)
        # 1. USL (or Amdahl) on 1/TTT, the capacity plan's own model
        usable = fit_rows[np.isfinite(fit_rows["ttt_s"].astype(float))]
        fits = fit_scaling(
            usable["num_env_runners"].to_numpy(float), 1.0 / usable["ttt_s"].to_numpy(float)
        )
        f = preferred(fits)
        usl_n = ",".join(str(int(n)) for n in usable["num_env_runners"])
        if len(usable) < len(fit_rows):
            notes.append(
                f"{alg}: N={','.join(str(int(n)) for n in fit_rows['num_env_runners'] if n not in set(usable['num_env_runners']))} "
                "left out of the fit of 1/TTT (median TTT not reached)"
            )
        usl_pred = usl_lo = usl_hi = np.full(cand.shape, np.nan)
        model_name = "USL on 1/TTT"
        if f is None:
            notes.append(f"{alg}: no fit of 1/TTT on N={label} ({fits['amdahl'].reason})")
        else:
            model_name = ("USL" if f.model == "usl" else "Amdahl") + " on 1/TTT"
            with np.errstate(divide="ignore"):
                usl_pred = 1.0 / f.predict(cand)
            usl_lo, usl_hi, _ = bootstrap_ttt_prediction(
                ttt_seed_samples(usable, tm),
                cand,
                f.model,
                n_resamples=n_resamples,
                seed=seed,
                p0=[f.gamma, f.alpha, f.beta],
            )
        # 2. the pipeline model on the same configurations' trials
        pc = comp[comp["config_id"].isin(fit_rows["config_id"])]
        pipe = fit_pipeline(pc)
        pipe_n = ",".join(
            str(int(n)) for n in sorted(pc.loc[np.isfinite(pc["rate"]), "num_env_runners"].unique())
        )
        if pipe is None:
            notes.append(
                f"{alg}: no pipeline fit on N={label} (too few trials with two "
                "iterations or a sampling rate)"
            )
            p_ttt = p_lo = p_hi = np.full(cand.shape, np.nan)
        else:
            if pipe.steps is None:
                notes.append(
                    f"{alg}: the pipeline predicts no TTT: no fitted N has a median "
                    "env steps to the target (most seeds censored)"
                )
            p_ttt, _ = pipe.predict(cand)
            p_lo, p_hi, _, _ = _bootstrap_pipeline(pc, cand, n_resamples, seed)
            notes.append(
                f"{alg}: the pipeline's throughput is the {THROUGHPUT_MODELS[pipe.rate.model]}"
            )
        # 3. USL and Amdahl on the trials' throughput, each with its own seed bootstrap
        rate_fits = _rate_fits(pc)
        bands = _bootstrap_rates(pc, cand, n_resamples, seed) if rate_fits else {}
        nan = np.full(cand.shape, np.nan)
        throughput = []
        for key, label_t in THROUGHPUT_MODELS.items():
            f_r = rate_fits.get(key)
            if f_r is None:
                throughput.append((label_t, nan, nan, nan))
                continue
            throughput.append((label_t, f_r.predict(cand), *bands[key]))
        # 4. how each model fits its own N, and the one cross-validation prefers
        alg_fit = pd.DataFrame(
            _fit_range(alg, fit_rows, model_name, f, pc, pipe), columns=FIT_COLUMNS
        )
        fit.append(alg_fit)
        chosen[alg], note = _choose(alg, alg_fit)
        notes.append(note)
        for i, (_, t) in enumerate(test_rows.iterrows()):
            n = int(t["num_env_runners"])
            meas = (float(t["ttt_s"]), float(t["ttt_low_s"]), float(t["ttt_high_s"]))
            tc = comp[comp["config_id"] == t["config_id"]]["rate"].dropna()
            rate_meas = (
                (float(tc.median()), float(tc.min()), float(tc.max()))
                if len(tc)
                else (math.nan,) * 3
            )
            for model, q, pred, lo, hi, m, used in (
                (model_name, "TTT", usl_pred[i], usl_lo[i], usl_hi[i], meas, usl_n),
                ("pipeline", "TTT", p_ttt[i], p_lo[i], p_hi[i], meas, pipe_n),
                *(
                    (label_t, "env steps/s", pr[i], lo_r[i], hi_r[i], rate_meas, pipe_n)
                    for label_t, pr, lo_r, hi_r in throughput
                ),
            ):
                rows.append(
                    {
                        "algorithm": alg,
                        "num_env_runners": n,
                        "model": model,
                        "quantity": q,
                        "predicted": float(pred),
                        "low": float(lo),
                        "high": float(hi),
                        "measured": m[0],
                        "measured_low": m[1],
                        "measured_high": m[2],
                        "error": _relative_error(float(pred), m[0]),
                        "inside": (
                            None
                            if not (math.isfinite(m[0]) and np.isfinite(lo) and not np.isnan(hi))
                            else bool(lo <= m[0] <= hi)
                        ),
                        "fit_n": used,
                    }
                )
            if not math.isfinite(meas[0]):
                notes.append(
                    f"{alg} N={n}: the measured median TTT is not known (most seeds "
                    "censored): the TTT predictions cannot be checked there"
                )
    fit_df = pd.concat(fit, ignore_index=True) if fit else pd.DataFrame(columns=FIT_COLUMNS)
    return PlanCheck(pd.DataFrame(rows, columns=CHECK_COLUMNS), comp, notes, fit_df, chosen)


TABLE_HEADERS = [
    "algorithm",
    "held-out N",
    "quantity",
    "model",
    "fitted on N",
    "predicted [95 % interval]",
    "measured [95 % CI or range over seeds]",
    "error",
    "measured inside",
]


def _quantity(x: float, ttt: bool) -> str:
    """A TTT (seconds, to 0.1) or a throughput (env steps/s, to 1); ``not reached`` for an
    infinite TTT, ``n/a`` otherwise when not finite."""
    if not math.isfinite(x):
        return "not reached" if ttt and x == math.inf else "n/a"
    return f"{x:,.1f}" if ttt else f"{x:,.0f}"


def _with_interval(x: float, lo: float, hi: float, ttt: bool) -> str:
    """:func:`_quantity` with its 95 % interval; a TTT not reached has none."""
    num = partial(_quantity, ttt=ttt)
    return num(x) + (fmt_interval(lo, hi, num, num(math.inf)) if math.isfinite(x) else "")


def table_rows(check: PlanCheck) -> list[list[str]]:
    """The check as table rows of text (:data:`TABLE_HEADERS`), for the report and
    ``analysis.publish``: TTT in seconds to 0.1 s, env steps/s to 1."""
    rows = []
    for _, r in check.rows.iterrows():
        ttt = r["quantity"] == "TTT"
        rows.append(
            [
                r["algorithm"],
                str(r["num_env_runners"]),
                "TTT (s)" if ttt else "env steps/s",
                r["model"],
                r["fit_n"],
                _with_interval(r["predicted"], r["low"], r["high"], ttt),
                _with_interval(r["measured"], r["measured_low"], r["measured_high"], ttt),
                fmt_error(r["error"]),
                {True: "yes", False: "no"}.get(r["inside"], "n/a"),
            ]
        )
    return rows


#: What the fit-range table shows, in one sentence (the report, the published tables, pages).
FIT_CAPTION = (
    "On the fitted env runner counts: each model's residual, and its error there "
    "when refitted without that count (leave-one-N-out cross-validation, which "
    "chooses the model)."
)

FIT_HEADERS = [
    "algorithm",
    "model",
    "quantity",
    "fitted N",
    "predicted",
    "measured",
    "residual",
    "left out: predicted",
    "left out: error",
]


def fit_table_rows(check: PlanCheck) -> list[list[str]]:
    """The fit range as table rows of text (:data:`FIT_HEADERS`): per model and fitted N, the
    in-sample prediction (TTT in seconds to 0.1, env steps/s to 1) and residual, and the
    leave-one-N-out prediction and its error."""
    rows = []
    for _, r in check.fit.iterrows():
        ttt = r["quantity"] == "TTT"
        num = partial(_quantity, ttt=ttt)
        rows.append(
            [
                r["algorithm"],
                r["model"],
                "TTT (s)" if ttt else "env steps/s",
                str(r["num_env_runners"]),
                num(r["predicted"]),
                num(r["measured"]),
                fmt_error(r["residual"]),
                num(r["cv_predicted"]),
                fmt_error(r["cv_error"]),
            ]
        )
    return rows


def check_text(check: PlanCheck) -> list[str]:
    """The check as plain lines (the CLI's output; the report shows the same as a table)."""
    out = []
    for _, r in check.rows.iterrows():
        ttt = r["quantity"] == "TTT"

        unit = " s" if ttt else " env steps/s"

        num = partial(_quantity, ttt=ttt)

        pred = (
            "n/a"
            if not math.isfinite(r["predicted"])
            else (f"{num(r['predicted'])}{unit} (95% interval {num(r['low'])} to {num(r['high'])})")
        )
        meas = num(r["measured"]) + (unit if math.isfinite(r["measured"]) else "")
        err = fmt_error(r["error"])
        verdict = {True: "inside the interval", False: "outside the interval"}.get(
            r["inside"], "not checkable"
        )
        out.append(
            f"{r['algorithm']} N={r['num_env_runners']} {r['quantity']} by "
            f"{r['model']} (fit on N={r['fit_n']}): predicted {pred}, measured {meas}, "
            f"error {err}, {verdict}"
        )
    for (alg, model), g in check.fit.groupby(["algorithm", "model"], sort=False):
        parts = [
            f"N={int(r['num_env_runners'])} residual {fmt_error(r['residual'])}, left out "
            f"{fmt_error(r['cv_error'])}"
            for _, r in g.iterrows()
        ]
        out.append(f"{alg} fit range, {model}: " + "; ".join(parts))
    return out + check.notes

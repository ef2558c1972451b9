"""The parts of a trial's time-to-target, the pipeline model built from them, and the one
seed-level bootstrap every model of the analysis resamples with.

- :func:`trial_components`: per trial, its start-up, steady sampling rate and env steps to
  the target (what the pipeline model, the break-even model, the transfer model and the
  batch-size check read);
- :class:`Pipeline` / :func:`fit_pipeline`: TTT(N) = S(N) + E(N) / R(N) across env runner
  counts (docs/design.md; :mod:`analysis.plan_check` checks it, :mod:`analysis.plan_model`
  plans with it);
- :func:`resample_seeds`: one resample that draws every group's trials (seeds) with
  replacement, and :func:`band`: the 95 % percentile interval of a model's resampled
  predictions (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.scaling import ScalingFit, fit_scaling, preferred
from analysis.stats import draw_seeds, km_median_batch, percentile_interval

__all__ = [
    "Pipeline",
    "band",
    "fit_pipeline",
    "km_median_or_nan",
    "SeedResampler",
    "resample_seeds",
    "trial_components",
]


def resample_seeds(groups: Sequence[pd.DataFrame], rng: np.random.Generator) -> pd.DataFrame:
    """One seed-level bootstrap resample: each group's rows (one per trial, i.e. per seed)
    drawn with replacement, as many as it has, groups kept apart (a stratified resample: every
    env runner count keeps its number of seeds). A loop of resamples of the same groups is
    faster through :class:`SeedResampler`, which draws the same rows.

    Args:
        groups: trials grouped as the model fits them (e.g. per ``num_env_runners``).
        rng: the resampling stream; one ``integers`` draw per group, in order.

    Returns:
        The drawn rows of every group, concatenated.
    """
    return SeedResampler(groups)(rng)


class SeedResampler:
    """:func:`resample_seeds` of fixed ``groups``, drawn many times: the groups are joined
    once and each resample takes its rows by position in one step (a bootstrap's thousands of
    resamples otherwise spend most of their time joining small frames).

    Calling it with ``rng`` returns what ``resample_seeds(groups, rng)`` returns, from the
    same draws.
    """

    def __init__(self, groups: Sequence[pd.DataFrame]):
        self._sizes = [len(g) for g in groups]
        self._offsets = np.cumsum([0, *self._sizes[:-1]])
        self._frame = pd.concat(groups) if groups else pd.DataFrame()

    def __call__(self, rng: np.random.Generator) -> pd.DataFrame:
        pos = [off + draw_seeds(n, rng) for off, n in zip(self._offsets, self._sizes, strict=True)]
        return self._frame.iloc[np.concatenate(pos)] if pos else self._frame


def trial_components(tm: pd.DataFrame, progress: pd.DataFrame) -> pd.DataFrame:
    """Per trial, the parts of its TTT the pipeline model uses.

    Args:
        tm: per-trial metrics (:func:`analysis.metrics.trial_metrics`).
        progress: ``progress.parquet`` rows (``trial_id, iteration, wall_time_s, env_steps``).

    Returns:
        Columns ``trial_id, startup_s`` (seconds: the start-up the trial recorded,
        ``cold_startup_s``, which its wall times count; for a trial without one -- the
        single-process reference, runs recorded before the column -- the time at which its env
        steps, extrapolated back along the steady rate, were zero, clipped to [0, first
        iteration's end]), ``startup_recorded`` (bool: which of the two), ``rate`` (env
        steps/s from the end of the first iteration to the last recorded one -- up to the
        target for trials that reached it), ``steps`` (env steps to the target, or all env
        steps of a censored trial) and ``reached``. ``rate`` and an inferred ``startup_s`` are
        NaN where a trial has fewer than two iterations.
    """
    rows = []
    prog = progress.sort_values(["trial_id", "iteration"]).groupby("trial_id")
    groups = {k: g for k, g in prog}
    for _, t in tm.iterrows():
        g = groups.get(t["trial_id"])
        startup = rate = math.nan
        if g is not None and len(g) >= 2:
            w = g["wall_time_s"].to_numpy(float)
            s = g["env_steps"].to_numpy(float)
            if t["reached"] and np.isfinite(t["time_to_target_s"]):
                keep = w <= t["time_to_target_s"] + 1e-9
                w, s = w[keep], s[keep]
            if len(w) >= 2 and w[-1] > w[0] and s[-1] > s[0]:
                rate = (s[-1] - s[0]) / (w[-1] - w[0])
                startup = float(np.clip(w[0] - s[0] / rate, 0.0, w[0]))
        steps = t["steps_to_target"] if t["reached"] else t["total_env_steps"]
        v = t.get("cold_startup_s")
        recorded = float(v) if v is not None and pd.notna(v) else math.nan
        rows.append(
            {
                "trial_id": t["trial_id"],
                "startup_s": recorded if math.isfinite(recorded) else startup,
                "startup_recorded": math.isfinite(recorded),
                "rate": rate,
                "steps": float(steps) if pd.notna(steps) else math.nan,
                "reached": bool(t["reached"]),
            }
        )
    return pd.DataFrame(
        rows, columns=["trial_id", "startup_s", "startup_recorded", "rate", "steps", "reached"]
    )


def km_median_or_nan(x: np.ndarray, reached: np.ndarray) -> float:
    """The median of ``x`` (seconds or env steps), Kaplan-Meier's where some did not reach
    the target (``reached`` False: censored at ``x``); NaN for no values."""
    if len(x) == 0:
        return math.nan
    if reached.all():
        return float(np.median(x))
    return float(km_median_batch(x, reached)[0])


@dataclass
class Pipeline:
    """The pipeline model fitted on one set of trials: TTT(N) = S(N) + E(N) / R(N) (see the
    module docstring)."""

    startup: np.ndarray  # (a, b): S(N) = a + b N
    rate: ScalingFit
    steps: np.ndarray | None  # (log c, d): E(N) = c N^d; None: no N with a median

    def predict(self, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(TTT seconds, env steps/s)`` at ``n``."""
        n = np.asarray(n, dtype=float)
        s = np.maximum(self.startup[0] + self.startup[1] * n, 0.0)
        r = self.rate.predict(n)
        if self.steps is None:
            return np.full(n.shape, np.nan), r
        e = np.exp(self.steps[0] + self.steps[1] * np.log(n))
        with np.errstate(divide="ignore", invalid="ignore"):
            ttt = np.where(r > 0, s + e / r, np.inf)
        return ttt, r


def fit_pipeline(
    comp: pd.DataFrame, *, precise: bool = True, p0: dict[str, list[float]] | None = None
) -> Pipeline | None:
    """The pipeline model fitted to :func:`trial_components` rows (with ``num_env_runners``):
    start-up linear in N, the rate's preferred USL/Amdahl fit, env steps a power law of N
    through each N's Kaplan-Meier median. None with fewer than two N with a start-up and a
    rate, or no usable rate fit. ``precise``, ``p0``: the rate fit's
    (:func:`analysis.scaling.fit_scaling`), for a bootstrap's refits."""
    ok = comp[np.isfinite(comp["startup_s"]) & np.isfinite(comp["rate"])]
    ns = sorted(ok["num_env_runners"].unique())
    if len(ns) < 2:
        return None
    n = ok["num_env_runners"].to_numpy(float)
    slope, icpt = np.polyfit(n, ok["startup_s"].to_numpy(float), 1)
    # USL when it fits (preferred's choice), so Amdahl is fitted only where USL fails
    fits = fit_scaling(n, ok["rate"].to_numpy(float), precise=precise, p0=p0, models=("usl",))
    rate = preferred(fits) or preferred(
        fit_scaling(n, ok["rate"].to_numpy(float), precise=precise, p0=p0, models=("amdahl",))
    )
    if rate is None:
        return None
    med = []
    for k in ns:
        g = comp[(comp["num_env_runners"] == k) & np.isfinite(comp["steps"])]
        e = km_median_or_nan(g["steps"].to_numpy(float), g["reached"].to_numpy(bool))
        if math.isfinite(e) and e > 0:
            med.append((k, e))
    if not med:
        steps = None
    elif len(med) == 1:
        steps = np.array([math.log(med[0][1]), 0.0])
    else:
        d, logc = np.polyfit(np.log([m[0] for m in med]), np.log([m[1] for m in med]), 1)
        steps = np.array([logc, d])
    return Pipeline(np.array([icpt, slope]), rate, steps)


def band(a: np.ndarray, n_resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``a`` (resamples x candidates), the 95 % percentile interval over the
    resamples that gave a finite or infinite prediction; NaN where under half of them did."""
    lo, hi = np.full(a.shape[1], np.nan), np.full(a.shape[1], np.nan)
    for j in range(a.shape[1]):
        col = a[:, j][~np.isnan(a[:, j])]
        if len(col) >= n_resamples / 2:
            lo[j], hi[j] = percentile_interval(col)
    return lo, hi

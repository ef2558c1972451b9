"""Batch size from the gradient noise scale: predicted optimisation steps and env steps to the
target at other batch sizes, checked against the measured ones.

Model (McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training", arXiv
1812.06162, 2018, eqs. 2.11-2.12): to reach a given loss (here: the target), the optimisation
steps ``S`` and the samples ``E`` used at batch size ``B`` trade off as

    S(B) = S_min (1 + B_noise / B)        E(B) = E_min (1 + B / B_noise),  E_min = S_min B_noise

with ``B_noise`` the critical batch size, which the *simple noise scale* ``B_simple =
tr(Sigma) / |G|^2`` measured during training predicts (:mod:`sweeps.engine.algorithms.noise_scale`).
In RL the samples are env steps; ``E = S x B`` holds when every update uses a fresh batch of
``B`` env steps once (on-policy learners with one pass and one minibatch per batch, e.g. PPO
with ``num_epochs=1`` and ``minibatch_size = train_batch_size``); with several passes or
replay the env steps per update are measured, not assumed.

From a *pilot* batch size ``B0`` (its measured learner updates to the target ``S0`` and its
measured ``B_simple``, medians over seeds; a trial's ``B_simple`` is the median over its
iterations up to the target, because the noise scale grows during training and the steps to
the target integrate over all of it): ``S_min = S0 / (1 + B_simple / B0)``, then ``S(B)``
and ``E(B) = S(B) x (env steps per update at B0) x B / B0`` at every other batch size, with a
95 % bootstrap interval over the pilot's seeds. The check compares those predictions with the
measured medians at the batch sizes the prediction did not use; a least-squares fit of
``S(B) = S_min (1 + B_crit / B)`` to all measured points says which critical batch size the
outcomes themselves imply, next to the gradients' ``B_simple``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.fmt import fmt_ci, fmt_error, fmt_interval, fmt_s
from analysis.parts import SeedResampler, trial_components
from analysis.stats import median_or_nan
from sweeps.engine.cli import EXIT_BAD_INPUT

__all__ = [
    "BatchSizeCheck",
    "batch_advice",
    "batch_size_check",
    "check_lines",
    "check_table",
    "fit_critical_batch",
    "main",
    "steps_at",
    "trial_batch",
]


def steps_at(b: np.ndarray | float, s_min: float, b_noise: float) -> np.ndarray:
    """``S(B) = S_min (1 + B_noise / B)``: optimisation steps to the target at batch size B."""
    return s_min * (1.0 + b_noise / np.asarray(b, dtype=float))


def trial_batch(tm: pd.DataFrame, progress: pd.DataFrame) -> pd.DataFrame:
    """Per trial: its batch size, learner updates to the target and measured noise scale.

    Returns:
        Columns ``trial_id, config_id, algorithm, num_env_runners, train_batch_size, reached,
        updates``
        (lifetime learner updates at the iteration that first reached the target; NaN when
        censored), ``steps`` (env steps to the target), ``b_simple`` (the median over the
        trial's iterations, up to that one, of the learner's smoothed ``grad_noise_scale``: the
        noise scale the run went through; it grows by orders of magnitude as training
        converges), ``b_simple_last`` (its value at that iteration), ``steps_per_update``
        (env steps / learner updates at that iteration), ``ttt`` (seconds) and ``startup``
        (seconds before sampling began, :func:`analysis.parts.trial_components`).
    """

    startup = trial_components(tm, progress).set_index("trial_id")["startup_s"]
    rows = []
    groups = {k: g.sort_values("iteration") for k, g in progress.groupby("trial_id")}
    for _, t in tm.iterrows():
        g = groups.get(t["trial_id"])
        upd = bns = spu = last = math.nan
        if g is not None and len(g):
            if t["reached"]:
                hit = g[g["wall_time_s"] <= t["time_to_target_s"] + 1e-9]
                row = hit.iloc[-1] if len(hit) else g.iloc[0]
                upd = float(row["learner_updates"])
            else:
                row = g.iloc[-1]
            if "grad_noise_scale" in g:
                known = g[(g["wall_time_s"] <= row["wall_time_s"]) & g["grad_noise_scale"].notna()]
                if len(known):
                    bns = float(known["grad_noise_scale"].median())
                    last = float(known["grad_noise_scale"].iloc[-1])
            lu = float(row["learner_updates"])
            spu = float(row["env_steps"]) / lu if lu > 0 else math.nan
        rows.append(
            {
                "trial_id": t["trial_id"],
                "config_id": t["config_id"],
                "algorithm": t["algorithm"],
                "num_env_runners": float(t.get("num_env_runners", math.nan)),
                "train_batch_size": float(t.get("train_batch_size", math.nan)),
                "reached": bool(t["reached"]),
                "updates": upd,
                "steps": float(t["steps_to_target"]) if t["reached"] else math.nan,
                "b_simple": bns,
                "b_simple_last": last,
                "steps_per_update": spu,
                "ttt": float(t["time_to_target_s"]) if t["reached"] else math.nan,
                "startup": float(startup.get(t["trial_id"], math.nan)),
            }
        )
    return pd.DataFrame(rows)


def fit_critical_batch(b: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """Least squares ``S = S_min (1 + B_crit / B)`` (linear in ``1/B``): ``(S_min, B_crit)``.

    NaN with fewer than two distinct batch sizes; ``B_crit`` is clipped at 0 (a negative slope
    means larger batches needed *more* steps: no trade-off to model).
    """
    b, s = np.asarray(b, float), np.asarray(s, float)
    ok = np.isfinite(b) & np.isfinite(s) & (b > 0)
    if len(np.unique(b[ok])) < 2:
        return math.nan, math.nan
    slope, icpt = np.polyfit(1.0 / b[ok], s[ok], 1)
    if icpt <= 0:
        return math.nan, math.nan
    return float(icpt), max(float(slope / icpt), 0.0)


@dataclass
class BatchSizeCheck:
    """Predictions from the pilot batch size against the measured batch sizes.

    Attributes:
        rows: per (algorithm, batch size) ``algorithm, train_batch_size, role`` ("pilot" or
            "checked"), ``n_reached, n_trials``, measured ``updates`` and ``steps`` (medians
            over seeds that reached the target) and ``b_simple`` (median), predicted
            ``updates_pred, updates_low, updates_high, steps_pred, steps_low, steps_high``,
            ``ttt, ttt_pred, ttt_low, ttt_high`` (seconds: the pilot's start-up plus E(B) x its
            seconds per env step after start-up, i.e. the pilot's time per env step assumed at
            every B) and ``updates_error, steps_error, ttt_error`` (predicted / measured - 1).
        fits: per algorithm ``{"pilot": B0, "b_simple": ..., "s_min": ..., "b_crit": ...,
            "s_min_fit": ...}`` (``b_crit`` and ``s_min_fit`` from :func:`fit_critical_batch`
            on every measured batch size).
        notes: why something could not be predicted, one line each.
    """

    rows: pd.DataFrame
    fits: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _one_env_runner_count(g: pd.DataFrame, alg: str, notes: list[str]) -> pd.DataFrame:
    """An algorithm's trials at one env runner count: the batch-size model holds the rest of
    the configuration fixed, and more env runners change both the env steps per update and
    the seconds per env step. The count with the most batch sizes (then trials, then the
    smallest) is kept, and a note says so when there were several."""
    if (
        "num_env_runners" not in g
        or g["num_env_runners"].nunique() <= 1
        or g["train_batch_size"].nunique() <= 1
    ):
        return g
    by_n = g.groupby("num_env_runners").agg(
        sizes=("train_batch_size", "nunique"), trials=("train_batch_size", "size")
    )
    n = sorted(by_n.itertuples(), key=lambda r: (-r.sizes, -r.trials, r.Index))[0].Index
    notes.append(
        f"{alg}: batch sizes compared at {n:g} env runner(s), the count measured at "
        "the most batch sizes (other counts change the env steps per update)"
    )
    return g[g["num_env_runners"] == n]


def batch_size_check(
    tm: pd.DataFrame,
    progress: pd.DataFrame,
    *,
    pilot: float | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> BatchSizeCheck:
    """Predict steps-to-target at every batch size from one pilot batch size and compare.

    Args:
        tm: per-trial metrics (:func:`analysis.metrics.trial_metrics`).
        progress: the run's progress rows (with ``grad_noise_scale``).
        pilot: the pilot batch size (default: the median of the measured ones, rounded down to
            a measured one).
        n_resamples, seed: the bootstrap over the pilot's seeds.

    Returns:
        :class:`BatchSizeCheck` (empty rows, with a note, when an algorithm has fewer than two
        batch sizes, no noise scale, or a pilot whose seeds did not reach the target).
    """
    tb = trial_batch(tm[~tm["is_reference"] & (tm["status"] != "error")], progress)
    rows, fits, notes = [], {}, []
    rng = np.random.default_rng(seed)
    for alg, g in tb.groupby("algorithm", sort=True):
        g = _one_env_runner_count(g, alg, notes)
        sizes = sorted(b for b in g["train_batch_size"].unique() if np.isfinite(b))
        if len(sizes) < 2:
            notes.append(f"{alg}: one batch size measured; nothing to predict")
            continue
        b0 = pilot if pilot is not None else sizes[(len(sizes) - 1) // 2]
        if b0 not in sizes:
            notes.append(f"{alg}: pilot batch size {b0:g} was not measured")
            continue
        p = g[(g["train_batch_size"] == b0) & g["reached"]]
        p = p[np.isfinite(p["updates"]) & np.isfinite(p["b_simple"])]
        if len(p) == 0:
            notes.append(
                f"{alg}: no seed of the pilot batch size {b0:g} reached the target "
                "with a measured noise scale"
            )
            continue

        def predict(
            pp: pd.DataFrame, bs: np.ndarray, b0: float = b0
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            s0, bn = float(pp["updates"].median()), float(pp["b_simple"].median())
            spu0 = float(pp["steps_per_update"].median())
            s_min = s0 / (1.0 + bn / b0)
            s = steps_at(bs, s_min, bn)
            e = s * spu0 * bs / b0
            # TTT: the pilot's start-up plus its seconds per env step after start-up
            start = median_or_nan(pp["startup"])
            per_step = median_or_nan((pp["ttt"] - pp["startup"]) / pp["steps"])
            return s, e, start + e * per_step

        bs = np.array(sizes, float)
        s_pred, e_pred, t_pred = predict(p, bs)
        resample = SeedResampler([p])
        boots = [predict(resample(rng), bs) for _ in range(n_resamples)]
        s_lo, s_hi = np.quantile(np.array([b[0] for b in boots]), [0.025, 0.975], axis=0)
        e_lo, e_hi = np.quantile(np.array([b[1] for b in boots]), [0.025, 0.975], axis=0)
        t_boot = np.array([b[2] for b in boots])  # NaN where a resample has no start-up
        t_lo, t_hi = (
            np.nanquantile(t_boot, [0.025, 0.975], axis=0)
            if np.isfinite(t_boot).any()
            else np.full((2, len(sizes)), math.nan)
        )
        med = []
        for i, b in enumerate(sizes):
            gb = g[g["train_batch_size"] == b]
            r = gb[gb["reached"]]
            m_upd, m_steps, m_ttt = (median_or_nan(r[c]) for c in ("updates", "steps", "ttt"))
            med.append((b, m_upd))
            rows.append(
                {
                    "algorithm": alg,
                    "train_batch_size": b,
                    "role": "pilot" if b == b0 else "checked",
                    "n_reached": int(len(r)),
                    "n_trials": int(len(gb)),
                    "updates": m_upd,
                    "steps": m_steps,
                    "b_simple": median_or_nan(gb["b_simple"]),
                    "updates_pred": float(s_pred[i]),
                    "updates_low": float(s_lo[i]),
                    "updates_high": float(s_hi[i]),
                    "steps_pred": float(e_pred[i]),
                    "steps_low": float(e_lo[i]),
                    "steps_high": float(e_hi[i]),
                    "ttt": m_ttt,
                    "ttt_pred": float(t_pred[i]),
                    "ttt_low": float(t_lo[i]),
                    "ttt_high": float(t_hi[i]),
                    "ttt_error": float(t_pred[i] / m_ttt - 1.0) if m_ttt > 0 else math.nan,
                    "updates_error": float(s_pred[i] / m_upd - 1.0) if m_upd > 0 else math.nan,
                    "steps_error": float(e_pred[i] / m_steps - 1.0) if m_steps > 0 else math.nan,
                }
            )
            if len(r) * 2 < len(gb):
                notes.append(
                    f"{alg} B={b:g}: {len(r)} of {len(gb)} seeds reached the target; "
                    "its measured medians are over those only (biased low)"
                )
        s_min_fit, b_crit = fit_critical_batch(
            np.array([m[0] for m in med]), np.array([m[1] for m in med])
        )
        bn0 = float(p["b_simple"].median())
        fits[alg] = {
            "pilot": float(b0),
            "b_simple": bn0,
            "s_min": float(p["updates"].median()) / (1.0 + bn0 / b0),
            "b_crit": b_crit,
            "s_min_fit": s_min_fit,
        }
    cols = [
        "algorithm",
        "train_batch_size",
        "role",
        "n_reached",
        "n_trials",
        "updates",
        "steps",
        "b_simple",
        "updates_pred",
        "updates_low",
        "updates_high",
        "steps_pred",
        "steps_low",
        "steps_high",
        "ttt",
        "ttt_pred",
        "ttt_low",
        "ttt_high",
        "updates_error",
        "steps_error",
        "ttt_error",
    ]
    return BatchSizeCheck(pd.DataFrame(rows, columns=cols), fits, notes)


#: Algorithms whose batch is a replay minibatch: their batch's samples are replayed
#: transitions, not fresh env steps.
_REPLAY_ALGORITHMS = ("DQN", "APEX", "RLLIB-DQN")


def batch_advice(
    tm: pd.DataFrame, progress: pd.DataFrame, check: BatchSizeCheck | None = None
) -> list[str]:
    """What the measured gradient noise scale says about batch size, per algorithm: one line
    each, for the capacity plan (``analysis.plan`` and the report).

    Per algorithm whose trials recorded ``grad_noise_scale``: ``B_simple`` (median over its
    trials of :func:`trial_batch`'s ``b_simple``) against the batch sizes it ran, with the
    model's optimisation-step penalty ``S(B) / S_min = 1 + B_simple / B`` at each (McCandlish et
    al. 2018, eq. 2.11): below ``B_simple`` most of each update is gradient noise and steps are
    wasted; well above it, more data per update (a larger batch, or more env runners feeding
    it) buys few fewer updates, so env steps (samples) are wasted instead. With a
    :class:`BatchSizeCheck` (several batch sizes measured), also the batch size whose predicted
    time-to-target is lowest and how far the model's predictions were off where it was checked
    (``check``: :func:`batch_size_check` of the same trials; None: computed here when possible).

    Returns:
        lines of text; empty when no trial measured the noise scale.
    """
    if "grad_noise_scale" not in progress or not progress["grad_noise_scale"].notna().any():
        return []
    tb = trial_batch(tm[~tm["is_reference"] & (tm["status"] != "error")], progress)
    if tb.empty:  # every trial ended in an error (a stalled run, say): nothing to advise
        return []
    if check is None and tb.groupby("algorithm")["train_batch_size"].nunique().max() >= 2:
        check = batch_size_check(tm, progress)
    out = []
    for alg, g in tb.groupby("algorithm", sort=True):
        bn = float(g["b_simple"].median())
        sizes = sorted(b for b in g["train_batch_size"].unique() if np.isfinite(b) and b > 0)
        if not math.isfinite(bn) or not sizes:
            continue
        pen = ", ".join(f"B={b:g}: {1 + bn / b:.2f}" for b in sizes)
        line = (
            f"Batch size for {alg}: measured gradient noise scale B_simple ~ {bn:,.0f} "
            f"(median over {int(g['b_simple'].notna().sum())} trials); learner updates "
            f"needed relative to the minimum, 1 + B_simple/B: {pen}. "
        )
        bmax = sizes[-1]
        fewer = 1.0 - (1.0 + bn / (2 * bmax)) / (1.0 + bn / bmax)
        more = (1.0 + 2 * bmax / bn) / (1.0 + bmax / bn) - 1.0
        samples = "replayed transitions" if alg in _REPLAY_ALGORITHMS else "env steps"
        line += (
            f"Doubling the largest batch (B={bmax:g}) is predicted to need {fewer:.0%} fewer "
            f"learner updates and {more:.0%} more {samples} (above ~B_simple a larger "
            "batch, or more env runners feeding one, spends samples rather than saving "
            "updates)"
        )
        f = (check.fits.get(alg) if check is not None else None) or None
        rows = check.rows[check.rows["algorithm"] == alg] if check is not None else pd.DataFrame()
        if f is not None and len(rows) and rows["ttt_pred"].notna().any():
            best = rows.loc[rows["ttt_pred"].idxmin()]
            errs = rows.loc[rows["role"] == "checked", "ttt_error"].dropna()
            line += (
                f"; fastest predicted batch B={best['train_batch_size']:g} (TTT "
                + fmt_ci(best["ttt_pred"], best["ttt_low"], best["ttt_high"], fmt_s)
                + f", from pilot B={f['pilot']:g})"
            )
            if len(errs):
                line += "; the model's TTT error at the checked batch sizes: " + ", ".join(
                    fmt_error(e) for e in errs
                )
        out.append(line + ".")
    return out


#: The headers of :func:`check_table`'s cells.
CHECK_HEADERS = [
    "algorithm",
    "batch B",
    "role",
    "reached",
    "B_simple",
    "updates to target",
    "predicted [95 %]",
    "error",
    "env steps to target",
    "predicted [95 %]",
    "error",
    "TTT (s)",
    "predicted [95 %]",
    "error",
]


def check_table(check: BatchSizeCheck) -> tuple[list[str], list[list[str]]]:
    """The check as text cells, one row per (algorithm, batch size) and :data:`CHECK_HEADERS`:
    learner updates and env steps to the target (counts) and TTT (seconds), each measured,
    predicted with its 95 % interval and the error. The Markdown summary and the report lay
    them out."""
    from analysis.fmt import fmt_reached

    rows = []
    for _, r in check.rows.iterrows():
        cells = [r["algorithm"], f"{r['train_batch_size']:g}", r["role"]]
        cells += [fmt_reached(r, "n_trials"), f"{r['b_simple']:.3g}"]
        for q, f in (("updates", "{:,.0f}"), ("steps", "{:,.0f}"), ("ttt", "{:.1f}")):
            predicted = fmt_ci(r[f"{q}_pred"], r[f"{q}_low"], r[f"{q}_high"], f.format)
            cells += [f.format(r[q]), predicted, fmt_error(r[f"{q}_error"])]
        rows.append(cells)
    return CHECK_HEADERS, rows


def check_lines(check: BatchSizeCheck) -> list[str]:
    """The check as plain lines (the CLI's output)."""
    out = []
    for alg, f in check.fits.items():
        out.append(
            f"{alg}: pilot B={f['pilot']:g}: measured B_simple {f['b_simple']:,.1f}, "
            f"S_min {f['s_min']:,.1f} learner updates; the outcomes at every B imply "
            f"B_crit {f['b_crit']:,.1f} (S_min {f['s_min_fit']:,.1f}) by least squares"
        )

    def bounds(r: pd.Series, q: str, spec: str) -> str:
        return fmt_interval(r[f"{q}_low"], r[f"{q}_high"], spec.format)

    for _, r in check.rows.iterrows():
        out.append(
            f"{r['algorithm']} B={r['train_batch_size']:g} ({r['role']}, {r['n_reached']}/"
            f"{r['n_trials']} reached): learner updates to target measured {r['updates']:,.0f}, "
            f"predicted {r['updates_pred']:,.0f}{bounds(r, 'updates', '{:,.0f}')} "
            f"({fmt_error(r['updates_error'])}); env steps measured {r['steps']:,.0f}, predicted "
            f"{r['steps_pred']:,.0f}{bounds(r, 'steps', '{:,.0f}')} ({fmt_error(r['steps_error'])}); "
            f"TTT measured {fmt_s(r['ttt'])}, predicted "
            f"{fmt_ci(r['ttt_pred'], r['ttt_low'], r['ttt_high'], fmt_s)} "
            f"({fmt_error(r['ttt_error'])}); B_simple {r['b_simple']:,.1f}"
        )
    return out + check.notes


def main(argv: list[str] | None = None) -> int:
    """``python -m analysis.batch_size RESULTS_DIR [--pilot B] [--target VALUE]``; exit 2 on
    bad input."""
    import sys

    from analysis.load import ResultsError, load_results
    from analysis.metrics import judged_metrics
    from sweeps.engine.cli import OneLineParser

    p = OneLineParser(
        prog="python -m analysis.batch_size",
        description="Predicted vs measured steps-to-target across batch sizes, from "
        "the gradient noise scale of a pilot batch size.",
    )
    p.add_argument("results_dir")
    p.add_argument("--pilot", type=float, help="pilot batch size (default: the middle one)")
    p.add_argument("--target", help="override the target: absolute value or percent of optimum")
    args = p.parse_args(argv)
    try:
        res = load_results(args.results_dir)
        tm, _, target, _ = judged_metrics(res, args.target)
    except (ResultsError, ValueError, OSError) as exc:
        sys.stderr.write(f"{p.prog}: error: {exc}\n")
        return EXIT_BAD_INPUT
    check = batch_size_check(tm, res.progress, pilot=args.pilot)
    print(f"Batch-size check for {res.path} -- target {target.metric} >= {target.value:g}")
    for line in check_lines(check):
        print(line)
    return 0


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m analysis.batch_size", main))

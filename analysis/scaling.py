"""Scaling laws: Amdahl and Gunther's Universal Scalability Law (USL).

USL (Gunther, "Guerrilla Capacity Planning", Springer 2007, ch. 4-5)::

    X(N) = gamma * N / (1 + alpha * (N - 1) + beta * N * (N - 1))

``N``: env runners; ``X``: capacity (env steps/s, or 1/TTT in 1/s); ``gamma``: X(1);
``alpha``: contention (serial fraction); ``beta``: coherency (crosstalk). ``beta = 0`` is
Amdahl's law. With ``beta > 0`` capacity peaks at ``N* = sqrt((1 - alpha) / beta)`` and then
goes retrograde.

Fits use ``scipy.optimize.curve_fit`` (trust-region reflective) with ``0 <= alpha <= 1`` and
``beta >= 0``. A model with ``p`` parameters is not fitted to fewer than ``p`` distinct ``N``
(USL: 3, Amdahl: 2): :func:`fit_scaling` returns a fit with ``ok=False`` and the reason. With
exactly ``p`` distinct N the fit is exact (no residual degrees of freedom) and no interval can
be given from the fit itself; :func:`bootstrap_ttt_prediction` carries the seeds' uncertainty
through instead.

Validated (tests/test_analysis_scaling.py) against published fits: the SPEC SDM91 data of
Gunther's book as packaged by the ``usl`` R package / codahale's ``usl`` Go library, and the
32-point MySQL benchmark of Baron Schwartz's "Practical Scalability Analysis with the Universal
Scalability Law" (VividCortex 2015) used by codahale's ``usl``.
"""

from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy import stats as sps

from analysis.fmt import fmt_r2

__all__ = ["ScalingFit", "amdahl", "bootstrap_ttt_prediction", "fit_scaling", "usl"]

N_PARAMS = {"usl": 3, "amdahl": 2}
_NAMES = {"usl": "USL", "amdahl": "Amdahl"}


def usl(n: np.ndarray, gamma: float, alpha: float, beta: float) -> np.ndarray:
    """Universal Scalability Law X(N) = gamma N / (1 + alpha (N-1) + beta N (N-1)).

    Args:
        n: env runners (any shape, > 0).
        gamma: capacity at N = 1 (units of X).
        alpha: contention, dimensionless.
        beta: coherency, dimensionless.
    """
    n = np.asarray(n, dtype=float)
    return gamma * n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))


def amdahl(n: np.ndarray, gamma: float, alpha: float) -> np.ndarray:
    """Amdahl's law as capacity: X(N) = gamma N / (1 + alpha (N-1)) (USL with beta = 0)."""
    return usl(n, gamma, alpha, 0.0)


@dataclass
class ScalingFit:
    """A fitted (or refused) scaling model.

    Attributes:
        model: ``"usl"`` or ``"amdahl"``.
        ok: whether the model could be fitted; if not, ``reason`` says why.
        reason: one line; for fitted models, caveats (e.g. "exactly determined").
        gamma, alpha, beta: parameters (``beta = 0`` for Amdahl).
        stderr: standard errors of (gamma, alpha, beta); NaN when not estimable.
        cov: 3x3 covariance of (gamma, alpha, beta) or None.
        n_points, n_distinct: data points and distinct N used.
        n_min, n_max: measured range of N (predictions outside it are extrapolations).
        r2: coefficient of determination; rmse: root-mean-square residual (units of X).
        dof: residual degrees of freedom.
        dropped: how many points were left out (N <= 0 or non-finite / non-positive X).
    """

    model: str
    ok: bool
    reason: str = ""
    gamma: float = math.nan
    alpha: float = math.nan
    beta: float = math.nan
    stderr: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    cov: np.ndarray | None = field(default=None, repr=False)
    n_points: int = 0
    n_distinct: int = 0
    n_min: float = math.nan
    n_max: float = math.nan
    r2: float = math.nan
    rmse: float = math.nan
    dof: int = 0
    dropped: int = 0

    @property
    def testable(self) -> bool:
        """Fitted to more distinct N than the model has parameters: it leaves a residual, so
        the data can contradict it (an exactly determined fit passes through its points
        whatever the truth)."""
        return self.ok and self.n_distinct > N_PARAMS[self.model]

    @property
    def peak_n(self) -> float:
        """N* = sqrt((1 - alpha) / beta): where capacity peaks (inf if beta == 0)."""
        if not self.ok:
            return math.nan
        if self.beta <= 0:
            return math.inf
        return math.sqrt(max(1.0 - self.alpha, 0.0) / self.beta)

    def predict(self, n: np.ndarray) -> np.ndarray:
        """Predicted capacity at ``n`` (units of the fitted X). NaN if not fitted."""
        n = np.asarray(n, dtype=float)
        if not self.ok:
            return np.full(n.shape, np.nan)
        return usl(n, self.gamma, self.alpha, self.beta)

    def extrapolates(self, n: float) -> bool:
        """True when ``n`` lies outside the measured range of N."""
        return bool(n < self.n_min - 1e-9 or n > self.n_max + 1e-9)

    def predict_interval(
        self, n: np.ndarray, confidence: float = 0.95
    ) -> tuple[np.ndarray, np.ndarray]:
        """Delta-method confidence band of the mean capacity at ``n``.

        ``X +- t(dof) * sqrt(g' C g)`` with ``g`` the gradient of X in (gamma, alpha, beta) and
        ``C`` the fit's covariance. NaN when the covariance is not estimable (dof = 0).
        """
        n = np.asarray(n, dtype=float)
        x = self.predict(n)
        if not self.ok or self.cov is None or self.dof <= 0 or not np.all(np.isfinite(self.cov)):
            return np.full(n.shape, np.nan), np.full(n.shape, np.nan)
        d = 1.0 + self.alpha * (n - 1.0) + self.beta * n * (n - 1.0)
        g = np.stack(
            [n / d, -self.gamma * n * (n - 1.0) / d**2, -self.gamma * n * n * (n - 1.0) / d**2]
        )
        var = np.einsum("i...,ij,j...->...", g, self.cov, g)
        half = sps.t.ppf(0.5 + confidence / 2.0, self.dof) * np.sqrt(np.maximum(var, 0.0))
        return x - half, x + half

    def describe(self) -> str:
        """One line: parameters, peak and goodness of fit, or why there is no fit."""
        if not self.ok:
            return f"{_NAMES[self.model]}: not fitted ({self.reason})"
        se = self.stderr
        txt = f"{_NAMES[self.model]}: gamma={self.gamma:.4g}, alpha={self.alpha:.3g}" + (
            f" (+-{se[1]:.2g})" if math.isfinite(se[1]) else ""
        )
        if self.model == "usl":
            txt += f", beta={self.beta:.3g}" + (f" (+-{se[2]:.2g})" if math.isfinite(se[2]) else "")
            txt += (
                f", peak N*={self.peak_n:.3g}"
                if math.isfinite(self.peak_n)
                else (", no peak (beta=0)")
            )
        txt += f"; R2={fmt_r2(self.r2)}" if math.isfinite(self.r2) else ""
        txt += f", {self.n_distinct} distinct N ({self.n_min:g}-{self.n_max:g})"
        if self.reason:
            txt += f"; {self.reason}"
        return txt


def _usl_jac(n: np.ndarray, gamma: float, alpha: float, beta: float) -> np.ndarray:
    d = 1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0)
    return np.stack(
        [n / d, -gamma * n * (n - 1.0) / d**2, -gamma * n * n * (n - 1.0) / d**2], axis=-1
    )


def _amdahl_jac(n: np.ndarray, gamma: float, alpha: float) -> np.ndarray:
    return _usl_jac(n, gamma, alpha, 0.0)[:, :2]


#: A fitted alpha or beta whose term in the USL denominator stays below this at the largest
#: measured N is reported as exactly 0 (:func:`_fit_one`).
_AT_BOUND = 1e-9


def _clean(n: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    n = np.asarray(n, dtype=float).ravel()
    x = np.asarray(x, dtype=float).ravel()
    if n.shape != x.shape:
        raise ValueError(f"N and X differ in length ({n.size} vs {x.size})")
    keep = np.isfinite(n) & np.isfinite(x) & (n > 0) & (x > 0)
    return n[keep], x[keep], int((~keep).sum())


def _fit_one(
    model: str,
    n: np.ndarray,
    x: np.ndarray,
    dropped: int,
    precise: bool = True,
    p0: list[float] | None = None,
) -> ScalingFit:
    p = N_PARAMS[model]
    distinct = np.unique(n)
    base = ScalingFit(
        model=model,
        ok=False,
        n_points=int(n.size),
        n_distinct=int(distinct.size),
        dropped=dropped,
        n_min=float(distinct.min()) if distinct.size else math.nan,
        n_max=float(distinct.max()) if distinct.size else math.nan,
    )
    if distinct.size == 0:  # every N was 0 (sampling in the driver) or had no value
        base.reason = "no env runner count (N >= 1) with a value to fit"
        return base
    if distinct.size < p:
        names = "gamma, alpha, beta" if model == "usl" else "gamma, alpha"
        base.reason = (
            f"{_NAMES[model]} has {p} parameters ({names}) but only "
            f"{distinct.size} distinct N measured; measure more env runner counts"
        )
        return base
    # Start: gamma from the smallest N, small contention/coherency.
    n0 = distinct[0]
    gamma0 = float(np.median(x[n == n0]) / n0 * (1.0 if n0 == 1 else 1.2))
    if model == "usl":
        f, jac, start = usl, _usl_jac, [gamma0, 0.05, 1e-3]
        bounds = ([0.0, 0.0, 0.0], [np.inf, 1.0, np.inf])
    else:
        f, jac, start = amdahl, _amdahl_jac, [gamma0, 0.05]
        bounds = ([0.0, 0.0], [np.inf, 1.0])
    if p0 is not None:
        start = [min(max(v, lo), hi) for v, lo, hi in zip(p0[: len(start)], *bounds, strict=True)]
    try:
        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore", optimize.OptimizeWarning)
            tol = 1e-12 if precise else 1e-8
            popt, pcov = optimize.curve_fit(
                f,
                n,
                x,
                p0=start,
                bounds=bounds,
                method="trf",
                jac=jac,
                x_scale="jac",
                max_nfev=20000,
                ftol=tol,
                xtol=tol,
                gtol=tol,
            )
    except (RuntimeError, ValueError) as exc:
        base.reason = f"fit did not converge ({exc})"
        return base
    gamma, alpha = float(popt[0]), float(popt[1])
    beta = float(popt[2]) if model == "usl" else 0.0
    # The bounded solver stops *near* a bound of 0, not on it (beta = 5.4e-25 with a standard
    # error of 0.005 in one fit, 5.39e-25 with another numpy build): a term that moves the
    # denominator by less than 1e-9 at the largest measured N is that noise, and is 0.
    n_max = float(distinct.max())
    if alpha * (n_max - 1.0) < _AT_BOUND:
        alpha = 0.0
    if beta * n_max * (n_max - 1.0) < _AT_BOUND:
        beta = 0.0
    cov = np.zeros((3, 3))
    cov[:p, :p] = pcov
    resid = x - f(n, *popt)
    ss_res = float(np.sum(resid**2))
    ss_tot = float(np.sum((x - x.mean()) ** 2))
    dof = int(n.size - p)
    stderr = tuple(
        float(math.sqrt(v)) if dof > 0 and math.isfinite(v) and v >= 0 else math.nan
        for v in np.diag(cov)
    )
    if model == "amdahl":
        stderr = (stderr[0], stderr[1], math.nan)
    base.ok = True
    base.gamma, base.alpha, base.beta = gamma, alpha, beta
    base.cov = cov if dof > 0 and np.all(np.isfinite(cov)) else None
    base.stderr = stderr  # type: ignore[assignment]
    base.r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan
    base.rmse = math.sqrt(ss_res / n.size)
    base.dof = dof
    if distinct.size == p:
        base.reason = (
            f"exactly determined by {p} distinct N: no goodness of fit or interval "
            "from the fit itself"
        )
    return base


def fit_scaling(
    n: np.ndarray,
    x: np.ndarray,
    *,
    precise: bool = True,
    p0: dict[str, list[float]] | None = None,
    models: Sequence[str] = ("amdahl", "usl"),
) -> dict[str, ScalingFit]:
    """Fit Amdahl and USL (or those of ``models``) to capacity measurements.

    Args:
        n: shape (k,), env runners per measurement (replicates allowed; N <= 0 is dropped
            because the models are defined for N >= 1 samplers).
        x: shape (k,), capacity per measurement (env steps/s, or 1/TTT in 1/s); non-finite or
            non-positive values are dropped.

        precise: False for a bootstrap's refits: the solver stops at a relative tolerance
            of 1e-8 instead of 1e-12, far below the resamples' spread (as
            :func:`bootstrap_ttt_prediction`'s refits).
        p0: per model, a starting ``[gamma, alpha, beta]`` (the full data's fit, for a
            bootstrap's refits).
        models: which of ``"amdahl"`` and ``"usl"`` to fit.

    Returns:
        ``{"amdahl": ScalingFit, "usl": ScalingFit}``; a model with more parameters than
        distinct N is returned with ``ok=False`` and the reason.

    Raises:
        ValueError: ``n`` and ``x`` differ in length.
    """
    n, x, dropped = _clean(n, x)
    p0 = p0 or {}
    return {m: _fit_one(m, n, x, dropped, precise=precise, p0=p0.get(m)) for m in models}


def starts(fits: dict[str, ScalingFit]) -> dict[str, list[float]]:
    """``fit_scaling``'s ``p0`` from fits made on the full data: each fitted model's
    ``[gamma, alpha, beta]``."""
    return {m: [f.gamma, f.alpha, f.beta] for m, f in fits.items() if f.ok}


def preferred(fits: dict[str, ScalingFit], testable: bool = False) -> ScalingFit | None:
    """The model to predict with: USL when it could be fitted, else Amdahl, else None; with
    ``testable``, only a fit the data could contradict (:attr:`ScalingFit.testable`)."""
    for m in ("usl", "amdahl"):
        if m in fits and (fits[m].testable if testable else fits[m].ok):
            return fits[m]
    return None


def bootstrap_ttt_prediction(
    samples: dict[int, tuple[np.ndarray, np.ndarray]],
    candidates: np.ndarray,
    model: str,
    *,
    n_resamples: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    p0: list[float] | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Interval of predicted TTT at ``candidates`` carrying the seeds' uncertainty through.

    For each resample: resample the seeds at every measured N (independently), estimate TTT
    per N (median, or Kaplan-Meier median with censoring), fit ``model`` to 1/TTT vs N, and
    predict TTT = 1/X(N) at the candidates. Percentile interval over the resamples.

    Args:
        samples: ``{N: (durations_s, reached)}`` of the trials at each measured N.
        candidates: shape (m,), env runner counts to predict at.
        model: ``"usl"`` or ``"amdahl"``.
        n_resamples, confidence, seed: bootstrap settings.
        p0: starting (gamma, alpha, beta) for the refits (e.g. the full-data fit).

    Returns:
        ``(low, high, fraction_ok)``: shape (m,) seconds each (``high`` may be inf), and the
        fraction of resamples that could be fitted (NaN arrays if under half).
    """
    from analysis.stats import draw_seeds, km_median_batch

    rng = np.random.default_rng(seed)
    cand = np.asarray(candidates, dtype=float)
    preds = []
    ns = sorted(samples)
    for _ in range(n_resamples):
        nn, xx = [], []
        for n in ns:
            d, r = samples[n]
            idx = draw_seeds(len(d), rng)
            dd, rr = d[idx], r[idx]
            ttt = float(np.median(dd)) if rr.all() else float(km_median_batch(dd, rr)[0])
            if math.isfinite(ttt) and ttt > 0:
                nn.append(n)
                xx.append(1.0 / ttt)
        nn_a, xx_a, _ = _clean(np.array(nn), np.array(xx))
        fit = _fit_one(model, nn_a, xx_a, 0, precise=False, p0=p0)
        if fit.ok:
            with np.errstate(divide="ignore"):
                preds.append(1.0 / fit.predict(cand))
    frac = len(preds) / n_resamples
    if frac < 0.5:
        return np.full(cand.shape, np.nan), np.full(cand.shape, np.nan), frac
    arr = np.array(preds)
    a = (1.0 - confidence) / 2.0
    return (
        np.quantile(arr, a, axis=0, method="inverted_cdf"),
        np.quantile(arr, 1 - a, axis=0, method="inverted_cdf"),
        frac,
    )

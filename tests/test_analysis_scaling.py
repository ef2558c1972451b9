"""Amdahl / USL fits: recovery of known parameters and published reference fits.

References (numbers copied from these sources, not invented):

- SPEC SDM91 benchmark of a 16-CPU Sun SPARCcenter 2000 (load = simulated users, throughput =
  scripts/hour), from N. J. Gunther, "Guerrilla Capacity Planning" (Springer 2007), shipped as
  the ``specsdm91`` dataset of the ``usl`` R package (S. Moeding). The values below are the
  rounded ones in the README of github.com/codahale/usl (and its cmd/usl/example.csv), whose
  USL fit is printed there: sigma=0.0277299, kappa=0.000104343, lambda=89.9878, max
  concurrency 96 (= floor of N*). The R package, fitting the unrounded data, reports
  alpha=0.0277285 (s.e. 0.0091217), beta=0.0001044 (s.e. 0.0000199), gamma=89.995.
- The 32-point MySQL benchmark of Baron Schwartz, "Practical Scalability Analysis with the
  Universal Scalability Law" (VividCortex, 2015), as used in codahale/usl model_test.go:
  sigma=0.02671591, kappa=7.690945e-4, lambda=995.6486, X(20)=11063.63312570436.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.scaling import amdahl, bootstrap_ttt_prediction, fit_scaling, usl

SPECSDM91 = np.array(
    [[1, 65], [18, 996], [36, 1652], [72, 1853], [108, 1829], [144, 1775], [216, 1702]], dtype=float
)

SCHWARTZ = np.array(
    [
        [1, 955.16],
        [2, 1878.91],
        [3, 2688.01],
        [4, 3548.68],
        [5, 4315.54],
        [6, 5130.43],
        [7, 5931.37],
        [8, 6531.08],
        [9, 7219.8],
        [10, 7867.61],
        [11, 8278.71],
        [12, 8646.7],
        [13, 9047.84],
        [14, 9426.55],
        [15, 9645.37],
        [16, 9897.24],
        [17, 10097.6],
        [18, 10240.5],
        [19, 10532.39],
        [20, 10798.52],
        [21, 11151.43],
        [22, 11518.63],
        [23, 11806],
        [24, 12089.37],
        [25, 12075.41],
        [26, 12177.29],
        [27, 12211.41],
        [28, 12158.93],
        [29, 12155.27],
        [30, 12118.04],
        [31, 12140.4],
        [32, 12074.39],
    ]
)


def test_usl_recovers_known_parameters_exactly() -> None:
    n = np.array([1, 2, 4, 8, 16, 32], dtype=float)
    x = usl(n, 100.0, 0.05, 0.002)
    f = fit_scaling(n, x)["usl"]
    assert f.ok and f.r2 == pytest.approx(1.0)
    assert f.gamma == pytest.approx(100.0, rel=1e-6)
    assert f.alpha == pytest.approx(0.05, rel=1e-5)
    assert f.beta == pytest.approx(0.002, rel=1e-5)
    assert f.peak_n == pytest.approx(math.sqrt(0.95 / 0.002), rel=1e-5)


def test_usl_recovers_parameters_from_noisy_replicates() -> None:
    rng = np.random.default_rng(3)
    n = np.repeat([1, 2, 4, 8, 16], 5).astype(float)
    x = usl(n, 400.0, 0.1, 0.005) * rng.lognormal(0.0, 0.02, n.size)
    f = fit_scaling(n, x)["usl"]
    assert f.alpha == pytest.approx(0.1, abs=3 * f.stderr[1])
    assert f.beta == pytest.approx(0.005, abs=3 * f.stderr[2])
    lo, hi = f.predict_interval(np.array([3.0, 12.0]))
    truth = usl(np.array([3.0, 12.0]), 400.0, 0.1, 0.005)
    assert np.all(lo < truth) and np.all(truth < hi)


def test_specsdm91_reference_fit() -> None:
    f = fit_scaling(SPECSDM91[:, 0], SPECSDM91[:, 1])["usl"]
    assert f.alpha == pytest.approx(0.0277299, rel=1e-3)
    assert f.beta == pytest.approx(0.000104343, rel=1e-3)
    assert f.gamma == pytest.approx(89.9878, rel=1e-3)
    assert math.floor(f.peak_n) == 96
    # standard errors close to those the R package reports on the unrounded data
    assert f.stderr[1] == pytest.approx(0.0091217, rel=0.05)
    assert f.stderr[2] == pytest.approx(0.0000199, rel=0.05)


def test_schwartz_mysql_reference_fit() -> None:
    f = fit_scaling(SCHWARTZ[:, 0], SCHWARTZ[:, 1])["usl"]
    assert f.alpha == pytest.approx(0.02671591, rel=1e-4)
    assert f.beta == pytest.approx(7.690945e-4, rel=1e-4)
    assert f.gamma == pytest.approx(995.6486, rel=1e-4)
    assert float(f.predict(20.0)) == pytest.approx(11063.63312570436, rel=1e-5)


def test_amdahl_is_usl_with_zero_beta() -> None:
    n = np.array([1, 2, 4, 8], dtype=float)
    x = amdahl(n, 50.0, 0.2)
    fits = fit_scaling(n, x)
    assert fits["amdahl"].alpha == pytest.approx(0.2, rel=1e-6)
    assert fits["usl"].beta == pytest.approx(0.0, abs=1e-9)
    assert math.isinf(fits["amdahl"].peak_n)


def test_a_coefficient_the_solver_leaves_just_above_its_bound_is_zero() -> None:
    """Linear scaling with noise: the bounded solver stops a hair above beta = 0 (5.4e-25 in
    a recorded study, 5.39e-25 with another numpy build); the fit reports exactly 0 and no
    peak, the same on every machine."""
    rng = np.random.default_rng(0)
    n = np.repeat([1, 2, 4, 8, 16], 3).astype(float)
    x = 100.0 * n * rng.lognormal(0.0, 0.05, n.size)
    f = fit_scaling(n, x)["usl"]
    assert f.ok and f.beta == 0.0 and math.isinf(f.peak_n)
    assert "no peak (beta=0)" in f.describe()


def test_refuses_with_fewer_distinct_n_than_parameters() -> None:
    fits = fit_scaling([1, 1, 2, 2], [10.0, 11.0, 18.0, 19.0])
    assert not fits["usl"].ok
    assert "3 parameters" in fits["usl"].reason and "only 2 distinct N" in fits["usl"].reason
    assert np.isnan(fits["usl"].predict(4.0))
    assert fits["amdahl"].ok  # two distinct N determine Amdahl's two parameters
    assert "exactly determined" in fits["amdahl"].reason
    # replicates give residual degrees of freedom, hence an interval; without them, none
    assert np.isfinite(fits["amdahl"].predict_interval(np.array([4.0]))[0]).all()
    exact = fit_scaling([1, 2], [10.0, 18.0])["amdahl"]
    assert exact.ok and exact.dof == 0
    assert np.isnan(exact.predict_interval(np.array([4.0]))[0]).all()
    single = fit_scaling([4, 4, 4], [10.0, 11.0, 12.0])
    assert not single["amdahl"].ok and not single["usl"].ok
    assert fits["amdahl"].extrapolates(4.0) and not fits["amdahl"].extrapolates(1.5)
    # nothing to fit (only the driver sampled, or no value): not "only 0 distinct N measured"
    for n, x in (([0, 0], [5.0, 6.0]), ([1, 2], [np.nan, np.nan])):
        for f in fit_scaling(n, x).values():
            assert not f.ok and f.reason == "no env runner count (N >= 1) with a value to fit"


def test_fit_drops_n_zero_and_bad_values() -> None:
    fits = fit_scaling([0, 1, 2, 4, 8], [5.0, 10.0, 18.0, np.nan, 50.0])
    assert fits["usl"].dropped == 2 and fits["usl"].n_distinct == 3
    with pytest.raises(ValueError, match="differ in length"):
        fit_scaling([1, 2], [1.0])


def test_bootstrap_prediction_carries_seed_uncertainty() -> None:
    rng = np.random.default_rng(0)
    samples = {}
    for n in (1, 2, 4):
        ttt = 1.0 / usl(n, 0.02, 0.1, 0.01)
        d = ttt * rng.lognormal(0.0, 0.1, 5)
        samples[n] = (d, np.ones(5, bool))
    lo, hi, frac = bootstrap_ttt_prediction(samples, np.array([3.0, 8.0]), "usl", n_resamples=100)
    point = 1.0 / usl(np.array([3.0, 8.0]), 0.02, 0.1, 0.01)
    assert frac > 0.9
    assert np.all(lo < hi) and np.all(lo < point * 1.2) and np.all(hi > point * 0.8)


def test_rllib_pong_impala_fast_external_check():
    """RLlib's tuned example impala/pong-impala-fast.yaml (ray-project/ray; its comments: Pong
    to 18-19 in 7 min with 32 workers, 4 with 64, 3 with 128, p3.16xlarge head with m4.16xlarge
    workers), fitted as capacity 1/TTT. USL is exactly determined by the three points: it puts
    the peak near 143 workers (2.98 min) and predicts a slower 3.5 min at 256 (retrograde);
    Amdahl (one residual degree of freedom) predicts 2.4 min at 256 and a 105 s floor.
    Quoted in docs/cluster.md."""
    n = np.array([32.0, 64.0, 128.0])
    ttt_s = np.array([7 * 60.0, 4 * 60.0, 3 * 60.0])
    fits = fit_scaling(n, 1.0 / ttt_s)
    u, a = fits["usl"], fits["amdahl"]
    assert u.ok and a.ok
    assert u.r2 == pytest.approx(1.0, abs=1e-9) and "exactly determined" in u.reason
    assert 140 < u.peak_n < 146
    assert 1.0 / u.predict(np.array([u.peak_n]))[0] == pytest.approx(178.9, abs=0.5)
    assert 1.0 / u.predict(np.array([256.0]))[0] == pytest.approx(210.0, abs=1.0)
    assert a.r2 == pytest.approx(0.989, abs=0.002) and math.isinf(a.peak_n)
    assert 1.0 / a.predict(np.array([256.0]))[0] == pytest.approx(141.8, abs=1.0)
    assert a.alpha / a.gamma == pytest.approx(105.0, abs=2.0)  # Amdahl's TTT floor, seconds

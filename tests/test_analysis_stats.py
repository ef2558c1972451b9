"""Statistics across seeds: hand-computed medians, IQM, Kaplan-Meier, olympic mean, speedup."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from lifelines import KaplanMeierFitter

from analysis.stats import (
    best_configs,
    bootstrap_ci,
    iqm,
    km_median,
    km_median_batch,
    olympic_mean,
    speedup_table,
    summarize_configs,
)


def make_tm(
    config_id: str,
    durations,
    reached,
    *,
    n: int = 1,
    baseline: bool = False,
    alg: str = "DQN",
    cpus: float | None = None,
    tput: float = 100.0,
    steps: float = 1000.0,
    errors: int = 0,
) -> pd.DataFrame:
    """Per-trial metrics (the trial_metrics schema) for one configuration."""
    rows = []
    for i, (d, r) in enumerate(zip(durations, reached, strict=True)):
        rows.append(
            {
                "trial_id": f"{config_id}-s{i}",
                "config_id": config_id,
                "algorithm": alg,
                "num_env_runners": n,
                "seed": i,
                "is_baseline": baseline,
                "status": "reached" if r else "censored",
                "reached": bool(r),
                "time_to_target_s": d if r else math.nan,
                "steps_to_target": steps if r else math.nan,
                "duration_s": float(d),
                "env_steps_per_s": tput,
                "num_cpus": cpus if cpus is not None else 1.0 + n,
                "num_gpus": 0.0,
                "oversubscribed": False,
                "config_label": f"n={n}",
                "error": "",
            }
        )
    for j in range(errors):
        rows.append(
            {
                **rows[0],
                "trial_id": f"{config_id}-e{j}",
                "status": "error",
                "reached": False,
                "duration_s": 1.0,
                "error": "boom",
            }
        )
    return pd.DataFrame(rows)


def test_median_iqm_and_bootstrap_ci() -> None:
    tm = make_tm("a", [10.0, 20.0, 30.0, 100.0], [True] * 4)
    row = summarize_configs(tm).iloc[0]
    assert row["estimator"] == "median"
    assert row["ttt_s"] == 25.0  # (20 + 30) / 2
    assert row["ttt_iqm_s"] == 25.0  # middle 50 %: 20 and 30
    assert 10.0 <= row["ttt_low_s"] <= 25.0 <= row["ttt_high_s"] <= 100.0
    assert row["success_rate"] == 1.0 and row["note"] == ""
    assert iqm(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0])) == pytest.approx(4.5)


def test_ties_give_a_degenerate_interval() -> None:
    assert bootstrap_ci(np.array([30.0, 30.0, 30.0]), np.median) == (30.0, 30.0)
    row = summarize_configs(make_tm("a", [30.0, 30.0, 30.0], [True] * 3)).iloc[0]
    assert (row["ttt_s"], row["ttt_low_s"], row["ttt_high_s"]) == (30.0, 30.0, 30.0)


def test_single_seed_says_too_few_seeds() -> None:
    row = summarize_configs(make_tm("a", [42.0], [True])).iloc[0]
    assert row["ttt_s"] == 42.0
    assert math.isnan(row["ttt_low_s"]) and math.isnan(row["ttt_high_s"])
    assert "too few seeds for a CI (n=1 < 3)" in row["note"]


def test_kaplan_meier_median_by_hand() -> None:
    # S(10) = 4/5, S(20) = 4/5 * 3/4 = 0.6, 30 censored, S(40) = 0.6 * 1/2 = 0.3 -> median 40
    d = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    r = np.array([True, True, False, True, False])
    med, lo, hi = km_median(d, r)
    assert med == 40.0 and lo <= 40.0 <= hi
    assert km_median_batch(d[None], r[None])[0] == 40.0
    row = summarize_configs(make_tm("a", d, r)).iloc[0]
    assert row["estimator"] == "KM median" and row["ttt_s"] == 40.0
    assert row["success_rate"] == pytest.approx(0.6)
    assert math.isnan(row["ttt_iqm_s"]) and "censored" in row["note"]
    # S(15) = 5/6 * 4/5 * 3/4 = 0.5 exactly: the median is 15 (lifelines' float compare
    # gets 0.5000000000000001 > 0.5 and would say 31)
    d = np.array([14.0, 28.0, 15.0, 60.0, 2.0, 13.0, 31.0])
    r = np.array([True, False, True, True, False, True, True])
    assert km_median(d, r)[0] == 15.0 == km_median_batch(d[None], r[None])[0]


def test_km_batch_agrees_with_lifelines() -> None:
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(2, 9))
        d = np.round(rng.exponential(30.0, n), 0) + 1.0  # rounding makes ties
        r = rng.random(n) < 0.7
        kmf = KaplanMeierFitter().fit(d, r)
        batch = km_median_batch(d[None], r[None])[0]
        assert batch == km_median(d, r)[0]
        if not np.isclose(kmf.survival_function_.iloc[:, 0], 0.5).any():
            assert batch == kmf.median_survival_time_  # lifelines compares S <= 0.5 exactly


def test_all_censored_has_no_finite_median() -> None:
    row = summarize_configs(make_tm("a", [60.0, 60.0, 61.0], [False] * 3)).iloc[0]
    assert math.isinf(row["ttt_s"]) and row["success_rate"] == 0.0
    assert row["max_censor_s"] == 61.0 and "no seed reached the target" in row["note"]


def test_olympic_mean_mlperf_rule() -> None:
    d = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    assert olympic_mean(d, np.ones(5, bool)) == (30.0, "")
    one_miss = np.array([True, True, True, True, False])  # the miss is the slowest, dropped
    assert olympic_mean(d, one_miss) == (30.0, "")
    mean, why = olympic_mean(d, np.array([True, True, True, False, False]))
    assert math.isnan(mean) and "2 runs missed" in why
    mean, why = olympic_mean(d[:4], np.ones(4, bool))
    assert math.isnan(mean) and ">= 5" in why


def test_errors_are_left_out_and_counted() -> None:
    row = summarize_configs(make_tm("a", [10.0, 20.0, 30.0], [True] * 3, errors=2)).iloc[0]
    assert row["n_error"] == 2 and row["n_trials"] == 5 and row["ttt_s"] == 20.0
    assert "2 error trial(s) left out" in row["note"]


def test_speedup_efficiency_and_decomposition_by_hand() -> None:
    tm = pd.concat(
        [
            make_tm(
                "base",
                [100.0, 100.0, 100.0],
                [True] * 3,
                n=1,
                baseline=True,
                tput=100.0,
                steps=1000.0,
            ),
            make_tm("four", [50.0, 50.0, 50.0], [True] * 3, n=4, tput=300.0, steps=1500.0),
        ],
        ignore_index=True,
    )
    summary = summarize_configs(tm)
    sp, warns = speedup_table(tm, summary)
    r = sp.set_index("config_id").loc["four"]
    assert warns == []
    assert r["speedup"] == 2.0 and (r["speedup_low"], r["speedup_high"]) == (2.0, 2.0)
    assert r["runner_ratio"] == 4.0 and r["efficiency_per_runner"] == 0.5
    assert r["cpu_ratio"] == 2.5 and r["efficiency_per_cpu"] == pytest.approx(0.8)
    assert r["throughput_ratio"] == 3.0
    assert r["sample_efficiency_ratio"] == pytest.approx(1000.0 / 1500.0)
    assert r["residual"] == pytest.approx(1.0)  # 2 = 3 x 2/3 exactly


def test_speedup_ci_resamples_both_configurations() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(100.0, 10.0, 8)
    fast = rng.normal(40.0, 5.0, 8)
    tm = pd.concat(
        [make_tm("b", base, [True] * 8, baseline=True), make_tm("f", fast, [True] * 8, n=4)],
        ignore_index=True,
    )
    sp, _ = speedup_table(tm, summarize_configs(tm))
    r = sp.set_index("config_id").loc["f"]
    assert r["speedup"] == pytest.approx(np.median(base) / np.median(fast))
    assert r["speedup_low"] < r["speedup"] < r["speedup_high"]
    assert r["speedup_low"] > 1.5 and r["speedup_high"] < 4.0


def test_speedup_bounds_when_a_median_is_not_reached() -> None:
    tm = pd.concat(
        [
            make_tm("base", [40.0, 41.0, 40.5], [False] * 3, baseline=True),
            make_tm("fast", [20.0, 20.0, 20.0], [True] * 3, n=2),
            make_tm("never", [30.0, 30.0, 31.0], [False] * 3, n=4),
        ],
        ignore_index=True,
    )
    sp, _ = speedup_table(tm, summarize_configs(tm))
    sp = sp.set_index("config_id")
    assert math.isinf(sp.at["fast", "speedup"])
    assert sp.at["fast", "speedup_lower_bound"] == pytest.approx(41.0 / 20.0)
    assert "S > 2.05" in sp.at["fast", "speedup_note"]
    assert math.isnan(sp.at["never", "speedup"])  # neither reached: no bound either way
    tm2 = pd.concat(
        [
            make_tm("base", [10.0, 10.0, 10.0], [True] * 3, baseline=True),
            make_tm("never", [30.0, 30.0, 31.0], [False] * 3, n=4),
        ],
        ignore_index=True,
    )
    sp2, _ = speedup_table(tm2, summarize_configs(tm2))
    r = sp2.set_index("config_id").loc["never"]
    assert r["speedup"] == 0.0 and r["speedup_upper_bound"] == pytest.approx(10.0 / 31.0)


def test_no_baseline_says_so() -> None:
    tm = make_tm("a", [10.0, 20.0, 30.0], [True] * 3)
    sp, warns = speedup_table(tm, summarize_configs(tm))
    assert sp["speedup"].isna().all() and "no baseline" in warns[0]


def test_best_configs_prefers_lowest_ttt_then_success() -> None:
    tm = pd.concat(
        [
            make_tm("slow", [50.0, 60.0, 70.0], [True] * 3),
            make_tm("fast", [20.0, 30.0, 40.0], [True] * 3),
            make_tm("never", [99.0, 99.0, 99.0], [False] * 3),
        ],
        ignore_index=True,
    )
    best = best_configs(summarize_configs(tm))
    assert list(best["config_id"]) == ["fast"]


def test_absolute_speedup_against_the_reference_and_efficiency_within_one_algorithm() -> None:
    ref = make_tm("reference", [2.0, 2.0, 2.0], [True] * 3, n=0, alg="SB3-DQN", cpus=1.0)
    ref["is_reference"] = True
    tm = pd.concat(
        [
            ref,
            make_tm("base", [20.0, 20.0, 20.0], [True] * 3, n=1, baseline=True),
            make_tm("dqn2", [10.0, 10.0, 10.0], [True] * 3, n=2),
            make_tm("apex1", [4.0, 4.0, 4.0], [True] * 3, n=1, alg="APEX"),
        ],
        ignore_index=True,
    )
    tm["is_reference"] = tm["is_reference"].eq(True)  # NaN (not the reference) -> False
    summary = summarize_configs(tm)
    assert summary.set_index("config_id").at["reference", "is_reference"]
    sp = speedup_table(tm, summary)[0].set_index("config_id")
    # absolute speedup = TTT(reference) / TTT(config): every configuration here is slower
    assert sp.at["base", "abs_speedup"] == pytest.approx(0.1)
    assert sp.at["apex1", "abs_speedup"] == pytest.approx(0.5)
    assert (sp.at["apex1", "abs_speedup_low"], sp.at["apex1", "abs_speedup_high"]) == (0.5, 0.5)
    assert math.isnan(sp.at["reference", "abs_speedup"]) and math.isnan(
        sp.at["reference", "speedup"]
    )
    # parallel efficiency only within the baseline's algorithm: DQN 2 runners, not APEX
    assert sp.at["dqn2", "efficiency_per_runner"] == pytest.approx(1.0)
    assert sp.at["apex1", "speedup"] == pytest.approx(5.0)
    assert math.isnan(sp.at["apex1", "efficiency_per_runner"])
    assert math.isnan(sp.at["apex1", "efficiency_per_cpu"])
    assert "not the baseline's algorithm" in sp.at["apex1", "speedup_note"]


def test_a_note_true_of_both_speedups_is_said_once() -> None:
    """Seen in the main command's report: "CI unbounded: censored seeds ...; absolute: CI
    unbounded: censored seeds ..." on one row. A censored seed leaves both intervals
    unbounded; the row says so once, and a note only one speedup has keeps its own."""
    ref = make_tm("reference", [2.0, 2.0, 2.0], [True] * 3, n=0, alg="SB3-DQN", cpus=1.0)
    ref["is_reference"] = True
    tm = pd.concat(
        [
            ref,
            make_tm("base", [5.0, 6.0, 7.0], [True] * 3, n=1, baseline=True),
            make_tm("censored", [20.0, 30.0, 40.0], [True, True, False], n=2),
            make_tm("apex1", [4.0, 4.0, 4.0], [True] * 3, n=1, alg="APEX"),
        ],
        ignore_index=True,
    )
    tm["is_reference"] = tm["is_reference"].eq(True)
    sp = speedup_table(tm, summarize_configs(tm))[0].set_index("config_id")
    notes = sp.at["censored", "speedup_notes"]
    assert [x.code for x in notes] == ["ci_unbounded"], notes
    assert sp.at["censored", "speedup_note"] == (
        "both speedups: CI unbounded: censored seeds (some resamples never reach the target)"
    )
    # some resamples never reach the target: both intervals reach down to 0
    assert sp.at["censored", "speedup_low"] == sp.at["censored", "abs_speedup_low"] == 0
    # a note of one speedup alone is not marked as both
    assert "both speedups" not in sp.at["apex1", "speedup_note"]


def test_bounds_are_never_rounded_towards_a_stronger_claim() -> None:
    from analysis.stats import ceil_to, floor_to

    assert floor_to(3.0699, 2) == 3.06 and floor_to(3.07, 1) == 3.0
    assert floor_to(41.0 / 20.0, 2) == 2.05  # exact values stay exact
    assert ceil_to(0.321, 2) == 0.33 and ceil_to(0.3, 2) == pytest.approx(0.3)
    tm = pd.concat(
        [
            make_tm("base", [40.0, 40.0, 61.4], [False] * 3, baseline=True),
            make_tm("fast", [20.0, 20.0, 20.0], [True] * 3, n=2),
        ],
        ignore_index=True,
    )
    sp = speedup_table(tm, summarize_configs(tm))[0].set_index("config_id")
    assert sp.at["fast", "speedup_lower_bound"] == pytest.approx(3.07)
    assert "S > 3.07" in sp.at["fast", "speedup_note"]  # the data's 3.07, not "3.1"


def test_reference_verdict_with_an_unbounded_interval_does_not_claim_a_win() -> None:
    """Seen in a capping-off run of the README study: APEX 6.7 s against the
    reference's 7.1 s at the median, printed as "beats ... 1.06 [0.15, unbounded]x". Here the
    same shape (a reference seed censored): the interval [0.11, unbounded] contains 1, so the
    verdict says the seeds cannot tell the two apart."""
    from analysis.study import reference_verdict

    ref = make_tm("reference", [1.0, 7.1, 45.0], [True, True, False], n=0, alg="SB3-DQN", cpus=1.0)
    ref["is_reference"] = True
    tm = pd.concat(
        [
            ref,
            make_tm("base", [20.0] * 3, [True] * 3, n=1, baseline=True),
            make_tm("apex1", [5.4, 6.7, 9.0], [True] * 3, n=1, alg="APEX"),
        ],
        ignore_index=True,
    )
    tm["is_reference"] = tm["is_reference"].eq(True)
    summary = summarize_configs(tm)
    speed = speedup_table(tm, summary)[0]
    r = speed.set_index("config_id").loc["apex1"]
    assert r["abs_speedup"] > 1 and r["abs_speedup_low"] < 1 and math.isinf(r["abs_speedup_high"])
    verdict = reference_verdict(summary, speed)
    assert verdict.startswith("The fastest configuration, APEX with 1 env runner, cannot"), verdict
    assert "unbounded" in verdict and "interval contains 1" in verdict


@pytest.mark.parametrize(
    "apex_ttts, starts",
    [
        ([1.0, 1.0, 1.0, 1.0, 1.0], "APEX with 0 env runners beats the single-process reference"),
        ([4.0, 4.0, 4.0, 4.0, 4.0], "No configuration of the sweep beats the single-process"),
        # overlapping seeds: faster by the point estimate (1.5 < 2), but the interval contains 1
        ([1.0, 1.0, 1.5, 3.0, 3.0], "The fastest configuration, APEX with 0 env runners, cannot"),
        # slower by the point estimate, the interval contains 1: not "does not beat" either
        ([1.0, 1.0, 2.5, 3.0, 3.0], "The fastest configuration, APEX with 0 env runners, cannot"),
    ],
)
def test_reference_verdict_claims_only_what_the_interval_shows(apex_ttts, starts) -> None:
    """``reference_verdict`` says *beats* / *does not beat* only when the absolute speedup's
    95 % interval lies on one side of 1; when it contains 1 it says the seeds cannot tell."""
    from analysis.study import reference_verdict

    ref = make_tm("reference", [2.0, 2.0, 2.0, 1.5, 2.5], [True] * 5, n=0, alg="SB3-DQN", cpus=1.0)
    ref["is_reference"] = True
    tm = pd.concat(
        [
            ref,
            make_tm("base", [20.0] * 5, [True] * 5, n=1, baseline=True),
            make_tm("apex0", apex_ttts, [True] * 5, n=0, alg="APEX"),
        ],
        ignore_index=True,
    )
    tm["is_reference"] = tm["is_reference"].eq(True)
    summary = summarize_configs(tm)
    speed = speedup_table(tm, summary)[0]
    verdict = reference_verdict(summary, speed)
    assert verdict.startswith(starts), verdict
    r = speed.set_index("config_id").loc["apex0"]
    assert f"{r['abs_speedup']:.2f}" in verdict
    if "cannot" in starts:
        assert r["abs_speedup_low"] <= 1 <= r["abs_speedup_high"], r
        assert "be told apart from the single-process reference" in verdict
        assert "interval contains 1" in verdict

"""Plan check (analysis.plan_check): held-out predictions against measurements."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.parts import trial_components
from analysis.plan_check import (
    CHECK_COLUMNS,
    FIT_COLUMNS,
    auto_holdout,
    check_text,
    parse_holdout,
    plan_check,
)
from analysis.scaling import usl
from analysis.stats import summarize_configs
from analysis.synthetic import write_synthetic_results


def _pipeline_run(
    rng: np.random.Generator,
    ns=(1, 2, 4, 8, 16),
    seeds: int = 5,
    censor_at: float | None = None,
    noise: float = 0.05,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Trials whose TTT follows a known pipeline: start-up 2 + 0.5 N s, sampling rate
    USL(100, 0.05, 0.002) env steps/s, 4,000 N^0.3 env steps to the target (``noise``: the
    log-normal sigma of each part per trial; one iteration per second after start-up)."""
    truth = {}
    tm_rows, prog_rows = [], []
    for n in ns:
        s_true = 2.0 + 0.5 * n
        r_true = float(usl(np.array([n], float), 100.0, 0.05, 0.002)[0])
        e_true = 4000.0 * n**0.3
        truth[n] = (s_true + e_true / r_true, r_true)
        for k in range(seeds):
            tid = f"t{n}-{k}"
            s = s_true * rng.lognormal(0, noise)
            r = r_true * rng.lognormal(0, noise)
            e = e_true * rng.lognormal(0, noise)
            ttt = s + e / r
            reached = censor_at is None or ttt <= censor_at
            end = ttt if reached else censor_at
            w = np.arange(math.ceil(s) + 1.0, math.ceil(end) + 1.0)
            w[-1] = end if not reached else w[-1]
            steps = np.maximum((w - s) * r, 1.0)
            for i, (ww, ss) in enumerate(zip(w, steps, strict=True)):
                prog_rows.append(
                    {"trial_id": tid, "iteration": i + 1, "wall_time_s": ww, "env_steps": ss}
                )
            tm_rows.append(
                {
                    "trial_id": tid,
                    "config_id": f"A-{n}",
                    "algorithm": "APEX",
                    "num_env_runners": n,
                    "seed": k,
                    "is_baseline": n == 1,
                    "is_reference": False,
                    "status": "reached" if reached else "censored",
                    "reached": reached,
                    "censor_reason": "" if reached else "budget",
                    "time_to_target_s": w[-1] if reached else math.nan,
                    "steps_to_target": steps[-1] if reached else math.nan,
                    "duration_s": w[-1],
                    "total_env_steps": steps[-1],
                    "env_steps_per_s": r,
                    "config_label": f"N={n}",
                    "num_cpus": 1 + n,
                    "num_gpus": 0.0,
                    "oversubscribed": False,
                    "budget_s": 1e9,
                    "elapsed_s": w[-1],
                    "best_return": 1.0,
                    "final_return": 1.0,
                    "has_episodes": True,
                    "n_iterations": len(w),
                    "eval_time_s": 0.0,
                    "node_count": 1,
                    "error": "",
                }
            )
    return pd.DataFrame(tm_rows), pd.DataFrame(prog_rows), truth


def test_parse_holdout() -> None:
    assert parse_holdout("16,8") == [8, 16]
    assert parse_holdout(" 4 ") == [4]
    for bad in ("", "0", "x", "8,-1"):
        with pytest.raises(ValueError, match="held-out counts"):
            parse_holdout(bad)


def test_trial_components_startup_and_rate() -> None:
    tm = pd.DataFrame(
        [
            {
                "trial_id": "a",
                "reached": True,
                "time_to_target_s": 5.0,
                "steps_to_target": 300.0,
                "total_env_steps": 400.0,
            }
        ]
    )
    prog = pd.DataFrame(
        {
            "trial_id": ["a"] * 4,
            "iteration": [1, 2, 3, 4],
            "wall_time_s": [3.0, 4.0, 5.0, 6.0],
            "env_steps": [100.0, 200.0, 300.0, 400.0],
        }
    )
    c = trial_components(tm, prog).iloc[0]
    # the rate is measured up to the target only (100 env steps/s); steps extrapolate to 0 at 2 s
    assert c["rate"] == pytest.approx(100.0)
    assert c["startup_s"] == pytest.approx(2.0) and not c["startup_recorded"]
    assert c["steps"] == 300.0 and c["reached"]
    # a recorded start-up (the seconds its wall times count) is read, not inferred
    recorded = trial_components(tm.assign(cold_startup_s=2.4), prog).iloc[0]
    assert recorded["startup_s"] == pytest.approx(2.4) and recorded["startup_recorded"]
    assert recorded["rate"] == pytest.approx(100.0)
    # the reference records none (NaN): inferred, as before
    reference = trial_components(tm.assign(cold_startup_s=float("nan")), prog).iloc[0]
    assert reference["startup_s"] == pytest.approx(2.0) and not reference["startup_recorded"]


def test_pipeline_predicts_held_out_n_of_a_known_pipeline() -> None:
    """The pipeline model, fitted on N = 1, 2, 4, recovers TTT and rate at N = 8 and 16 of data
    generated by a pipeline (1 % noise: the USL's extrapolation of the rate from three N is
    fragile with more); USL on 1/TTT cannot carry the start-up that grows with N."""
    tm, prog, truth = _pipeline_run(np.random.default_rng(0), noise=0.01)
    check = plan_check(tm, summarize_configs(tm), prog, [8, 16], n_resamples=200)
    assert list(check.rows.columns) == CHECK_COLUMNS
    rows = check.rows.set_index(["num_env_runners", "model", "quantity"])
    for n in (8, 16):
        ttt_true, rate_true = truth[n]
        p = rows.loc[(n, "pipeline", "TTT")]
        assert p["predicted"] == pytest.approx(ttt_true, rel=0.05)
        assert p["low"] <= ttt_true <= p["high"]
        assert p["fit_n"] == "1,2,4"
        # the rate follows a USL: its fit on the trials' throughput recovers it, inside its
        # seed-bootstrap interval; Amdahl, without the contention term, is checked beside it
        r = rows.loc[(n, "USL on throughput", "env steps/s")]
        assert r["predicted"] == pytest.approx(rate_true, rel=0.05)
        assert r["low"] <= r["predicted"] <= r["high"]
        assert r["error"] == pytest.approx(r["predicted"] / r["measured"] - 1.0)
        assert math.isfinite(rows.loc[(n, "Amdahl on throughput", "env steps/s")]["predicted"])
        u = rows.loc[(n, "USL on 1/TTT", "TTT")]
        assert math.isfinite(u["predicted"])
    # the pipeline is closer than USL on 1/TTT where start-up dominates (N = 16)
    assert abs(rows.loc[(16, "pipeline", "TTT")]["error"]) < abs(
        rows.loc[(16, "USL on 1/TTT", "TTT")]["error"]
    )
    text = "\n".join(check_text(check))
    assert "APEX N=16 TTT by pipeline (fit on N=1,2,4): predicted" in text
    assert "APEX: the pipeline's throughput is the USL on throughput" in text


def test_censored_seeds() -> None:
    """TTTs (s) of the generated pipeline: N=1 42.5, 2 28.9, 4 21.8, 8 19.6, 16 22.8. Censored
    at 30 s: every N=1 seed is censored, so a check holding N=1 out cannot judge TTT there;
    censored at 25 s, N=2 seeds are censored too and the fit carries them as lower bounds."""
    tm, prog, truth = _pipeline_run(np.random.default_rng(4), censor_at=30.0, seeds=4)
    check = plan_check(tm, summarize_configs(tm), prog, [1], n_resamples=100)
    assert any("N=1: the measured median TTT is not known" in n for n in check.notes)
    ttt = check.rows[check.rows["quantity"] == "TTT"]
    assert ttt["inside"].isna().all() and (ttt["measured"] == math.inf).all()
    tm, prog, truth = _pipeline_run(np.random.default_rng(4), censor_at=25.0, seeds=4)
    check = plan_check(tm, summarize_configs(tm), prog, [16], n_resamples=100)
    p = check.rows.set_index(["model", "quantity"]).loc[("pipeline", "TTT")]
    assert p["predicted"] == pytest.approx(truth[16][0], rel=0.25)


def test_too_few_fitted_n_gives_a_note_not_rows() -> None:
    tm, prog, _ = _pipeline_run(np.random.default_rng(5), ns=(1, 16), seeds=3)
    check = plan_check(tm, summarize_configs(tm), prog, [16])
    assert check.rows.empty
    assert any("at least 2" in n for n in check.notes)
    check = plan_check(tm, summarize_configs(tm), prog, [32])
    assert any("no held-out N was measured" in n for n in check.notes)


def test_auto_holdout() -> None:
    tm, _, _ = _pipeline_run(np.random.default_rng(6), seeds=2)
    assert auto_holdout(summarize_configs(tm)) == [8, 16]
    tm, _, _ = _pipeline_run(np.random.default_rng(6), ns=(1, 2, 4), seeds=2)
    assert auto_holdout(summarize_configs(tm)) == []
    # five fitted N and the two largest held out, not everything above the third
    tm, _, _ = _pipeline_run(np.random.default_rng(6), ns=(1, 2, 3, 4, 5, 6, 8), seeds=2)
    assert auto_holdout(summarize_configs(tm)) == [6, 8]
    tm, _, _ = _pipeline_run(np.random.default_rng(6), ns=(1, 2, 4, 8), seeds=2)
    assert auto_holdout(summarize_configs(tm)) == [8]


def test_cli_holdout_on_synthetic_run(tmp_path: Path, plan) -> None:
    run = write_synthetic_results(
        tmp_path / "run", seeds=4, env_runners=(1, 2, 4, 8, 16), rng_seed=1
    )
    out = plan(str(run), "--holdout", "8,16")  # the check itself: the tests above
    assert out.returncode == 0, out.stderr
    assert "Plan check" in out.stdout and "N=16 TTT by pipeline (fit on N=1,2,4)" in out.stdout
    for args, msg in (
        (["--holdout", "0"], "held-out counts '0'"),
        (["--holdout", "8", "--steps-to-target", "1000"], "--steps-to-target: only with fit"),
        (["--holdout", "8", "--break-even"], "--holdout and --break-even: choose one"),
    ):
        bad = plan(str(run), *args)
        assert bad.returncode == 2
        assert msg in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_held_out_n_never_enter_a_fit() -> None:
    """The plan check's predictions at the held-out N are the same whatever was measured
    there: make N = 8 and 16 ten times slower (TTT and progress) and every prediction stays put,
    while the measurements, and so the errors, move. (docs/latency_scaling.md's numbers are
    checked against its run by tests/test_docs_numbers.py.)"""
    tm, prog, _ = _pipeline_run(np.random.default_rng(0), noise=0.01)
    held = tm["num_env_runners"].isin([8, 16])
    slow_tm = tm.copy()
    for col in ("time_to_target_s", "duration_s", "elapsed_s"):
        if col in slow_tm:
            slow_tm.loc[held, col] = slow_tm.loc[held, col] * 10
    slow_prog = prog.copy()
    ids = set(tm.loc[held, "trial_id"])
    slow_prog.loc[slow_prog["trial_id"].isin(ids), "wall_time_s"] *= 10
    a = plan_check(tm, summarize_configs(tm), prog, [8, 16], n_resamples=200).rows
    b = plan_check(slow_tm, summarize_configs(slow_tm), slow_prog, [8, 16], n_resamples=200).rows
    key = ["algorithm", "num_env_runners", "model", "quantity"]
    a, b = a.set_index(key).sort_index(), b.set_index(key).sort_index()
    for col in ("predicted", "low", "high", "fit_n"):
        assert a[col].equals(b[col]), col
    assert not np.allclose(a["measured"].astype(float), b["measured"].astype(float))


def _slower(
    tm: pd.DataFrame, prog: pd.DataFrame, n: int, factor: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run with every trial at ``n`` env runners ``factor`` times slower (TTT, progress)."""
    tm, prog = tm.copy(), prog.copy()
    at = tm["num_env_runners"] == n
    for col in ("time_to_target_s", "duration_s", "elapsed_s"):
        tm.loc[at, col] = tm.loc[at, col] * factor
    prog.loc[prog["trial_id"].isin(set(tm.loc[at, "trial_id"])), "wall_time_s"] *= factor
    return tm, prog


def test_fit_range_residuals_and_leave_one_n_out_errors_of_a_known_pipeline() -> None:
    """Fitted on N = 1, 2, 4, 8 of data generated by a pipeline (1 % noise), N = 16 held out:
    each model reports a residual and a leave-one-N-out error at every fitted N and at no other;
    the pipeline's residuals are small; the left-out prediction at N = 8 is the prediction a
    check fitted on N = 1, 2, 4 makes there; the chosen model has the smaller median |error|."""
    tm, prog, truth = _pipeline_run(np.random.default_rng(0), noise=0.01)
    check = plan_check(tm, summarize_configs(tm), prog, [16], n_resamples=50)
    assert list(check.fit.columns) == FIT_COLUMNS
    assert set(check.fit["num_env_runners"]) == {1, 2, 4, 8}  # never the held-out N
    assert set(check.fit["model"]) == set(check.rows["model"])
    # USL and Amdahl on throughput: residuals on every fitted N, the USL's small (the truth)
    rate = check.fit[check.fit["quantity"] == "env steps/s"].set_index(["model", "num_env_runners"])
    for n in (1, 2, 4, 8):
        assert rate.loc[("USL on throughput", n), "measured"] == pytest.approx(
            truth[n][1], rel=0.05
        )
        assert abs(rate.loc[("USL on throughput", n), "residual"]) < 0.05
        assert math.isfinite(rate.loc[("Amdahl on throughput", n), "cv_error"])
    fit = check.fit[check.fit["quantity"] == "TTT"]
    pipe = fit[fit["model"] == "pipeline"].set_index("num_env_runners")
    assert (pipe["residual"].abs() < 0.1).all(), pipe
    for n in (1, 2, 4, 8):
        assert pipe.loc[n, "measured"] == pytest.approx(truth[n][0], rel=0.05)
        assert pipe.loc[n, "residual"] == pytest.approx(
            pipe.loc[n, "predicted"] / pipe.loc[n, "measured"] - 1.0
        )
    # leaving N = 8 out is fitting on 1, 2, 4: the same prediction as holding 8 out
    without_16 = tm[tm["num_env_runners"] != 16]
    held = plan_check(without_16, summarize_configs(without_16), prog, [8], n_resamples=50)
    ttt = held.rows[held.rows["quantity"] == "TTT"]
    for model, g in fit.groupby("model"):
        # USL or Amdahl on 1/TTT: whichever each fit prefers; the pipeline by name
        same = ttt[(ttt["model"] == "pipeline") == (model == "pipeline")]
        assert g.set_index("num_env_runners").loc[8, "cv_predicted"] == pytest.approx(
            float(same["predicted"].iloc[0])
        ), model
    scores = fit.assign(a=fit["cv_error"].abs()).groupby("model")["a"].median()
    assert check.chosen["APEX"] == scores.idxmin()
    assert any(
        f"cross-validation on the fit range prefers {scores.idxmin()}" in n for n in check.notes
    )
    text = "\n".join(check_text(check))
    assert "APEX fit range, pipeline: N=1 residual" in text


def test_a_left_out_n_never_enters_its_own_cross_validation_fit() -> None:
    """Make every trial at N = 4 ten times slower: the in-sample fit moves, the left-out
    predictions at N = 4 do not (they come from N = 1, 2 and 8 alone), the errors there do."""
    tm, prog, _ = _pipeline_run(np.random.default_rng(1), noise=0.01)
    a = plan_check(tm, summarize_configs(tm), prog, [16], n_resamples=20).fit
    slow_tm, slow_prog = _slower(tm, prog, 4, 10.0)
    b = plan_check(slow_tm, summarize_configs(slow_tm), slow_prog, [16], n_resamples=20).fit
    # the throughput models too: N = 4's rate is ten times lower, its left-out prediction
    # (from N = 1, 2 and 8) unchanged
    ra, rb = (
        x[x["quantity"] == "env steps/s"].set_index(["model", "num_env_runners"]) for x in (a, b)
    )
    for model in ("USL on throughput", "Amdahl on throughput"):
        assert rb.loc[(model, 4), "cv_predicted"] == pytest.approx(
            ra.loc[(model, 4), "cv_predicted"]
        )
        assert rb.loc[(model, 4), "measured"] == pytest.approx(
            ra.loc[(model, 4), "measured"] / 10, rel=0.05
        )
    a, b = a[a["quantity"] == "TTT"], b[b["quantity"] == "TTT"]
    a, b = a.set_index(["model", "num_env_runners"]), b.set_index(["model", "num_env_runners"])
    for model in a.index.get_level_values("model").unique():
        assert b.loc[(model, 4), "cv_predicted"] == pytest.approx(a.loc[(model, 4), "cv_predicted"])
        assert b.loc[(model, 4), "measured"] == pytest.approx(
            10 * a.loc[(model, 4), "measured"], rel=0.05
        )
        assert b.loc[(model, 4), "cv_error"] != pytest.approx(a.loc[(model, 4), "cv_error"])


def test_no_model_is_chosen_without_two_n_to_leave_out() -> None:
    """Fitted on N = 1 and 2 only, leaving one out leaves one N: no model can be refitted,
    so none is chosen, and the note says why."""
    tm, prog, _ = _pipeline_run(np.random.default_rng(2), ns=(1, 2, 16), seeds=3, noise=0.01)
    check = plan_check(tm, summarize_configs(tm), prog, [16], n_resamples=20)
    assert check.chosen == {"APEX": None}
    assert check.fit["cv_predicted"].isna().all()
    assert any("no model chosen" in n for n in check.notes)


def test_the_plan_predicts_with_the_model_the_fit_range_prefers() -> None:
    """On a run generated by a pipeline (N = 1, 2, 4, 8, 16), the fit range's
    cross-validation prefers the pipeline, and the capacity plan then predicts every
    unmeasured N with it (its interval from the seed bootstrap); without the progress rows
    the plan has no parts to cross-validate and keeps the fit of 1/TTT."""
    from analysis.plan_check import fit_range_choice, pipeline_prediction
    from analysis.plan_model import make_plan, model_algorithms, predict_ttt

    tm, prog, truth = _pipeline_run(np.random.default_rng(3), noise=0.01)
    summary = summarize_configs(tm)
    model = model_algorithms(tm, summary, prog)["APEX"]
    assert model.pipeline is not None and "prefers pipeline" in model.choice
    pred = predict_ttt(model, [3, 8, 32], n_resamples=40).set_index("num_env_runners")
    assert pred.loc[8, "source"] == "measured"
    assert pred.loc[3, "source"] == pred.loc[32, "source"] == "pipeline fit"
    assert bool(pred.loc[32, "extrapolated"]) and not bool(pred.loc[3, "extrapolated"])
    comp = model.components
    ttt, lo, hi = pipeline_prediction(model.pipeline, comp, [3, 32], n_resamples=40)
    assert pred.loc[[3, 32], "ttt_s"].tolist() == pytest.approx(list(ttt))
    assert (lo < ttt).all() and (ttt < hi).all()
    # the pipeline it uses is the one the cross-validation chose on the same N
    chosen, _, pipe = fit_range_choice("APEX", model.measured, comp)
    assert chosen == "pipeline" and pipe.predict(np.array([32.0]))[0][0] == pytest.approx(ttt[1])
    plan = make_plan(tm, summary, progress=prog, n_resamples=40)
    assert plan.pipeline == ("APEX",)
    assert set(plan.candidates["source"]) == {"measured", "pipeline fit"}
    assert any("the plan predicts its unmeasured N with the pipeline" in n for n in plan.notes)
    plain = make_plan(tm, summary, n_resamples=40)
    assert plain.pipeline == () and "pipeline fit" not in set(plain.candidates["source"])


def test_the_seed_resampler_draws_the_rows_one_resample_draws() -> None:
    """A bootstrap loop's SeedResampler returns, resample after resample, exactly the rows
    resample_seeds draws from the same stream: each group's own seeds, as many as it has."""
    from analysis.parts import SeedResampler, resample_seeds
    from analysis.stats import draw_seeds

    frame = pd.DataFrame({"num_env_runners": [1, 1, 1, 2, 2, 4], "x": np.arange(6.0)})
    groups = [g for _, g in frame.groupby("num_env_runners")]
    a, b, c = (np.random.default_rng(7) for _ in range(3))
    resample = SeedResampler(groups)
    for _ in range(20):
        drawn = resample(a)
        by_hand = pd.concat([g.iloc[draw_seeds(len(g), b)] for g in groups])
        pd.testing.assert_frame_equal(drawn, by_hand)
        pd.testing.assert_frame_equal(resample_seeds(groups, c), by_hand)
        assert drawn.groupby("num_env_runners").size().to_dict() == {1: 3, 2: 2, 4: 1}

"""analysis.batch_size: steps-to-target across batch sizes from the gradient noise scale."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.batch_size import batch_size_check, check_lines, fit_critical_batch, steps_at


def _run(
    rng: np.random.Generator,
    b_noise: float = 300.0,
    s_min: float = 40.0,
    noise: float = 0.02,
    measured_bn: float | None = None,
    sizes=(128, 256, 512, 1024),
):
    """On-policy trials following S(B) = S_min (1 + B_noise / B), E = S x B exactly; the learner
    reports ``measured_bn`` (default: B_noise itself) as its noise scale."""
    tm, prog = [], []
    for b in sizes:
        for k in range(3):
            s = steps_at(b, s_min, b_noise) * rng.lognormal(0, noise)
            tid = f"b{b}-{k}"
            tm.append(
                {
                    "trial_id": tid,
                    "config_id": f"PPO-{b}",
                    "algorithm": "PPO",
                    "train_batch_size": float(b),
                    "is_reference": False,
                    "status": "reached",
                    "reached": True,
                    "time_to_target_s": 2.0,
                    "steps_to_target": s * b,
                }
            )
            for it, frac in ((1, 0.5), (2, 1.0)):
                prog.append(
                    {
                        "trial_id": tid,
                        "iteration": it,
                        "wall_time_s": float(it),
                        "env_steps": s * b * frac,
                        "learner_updates": s * frac,
                        "grad_noise_scale": measured_bn or b_noise,
                    }
                )
    return pd.DataFrame(tm), pd.DataFrame(prog)


def test_fit_critical_batch_recovers_the_model() -> None:
    b = np.array([64, 128, 256, 512, 1024], float)
    s_min, b_crit = fit_critical_batch(b, steps_at(b, 40.0, 300.0))
    assert s_min == pytest.approx(40.0) and b_crit == pytest.approx(300.0)
    assert all(math.isnan(x) for x in fit_critical_batch(np.array([64.0]), np.array([1.0])))


def test_prediction_from_a_pilot_matches_a_run_that_follows_the_model() -> None:
    tm, prog = _run(np.random.default_rng(0))
    check = batch_size_check(tm, prog, n_resamples=300)
    rows = check.rows.set_index("train_batch_size")
    assert rows.loc[256.0, "role"] == "pilot"  # the middle of four sizes, rounded down
    for b in (128.0, 512.0, 1024.0):
        r = rows.loc[b]
        assert r["role"] == "checked"
        assert abs(r["updates_error"]) < 0.06 and abs(r["steps_error"]) < 0.06
        assert r["updates_low"] <= r["updates_pred"] <= r["updates_high"]
        truth = steps_at(b, 40.0, 300.0)
        assert r["updates_pred"] == pytest.approx(truth, rel=0.06)
        assert r["steps_pred"] == pytest.approx(truth * b, rel=0.06)
    # TTT: the pilot's start-up (0 s here) plus E(B) x its seconds per env step
    pilot_per_step = 2.0 / rows.loc[256.0, "steps"]
    assert rows.loc[1024.0, "ttt_pred"] == pytest.approx(
        rows.loc[1024.0, "steps_pred"] * pilot_per_step, rel=0.05
    )
    assert (
        rows.loc[1024.0, "ttt_low"] <= rows.loc[1024.0, "ttt_pred"] <= rows.loc[1024.0, "ttt_high"]
    )
    f = check.fits["PPO"]
    assert f["b_simple"] == pytest.approx(300.0) and f["b_crit"] == pytest.approx(300.0, rel=0.2)
    assert any("B_crit" in x for x in check_lines(check))


def test_pilot_reaching_in_its_first_iteration_predicts_steps_not_time() -> None:
    """One iteration gives no start-up estimate (analysis.parts.trial_components): the
    predicted TTT is NaN, the updates and env steps are still predicted, and no numpy
    "Mean of empty slice" warning reaches the user (it printed ~90 lines per report)."""
    import warnings

    tm, prog = _run(np.random.default_rng(0))
    prog = prog[prog["iteration"] == 2].assign(iteration=1)  # each trial: one iteration
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        rows = batch_size_check(tm, prog, n_resamples=50).rows.set_index("train_batch_size")
    assert rows["ttt_pred"].isna().all() and rows["updates_pred"].notna().all()


def test_a_wrong_noise_scale_gives_wrong_predictions() -> None:
    """The check can fail: a learner reporting B_simple = 30 where B_crit is 300 misses the
    steps at the other batch sizes by far more than the noise."""
    tm, prog = _run(np.random.default_rng(1), measured_bn=30.0)
    rows = batch_size_check(tm, prog, n_resamples=100).rows.set_index("train_batch_size")
    assert abs(rows.loc[1024.0, "updates_error"]) > 0.3


def test_notes_instead_of_rows() -> None:
    tm, prog = _run(np.random.default_rng(2), sizes=(256,))
    assert batch_size_check(tm, prog).rows.empty
    tm, prog = _run(np.random.default_rng(2))
    check = batch_size_check(tm, prog.assign(grad_noise_scale=np.nan))
    assert check.rows.empty and "no seed of the pilot" in check.notes[0]
    assert "was not measured" in batch_size_check(tm, prog, pilot=100.0).notes[0]


def test_batch_advice_from_the_measured_noise_scale() -> None:
    """The plan's batch-size line: B_simple, the update penalty 1 + B_simple/B at each batch
    run, what doubling the largest batch buys, and the check's fastest predicted batch."""
    from analysis.batch_size import batch_advice

    tm, prog = _run(np.random.default_rng(0))
    (line,) = batch_advice(tm, prog)
    assert line.startswith("Batch size for PPO: measured gradient noise scale B_simple ~ 300 ")
    assert "B=128: 3.34, B=256: 2.17, B=512: 1.59, B=1024: 1.29" in line
    # doubling 1024: updates (1 + 300/2048) / (1 + 300/1024) - 1 = -11 %; env steps
    # (1 + 2048/300) / (1 + 1024/300) - 1 = +77 %
    assert "need 11% fewer learner updates and 77% more env steps" in line
    # with E = S x B and equal TTTs the fewest env steps win: the smallest batch
    assert "fastest predicted batch B=128" in line
    assert batch_advice(tm, prog.drop(columns="grad_noise_scale")) == []

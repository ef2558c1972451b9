"""analysis.transfer: another machine predicted from the parts one run measured (a roofline of
CPU per env step, start-up and env steps to the target), checked against the same study
measured there."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from analysis.transfer import (
    Machine,
    _startup_line,
    break_even_on,
    check_rows,
    roofline_rate,
    transfer,
)

REPO = Path(__file__).resolve().parent.parent
ONE_CORE = REPO / "docs" / "data" / "cabs_transfer" / "20261126-171605"
TWO_CORES = REPO / "docs" / "data" / "cabs_transfer_2cores" / "20261126-172746"


def test_the_lowest_ceiling_binds():
    two = Machine(cores=2)
    # 10 ms of CPU per env step: one process uses one core, N env runners N + 1 cores
    assert roofline_rate(0.010, 0, True, 0.002, 0.0, two) == (pytest.approx(100.0), "cores")
    assert roofline_rate(0.010, 1, False, 0.002, 0.0, two) == (pytest.approx(200.0), "cores")
    assert roofline_rate(0.010, 4, False, 0.002, 0.0, two) == (pytest.approx(200.0), "cores")
    assert roofline_rate(0.010, 4, False, 0.002, 0.0, Machine(16)) == (
        pytest.approx(500.0),
        "cores",
    )
    # an env runner steps its envs in turn: 4 of them waiting 50 ms each cannot beat 80/s
    assert roofline_rate(0.002, 4, False, 0.0, 0.050, Machine(16)) == (
        pytest.approx(80.0),
        "env runners",
    )
    # faster cores do the rest of each step (8 of the 10 ms) in half the time; the env's own
    # step_cpu_ms means milliseconds of a core wherever it runs
    assert roofline_rate(0.010, 1, False, 0.002, 0.0, Machine(2, 2.0))[0] == pytest.approx(
        2 / 0.006
    )
    # at another env cost only the env's part of each step changes
    assert roofline_rate(0.010, 0, True, 0.020, 0.0, two, run_cpu_s=0.002)[0] == pytest.approx(
        1 / 0.028
    )
    with pytest.raises(ValueError, match="cores > 0"):
        Machine(cores=0)


def test_each_env_runners_own_work_is_the_cpu_per_step_less_the_drivers_and_the_envs():
    """With the driver's CPU per env step ``d`` measured, each env runner spends
    ``w - d - c0`` of its own per step besides the env, in turn with the env's cost; without
    ``d`` that term is left out."""
    many = Machine(cores=64)
    # 10 ms per env step, 2 ms of it the driver's: waiting 50 ms per step, each of 4 runners
    # also spends its 8 ms of work per step
    assert roofline_rate(0.010, 4, False, 0.0, 0.050, many, driver_s=0.002) == (
        pytest.approx(4 / 0.058),
        "env runners",
    )
    assert roofline_rate(0.010, 4, False, 0.0, 0.050, many)[0] == pytest.approx(4 / 0.050)
    # a CPU-bound env: 2 ms of the 10 are the env's own, 7 ms the runner's: 4 runners take
    # 9 ms per step each, under the 5 busy processes' 5 / 10 ms
    assert roofline_rate(0.010, 4, False, 0.002, 0.0, many, driver_s=0.001) == (
        pytest.approx(4 / 0.009),
        "env runners",
    )
    # cores twice as fast halve the runner's work, not the env's wait
    assert roofline_rate(0.010, 4, False, 0.0, 0.050, Machine(64, 2.0), driver_s=0.002)[
        0
    ] == pytest.approx(4 / 0.054)
    # the driver's CPU is no ceiling of its own (an asynchronous learner takes what it gets)
    assert roofline_rate(0.010, 16, False, 0.0, 0.0, many, driver_s=0.002) == (
        pytest.approx(1700.0),
        "cores",
    )
    # the reference is one process: the cores ceiling, whatever its driver's share
    assert roofline_rate(0.010, 0, True, 0.0, 0.0, many, driver_s=0.010) == (
        pytest.approx(100.0),
        "cores",
    )


def test_the_learner_updates_on_one_core_whatever_the_env_runners_sample():
    """The learner ceiling ``v / l``: a learner whose updates take ``l`` core-seconds per env
    step trains at most ``1 / l`` env steps/s on one core, twice that on cores twice as
    fast; it binds only below the other ceilings, and the reference has none."""
    many = Machine(cores=64)
    # 10 ms per env step, 2.5 ms of it the learner's updates: 16 runners could sample
    # 1700/s on 64 cores, the learner trains 400/s
    assert roofline_rate(0.010, 16, False, 0.0, 0.0, many, driver_s=0.003, learner_s=0.0025) == (
        pytest.approx(400.0),
        "learner",
    )
    assert roofline_rate(
        0.010, 16, False, 0.0, 0.0, Machine(64, 2.0), driver_s=0.003, learner_s=0.0025
    ) == (pytest.approx(800.0), "learner")
    # on 2 cores the cores bind first (200/s), and without l there is no learner ceiling
    assert roofline_rate(0.010, 16, False, 0.0, 0.0, Machine(2), learner_s=0.0025) == (
        pytest.approx(200.0),
        "cores",
    )
    assert roofline_rate(0.010, 16, False, 0.0, 0.0, many)[1] == "cores"
    assert roofline_rate(0.010, 0, True, 0.0, 0.0, many, learner_s=0.005) == (
        pytest.approx(100.0),
        "cores",
    )


def test_the_driver_cpu_per_env_step_leaves_out_evaluation(tmp_path, analysed_runs):
    """``driver_cpu_per_step`` reads ``progress.parquet``'s ``driver_cpu_s`` between each
    trial's first and last measurement, evaluation time taken out, the median over seeds;
    NaN for a run recorded before the column."""
    import shutil

    import pandas as pd

    from analysis.load import load_results
    from analysis.study import analyse
    from analysis.transfer import driver_cpu_per_step, learner_cpu_per_step

    old = analysed_runs(ONE_CORE)
    config = old.tm[old.tm["num_env_runners"] == 2]["config_id"].iloc[0]
    assert math.isnan(driver_cpu_per_step(old, config))
    run = tmp_path / "run"
    shutil.copytree(ONE_CORE, run)
    prog = pd.read_parquet(run / "progress.parquet")
    tids = set(old.tm[old.tm["config_id"] == config]["trial_id"])
    # 3 ms of driver CPU per env step plus 1 s of evaluation per measurement
    steps0 = prog.groupby("trial_id")["env_steps"].transform("first")
    prog["driver_cpu_s"] = 0.003 * (prog["env_steps"] - steps0) + prog["eval_time_s"]
    prog.loc[~prog["trial_id"].isin(tids), "driver_cpu_s"] = float("nan")
    # 1 ms of it the learner's updates, NaN until the first update (the first measurement):
    # evaluation is not the learner's
    prog["learner_cpu_s"] = 0.001 * (prog["env_steps"] - steps0)
    first = prog.groupby("trial_id")["iteration"].transform("min") == prog["iteration"]
    prog.loc[first | ~prog["trial_id"].isin(tids), "learner_cpu_s"] = float("nan")
    prog.to_parquet(run / "progress.parquet")
    data = analyse(load_results(run))
    assert driver_cpu_per_step(data, config) == pytest.approx(0.003)
    assert learner_cpu_per_step(data, config) == pytest.approx(0.001)
    assert math.isnan(learner_cpu_per_step(old, config))
    # on 64 cores its two env runners sample at most 2 / (w - d) per s (each runs its own
    # work and its env's 2 ms in turn), and at most its 3 busy processes' 3 / w
    got = {p.num_env_runners: p for p in transfer(data, Machine(64), n_resamples=0)}
    two = got[2]
    w = two.cpu_ms_per_step / 1000.0
    assert two.driver_ms_per_step == pytest.approx(3.0)
    assert two.learner_ms_per_step == pytest.approx(1.0)
    assert two.rate == pytest.approx(min(2 / (w - 0.003), 3 / w, 1 / 0.001))
    assert math.isnan(got[1].driver_ms_per_step) and math.isnan(got[1].learner_ms_per_step)


def test_the_start_up_line_splits_a_serial_part_from_each_env_runners():
    # on one core: 10 s serial + 3 s per env runner, all in turn
    a, b = _startup_line([(1, 13.0), (2, 16.0), (4, 22.0)], k0=1)
    assert (a, b) == (pytest.approx(10.0), pytest.approx(3.0))
    # the same costs measured on 2 cores, where two env runners start side by side
    a2, b2 = _startup_line([(1, 13.0), (2, 13.0), (4, 16.0)], k0=2)
    assert (a2, b2) == (pytest.approx(10.0), pytest.approx(3.0))
    assert _startup_line([(4, 22.0), (4, 24.0)], k0=1) == (pytest.approx(23.0), 0.0)


def test_predicting_the_measured_machine_returns_its_own_rates(analysed_runs):
    """Transferred to the machine it was measured on, each configuration samples at its
    measured rate (cores ceiling ``K0 / w`` with ``w = K0 / R0``): the model adds nothing of
    its own on the way there."""
    data = analysed_runs(ONE_CORE)
    same = transfer(data, Machine(1), cores=1, n_resamples=50)
    assert same and same[0].reference
    from analysis.break_even import measured_parts

    ref, parts = measured_parts(data)
    for p, t in zip([ref, *parts], same, strict=True):
        assert t.rate == pytest.approx(p.lanes / (p.overhead_s + p.run_cost_s))
        assert t.ceiling == "cores"
        assert t.ttt_low_s <= t.ttt_s <= t.ttt_high_s
    # two cores: twice the rate for every configuration of two processes or more
    two = transfer(data, Machine(2), cores=1, n_resamples=50)
    for a, b in zip(same, two, strict=True):
        assert b.rate == pytest.approx(a.rate * (1 if a.reference else 2))
        assert b.ttt_s < a.ttt_s or a.reference


def test_the_cpu_bound_break_even_needs_fewer_env_steps_per_core_than_the_reference(analysed_runs):
    """Where a configuration's env steps spread over min(N, K) cores exceed the reference's,
    it never breaks even; with enough cores it does, and there its predicted TTT equals the
    reference's."""
    data = analysed_runs(ONE_CORE)
    two = break_even_on(data, Machine(2)).set_index("num_env_runners")
    assert (two["break_even_ms"] == math.inf).all()
    assert (two["speedup_bound"] < 1).all()
    assert two.loc[4, "speedup_bound"] == pytest.approx(2 / two.loc[4, "steps_ratio"])
    # on 16 cores 4 env runners spread their env steps over 4 cores, not 2
    sixteen = break_even_on(data, Machine(16)).set_index("num_env_runners")
    assert sixteen.loc[4, "speedup_bound"] == pytest.approx(4 / sixteen.loc[4, "steps_ratio"])
    from analysis.break_even import measured_parts

    ref, _ = measured_parts(data)
    # IMPALA made to need only the reference's env steps: 4 lanes for the same env steps, so
    # it must pay at some CPU cost, and at that cost the two predicted TTTs meet
    cheap = dataclasses.replace(
        data,
        tm=data.tm.assign(
            steps_to_target=data.tm["steps_to_target"].where(data.tm["is_reference"], ref.steps)
        ),
    )
    rows = break_even_on(cheap, Machine(16)).set_index("num_env_runners")
    c = rows.loc[4, "break_even_ms"]
    assert 0 < c < math.inf
    at = {
        (t.reference, t.num_env_runners): t.ttt_s
        for t in transfer(cheap, Machine(16), cpu_cost_ms=c, n_resamples=0)
    }
    assert at[(False, 4)] == pytest.approx(at[(True, 0)], rel=1e-3)


def test_the_check_reads_only_the_target_runs_measurements(analysed_runs):
    """The two-core run is only compared with: made ten times slower, its measured side moves
    and no prediction does."""
    data = analysed_runs(ONE_CORE)
    target = analysed_runs(TWO_CORES)
    predicted = transfer(data, Machine(2), cores=1, n_resamples=50)
    rows = check_rows(predicted, target)
    assert len(rows) == len(predicted) and rows["reference"].iloc[0]
    slow = dataclasses.replace(
        target, summary=target.summary.assign(ttt_s=target.summary["ttt_s"] * 10)
    )
    again = check_rows(predicted, slow)
    assert again["predicted_ttt_s"].tolist() == pytest.approx(rows["predicted_ttt_s"].tolist())
    assert again["ttt_s"].tolist() == pytest.approx((rows["ttt_s"] * 10).tolist())
    assert all(math.isfinite(x) for x in rows["ttt_error"])


def test_cli_transfers_checks_and_refuses_bad_machines(plan):
    ok = plan(
        str(ONE_CORE),
        "--transfer",
        "--cores",
        "2",
        "--source-cores",
        "1",
        "--check",
        str(TWO_CORES),
    )
    assert ok.returncode == 0, ok.stderr
    assert "Transfer" in ok.stdout and "Check" in ok.stdout
    assert "Predicted from 1 core(s) for 2 core(s)" in ok.stdout
    at20 = plan(str(ONE_CORE), "--transfer", "--cores", "16", "--env-cost-ms", "20")
    out = " ".join(at20.stdout.split())
    assert at20.returncode == 0 and "env CPU per step 20 ms" in out, at20.stderr
    assert "On 16 core(s) with CPU-bound envs" in out and "never beats one process" in out
    for argv, words in (
        (["--cores", "2"], "--cores: only with transfer (--transfer), not fit"),
        (["--transfer"], "transfer needs --cores > 0"),
        (["--transfer", "--cores", "2", "--core-speed", "0"], "--core-speed 0: must be > 0"),
        (
            ["--transfer", "--cores", "2", "--env-cost-ms", "10,20"],
            "transfer predicts at one env cost",
        ),
        (
            ["--transfer", "--cores", "2", "--env-cost-ms", "10", "--check", str(TWO_CORES)],
            "leave out --env-cost-ms",
        ),
    ):
        bad = plan(str(ONE_CORE), *argv)
        assert bad.returncode == 2 and words in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_more_learners_are_predicted_by_amdahls_law_with_the_server_as_the_serial_part():
    from analysis.transfer import learner_scaling

    # no server time: m learners give m times one learner's rate
    assert learner_scaling(4, 100.0, 0.0) == pytest.approx(400.0)
    # a server busy a quarter of the time with one learner: 2 learners 1.6x, bounded by 4x
    assert learner_scaling(2, 100.0, 0.25) == pytest.approx(160.0)
    assert learner_scaling(10_000, 100.0, 0.25) == pytest.approx(400.0, rel=1e-3)
    assert learner_scaling(1, 100.0, 0.9) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="m=0"):
        learner_scaling(0, 100.0, 0.25)
    with pytest.raises(ValueError, match="server_share=1.5"):
        learner_scaling(2, 100.0, 1.5)


def test_synchronous_learners_split_only_their_part_of_each_env_step():
    """RLlib's synchronous learners: ``1 / (a + b / m)`` env steps/s, ``a`` the seconds per env
    step no learner count shrinks, ``b`` those the learners split; a negative ``b`` (a second
    learner that costs more than it splits) predicts a slower loop with more learners."""
    from analysis.transfer import sync_learner_scaling

    # 1 ms serial, 3 ms split: 250/s with one learner, 400/s with 2, tending to 1000/s
    assert sync_learner_scaling(1, 0.001, 0.003) == pytest.approx(250.0)
    assert sync_learner_scaling(2, 0.001, 0.003) == pytest.approx(400.0)
    assert sync_learner_scaling(10_000, 0.001, 0.003) == pytest.approx(1000.0, rel=1e-3)
    assert sync_learner_scaling(4, 0.002, -0.0004) < sync_learner_scaling(2, 0.002, -0.0004)
    with pytest.raises(ValueError, match="m=0"):
        sync_learner_scaling(0, 0.001, 0.003)
    with pytest.raises(ValueError, match="positive time per env step"):
        sync_learner_scaling(1, 0.001, -0.002)


GORILA_FIT = REPO / "docs" / "data" / "cabs_gorila_learner_rates" / "20261129-060951"
GORILA_HELD_OUT = REPO / "docs" / "data" / "cabs_gorila_learner_rates_held_out" / "20261129-061300"


def test_plan_learners_predicts_more_learners_and_checks_them_on_held_out_runs(plan):
    """``python -m analysis.plan learners``: the counts asked for, predicted from the fit's
    one-learner trials alone, then every count measured (the fit's own and the held-out
    run's) against the same prediction the docs/learners.md region shows."""
    from analysis.load import load_results
    from analysis.study import analyse
    from analysis.transfer import learner_scaling, learner_scaling_check, one_learner_parts

    fit = analyse(load_results(GORILA_FIT))
    x1, u1 = one_learner_parts(fit)
    ok = plan("learners", str(GORILA_FIT), "--held-out", str(GORILA_HELD_OUT))
    assert ok.returncode == 0, ok.stderr
    out = " ".join(ok.stdout.split())
    assert f"one learner applied {x1:.0f} updates/s" in out
    for m in (2, 4, 8):  # the default counts, each predicted
        assert f"│ {m} │ {learner_scaling(m, x1, u1):.0f} │" in out
    rows = learner_scaling_check(fit, [analyse(load_results(GORILA_HELD_OUT))])
    assert list(rows["num_learners"]) == [2, 4] and list(rows["held_out"]) == [False, True]
    for r in rows.itertuples():
        assert (
            f"{r.predicted:.0f} │ {r.measured:.0f} [{r.low:.0f}-{r.high:.0f}] │ {r.error:+.0%}"
            in out
        )
    # the flag spelling is the same command
    assert plan(str(GORILA_FIT), "--learners", "--learner-counts", "3").returncode == 0


SYNC_FIT = REPO / "docs" / "data" / "cabs_rllib_learner_rates" / "20261129-153111"
SYNC_HELD_OUT = REPO / "docs" / "data" / "cabs_rllib_learner_rates_held_out" / "20261129-153413"


def test_plan_learners_predicts_rllibs_synchronous_learners_from_two_counts(plan):
    """``python -m analysis.plan learners`` on a run without GORILA: RLlib's synchronous
    learners' env steps/s split into a serial and a shared part from the fit's 1 and 2
    learners alone, each asked-for count predicted, and the held-out 4 learners checked
    against the same prediction the docs/learners.md region shows."""
    from analysis.load import load_results
    from analysis.study import analyse
    from analysis.transfer import sync_learner_check, sync_learner_parts, sync_learner_scaling

    fit = analyse(load_results(SYNC_FIT))
    algorithm, m1, m2, a, b = sync_learner_parts(fit)
    assert (algorithm, m1, m2) == ("PPO", 1, 2) and a > 0 and b > 0
    ok = plan("learners", str(SYNC_FIT), "--held-out", str(SYNC_HELD_OUT))
    assert ok.returncode == 0, ok.stderr
    out = " ".join(ok.stdout.split())
    assert "PPO's synchronous learners" in out
    for m in (2, 4, 8):
        assert f"│ {m} │ {sync_learner_scaling(m, a, b):,.0f} │" in out
    rows = sync_learner_check(fit, [analyse(load_results(SYNC_HELD_OUT))])
    assert list(rows["num_learners"]) == [4] and list(rows["held_out"]) == [True]
    r = rows.iloc[0]
    assert f"{r.predicted:,.0f} │ {r.measured:,.0f} [{r.low:,.0f}-{r.high:,.0f}] │" in out


def test_plan_learners_says_what_a_negative_shared_part_means(plan):
    """The DQN learners run: 2 learners were slower than 1, so the part the learners share
    solves negative (-1.9 ms per env step). The sentence says what that means rather than
    leaving a negative time "they share" to read as a bug; a positive one reads as before."""
    from analysis.load import load_results
    from analysis.study import analyse
    from analysis.transfer import sync_learner_parts

    dqn = REPO / "docs" / "data" / "cabs_dqn_learners" / "20261129-154257"
    *_, b = sync_learner_parts(analyse(load_results(dqn)))
    assert b < 0
    out = " ".join(plan("learners", str(dqn)).stdout.split())
    assert f"one they share ({b * 1e3:.3f} ms: negative, 2 learners were slower than 1" in out
    assert "more learners predict a slower loop" in out
    ppo = " ".join(plan("learners", str(SYNC_FIT)).stdout.split())
    assert "negative" not in ppo and "one they share (" in ppo


def test_plan_learners_refuses_what_it_cannot_predict_from_in_one_line(plan):
    for argv, words in (
        (["learners", str(ONE_CORE)], "neither a one-learner GORILA trial"),
        (["learners", str(GORILA_FIT), "--learner-counts", "0,2"], "--learner-counts '0,2'"),
        (
            [str(GORILA_FIT), "--learner-counts", "4"],
            "--learner-counts: only with learners (--learners)",
        ),
        (
            ["learners", str(GORILA_FIT), "--held-out", str(GORILA_FIT)],
            "shares seeds 200, 201, 202",
        ),
    ):
        bad = plan(*argv)
        assert bad.returncode == 2 and words in bad.stderr, (argv, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr

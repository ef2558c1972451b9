"""analysis.break_even: the env cost above which a distributed configuration beats the
single-process reference, from a run's measured parts."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from analysis.break_even import Parts, break_even_rows, break_even_s, predict_ttt
from analysis.load import load_results
from analysis.study import analyse

REPO = Path(__file__).resolve().parent.parent
CPU_RUN = REPO / "docs" / "data" / "cabs_cpu_scaling_16cpu" / "20261126-005102"


def parts(lanes: int, startup: float, steps: float, overhead: float) -> Parts:
    return Parts("X", lanes, lanes, startup, steps, overhead, math.nan)


def test_break_even_is_where_the_two_predicted_ttts_meet():
    ref = parts(1, 1.0, 2000, 0.002)  # one process: 2 k env steps, 2 ms of its own per step
    dist = parts(16, 20.0, 10_000, 0.010)  # 16 lanes, 20 s start-up, 5x the env steps
    c = break_even_s(dist, ref)
    assert predict_ttt(dist, c) == pytest.approx(predict_ttt(ref, c))
    assert predict_ttt(dist, 2 * c) < predict_ttt(ref, 2 * c)  # above it, distribution wins
    assert predict_ttt(dist, c / 2) > predict_ttt(ref, c / 2)
    # each lane must need fewer env steps than the reference, or it never wins
    assert break_even_s(parts(4, 1.0, 10_000, 0.0), ref) == math.inf
    # a configuration already faster at zero cost breaks even at 0
    assert break_even_s(parts(16, 0.1, 2000, 0.0), ref) == 0.0


def test_the_model_returns_each_configurations_measured_ttt_at_the_runs_own_cost():
    """Its parts are read from the run at the run's step cost, so there it reproduces each
    configuration's measured TTT (to the part of the trial before its steady rate)."""
    rows = break_even_rows(analyse(load_results(CPU_RUN)), [20.0])
    assert rows["reference"].iloc[0] and len(rows) == 4
    for _, r in rows.iterrows():
        assert r["ttt_at_20ms"] == pytest.approx(r["ttt_s"], rel=0.05), r.to_dict()
    impala = rows[~rows["reference"]].set_index("num_env_runners")
    # more env runners: an earlier break-even, and never for a configuration whose lanes each
    # need more env steps than the reference
    assert impala.loc[15, "break_even_ms"] < impala.loc[8, "break_even_ms"]
    assert impala.loc[4, "steps"] / 4 > rows["steps"].iloc[0]
    assert impala.loc[4, "break_even_ms"] == math.inf


def test_cli_prints_the_break_even_and_refuses_bad_costs(plan):
    ok = plan(str(CPU_RUN), "--break-even", "--env-cost-ms", "40")
    assert ok.returncode == 0, ok.stderr
    assert "Break-even env cost" in ok.stdout and "TTT at" in ok.stdout
    assert "never" in ok.stdout  # IMPALA with 4 env runners
    bad = plan(str(CPU_RUN), "--env-cost-ms", "40")
    assert (
        bad.returncode == 2
        and "--env-cost-ms: only with break-even (--break-even) or transfer (--transfer)"
        in bad.stderr
    )


def test_the_interval_resamples_seeds_and_the_limiting_part_is_the_largest_term():
    """Three seeds whose parts differ give an interval around the prediction from their
    medians; one seed gives none; the limiting part is the largest of the three terms of
    start-up + env steps x (overhead + cost) / lanes."""
    from analysis.break_even import limiting_part, predict_interval

    trials = (
        (40.0, 500.0, 12_000.0, True),
        (44.0, 520.0, 13_000.0, True),
        (38.0, 480.0, 11_000.0, True),
    )
    # 16 lanes at 500 env steps/s measured at 4 ms per step: 28 ms of overhead per step
    p = Parts("IMPALA", 16, 16, 40.0, 12_000.0, 16 / 500.0 - 0.004, 50.0, 0.004, trials)
    lo, hi = predict_interval(p, 0.060, n_resamples=400)
    assert lo < predict_ttt(p, 0.060) < hi
    assert hi - lo > 1.0  # the seeds differ by ~10 %: the interval is not a point
    one_seed = Parts("X", 1, 1, 1.0, 100.0, 0.0, 1.0, 0.0, trials[:1])
    assert all(math.isnan(x) for x in predict_interval(one_seed, 0.06))
    # at no env cost: start-up 40 s against 12 k x 28 ms / 16 = 21 s of overhead
    assert limiting_part(p, 0.0) == ("startup", pytest.approx(40.0 / 61.0))
    # at 500 ms per step the env's own cost (375 s) dominates
    assert limiting_part(p, 0.5)[0] == "env"
    key, share = limiting_part(Parts("X", 1, 1, 0.1, 1000.0, 0.010, 10.0), 0.001)
    assert key == "overhead" and share == pytest.approx(10.0 / (0.1 + 10.0 + 1.0))


BREAK_EVEN = REPO / "docs" / "data" / "cabs_break_even"
FIT_4MS, HELD_30MS, HELD_60MS = (
    BREAK_EVEN / r for r in ("20261126-131202", "20261126-131653", "20261126-132828")
)


def test_held_out_env_costs_are_predicted_from_the_fit_run_alone():
    """The study's runs at 30 and 60 ms per step: each cell's prediction is the fit run's
    parts at that cost, whatever the held-out run measured (its trials made ten times
    slower change the measured side and the error, never the prediction)."""
    import dataclasses

    from analysis.break_even import held_out_rows, measured_parts

    fit = analyse(load_results(FIT_4MS))
    held = [analyse(load_results(HELD_30MS)), analyse(load_results(HELD_60MS))]
    rows = held_out_rows(fit, held)
    assert sorted(set(rows["env_cost_ms"])) == [30.0, 60.0]
    assert len(rows) == 6 and rows["reference"].sum() == 2  # the reference, 8 and 16 per cost
    ref, parts = measured_parts(fit)
    by_n = {p.num_env_runners: p for p in parts}
    for _, r in rows.iterrows():
        p = ref if r["reference"] else by_n[r["num_env_runners"]]
        assert r["predicted_ttt_s"] == pytest.approx(predict_ttt(p, r["env_cost_ms"] / 1000.0))
        assert r["ttt_error"] == pytest.approx(r["predicted_ttt_s"] / r["ttt_s"] - 1.0)
    slow = held[1]
    slow = dataclasses.replace(
        slow,
        summary=slow.summary.assign(ttt_s=slow.summary["ttt_s"] * 10),
        tm=slow.tm.assign(
            steps_to_target=slow.tm["steps_to_target"] * 10, duration_s=slow.tm["duration_s"] * 10
        ),
    )
    again = held_out_rows(fit, [held[0], slow])
    assert again["predicted_ttt_s"].tolist() == pytest.approx(rows["predicted_ttt_s"].tolist())
    at_60 = again["env_cost_ms"] == 60.0
    assert again.loc[at_60, "ttt_s"].tolist() == pytest.approx(
        (rows.loc[at_60, "ttt_s"] * 10).tolist()
    )


def test_cli_compares_the_held_out_costs_and_reads_the_plan_at_a_cost(plan):
    # the 30 and 60 ms runs reuse the fit run's seeds 0-2: refused in one line, exit 2
    refused = plan(str(FIT_4MS), "--break-even", "--held-out", f"{HELD_30MS},{HELD_60MS}")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "shares seeds 0, 1, 2 with" in refused.stderr
    assert "--allow-shared-seeds" in refused.stderr
    proc = plan(
        str(FIT_4MS),
        "--break-even",
        "--held-out",
        f"{HELD_30MS},{HELD_60MS}",
        "--allow-shared-seeds",
        "--env-cost-ms",
        "60",
        "--deadline",
        "100s",
        "--vm",
        "Standard_D4s_v5",
    )
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert out.count("Not on fresh seeds:") == 2 and "shares seeds 0, 1, 2 with the fit run" in out
    assert "Held-out env costs" in out and "predicted to beat one process from ~42 ms" in out
    assert "42.3" in out and "[34.8," in out  # the break-even, its bootstrap interval
    assert "limited by" in out and "Answer at 60 ms per env step (fewest CPUs within" in out
    # each configuration's VMs: 2 CPUs fit one 4-vCPU VM, and a run costs its TTT's share of
    # an hour at the catalogue's price
    assert out.count("(1 x Standard_D4s_v5, $") == 3
    bad = plan(str(FIT_4MS), "--held-out", str(HELD_30MS))
    assert (
        bad.returncode == 2
        and "--held-out: only with break-even (--break-even) or learners (--learners)" in bad.stderr
    )
    bad = plan(str(FIT_4MS), "--break-even", "--allow-shared-seeds")
    assert bad.returncode == 2 and "--allow-shared-seeds: only with --held-out" in bad.stderr


def test_the_report_checks_the_held_out_costs(tmp_path):
    from analysis.report import write_report

    out = write_report(FIT_4MS, tmp_path / "report.html", held_out=[HELD_30MS, HELD_60MS])
    page = out.read_text()
    assert "Break-even env cost" in page and "Break-even checked at other env costs" in page
    # one row per held-out cell: the reference, 8 and 16 env runners at each cost
    assert page.count('<td class="">30</td>') == page.count('<td class="">60</td>') == 3


def test_the_break_even_interval_resamples_both_sides_and_says_never():
    from analysis.break_even import break_even_interval, fmt_break_even_ms

    ref = Parts(
        "R",
        0,
        1,
        0.0,
        1000.0,
        0.001,
        math.nan,
        0.0,
        tuple((0.0, 1000.0, s, True) for s in (900.0, 1000.0, 1100.0)),
    )
    # 8 lanes, 10 s start-up: breaks even at (10 - 0 + S o / 8 - 1) / (1000 - S / 8) s
    fast = Parts(
        "X",
        8,
        8,
        10.0,
        4000.0,
        0.002,
        math.nan,
        0.0,
        tuple(
            (st, 8 / 0.002, s, True) for st, s in ((9.0, 3800.0), (10.0, 4000.0), (11.0, 4200.0))
        ),
    )
    point = break_even_s(fast, ref)
    low, high = break_even_interval(fast, ref)
    assert low <= point <= high and math.isfinite(high)
    # a configuration that needs too many env steps per lane never breaks even
    slow = Parts(
        "Y",
        2,
        2,
        5.0,
        4000.0,
        0.002,
        math.nan,
        0.0,
        tuple((5.0, 1000.0, 4000.0, True) for _ in range(3)),
    )
    assert break_even_interval(slow, ref) == (math.inf, math.inf)
    assert fmt_break_even_ms(math.inf, math.inf, math.inf) == "never"
    assert fmt_break_even_ms(93.4, 31.06, math.inf) == "93.4 [31.1, never]"
    assert fmt_break_even_ms(42.3) == "42.3"
    # fewer than two seeds: no interval
    one = Parts("Z", 8, 8, 10.0, 4000.0, 0.002, math.nan, 0.0, ((10.0, 4000.0, 4000.0, True),))
    assert all(math.isnan(x) for x in break_even_interval(one, ref))


ASYNC_120MS = REPO / "docs" / "data" / "cabs_async_120ms" / "20261127-180442"


def test_an_async_layout_samples_in_as_many_lanes_as_its_concurrent_envs_and_the_plan_names_it(
    plan,
):
    from analysis.break_even import measured_parts

    ref, parts = measured_parts(analyse(load_results(ASYNC_120MS)))
    by_mode = {p.vectorize_mode: p for p in parts}
    assert by_mode["async"].lanes == 64 and by_mode["async"].num_env_runners == 2
    assert by_mode["sync"].lanes == 16 and by_mode["sync"].num_env_runners == 16
    # with 64 lanes, the async layout's model returns its measured TTT at the run's own cost
    assert predict_ttt(by_mode["async"], 0.120) == pytest.approx(by_mode["async"].ttt_s, rel=0.05)
    proc = plan(str(ASYNC_120MS), "--break-even", "--env-cost-ms", "120")
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert (
        "Answer at 120 ms per env step (fastest): IMPALA with 2 env runners x 32 async "
        "envs (2 env runner(s) x 32 env(s) each, async), predicted"
    ) in out
    assert "limited by the env's own cost per step" in out and "it beats one process." in out


def test_each_model_is_a_subcommand_and_the_flags_stay_its_aliases(plan):
    """``plan break-even RUN`` prints what ``plan RUN --break-even`` prints, ``plan holdout
    RUN 8,16`` what ``--holdout 8,16`` does, ``plan fit RUN`` what ``plan RUN`` does; a
    subcommand without its run or counts is refused in one line (exit 2), and each one's help
    lists its own options only."""
    pairs = [
        (
            ("break-even", str(CPU_RUN), "--env-cost-ms", "40"),
            (str(CPU_RUN), "--break-even", "--env-cost-ms", "40"),
        ),
        (("holdout", str(CPU_RUN), "8,16"), (str(CPU_RUN), "--holdout", "8,16")),
        (("fit", str(CPU_RUN), "--deadline", "10m"), (str(CPU_RUN), "--deadline", "10m")),
        (("transfer", str(CPU_RUN), "--cores", "2"), (str(CPU_RUN), "--transfer", "--cores", "2")),
    ]
    for sub, flags in pairs:
        a, b = plan(*sub), plan(*flags)
        assert a.returncode == b.returncode == 0, (sub, a.stderr, b.stderr)
        assert a.stdout == b.stdout and a.stdout.strip(), sub
    for argv, said in (
        (("holdout", str(CPU_RUN)), "holdout: error: the following arguments are required: N"),
        (("break-even", "--env-cost-ms", "40"), "required: RESULTS_DIR"),
        ((str(CPU_RUN), "--holdout"), "--holdout: expected the env runner counts"),
    ):
        bad = plan(*argv)
        assert bad.returncode == 2 and said in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
    transfer, fit = plan("transfer", "--help"), plan("fit", "--help")
    assert transfer.returncode == fit.returncode == 0
    assert "--cores" in transfer.stdout and "--deadline" not in transfer.stdout
    assert "--deadline" in fit.stdout and "--cores" not in fit.stdout

"""Capacity plan: parsing, the VM table, the cost model by hand, recommendations, the CLI."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.fmt import fmt_s, fmt_usd
from analysis.load import load_results
from analysis.metrics import trial_metrics
from analysis.plan import (
    LAUNCHERS,
    Launcher,
    load_vm_sizes,
    main,
    make_plan,
    nodes_for,
    parse_duration,
    parse_money,
    plan_answer,
    run_cost_usd,
    trial_resources,
)
from analysis.stats import summarize_configs
from analysis.synthetic import write_synthetic_results

REQUIRED_SIZES = (
    "Standard_D2_v2",
    "Standard_D4s_v5",
    "Standard_D16s_v5",
    "Standard_NC4as_T4_v3",
    "Standard_NC24ads_A100_v4",
    "Standard_F8s_v2",  # cluster.azure's default VM
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_results(
        tmp_path_factory.mktemp("plan") / "run",
        seeds=4,
        env_runners=(1, 2, 4),
        rng_seed=1,
        with_optuna=False,
    )


@pytest.fixture(scope="module")
def metrics(results: Path):
    tm, _, _ = trial_metrics(load_results(results))
    return tm, summarize_configs(tm)


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("10m", 600.0),
        ("90s", 90.0),
        ("1h30m", 5400.0),
        ("2.5h", 9000.0),
        ("600", 600.0),
        ("1 min", 60.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10q", "-5", "", "m", "0s", "10m5"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="deadline"):
        parse_duration(text)


def test_a_start_up_of_zero_is_accepted_and_a_bad_one_named_by_its_flag(plan) -> None:
    """``--startup 0`` (machines already up) and ``--billing 0`` (continuous) are durations a
    user types; a bad one is named by its own flag, not as a deadline."""
    assert parse_duration("0", "--startup", zero=True) == 0.0
    with pytest.raises(ValueError, match=r"^--startup '-1': must be a duration of 0 or more$"):
        parse_duration("-1", "--startup", zero=True)
    run = str(Path(__file__).resolve().parents[1] / "docs/data/cabs_scaling/20261128-001042")
    out = plan("fit", run, "--startup", "0", "--billing", "0")
    assert out.returncode == 0, out.stderr
    assert "+ 0 s start-up" in out.stdout or "no start-up" in out.stdout, out.stdout[:1500]
    bad = plan("fit", run, "--startup", "5q")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == (
        "python -m analysis.plan: error: --startup '5q': expected a duration like 10m, 90s, "
        "1h30m or seconds"
    ), bad.stderr


@pytest.mark.parametrize(
    "text, usd", [("5usd", 5.0), ("$5", 5.0), ("5.50 USD", 5.5), ("5", 5.0), ("0.25$", 0.25)]
)
def test_parse_money(text: str, usd: float) -> None:
    assert parse_money(text) == usd


@pytest.mark.parametrize("text", ["5eur", "0", "five", "-1usd"])
def test_parse_money_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="budget"):
        parse_money(text)


def test_vm_table_has_required_sizes_with_provenance() -> None:
    vms = load_vm_sizes()
    for name in REQUIRED_SIZES:
        vm = vms[name]
        assert vm.vcpus >= 2 and vm.price_per_hour_usd > 0
        assert vm.price_source and vm.price_date and vm.region
        assert 0 < vm.low_priority_discount < 1 and vm.discount_source
    assert vms["Standard_NC4as_T4_v3"].gpus == 1 and vms["Standard_D4s_v5"].gpus == 0


def test_cost_model_by_hand() -> None:
    d4 = load_vm_sizes()["Standard_D4s_v5"]
    t4 = load_vm_sizes()["Standard_NC4as_T4_v3"]
    assert nodes_for(1 + 3, 0, d4) == 1  # 3 env runners + driver = 4 CPUs = one D4s_v5
    assert nodes_for(1 + 4, 0, d4) == 2
    assert nodes_for(1 + 15, 0, load_vm_sizes()["Standard_D16s_v5"]) == 1
    assert nodes_for(2, 1, d4) is None  # a GPU learner needs a GPU size
    assert nodes_for(2, 1, t4) == 1
    # memory: a D4s_v5 (16 GiB) offers 0.7 x 16 GiB = 11,469 MiB to the trial's processes
    assert nodes_for(2, 0, d4, memory_mib=11_000) == 1
    assert nodes_for(2, 0, d4, memory_mib=12_000) == 2
    assert nodes_for(2, 0, d4, memory_mib=float("nan")) == 1
    assert run_cost_usd(1800.0, 2, d4) == pytest.approx(2 * 0.192 * 0.5)
    assert run_cost_usd(1800.0, 2, d4, low_priority=True) == pytest.approx(
        2 * 0.192 * 0.5 * (1 - d4.low_priority_discount)
    )


def test_plan_recommends_and_flags_extrapolation(metrics) -> None:
    tm, summary = metrics
    plan = make_plan(
        tm, summary, deadline_s=60.0, budget_usd=0.01, n_resamples=50, launcher=LAUNCHERS["none"]
    )
    c = plan.candidates
    assert set(c["vm"]) == set(REQUIRED_SIZES)
    assert plan.cheapest is not None and plan.cheapest["ttt_s"] <= 60.0
    assert plan.cheapest["cost_usd"] == pytest.approx(c[c["ttt_s"] <= 60.0]["cost_usd"].min())
    assert plan.fastest is not None and plan.fastest["cost_usd"] <= 0.01
    # measured N use measurements; N beyond 4 are predictions flagged as extrapolated
    assert not c[c["num_env_runners"] <= 4]["extrapolated"].any()
    assert c[c["num_env_runners"] > 4]["extrapolated"].all()
    assert c["num_env_runners"].max() == 16  # 4 x the largest measured N, then it stops
    assert any("predictions stop at N=16" in n for n in plan.notes)
    assert (c.loc[c["num_env_runners"] == 2, "source"] == "measured").all()
    row = c[(c["num_env_runners"] == 3) & (c["vm"] == "Standard_D4s_v5")].iloc[0]
    # N = 1, 2, 4 determine the USL's 3 parameters exactly: the plan predicts with Amdahl,
    # which the three points can contradict
    assert row["nodes"] == 1 and row["source"] == "Amdahl fit"
    assert row["cost_usd"] == pytest.approx(0.192 * row["ttt_s"] / 3600)
    assert row["ttt_low_s"] < row["ttt_s"] < row["ttt_high_s"]
    assert plan.knee is not None and plan.knee["num_env_runners"] >= 1
    assert c["pareto"].any()


def test_plan_low_priority_and_impossible_deadline(metrics) -> None:
    tm, summary = metrics
    d4 = load_vm_sizes()["Standard_D4s_v5"]
    full = make_plan(tm, summary, vms=[d4], n_resamples=20, launcher=LAUNCHERS["none"])
    cheap = make_plan(
        tm, summary, vms=[d4], low_priority=True, n_resamples=20, launcher=LAUNCHERS["none"]
    )
    assert cheap.candidates["cost_usd"].sum() == pytest.approx(
        full.candidates["cost_usd"].sum() * (1 - d4.low_priority_discount)
    )
    none = make_plan(
        tm, summary, vms=[d4], deadline_s=0.5, n_resamples=20, launcher=LAUNCHERS["none"]
    )
    assert none.cheapest is None
    assert any("no candidate is predicted to reach the target within" in n for n in none.notes)


def test_launcher_start_up_and_billing_are_added_and_stated(metrics) -> None:
    """A run on rented machines pays a start-up and whole billing units (issue: a 13 s run was
    priced as if VMs appeared instantly and billed by the second)."""
    tm, summary = metrics
    d4 = load_vm_sizes()["Standard_D4s_v5"]
    bare = make_plan(tm, summary, vms=[d4], n_resamples=20, launcher=LAUNCHERS["none"])
    aml = make_plan(tm, summary, vms=[d4], n_resamples=20)  # the default: azure-ml
    assert aml.launcher == LAUNCHERS["azure-ml"] and aml.launcher.startup_s == 300.0
    b, a = bare.candidates.iloc[0], aml.candidates.iloc[0]
    assert a["ttt_s"] == pytest.approx(b["ttt_s"] + 300.0)
    assert a["ttt_low_s"] == pytest.approx(b["ttt_low_s"] + 300.0)
    billed = math.ceil((300.0 + b["ttt_s"]) / 60.0) * 60.0  # whole minutes
    assert a["cost_usd"] == pytest.approx(a["nodes"] * d4.price_per_hour_usd * billed / 3600)
    start_up = dict(plan_answer(aml, vms=[d4]).assumptions)["Start-up and billing"]
    assert start_up.startswith(
        "azure-ml: 5.0 min before the first trial, added to every "
        "planned TTT; billed in 60.0 s units"
    )
    # the scaling curve itself is unchanged
    assert aml.knee["num_env_runners"] == bare.knee["num_env_runners"]
    assert aml.knee["speedup"] == pytest.approx(bare.knee["speedup"])
    start_up = dict(plan_answer(bare, vms=[d4]).assumptions)["Start-up and billing"]
    assert start_up.startswith(
        "none: 0.0 s before the first trial, added to every planned TTT; billed continuously"
    )
    mine = Launcher("aks", 30.0, 1.0, "given")
    assert mine.billed_s(2.2) == pytest.approx(33.0) and math.isnan(mine.billed_s(math.nan))


def test_plan_without_fit_plans_measured_points_only(tmp_path: Path) -> None:
    path = write_synthetic_results(
        tmp_path / "one",
        seeds=3,
        env_runners=(2,),
        baseline=("DQN", 2),
        algorithms=("DQN",),
        with_optuna=False,
    )
    tm, _, _ = trial_metrics(load_results(path))
    plan = make_plan(tm, summarize_configs(tm), n_resamples=20)
    assert set(plan.candidates["num_env_runners"]) == {2}
    assert any("no scaling fit" in n for n in plan.notes)


def test_cli_prints_recommendation_with_interval(results: Path, capsys) -> None:
    assert (
        main(
            [
                str(results),
                "--deadline",
                "1m",
                "--budget",
                "1usd",
                "--launcher",
                "none",
                "--vm",
                "Standard_D4s_v5",
                "--vm",
                "Standard_D16s_v5",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Cheapest meeting the deadline 60.0 s" in out and "95%" in out
    assert "Fastest within the budget $1.00" in out and "Knee of the efficiency curve" in out
    assert "Standard_NC4as_T4_v3" not in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["/nonexistent/results"], "no such results directory"),
        (["{results}", "--deadline", "soon"], "deadline 'soon'"),
        (["{results}", "--budget", "5eur"], "budget '5eur'"),
        (["{results}", "--vm", "Standard_X9"], "unknown VM size"),
        (["{results}", "--target", "lots"], "--target 'lots'"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(results: Path, capsys, args, message) -> None:
    args = [a.format(results=results) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_module_entry_point(results: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.plan", str(results), "--deadline", "10x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "python -m analysis.plan: error: --deadline '10x': expected a duration like 10m, 90s, "
        "1h30m or seconds"
    ]


def test_plan_from_a_sample_budget_by_hand() -> None:
    from analysis.plan import steps_plan

    vms = load_vm_sizes()
    d4 = vms["Standard_D4s_v5"]
    plan = steps_plan(1_000_000, 100.0, [d4], startup_s=60.0, candidates=(1, 10))
    one = plan[plan["num_env_runners"] == 1].iloc[0]
    ten = plan[plan["num_env_runners"] == 10].iloc[0]
    assert one["ttt_s"] == pytest.approx(60 + 10_000) and one["nodes"] == 1
    assert ten["ttt_s"] == pytest.approx(60 + 1_000) and ten["nodes"] == 3  # 11 CPUs / 4
    assert ten["cost_usd"] == pytest.approx(3 * d4.price_per_hour_usd * 1_060 / 3600)
    # a GPU learner rules out CPU-only sizes
    assert steps_plan(1e6, 100.0, [d4], learner_gpus=1.0).empty


def test_cli_plan_from_a_sample_budget(results: Path, capsys) -> None:
    assert (
        main(
            [
                str(results),
                "--steps-to-target",
                "5e6",
                "--deadline",
                "1h",
                "--startup",
                "5m",
                "--vm",
                "Standard_D4s_v5",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "5,000,000 env steps to the target" in out and "Predicted, not measured" in out
    assert "Cheapest within the deadline" in out or "No candidate meets the deadline" in out
    assert main([str(results), "--steps-to-target", "-1"]) == 2
    assert "--steps-to-target -1: must be > 0" in capsys.readouterr().err


def test_trial_resources_from_requests_and_peak_rss() -> None:
    """CPUs as the trials asked (fractional env runners), memory a line through peak RSS."""
    tm = pd.DataFrame(
        {
            "num_env_runners": [1, 1, 4, 4, 16],
            "is_reference": [False] * 5,
            "num_cpus": [1.0625, 1.0625, 1.25, 1.25, 2.0],
            "cpus_per_env_runner": [0.0625] * 5,
            "peak_rss_mib": [1225.0, 1235.0, 2843.0, 2853.0, 9232.0],
        }
    )
    r = trial_resources(tm)
    assert r.driver_cpus == pytest.approx(1.0) and r.cpus_per_env_runner == 0.0625
    assert r.cpus(16) == pytest.approx(2.0)
    slope, icpt = np.polyfit(tm["num_env_runners"], tm["peak_rss_mib"], 1)
    assert r.per_env_runner_mib == pytest.approx(slope) and r.base_mib == pytest.approx(icpt)
    assert r.memory_mib(32) == pytest.approx(icpt + 32 * slope)
    assert "MiB" in r.describe()
    # nothing recorded: CPUs only, memory not sized
    old = trial_resources(
        tm.drop(columns=["peak_rss_mib", "cpus_per_env_runner"]).assign(
            num_cpus=[2.0, 2.0, 5.0, 5.0, 17.0]
        )
    )
    assert old.cpus(8) == 9.0 and math.isnan(old.memory_mib(8))
    assert "not sized" in old.describe()


def test_the_plans_first_sentence_answers_with_measured_and_planned_ttt_and_names_the_start_up(
    metrics,
) -> None:
    """One sentence answers the question asked (the fastest; the cheapest within a deadline;
    the fastest within a budget), puts the measured TTT beside the planned one and names the
    assumed start-up that separates them; the commands and the assumptions follow."""
    tm, summary = metrics
    d4 = load_vm_sizes()["Standard_D4s_v5"]
    plan = make_plan(tm, summary, vms=[d4], n_resamples=20)  # azure-ml: 5 min start-up
    answer = plan_answer(plan, "sweeps/cabs_scaling.py", [d4])
    r = plan.fastest  # N = 16 (plural), beyond the measured 1, 2, 4: the measured TTT is named too
    c = plan.candidates
    seen = c[(c["algorithm"] == r["algorithm"]) & (c["source"] == "measured")]
    best = seen.sort_values("ttt_s").iloc[0]
    assert r["extrapolated"] and r["source"] == "Amdahl fit"
    assert answer.sentence.startswith(
        f"Fastest run to the target: {r['algorithm']} with {r['num_env_runners']} env runners "
        f"on {r['nodes']} x Standard_D4s_v5, planned TTT {fmt_s(r['ttt_s'])} = "
        f"{fmt_s(r['ttt_s'] - 300.0)} ["
    ), answer.sentence
    assert (
        "] predicted by the Amdahl fit (extrapolated from "
        f"{fmt_s(best['ttt_s'] - 300.0)} measured here at N="
        f"{best['num_env_runners']}) + 5.0 min start-up assumed for azure-ml; $" in answer.sentence
    ), answer.sentence
    assert answer.sentence.count(". ") == 0 and answer.sentence.endswith(" a run.")
    assert str(answer.commands[0]) == (
        "Run it on Azure ML: python -m cluster.azure submit "
        f"sweeps/cabs_scaling.py --nodes {r['nodes']} --vm "
        "Standard_D4s_v5"
    )
    assert [a for a, _ in answer.assumptions] == [
        "Start-up and billing",
        "vCPU speed",
        "CPUs and memory per run",
        "Extrapolated",
        "Several nodes",
        "Prices",
    ]
    assert not any("start-up" in line for line in answer.details)  # said once, up front
    deadline = make_plan(tm, summary, vms=[d4], n_resamples=20, deadline_s=3600.0)
    assert plan_answer(deadline, vms=[d4]).sentence.startswith(
        "Cheapest run within the 1.00 h deadline: "
    )
    budget = make_plan(tm, summary, vms=[d4], n_resamples=20, budget_usd=5.0)
    assert plan_answer(budget, vms=[d4]).sentence.startswith(
        "Fastest run within the $5.00 budget: "
    )
    measured = make_plan(
        tm, summary, vms=[d4], n_resamples=20, max_env_runners=4, launcher=LAUNCHERS["none"]
    )  # only measured N; no start-up
    m = measured.fastest
    assert plan_answer(measured, vms=[d4]).sentence.endswith(
        f"planned TTT {fmt_s(m['ttt_s'])} = {fmt_s(m['ttt_s'])} "
        f"[{fmt_s(m['ttt_low_s'])}, {fmt_s(m['ttt_high_s'])}] measured here + no start-up (none: TTT only, as "
        f"if machines appeared instantly); {fmt_usd(m['cost_usd'])} a run."
    )
    never = make_plan(tm, summary, vms=[d4], n_resamples=20, deadline_s=1.0)
    text = plan_answer(never, vms=[d4]).sentence
    assert (
        text.startswith(
            "No run is predicted to reach the target within the 1.0 s deadline: the fastest, "
        )
        and "start-up assumed for azure-ml" in text
    )


def test_an_exactly_determined_fit_is_not_planned_with(tmp_path: Path) -> None:
    """Two env runner counts determine Amdahl exactly: the plan predicts no other N from it
    and says why; a third count makes Amdahl testable and the plan predicts with it."""
    two = write_synthetic_results(
        tmp_path / "two", seeds=3, env_runners=(1, 2), algorithms=("DQN",), with_optuna=False
    )
    tm, _, _ = trial_metrics(load_results(two))
    plan = make_plan(tm, summarize_configs(tm), n_resamples=20)
    assert set(plan.candidates["num_env_runners"]) == {1, 2}
    assert any(
        "2 distinct N determine Amdahl exactly; measure at least 3 env runner counts" in n
        for n in plan.notes
    ), plan.notes
    three = write_synthetic_results(
        tmp_path / "three", seeds=3, env_runners=(1, 2, 4), algorithms=("DQN",), with_optuna=False
    )
    tm, _, _ = trial_metrics(load_results(three))
    plan = make_plan(tm, summarize_configs(tm), n_resamples=20)
    assert set(plan.candidates.loc[plan.candidates["source"] != "measured", "source"]) == {
        "Amdahl fit"
    }


def test_the_reference_is_planned_at_its_point_without_a_scaling_model(analysed_runs) -> None:
    """The single-process reference (SB3-DQN in the published Cabs study) is one process with
    no env runners: the plan costs it at its measured point on one CPU and asks it for no
    scaling fit, knee or more env runner counts; an RLlib algorithm's N left out of its fit
    says why (sampling in the driver, or a median TTT not reached)."""
    from analysis.plan_text import plan_answer, plan_text

    root = Path(__file__).resolve().parents[1]
    data = analysed_runs(root / "docs" / "data" / "cabs_scaling" / "20261128-001042")
    plan = data.plan
    ref = plan.candidates[plan.candidates["algorithm"] == "SB3-DQN"]
    assert set(ref["num_env_runners"]) == {0} and set(ref["cpus"]) == {1.0}
    assert plan.references == ("SB3-DQN",)
    lines = plan_text(plan)
    ref_lines = [x for x in lines if "SB3-DQN" in x and not x.startswith(("Cheapest", "Fastest"))]
    assert ref_lines == [
        "Scaling model for SB3-DQN: none (the single-process reference)",
        "SB3-DQN: a run asks for 1 CPU, one process (the single-process reference)",
        "Note: SB3-DQN is the single-process reference: no env runners, so no knee",
    ], ref_lines
    assert not any("measure more env runner counts" in x and "SB3" in x for x in lines)
    # --deadline/--budget name the reference "in one process", not "with 0 env runner(s)"
    timed = make_plan(data.tm, data.summary, deadline_s=600.0, models=data.models, n_resamples=20)
    (cheapest,) = [x for x in plan_text(timed) if x.startswith("Cheapest")]
    assert cheapest.startswith(
        "Cheapest meeting the deadline 10.0 min: SB3-DQN in one process on 1 x "
    )
    assert all("(0 env runners, or" not in x for x in lines)  # each N says its own reason
    # the fastest run is the reference: one process, so no cluster command (the sweep's
    # commands would run the whole study); when no run meets a 1 s deadline, the fastest
    # named is still the reference, in one process, with no cluster command
    late = make_plan(data.tm, data.summary, deadline_s=1.0, models=data.models, n_resamples=20)
    for p, start in (
        (
            plan,
            "Fastest run to the target: SB3-DQN, the single-process reference (one process, no "
            "Ray cluster to launch), on 1 x ",
        ),
        (
            late,
            "No run is predicted to reach the target within the 1.0 s deadline: the fastest, "
            "SB3-DQN in one process on 1 x ",
        ),
    ):
        answer = plan_answer(p, "sweeps/cabs_scaling.py")
        assert answer.sentence.startswith(start), answer.sentence
        assert answer.commands == []
        assert dict(answer.assumptions)["Extrapolated"] == "nothing: its one process was measured"
    # the report's plan cards: "one process", not "0 env runner(s)"
    from analysis.report import _runners

    assert _runners(plan, plan.fastest) == "one process"
    rllib = plan.candidates[plan.candidates["algorithm"] == "IMPALA"].iloc[0].to_dict()
    assert _runners(plan, rllib) == f"{rllib['num_env_runners']} env runner(s)"


def test_a_terminal_table_wraps_a_cell_between_its_value_and_its_interval_s_ends_only() -> None:
    """The plan's rich tables: in a narrow terminal a cell with an interval wraps between the
    value and the interval's two ends, never inside a number and its unit ("7.4" over "s]");
    the other cells wrap as rich wraps words."""

    from rich.console import Console

    from analysis.plan import _print_rows

    # 10 columns for the TTT: rich's own word wrap would give "6.0 s [5.8" over "s, 7.4 s]"
    console = Console(width=39, record=True, color_system=None)
    _print_rows(
        console, ["configuration", "TTT"], [["IMPALA, 16 env runners", "6.0 s [5.8 s, 7.4 s]"]]
    )
    rows = [line.split("│")[1:-1] for line in console.export_text().splitlines()]
    ttt = [r[1].strip() for r in rows if len(r) == 2 and r[1].strip()]
    assert ttt == ["6.0 s", "[5.8 s,", "7.4 s]"], ttt


def test_the_commands_judge_the_trials_the_study_judges(analysed_runs, capsys) -> None:
    """``analysis.plan`` and ``analysis.batch_size`` read a run with a confirmation stage as
    the report and the published pages do (its fresh seeds, the search's trials left out),
    so the command's answer and check are the study's, to the digit."""
    from analysis.batch_size import check_lines
    from analysis.batch_size import main as batch_main
    from analysis.plan import main as plan_main
    from analysis.plan_text import plan_answer, sweep_file_of

    run = Path(__file__).resolve().parents[1] / "docs" / "data" / "cabs_scaling" / "20261128-001042"
    data = analysed_runs(run)
    assert (data.res.trials["stage"] == "search").any()  # the search's trials are there
    assert plan_main([str(run)]) == 0
    out = capsys.readouterr().out
    answer = plan_answer(data.plan, sweep_file_of(data.res.environment))
    assert answer.sentence in out, out[:2000]
    assert batch_main([str(run)]) == 0
    out = capsys.readouterr().out
    assert data.batch is not None
    assert out.splitlines()[1:] == check_lines(data.batch)


def test_brackets_in_a_path_or_a_line_are_printed_not_taken_as_markup(
    results: Path, tmp_path: Path, plan
) -> None:
    """The terminal's rich console reads ``[word]`` as a style: a results folder named
    ``run[abc]`` and a line's ``[extrapolated]`` are printed as they are."""
    import shutil

    from rich.console import Console

    from analysis.plan import _say

    run = tmp_path / "run[abc]"
    shutil.copytree(results, run)
    out = plan("fit", str(run), "--vm", "Standard_D4s_v5")
    assert out.returncode == 0, out.stderr
    assert f"Capacity plan for {run} -- target" in out.stdout, out.stdout[:300]
    console = Console(width=60, record=True, color_system=None)
    _say(console, "DQN with 16 env runners on 2 x D4: TTT 5.3 min [extrapolated]")
    assert (
        console.export_text().split()
        == "DQN with 16 env runners on 2 x D4: TTT 5.3 min [extrapolated]".split()
    )


def test_holding_out_a_count_the_run_never_measured_is_bad_input(plan) -> None:
    """``holdout RUN 3`` on a run of N = 1, 2, 4, 8 checks nothing: one line and exit 2, not
    an empty check that exits 0."""
    run = str(Path(__file__).resolve().parents[1] / "docs/data/cabs_scaling/20261128-001042")
    out = plan("holdout", run, "3")
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert out.stderr.strip() == (
        "python -m analysis.plan: error: holdout N=3: no algorithm measured it (measured "
        "N=1,2,4,8); hold out counts the run measured"
    ), out.stderr
    assert plan("holdout", run, "8").returncode == 0

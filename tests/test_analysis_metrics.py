"""Per-trial time-to-target recomputed from progress.parquet, against hand-computed cases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.load import ResultsError, load_results
from analysis.metrics import first_crossing, metric_column, parse_target, trial_metrics
from analysis.synthetic import write_synthetic_results

SPEC = {
    "name": "hand",
    "env": "ContosoCabs-v0",
    "algorithms": ["DQN"],
    "target": {
        "metric": "episode_return_mean",
        "value": 10.0,
        "fraction_of_optimal": None,
        "optimal_return": 20.0,
    },
    "budget": {"time_s": 60.0, "env_steps": None},
    "baseline": {"algorithm": "DQN", "num_env_runners": 1},
}


def _trial(tid: str, status: str, elapsed: float, **kw) -> dict:
    row = {
        "trial_id": tid,
        "config_id": kw.pop("config_id", "DQN-a"),
        "is_baseline": True,
        "algorithm": "DQN",
        "num_env_runners": 1,
        "seed": kw.pop("seed", 0),
        "status": status,
        "time_to_target_s": math.nan,
        "steps_to_target": math.nan,
        "budget_s": 60.0,
        "elapsed_s": elapsed,
        "target_metric": "episode_return_mean",
        "target_value": 10.0,
        "env_steps_per_s": math.nan,
        "num_cpus": 2.0,
        "num_gpus": 0.0,
        "oversubscribed": False,
        "error": "",
    }
    row.update(kw)
    return row


def _curve(tid: str, times, steps, returns) -> list[dict]:
    return [
        {
            "trial_id": tid,
            "iteration": i + 1,
            "wall_time_s": t,
            "env_steps": s,
            "episodes": s // 100,
            "episode_return_mean": r,
            "learner_updates": float(i),
            "env_steps_per_s": 100.0,
        }
        for i, (t, s, r) in enumerate(zip(times, steps, returns, strict=True))
    ]


def _write(path: Path, trials: list[dict], progress: list[dict], spec: dict = SPEC) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(trials).to_parquet(path / "trials.parquet")
    pd.DataFrame(progress).to_parquet(path / "progress.parquet")
    (path / "spec.json").write_text(json.dumps(spec))
    return path


@pytest.fixture
def hand_dir(tmp_path: Path) -> Path:
    trials = [
        # crosses exactly at the target (a tie counts) at the 4th iteration: t=20 s, 400 steps
        _trial("a", "reached", 20.0, time_to_target_s=20.0, steps_to_target=400.0),
        # no episode for two iterations (NaN), then above the target at t=9 s
        _trial("b", "reached", 9.0, seed=1, time_to_target_s=9.0, steps_to_target=300.0),
        # never reaches it: censored at the 60 s it ran
        _trial("c", "censored", 60.0, seed=2),
        # crashed before its first episode: error, no return at all
        _trial("d", "error", 4.0, seed=3, error="RayActorError: died"),
    ]
    progress = (
        _curve("a", [5, 10, 15, 20], [100, 200, 300, 400], [1.0, 4.0, 9.9, 10.0])
        + _curve("b", [3, 6, 9], [100, 200, 300], [np.nan, np.nan, 12.0])
        + _curve("c", [20, 40, 59], [1000, 2000, 2950], [2.0, 5.0, 7.0])
        + _curve("d", [4], [50], [np.nan])
    )
    return _write(tmp_path / "run", trials, progress)


def test_crossing_times_ties_no_episodes_and_censoring(hand_dir: Path) -> None:
    tm, target, warns = trial_metrics(load_results(hand_dir))
    tm = tm.set_index("trial_id")
    assert target.value == 10.0 and target.source == "spec.json" and not target.overridden
    assert tm.at["a", "status"] == "reached"
    assert tm.at["a", "time_to_target_s"] == 20.0 and tm.at["a", "steps_to_target"] == 400.0
    assert tm.at["b", "time_to_target_s"] == 9.0 and tm.at["b", "steps_to_target"] == 300.0
    assert tm.at["c", "status"] == "censored" and not tm.at["c", "reached"]
    assert math.isnan(tm.at["c", "time_to_target_s"])
    assert tm.at["c", "duration_s"] == 60.0  # censored at the time it ran, not the budget
    assert tm.at["c", "best_return"] == 7.0 and tm.at["c", "final_return"] == 7.0
    assert tm.at["d", "status"] == "error" and not tm.at["d", "has_episodes"]
    assert math.isnan(tm.at["d", "best_return"])
    assert any("no episode" in w for w in warns)


def test_target_override_lower_and_higher(hand_dir: Path) -> None:
    res = load_results(hand_dir)
    low, tgt, _ = trial_metrics(res, target=5.0)
    low = low.set_index("trial_id")
    assert tgt.overridden and tgt.source == "--target"
    assert low.at["a", "time_to_target_s"] == 15.0  # 9.9 >= 5 at the 3rd iteration
    assert low.at["c", "time_to_target_s"] == 40.0  # the censored trial now reaches it
    high, _, warns = trial_metrics(res, target=11.0)
    high = high.set_index("trial_id")
    assert high.at["a", "status"] == "censored" and high.at["a", "duration_s"] == 20.0
    assert high.at["b", "status"] == "reached"  # 12 >= 11
    assert any("above the one the sweep ran with" in w for w in warns)
    pct, tgt, _ = trial_metrics(res, target="45%")  # 45 % of the optimum 20 = 9
    assert tgt.value == pytest.approx(9.0)
    assert pct.set_index("trial_id").at["a", "time_to_target_s"] == 15.0


def test_parse_target_errors() -> None:
    assert parse_target("150", {}) == 150.0
    assert parse_target("95%", {"target": {"optimal_return": 200.0}}) == pytest.approx(190.0)
    with pytest.raises(ValueError, match="optimal return"):
        parse_target("95%", {"target": {}})
    with pytest.raises(ValueError, match="expected a number"):
        parse_target("high", {})
    with pytest.raises(ValueError, match="finite"):
        parse_target("inf", {})


def test_first_crossing_and_metric_column() -> None:
    t = np.array([1.0, 2.0, 3.0])
    s = np.array([10.0, 20.0, 30.0])
    assert first_crossing(t, s, np.array([np.nan, 5.0, 5.0]), 5.0) == (2.0, 20.0, 1)
    ttt, steps, i = first_crossing(t, s, np.array([np.nan, np.nan, np.nan]), 0.0)
    assert math.isnan(ttt) and math.isnan(steps) and i == -1
    assert metric_column("env_runners/episode_return_mean") == "episode_return_mean"
    assert metric_column("custom/score") == "target_metric_value"


def test_target_metric_value_column_wins_when_recorded(tmp_path: Path) -> None:
    """The runner records the target metric (as the algorithm defines it) on every row."""
    prog = _curve("a", [5, 10, 15], [100, 200, 300], [11.0, 11.0, 11.0])
    for row, value in zip(prog, [1.0, 10.5, 12.0], strict=True):
        row["target_metric_value"] = value
    path = _write(tmp_path / "tmv", [_trial("a", "reached", 10.0)], prog)
    tm, target, _ = trial_metrics(load_results(path))
    assert target.column == "target_metric_value"
    assert tm.loc[0, "time_to_target_s"] == 10.0  # not 5.0 from episode_return_mean
    assert tm.loc[0, "best_return"] == 12.0


def test_single_seed_and_missing_progress(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "one",
        [_trial("a", "reached", 20.0, time_to_target_s=20.0, steps_to_target=400.0)],
        [],
    )
    (path / "progress.parquet").unlink()
    res = load_results(path)
    assert any("progress.parquet is missing" in w for w in res.warnings)
    tm, _, _ = trial_metrics(res)
    assert tm.loc[0, "time_to_target_s"] == 20.0  # taken from trials.parquet


def test_recomputed_ttt_matches_the_runner_on_synthetic_results(tmp_path: Path) -> None:
    path = write_synthetic_results(
        tmp_path / "syn", seeds=2, env_runners=(1, 2), censor=0.5, with_optuna=False
    )
    res = load_results(path)
    tm, _, warns = trial_metrics(res)
    merged = tm.merge(
        res.trials[["trial_id", "status", "time_to_target_s"]],
        on="trial_id",
        suffixes=("", "_runner"),
    )
    assert (merged["status"] == merged["status_runner"]).all()
    reached = merged[merged["reached"]]
    assert len(reached) and np.allclose(
        reached["time_to_target_s"], reached["time_to_target_s_runner"]
    )
    assert not any("never cross" in w for w in warns)


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: None, "no such results directory"),
        (lambda p: p.mkdir(), "no trials.parquet"),
        (
            lambda p: (
                p.mkdir(),
                pd.DataFrame({"trial_id": ["x"]}).to_parquet(p / "trials.parquet"),
            ),
            "lacks column",
        ),
        (
            lambda p: (
                p.mkdir(),
                pd.DataFrame([_trial("x", "finished", 1.0)]).to_parquet(p / "trials.parquet"),
            ),
            "unknown status",
        ),
        (
            lambda p: (p.mkdir(), (p / "trials.parquet").write_text("not parquet")),
            "cannot read parquet",
        ),
    ],
)
def test_load_errors_are_one_line(tmp_path: Path, setup, message: str) -> None:
    path = tmp_path / "bad"
    setup(path)
    with pytest.raises(ResultsError, match=message) as exc:
        load_results(path)
    assert "\n" not in str(exc.value)


def test_a_sweeps_folder_given_for_a_run_names_its_latest_run(tmp_path: Path, in_process) -> None:
    """results/<sweep>/ instead of results/<sweep>/<run_id>/: the error names a run to give."""
    sweep = tmp_path / "cabs"
    for run_id in ("20261201-090000", "20261202-090000"):
        (sweep / run_id).mkdir(parents=True)
        pd.DataFrame([_trial("x", "reached", 1.0)]).to_parquet(sweep / run_id / "trials.parquet")
    (sweep / "notes").mkdir()  # not a run
    with pytest.raises(ResultsError) as exc:
        load_results(sweep)
    assert str(exc.value) == (
        f"{sweep}: a sweep's folder with 2 run(s), not one run: give one, e.g. the latest, "
        f"{sweep / '20261202-090000'} (python -m analysis.history reads them all)"
    )
    from analysis.report import main as report_main

    proc = in_process(report_main, str(sweep))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert not list(sweep.rglob("report.html"))

"""sweeps.engine.rundir.schema: one results schema with a version in every parquet file, checked on load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis.synthetic import write_synthetic_results
from sweeps.engine.rundir.schema import (
    PROGRESS_COLUMNS,
    SCHEMA_VERSION,
    TRIAL_COLUMNS,
    VERSION_KEY,
    SchemaError,
    read_parquet,
    schema_version,
    write_parquet,
)

DOCS_RUN = Path(__file__).resolve().parents[1] / "docs/data/cabs_latency_scaling/20261123-023125"
KINDS = {"str": "object", "int": "int64", "float": "float64", "bool": "bool"}


def _with_version(src: Path, dst: Path, version: bytes | None) -> None:
    table = pq.read_table(src)
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != VERSION_KEY}
    if version is not None:
        meta[VERSION_KEY] = version
    pq.write_table(table.replace_schema_metadata(meta), dst)


def test_write_records_the_version_and_read_checks_it(tmp_path: Path) -> None:
    df = pd.DataFrame({"trial_id": ["a", "b"], "seed": [0, 1]})
    write_parquet(df, tmp_path / "t.parquet")
    assert (
        pq.read_schema(tmp_path / "t.parquet").metadata[VERSION_KEY] == str(SCHEMA_VERSION).encode()
    )
    assert schema_version(tmp_path / "t.parquet") == SCHEMA_VERSION
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "t.parquet"), df)
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed
    # written before versions were recorded: the version-1 layout
    _with_version(tmp_path / "t.parquet", tmp_path / "old.parquet", None)
    assert schema_version(tmp_path / "old.parquet") == 1
    _with_version(tmp_path / "t.parquet", tmp_path / "new.parquet", b"99")
    with pytest.raises(
        SchemaError, match=r"schema version 99, but this rl-scaling reads version 1"
    ):
        read_parquet(tmp_path / "new.parquet")
    _with_version(tmp_path / "t.parquet", tmp_path / "bad.parquet", b"x")
    with pytest.raises(SchemaError, match="not an integer"):
        schema_version(tmp_path / "bad.parquet")


@pytest.mark.parametrize("source", ["synthetic", "recorded"])
def test_the_schema_is_what_the_writers_write(tmp_path: Path, source: str) -> None:
    """Column names and dtypes of the synthetic generator's files and of a run the recorder
    wrote (docs/data) are the schema's: one description of the results, not four."""
    run = (
        write_synthetic_results(
            tmp_path / "run", seeds=2, env_runners=(1, 2), rng_seed=0, with_optuna=False
        )
        if source == "synthetic"
        else DOCS_RUN
    )
    for name, columns in (
        ("trials.parquet", TRIAL_COLUMNS),
        ("progress.parquet", PROGRESS_COLUMNS),
    ):
        df = pd.read_parquet(run / name)
        unknown = [c for c in df.columns if c not in columns and not c.startswith("param_")]
        assert not unknown, (name, unknown)
        for col in df.columns:
            if col in columns:
                assert str(df[col].dtype) == KINDS[columns[col]], (name, col, df[col].dtype)
        if source == "synthetic":
            assert schema_version(run / name) == SCHEMA_VERSION


def test_another_version_is_one_line_from_the_analysis_cli(tmp_path: Path) -> None:
    run = write_synthetic_results(
        tmp_path / "run", seeds=2, env_runners=(1, 2), rng_seed=0, with_optuna=False
    )
    _with_version(run / "trials.parquet", run / "trials.parquet", b"2")
    for module in ("analysis.report", "analysis.plan"):
        proc = subprocess.run(
            [sys.executable, "-m", module, str(run)], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 2, (module, proc.stdout[-500:], proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "trials.parquet: results schema version 2" in lines[0], lines[0]


def test_resume_refuses_another_version_before_ray_starts(tmp_path: Path) -> None:
    from sweeps.engine.rundir import check_resume_dir
    from sweeps.engine.sweep_file import SpecError

    run = write_synthetic_results(
        tmp_path / "run", seeds=2, env_runners=(1, 2), rng_seed=0, with_optuna=False
    )
    (run / "tune").mkdir()
    (run / "tune" / "tuner.pkl").write_bytes(b"state")
    (run / "environment.json").write_text(json.dumps({}))
    check_resume_dir(run, "sweep.py")  # this version: resumable
    _with_version(run / "progress.parquet", run / "progress.parquet", b"3")
    with pytest.raises(SpecError, match=r"progress.parquet: results schema version 3"):
        check_resume_dir(run, "sweep.py")


def test_ttt_resolution_is_the_gap_in_which_the_crossing_happened() -> None:
    """The recorder and the analysis both record how finely a TTT was measured: the seconds
    between the evaluation that crossed the target and the one before (the trial's start for
    the first); a recomputation for another target gets its own."""
    import math

    from sweeps.engine.record import trial_row
    from sweeps.engine.rundir.schema import first_crossing, ttt_resolution

    times, steps, values = [1.5, 2.6, 3.4, 4.9], [100, 200, 300, 400], [0.1, math.nan, 0.5, 0.9]
    _, _, i = first_crossing(times, steps, values, 0.5)
    assert i == 2 and ttt_resolution(times, i) == pytest.approx(0.8)
    assert ttt_resolution(times, 0) == pytest.approx(1.5)
    assert math.isnan(ttt_resolution(times, -1))
    progress = [
        {
            "wall_time_s": t,
            "env_steps": n,
            "target_metric_value": v,
            "learner_updates": 1.0,
            "eval_time_s": 0.0,
        }
        for t, n, v in zip(times, steps, values, strict=True)
    ]
    row = trial_row(
        "t1",
        {"algorithm": "DQN", "num_env_runners": 1},
        progress,
        {},
        {"metric": "evaluation", "value": 0.5},
        {"time_s": 10},
        None,
    )
    assert row["status"] == "reached" and row["time_to_target_s"] == 3.4
    assert row["ttt_resolution_s"] == pytest.approx(0.8)
    censored = trial_row(
        "t2",
        {"algorithm": "DQN", "num_env_runners": 1},
        progress,
        {},
        {"metric": "evaluation", "value": 2.0},
        {"time_s": 10},
        None,
    )
    assert math.isnan(censored["ttt_resolution_s"])


def test_a_crossing_after_the_budget_is_censored_not_reached(tmp_path: Path) -> None:
    """An iteration that overran the trial's time budget (behind a hung env step, say) and
    crossed the target at its end does not make the trial reached: the recorder and the
    analysis both censor it at the budget."""
    import math

    from analysis.load import load_results
    from analysis.metrics import trial_metrics
    from sweeps.engine.record import trial_row
    from sweeps.engine.rundir.schema import first_crossing

    times, steps, values = [1.0, 2.0, 247.1], [100, 200, 300], [0.1, 0.2, 0.9]
    assert first_crossing(times, steps, values, 0.5)[2] == 2
    assert first_crossing(times, steps, values, 0.5, 150.0)[2] == -1
    assert first_crossing(times, steps, values, 0.5, math.nan)[2] == 2  # no time budget
    progress = [
        {
            "wall_time_s": t,
            "env_steps": n,
            "target_metric_value": v,
            "learner_updates": 1.0,
            "eval_time_s": 0.0,
        }
        for t, n, v in zip(times, steps, values, strict=True)
    ]
    row = trial_row(
        "t1",
        {"algorithm": "PPO", "num_env_runners": 1},
        progress,
        {},
        {"metric": "evaluation", "value": 0.5},
        {"time_s": 150},
        None,
    )
    assert row["status"] == "censored" and row["censor_reason"] == "budget"
    assert math.isnan(row["time_to_target_s"])
    # the analysis of a run whose row still says reached (written before this rule) agrees
    run = write_synthetic_results(
        tmp_path / "run", seeds=2, env_runners=(1,), rng_seed=0, with_optuna=False
    )
    trials = pd.read_parquet(run / "trials.parquet")
    tid = trials[trials.status == "reached"].trial_id.iloc[0]
    trials.loc[trials.trial_id == tid, "budget_s"] = (
        float(trials.loc[trials.trial_id == tid, "time_to_target_s"].iloc[0]) - 1e-3
    )
    trials.to_parquet(run / "trials.parquet")
    tm, _, _ = trial_metrics(load_results(run))
    assert tm.set_index("trial_id").loc[tid, "status"] == "censored"


def test_the_analysis_recomputes_the_resolution_with_the_target(tmp_path: Path) -> None:
    from analysis.load import load_results
    from analysis.metrics import trial_metrics
    from analysis.stats import summarize_configs

    run = write_synthetic_results(
        tmp_path / "run", seeds=3, env_runners=(1, 2), rng_seed=0, with_optuna=False
    )
    trials = pd.read_parquet(run / "trials.parquet")
    reached = trials[trials.status == "reached"]
    assert (reached.ttt_resolution_s > 0).all() and trials.ttt_resolution_s.notna().any()
    tm, _, _ = trial_metrics(load_results(run))
    ok = tm[tm.reached]
    pd.testing.assert_series_equal(
        ok.set_index("trial_id").ttt_resolution_s,
        reached.set_index("trial_id").loc[ok.trial_id].ttt_resolution_s,
        check_names=False,
    )
    lower, _, _ = trial_metrics(load_results(run), "50%")  # crossed earlier, elsewhere
    assert lower[lower.reached].ttt_resolution_s.notna().all()
    summary = summarize_configs(tm)
    assert summary["ttt_resolution_s"].notna().any()

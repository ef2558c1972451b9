"""Results that survive kills, concurrent runs and edited sweep files (no Ray needed: each of
these is decided before Ray starts, or inside the recorder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from sweeps.engine.record import ResultsRecorder

# Start times of fake runs (oldest last): the first day of a year, the next, the day before;
# run ids as sweeps.run names them.
_DAYS = [datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=d) for d in (0, 1, -1)]
STARTED = [d.isoformat().replace("+00:00", "Z") for d in _DAYS]
RUN_ID = [d.strftime("%Y%m%d-%H%M%S") for d in _DAYS]


def _sweep(tmp_path: Path, budget: float = 10.0) -> Path:
    path = tmp_path / "rel.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="rel", env="CartPole-v1", algorithms=["PPO"],
                      search_space={{"num_env_runners": choice([0])}},
                      target=Target(value=100.0), budget=Budget(time_s={budget}),
                      search=Search(sampler="grid", num_samples=1, seeds=1),
                      baseline={{"algorithm": "PPO", "num_env_runners": 0}})
        """)
    )
    return path


def _fake_run(results: Path, name: str, started_at: str, spec: dict) -> Path:
    run = results / "rel" / name
    (run / "tune").mkdir(parents=True)
    (run / "environment.json").write_text(json.dumps({"started_at": started_at}))
    (run / "spec.json").write_text(json.dumps(spec))
    return run


def _spec_of(path: Path, results: Path) -> dict:
    from sweeps.engine.sweep_file import load_sweep, resolved_spec, sweep_target

    sweep = load_sweep(path)
    return resolved_spec(sweep, sweep_target(sweep), str(path))


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sweeps.run", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_resume_refuses_an_edited_sweep_file_in_one_line(tmp_path):
    results = tmp_path / "results"
    path = _sweep(tmp_path, budget=10.0)
    run = _fake_run(results, RUN_ID[0], STARTED[0], _spec_of(path, results))
    path.write_text(path.read_text().replace("time_s=10.0", "time_s=20.0"))  # the user edits it
    proc = _run(path, "--results", results, "--resume")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert (
        "--resume: the sweep changed since run 20260101-000000 started: budget.time_s "
        "(10.0 -> 20.0)" in lines[0]
    )
    assert json.loads((run / "spec.json").read_text())["budget"]["time_s"] == 10.0  # kept


def test_a_second_process_on_one_run_directory_gets_one_line_naming_the_holder(tmp_path):
    from sweeps.engine.rundir import lock_run_dir

    results = tmp_path / "results"
    path = _sweep(tmp_path)
    run = _fake_run(results, RUN_ID[0], STARTED[0], _spec_of(path, results))
    lock = lock_run_dir(run, "test")  # this process is the running sweep
    try:
        proc = _run(path, "--results", results, "--resume")
    finally:
        lock.release()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"is in use by another sweeps.run (pid {os.getpid()})" in proc.stderr


@pytest.mark.parametrize(
    "damage", ["no_tune_state", "empty_search_state", "corrupt_trials", "corrupt_environment"]
)
def test_resume_refuses_a_damaged_run_directory_in_one_line(tmp_path, damage):
    """Decided before Ray starts: exit 2, one line naming the damaged file; nothing written."""
    results = tmp_path / "results"
    path = _sweep(tmp_path)
    run = _fake_run(results, RUN_ID[0], STARTED[0], _spec_of(path, results))
    if damage != "no_tune_state":
        (run / "tune" / "tuner.pkl").write_bytes(b"state")
    if damage == "empty_search_state":  # what a kill during Tune's copy left before
        (run / "tune" / "search_gen_state-2026-01-01_00-00-00.json").write_bytes(b"\x80state")
        (run / "tune" / "search_gen_state-2026-01-01_00-00-09.json").write_bytes(b"")
    if damage == "corrupt_trials":
        (run / "trials.parquet").write_bytes(b"PAR1 cut short by a full disk")
    if damage == "corrupt_environment":
        (run / "environment.json").write_text('{"started_at": "' + STARTED[0][:15])

    def files():  # the run's files, less the lock sweeps.run takes before it checks anything
        return sorted(p.name for p in run.rglob("*") if not p.name.startswith(".lock"))

    before = files()
    proc = _run(path, "--results", results, "--resume")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    named = {
        "no_tune_state": "tune/tuner.pkl: missing",
        "empty_search_state": "tune/search_gen_state-2026-01-01_00-00-09.json: empty",
        "corrupt_trials": "trials.parquet: not a readable Parquet file",
        "corrupt_environment": "environment.json: missing or not JSON",
    }[damage]
    assert f"run {run} cannot be resumed: {named}" in lines[0], lines[0]
    assert files() == before


def test_a_resume_dry_run_names_the_run_it_would_continue_and_claims_nothing(tmp_path):
    """``--resume --dry-run``: the same checks as ``--resume`` (the run it would take, the
    sweep file unchanged, the run directory whole), then the dry run; no lock, no file."""
    results = tmp_path / "results"
    path = _sweep(tmp_path)
    run = _fake_run(results, RUN_ID[0], STARTED[0], _spec_of(path, results))
    (run / "tune" / "tuner.pkl").write_bytes(b"state")
    before = sorted(p.name for p in results.rglob("*"))
    proc = _run(path, "--results", results, "--resume", "--dry-run")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"--resume would continue {run} (0 trials recorded)" in proc.stdout.splitlines()
    assert "First trials" in proc.stdout
    assert sorted(p.name for p in results.rglob("*")) == before
    path.write_text(path.read_text().replace("time_s=10.0", "time_s=20.0"))
    edited = _run(path, "--results", results, "--resume", "--dry-run")
    assert edited.returncode == 2 and len(edited.stderr.strip().splitlines()) == 1, edited.stderr
    assert "--resume: the sweep changed since run 20260101-000000 started" in edited.stderr


def test_resume_takes_the_newest_run_by_recorded_start_not_by_name(tmp_path):
    from sweeps.engine.rundir import run_dir_for
    from sweeps.engine.sweep_file import load_sweep

    results = tmp_path / "results"
    path = _sweep(tmp_path)
    spec = _spec_of(path, results)
    _fake_run(results, RUN_ID[0], STARTED[0], spec)
    newest = _fake_run(results, RUN_ID[1], STARTED[1], spec)
    _fake_run(results, "zz-backup-copy", STARTED[-1], spec)
    assert run_dir_for(results, load_sweep(path).name, True, "t") == newest


def test_new_run_ids_are_unique_within_one_second(tmp_path):
    from sweeps.engine.rundir import run_dir_for
    from sweeps.engine.sweep_file import load_sweep

    sweep = load_sweep(_sweep(tmp_path))
    dirs = {run_dir_for(tmp_path, sweep.name, False, "t") for _ in range(5)}
    assert len(dirs) == 5 and all(d.is_dir() for d in dirs)


class _Trial:
    def __init__(self, tid: str):
        self.trial_id = tid
        self.config = {"algorithm": "PPO", "num_env_runners": 0, "seed": 0, "config_id": "c"}
        self.last_result = {"num_cpus": 1.0, "num_gpus": 0.0, "objective": 1.0}


def _result(i: int) -> dict:
    return {
        "training_iteration": i,
        "wall_time_s": float(i),
        "env_steps": 100 * i,
        "episodes": i,
        "episode_return_mean": 10.0 * i,
        "evaluation_return": 10.0 * i,
        "eval_time_s": 0.01 * i,
        "learner_updates": float(i),
        "env_steps_per_s_iter": 100.0,
        "target_metric_value": 10.0 * i,
    }


def test_a_kill_between_the_two_writes_never_loses_a_recorded_trials_progress(
    tmp_path, monkeypatch
):
    """Progress is written before the trial's row: dying between the two writes leaves a trial
    that is not recorded (it reruns on --resume) with orphan progress rows that a resume
    ignores, never a recorded trial without its learning curve."""
    import sweeps.engine.record as record

    target, budget = {"metric": "training", "value": 25.0}, {"time_s": 60.0, "env_steps": None}
    rec = ResultsRecorder(tmp_path, target=target, budget=budget, command_start=0.0)
    rec.setup()
    first = _Trial("t1")
    for i in (1, 2, 3):
        rec.on_trial_result(0, [], first, _result(i))
    rec.on_trial_complete(0, [], first)
    real = record._write_parquet

    def die_after_progress(df, path, columns=None):
        real(df, path, columns)
        if path.name == "progress.parquet":
            raise KeyboardInterrupt("killed between the writes")

    monkeypatch.setattr(record, "_write_parquet", die_after_progress)
    second = _Trial("t2")
    rec.on_trial_result(0, [], second, _result(1))
    with pytest.raises(KeyboardInterrupt):
        rec.on_trial_complete(0, [], second)
    monkeypatch.setattr(record, "_write_parquet", real)
    trials = pd.read_parquet(tmp_path / "trials.parquet")
    progress = pd.read_parquet(tmp_path / "progress.parquet")
    assert list(trials.trial_id) == ["t1"]  # t2's row never landed ...
    assert set(progress.trial_id) == {"t1", "t2"}  # ... its progress did, t1's is intact
    assert len(progress[progress.trial_id == "t1"]) == 3
    (tmp_path / ".trials.parquet.999.tmp").write_text("stray")  # a killed writer's leftover
    resumed = ResultsRecorder(tmp_path, target=target, budget=budget, command_start=0.0)
    resumed.setup()  # --resume: the orphan rows are dropped, the stray temp file removed
    assert {r["trial_id"] for r in resumed._progress} == {"t1"}
    assert not list(tmp_path.glob(".*.tmp"))


def test_capping_uses_the_fastest_fully_reached_configuration_and_spares_protected_trials(tmp_path):
    """Adaptive capping's decision (sweeps.engine.capping.AdaptiveCapping, asked by the Tune stopper
    sweeps.engine.record.Capper) on recorded rows: the incumbent is
    the smallest median TTT among configurations whose seeds all reached the target (the
    reference is not a candidate); the baseline, the reference and `protect` matches are never
    capped; a trial that reached is never capped."""
    from sweeps import Capping
    from sweeps.engine.capping import AdaptiveCapping
    from sweeps.engine.record import Capper

    capping = AdaptiveCapping(
        Capping(margin=2.0, protect=[{"algorithm": "APEX", "num_env_runners": 8}]), 3
    )
    rec = ResultsRecorder(
        tmp_path,
        target={"metric": "training", "value": 1.0},
        budget={"time_s": 60.0, "env_steps": None},
        command_start=0.0,
        capping=capping,
    )
    row = dict(is_reference=False)
    rec._trials = [
        {
            **row,
            "config_id": "ref",
            "is_reference": True,
            "status": "reached",
            "time_to_target_s": 1.0,
        },
        {**row, "config_id": "a", "status": "reached", "time_to_target_s": 10.0},
        {**row, "config_id": "a", "status": "reached", "time_to_target_s": 14.0},
        {**row, "config_id": "b", "status": "reached", "time_to_target_s": 5.0},
        {**row, "config_id": "b", "status": "censored", "time_to_target_s": float("nan")},
    ]
    assert rec.incumbent_ttt_s() == 12.0  # a's median; b has a censored seed, ref is excluded
    capper = Capper(capping, rec)
    cfg = {"algorithm": "DQN", "num_env_runners": 1}
    assert not capper("t1", {"wall_time_s": 23.9, "config": cfg})
    assert capper("t1", {"wall_time_s": 24.1, "config": cfg}) and rec.capped == {"t1": 24.0}
    assert not capper("t2", {"wall_time_s": 30.0, "reached": True, "config": cfg})
    for spared in (
        {**cfg, "is_baseline": True},
        {**cfg, "is_reference": True},
        {"algorithm": "APEX", "num_env_runners": 8, "lr": 1e-3},
    ):
        assert not capper("t3", {"wall_time_s": 59.0, "config": spared})
    assert capper(
        "t4", {"wall_time_s": 59.0, "config": {"algorithm": "APEX", "num_env_runners": 4}}
    )
    assert not Capper(
        AdaptiveCapping(Capping(margin=2.0), 3),
        ResultsRecorder(tmp_path, rec.target, rec.budget, 0.0),
    )("t5", {"wall_time_s": 59.0, "config": cfg})  # no incumbent yet: nothing is capped
    assert not Capper(AdaptiveCapping(None, 3), rec)(
        "t6", {"wall_time_s": 1e9, "config": cfg}
    )  # capping off


def test_a_resumed_tuner_gets_this_processs_callbacks_and_stoppers(tmp_path):
    """Tune's tuner.pkl pickles the run's callbacks and stopper; unpickled in the resuming
    process (Tuner.restore), they are the objects that process built, not stale copies;
    where none was built, inert ones."""
    import pickle

    from ray.tune.stopper import CombinedStopper

    import sweeps.engine.record as record
    from sweeps import Capping
    from sweeps.engine.capping import AdaptiveCapping
    from sweeps.engine.record import Capper, ResultsRecorder, StopOnWriteError

    def build():
        capping = AdaptiveCapping(Capping(margin=2.0), 1)
        rec = ResultsRecorder(
            tmp_path,
            target={"metric": "training", "value": 1.0},
            budget={"time_s": 5.0, "env_steps": None},
            command_start=0.0,
            capping=capping,
        )
        return rec, CombinedStopper(StopOnWriteError(rec), Capper(capping, rec))

    first = pickle.dumps(build())  # the first run's state
    rec, stopper = build()  # the resuming process's
    rec2, stopper2 = pickle.loads(first)
    assert rec2 is rec and stopper2._stoppers == stopper._stoppers
    record._LIVE.clear()  # unpickled where no sweep runs: inert
    rec3, stopper3 = pickle.loads(first)
    assert not isinstance(rec3, ResultsRecorder)
    assert not stopper3("t", {"wall_time_s": 1e9}) and not stopper3.stop_all()


def test_resume_reopens_the_search_state_tune_restores_whatever_the_files_mtimes(tmp_path):
    """A run stopped by a full disk leaves Tune's search marked finished; ``--resume`` clears
    the flag in the state file Tune restores (the greatest name: its session's start time),
    even when the files' modification times say otherwise, as they do in Tune's storage path
    (the whole folder copied at each sync, in any order). The older files stay as they were."""
    import ray.cloudpickle as cloudpickle
    from ray.tune.utils.util import _load_newest_checkpoint

    from sweeps.engine.tuning import reopen_search

    sessions = ["2026-11-27_01-50-05", "2026-11-27_01-50-37", "2026-11-27_01-50-55"]
    for i, session in enumerate(sessions):
        path = tmp_path / f"search_gen_state-{session}.json"
        path.write_bytes(cloudpickle.dumps({"counter": i, "finished": True}))
        os.utime(path, (1e9 - i, 1e9 - i))  # the newest session has the oldest mtime
    assert reopen_search(tmp_path)
    restored = _load_newest_checkpoint(str(tmp_path), "search_gen_state-*.json")
    assert restored == {"counter": 2, "finished": False}
    older = [
        cloudpickle.loads((tmp_path / f"search_gen_state-{s}.json").read_bytes())
        for s in sessions[:2]
    ]
    assert [s["finished"] for s in older] == [True, True]
    assert not reopen_search(tmp_path)  # nothing left to reopen
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))

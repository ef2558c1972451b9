"""End to end: a tiny real sweep (Ray Tune + Optuna + RLlib) writes every results column,
and a sweep killed mid-way resumes with no trial lost or duplicated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.parallel]

TRIAL_COLUMNS = [
    "trial_id",
    "config_id",
    "is_baseline",
    "algorithm",
    "num_env_runners",
    "num_envs_per_env_runner",
    "train_batch_size",
    "rollout_fragment_length",
    "lr",
    "seed",
    "status",
    "time_to_target_s",
    "steps_to_target",
    "budget_s",
    "budget_env_steps",
    "elapsed_s",
    "total_env_steps",
    "target_metric",
    "target_value",
    "final_return",
    "best_return",
    "env_steps_per_s",
    "learner_updates",
    "num_cpus",
    "num_gpus",
    "oversubscribed",
    "node_count",
    "node_ip",
    "error",
    "objective",
    "is_reference",
    "eval_time_s",
    "censor_reason",
    "attempts",
    "step_latency_ms",
    "step_cpu_ms",
    "peak_rss_mib",
    "vectorize_mode",
    "concurrent_envs",
    "env_restarts",
    "env_runner_restarts",
    "start",
    "startup_s",
    "cold_startup_s",
]
PROGRESS_COLUMNS = [
    "trial_id",
    "iteration",
    "wall_time_s",
    "env_steps",
    "episodes",
    "episode_return_mean",
    "evaluation_return",
    "eval_time_s",
    "learner_updates",
    "env_steps_per_s",
    "target_metric_value",
    "grad_noise_scale",
    "grad_norm_sq",
    "grad_trace_cov",
    "replay_ratio",
    "driver_cpu_s",
    "learner_cpu_s",
    "stage",
    "env_restarts",
    "env_runner_restarts",
    "gradient_staleness",
    "dropped_gradients",
    "bytes_per_update",
    "server_busy_s",
]


# A Cabs episode has at most 720 steps (a month of hours): a target no trial reaches, so
# trials run their budget.
UNREACHABLE = 'Target(metric="env_runners/episode_len_mean", value=1e9)'


def write_sweep(
    tmp_path: Path,
    name: str,
    *,
    num_samples: int,
    seeds: int,
    budget_s: float,
    target: str = "Target(fraction_of_optimal=0.5)",
    reference: bool = False,
    confirm: str = "None",
    evaluation: str = "Evaluation()",
) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps import Budget, Confirm, Evaluation, Search, Sweep, Target, choice
        SWEEP = Sweep(
            name="{name}", env="ContosoCabs-v0", algorithms=["DQN", "PPO"],
            search_space={{"num_env_runners": choice([0, 1])}},
            per_algorithm={{"PPO": {{"train_batch_size": choice([500, 1000])}}}},
            target={target}, budget=Budget(time_s={budget_s}), evaluation={evaluation},
            search=Search(sampler="random", num_samples={num_samples}, seeds={seeds},
                          confirm={confirm}),
            fixed={{"grad_noise_scale_every": 1}},
            baseline={{"algorithm": "DQN", "num_env_runners": 0}},
            reference={{"algorithm": "SB3-DQN"}} if {reference} else None,
        )
        """)
    )
    return path


def sweep_cmd(path: Path, results: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sweeps.run",
        str(path),
        "--results",
        str(results),
        "--no-report",
        *extra,
    ]


def site_env(tmp_path: Path, files: dict[str, str], **variables: str) -> dict[str, str]:
    """This process's environment with ``variables`` set and a folder of ``files`` (a
    ``sitecustomize.py`` among them) first on ``PYTHONPATH``: every Python process of a sweep
    started with it (the driver, Ray's workers) imports them at start-up."""
    site = tmp_path / "site"
    site.mkdir()
    for name, text in files.items():
        (site / name).write_text(text)
    return {
        **os.environ,
        **variables,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }


def only_run_dir(results: Path, name: str) -> Path:
    runs = [p for p in (results / name).iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def test_tiny_sweep_writes_every_column(tmp_path):
    """A real sweep with both stages: 3 sampled configurations (every algorithm at every env
    runner count, the baseline standing for its own), the baseline and the reference on the
    search's seed, then the fastest configuration and each algorithm's fastest at each env
    runner count (the search varies num_env_runners: Confirm.per_env_runners is on), the
    baseline and the reference on a fresh confirmation seed; every column recorded; the
    evaluation protocol on its own cadence (every 500 env steps)."""
    results = tmp_path / "results"
    path = write_sweep(
        tmp_path,
        "tiny",
        num_samples=3,
        seeds=1,
        budget_s=10,
        reference=True,
        confirm="Confirm(top_k=1, seeds=1)",
        evaluation="Evaluation(every_env_steps=500)",
    )
    proc = subprocess.run(sweep_cmd(path, results), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = only_run_dir(results, "tiny")
    trials = pd.read_parquet(run_dir / "trials.parquet")
    progress = pd.read_parquet(run_dir / "progress.parquet")
    assert list(progress.columns) == PROGRESS_COLUMNS
    for col in TRIAL_COLUMNS:
        assert col in trials.columns, col
    from sweeps.engine.rundir import schema

    assert set(schema.TRIAL_COLUMNS) <= set(trials.columns)
    assert all(c in schema.TRIAL_COLUMNS or c.startswith("param_") for c in trials.columns)
    for name in ("trials.parquet", "progress.parquet"):
        assert schema.schema_version(run_dir / name) == schema.SCHEMA_VERSION
    assert len(trials) == 5 + 5  # (3 configs + baseline + reference), all 3 confirmed + 2
    assert trials.trial_id.is_unique
    # two stages on disjoint seeds, as spec.json lists them; the confirmation ran the
    # search's fastest configuration (by its censored median TTT), the baseline, the reference
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["seeds"] == {"search": [0], "confirm": [1000]}
    search, confirm = trials[trials.stage == "search"], trials[trials.stage == "confirm"]
    assert list(search.seed.unique()) == [0] and list(confirm.seed.unique()) == [1000]
    confirmed = confirm[~confirm.is_baseline & ~confirm.is_reference]
    assert set(schema.confirm_configs(search, 1, ("num_env_runners",))) == set(confirmed.config_id)
    # every algorithm's fastest configuration at every env runner count the search measured
    cells = {(r.algorithm, r.num_env_runners) for r in search.itertuples() if not r.is_reference}
    assert cells == {(a, n) for a in ("DQN", "PPO") for n in (0, 1)}
    sampled = search[~search.is_baseline & ~search.is_reference]
    for (algo, n), g in sampled.groupby(["algorithm", "num_env_runners"]):
        fastest = g.groupby("config_id").objective.median().idxmin()
        assert fastest in set(confirmed.config_id), (algo, n)
    assert {
        (r.algorithm, r.num_env_runners) for r in confirm.itertuples() if not r.is_reference
    } == cells
    assert confirm.is_baseline.sum() == confirm.is_reference.sum() == 1
    # RLlib's default sampling layout: each env runner (the driver when none) steps its envs
    # in turn, one env step waiting at a time; the reference steps one env
    assert (trials.vectorize_mode == "sync").all()
    assert list(trials.concurrent_envs) == [
        1 if t.is_reference else max(1, t.num_env_runners) for t in trials.itertuples()
    ]
    # start-up recorded per trial; a warm trial's wall times are charged a cold start-up
    rllib = trials[~trials.is_reference]
    assert (
        set(trials.start) <= {"cold", "warm"}
        and (trials[trials.is_reference].start == "cold").all()
    )
    assert (rllib.startup_s > 0).all() and trials[trials.is_reference].startup_s.isna().all()
    cold, warm_rows = rllib[rllib.start == "cold"], rllib[rllib.start == "warm"]
    assert (cold.cold_startup_s == cold.startup_s).all()
    assert (warm_rows.cold_startup_s > warm_rows.startup_s).all()
    assert set(progress.stage) == {"search", "confirm"}
    stages = progress.groupby("trial_id").stage.agg(set)
    assert all(stages[t] == {s} for t, s in zip(trials.trial_id, trials.stage, strict=True))
    trials, progress = search, progress[progress.stage == "search"]  # the rest: one stage
    assert trials.is_baseline.sum() == 1
    # The single-process reference: one row, first, one CPU, no env runners.
    ref = trials[trials.is_reference]
    assert len(ref) == 1 and ref.iloc[0].algorithm == "SB3-DQN" and trials.iloc[0].is_reference
    assert ref.iloc[0].num_env_runners == 0 and ref.iloc[0].num_cpus == 1
    # One evaluation protocol: every row is judged on the same metric, and evaluation time
    # was spent and recorded inside every trial.
    assert set(trials.target_metric) == {"evaluation"}
    assert (trials.eval_time_s > 0).all() and (trials.eval_time_s < trials.elapsed_s).all()
    assert progress.evaluation_return.notna().all()
    assert (progress.target_metric_value == progress.evaluation_return).all()
    # the trial's own process's CPU seconds, cumulative: never falling, never more than the
    # machine's 2 cores over the wall-clock, and some spent by every trial
    cpu = progress.driver_cpu_s
    assert cpu.notna().all() and (cpu >= 0).all()
    assert (progress.groupby("trial_id").driver_cpu_s.diff().dropna() >= 0).all()
    assert (cpu <= 2 * progress.wall_time_s + 0.5).all()
    assert (progress.groupby("trial_id").driver_cpu_s.last() > 0).all()
    assert set(trials.status) <= {"reached", "censored"}, trials[["status", "error"]]
    # a trial capped at its first evaluation (the initial policy's) has sampled nothing
    ran = trials[trials.censor_reason != "capped"]
    assert (ran.total_env_steps > 0).all() and (ran.env_steps_per_s > 0).all()
    assert (trials.num_cpus >= 1).all() and (trials.node_count >= 1).all()
    reached = trials[trials.status == "reached"]
    assert (
        reached.time_to_target_s.notna().all()
        and (reached.time_to_target_s <= reached.elapsed_s).all()
    )
    assert (reached.objective == reached.time_to_target_s).all()
    # the TTT's resolution: the gap since the evaluation before the crossing (or the start)
    assert (
        (reached.ttt_resolution_s > 0) & (reached.ttt_resolution_s <= reached.time_to_target_s)
    ).all()
    censored = trials[trials.status == "censored"]
    assert censored.time_to_target_s.isna().all() and censored.ttt_resolution_s.isna().all()
    assert (censored.objective >= censored.budget_s).all()
    # progress: evaluations 1..n per trial, monotone wall-clock and env steps; the first
    # evaluates the initial policy, the others fall due every 500 env steps: checked after
    # every env step by the reference, after every training step by RLlib (a DQN step
    # samples a few dozen env steps, a PPO step its whole train batch)
    for tid, g in progress.groupby("trial_id"):
        assert list(g.iteration) == list(range(1, len(g) + 1)), tid
        assert g.wall_time_s.is_monotonic_increasing and g.env_steps.is_monotonic_increasing
        assert g.env_steps.iloc[0] == 0, tid
    row_of = trials.set_index("trial_id")
    for tid, g in progress.groupby("trial_id"):
        gaps = g.env_steps.diff().iloc[1:-1]  # the last may end on the budget
        algo = row_of.loc[tid, "algorithm"]
        if algo == "SB3-DQN":
            assert (gaps == 500).all(), (tid, list(gaps))
        elif algo == "DQN":
            assert ((gaps >= 500) & (gaps < 500 + 256)).all(), (tid, list(gaps))
        else:
            assert (gaps >= 500).all(), (tid, list(gaps))
    reached_rows = progress[progress.trial_id.isin(reached.trial_id)]
    for _, t in reached.iterrows():  # the resolution is the gap to the evaluation before
        w = reached_rows[reached_rows.trial_id == t.trial_id].wall_time_s.to_numpy()
        i = int(np.searchsorted(w, t.time_to_target_s))
        assert t.ttt_resolution_s == pytest.approx(w[i] - w[i - 1]), t.trial_id
    assert set(progress.trial_id) == set(trials.trial_id)
    # the learners measured the gradient noise scale (DQN's TD loss, PPO's surrogate); the
    # single-process reference has none
    # (measured at every update here; the unbiased two-batch estimate of |G|^2 can be <= 0 on
    # the first measurements, when B_simple is NaN, so a trial that reached the target within
    # a handful of updates may show none yet)
    rl = progress[progress.trial_id.isin(trials[~trials.is_reference].trial_id)]
    g = rl.groupby("trial_id")
    measured = g["grad_noise_scale"].apply(lambda x: (x > 0).any())
    long_enough = g["learner_updates"].max() >= 20
    cols = ["trial_id", "iteration", "learner_updates", "grad_noise_scale"]
    assert long_enough.any() and measured[long_enough].all(), rl[cols]
    assert progress[progress.trial_id.isin(ref.trial_id)]["grad_noise_scale"].isna().all()
    # DQN's replay ratio (replayed / sampled transitions) once it learns, also on the rows
    # measured between training steps; PPO and the reference have no replay
    dqn = progress[progress.trial_id.isin(trials[trials.algorithm == "DQN"].trial_id)]
    learning = dqn[dqn.learner_updates > 0]
    assert len(learning) and (learning.replay_ratio > 0).all(), learning[
        ["trial_id", "env_steps", "learner_updates", "replay_ratio"]
    ]
    others = progress[~progress.trial_id.isin(dqn.trial_id)]
    assert others.replay_ratio.isna().all()
    # the learner's CPU seconds in its updates (its thread's clock), cumulative: recorded
    # once the learner updated, never falling, never more than the trial's own process's
    # CPU (the learner runs in it), and none for the reference
    updated = rl[rl.learner_updates > 0]
    assert len(updated) and (updated.learner_cpu_s > 0).all(), updated[
        ["trial_id", "learner_updates", "learner_cpu_s"]
    ]
    assert (rl.groupby("trial_id").learner_cpu_s.diff().dropna() >= 0).all()
    assert (updated.learner_cpu_s <= updated.driver_cpu_s + 1e-6).all()
    assert progress[progress.trial_id.isin(ref.trial_id)]["learner_cpu_s"].isna().all()
    # progress a person can read: a line per trial with the progress line, no Tune table
    assert "10/10 trials done" in proc.stdout and "Trial name" not in proc.stdout
    assert proc.stdout.count("(confirm)") == 5  # the confirmation trials are marked
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["target"]["optimal_return"] > 0
    assert spec["target"]["value"] == pytest.approx(0.5 * spec["target"]["optimal_return"])
    env = json.loads((run_dir / "environment.json").read_text())
    assert env["versions"]["ray"] == "2.60.0" and env["cpu_count"] >= 1
    assert 1 <= env["usable_cores"] <= env["cpu_count"]
    assert env["finished_at"] and env["nodes"]
    assert (run_dir / "optuna.db").exists() and (run_dir / "tune").is_dir()
    assert "Traceback" not in proc.stderr
    # --confirm-only: the same configurations, the baseline and the reference once more, on the
    # seed after every seed the run used, recorded beside the first confirmation
    again = subprocess.run(
        sweep_cmd(path, results, "--confirm-only", str(run_dir)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    after = pd.read_parquet(run_dir / "trials.parquet")
    assert len(after) == 10 + 5 and after.trial_id.is_unique
    fresh = after[after.seed == 1001]
    assert len(fresh) == 5 and set(fresh.stage) == {"confirm"}
    assert set(fresh.config_id) == set(confirm.config_id)
    seeds = json.loads((run_dir / "spec.json").read_text())["seeds"]
    assert seeds == {"search": [0], "confirm": [1000, 1001]}
    wrong = subprocess.run(
        sweep_cmd(path, results, "--confirm-only", str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
    assert "--confirm-only" in wrong.stderr and "not a finished run" in wrong.stderr


def _wait_for_recorded_trial(results: Path, name: str, proc, timeout: float = 240) -> Path:
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        runs = list((results / name).glob("*/trials.parquet"))
        if runs:
            return runs[0]
        time.sleep(1)
    raise AssertionError(f"no trial recorded in time (exit {proc.poll()})")


def test_ctrl_c_keeps_results_and_says_how_to_resume(tmp_path):
    results = tmp_path / "results"
    path = write_sweep(
        tmp_path, "interrupted", num_samples=2, seeds=1, budget_s=5, target=UNREACHABLE
    )
    proc = subprocess.Popen(
        sweep_cmd(path, results),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        runs = [_wait_for_recorded_trial(results, "interrupted", proc)]
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal goes to the whole group
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert proc.returncode == 130, (proc.returncode, out[-2000:], err[-2000:])
    assert "--resume" in err and "Traceback" not in err, err[-2000:]
    kept = pd.read_parquet(runs[0])
    assert len(kept) >= 1 and kept.trial_id.is_unique
    # the driver shut its embedded Ray down: nothing of its process group is left (Ray's
    # processes may take a moment to exit after the driver)
    deadline = time.time() + 30
    while (
        alive := subprocess.run(
            ["pgrep", "-g", str(proc.pid)], capture_output=True, text=True
        ).stdout.strip()
    ) and time.time() < deadline:
        time.sleep(0.5)
    assert not alive, f"processes left in the sweep's group: {alive}"


def _wait_for_rows(trials_file: Path, at_least: int, proc, timeout: float = 240) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if trials_file.exists() and len(pd.read_parquet(trials_file)) >= at_least:
            return
        time.sleep(0.5)
    raise AssertionError(f"fewer than {at_least} trials recorded in time (exit {proc.poll()})")


DISK_FULL = """\
import errno
import os

_real_replace = os.replace
_writes = {"trials": 0}


def _replace(src, dst, *args, **kwargs):
    # The results disk is full: the OS refuses the trials table's write at the OS boundary.
    if str(dst).endswith("trials.parquet"):
        _writes["trials"] += 1
        if _writes["trials"] > int(os.environ["DISK_FULL_AFTER_WRITES"]):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
    return _real_replace(src, dst, *args, **kwargs)


if "DISK_FULL_AFTER_WRITES" in os.environ:
    os.replace = _replace
"""


def test_sigterm_sigkill_a_full_disk_and_a_concurrent_second_run_lose_nothing(tmp_path):
    """One results directory through every way a real ``sweeps.run`` ends early:

    1. while a first run works, a second process is refused in one line naming its pid;
    2. SIGTERM (``kill``, ``timeout``, a batch scheduler) ends the first with its one
       "Interrupted" line and exit 130 (no native stack dump);
    3. ``--resume`` runs on until SIGKILL takes it and the Ray it started (no clean-up);
    4. ``--resume`` on a full results disk (the OS refuses its first write of the trials
       table with ENOSPC; injected at ``os.replace``, the OS boundary) ends in one line and
       exit 3, every row recorded before it intact;
    5. ``--resume``, once there is room, finishes the sweep, its confirmation stage included:
       every trial recorded once, nothing recorded before a kill lost or changed, no trial
       that a signal cut short recorded as censored, the trial whose row the full disk
       refused recorded once, the Optuna study's history whole, and the confirmation on its
       own seed.
    """
    results = tmp_path / "results"
    path = write_sweep(
        tmp_path,
        "terminated",
        num_samples=3,
        seeds=1,
        budget_s=5,
        target=UNREACHABLE,  # fixed-length trials
        confirm="Confirm(top_k=1, seeds=1, per_env_runners=False)",
    )
    # 3 sampled configurations + the baseline, 1 seed; then the closest miss and the baseline
    expected = 3 + 1 + 2
    first = subprocess.Popen(
        sweep_cmd(path, results),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        trials_file = _wait_for_recorded_trial(results, "terminated", first)
        second = subprocess.run(
            sweep_cmd(path, results, "--resume"), capture_output=True, text=True, timeout=120
        )
        assert first.poll() is None, "the first run ended before the second was tried"
        first.send_signal(signal.SIGTERM)  # the driver only, as `timeout` and `kill` do
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
    assert second.returncode == 2, second.stderr[-2000:]
    assert second.stderr.strip().count("\n") == 0, second.stderr
    assert f"is in use by another sweeps.run (pid {first.pid})" in second.stderr
    assert first.returncode == 130, (first.returncode, out[-2000:], err[-3000:])
    assert "Interrupted:" in err and "--resume" in err, err[-2000:]
    assert "Tuner.restore" not in out + err  # Tune's own hint names an API, not the command
    assert "Traceback" not in err and "SIGTERM received" not in err, err[-3000:]
    after_sigterm = pd.read_parquet(trials_file)
    assert 1 <= len(after_sigterm) < expected

    # Own process group, so the driver and the Ray it started are killed together.
    third = subprocess.Popen(
        sweep_cmd(path, results, "--resume"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_rows(trials_file, len(after_sigterm) + 1, third)
    finally:
        os.killpg(third.pid, signal.SIGKILL)
        third.wait(timeout=30)
    before = pd.read_parquet(trials_file)
    assert len(before) < expected, "the sweep finished before it could be killed"
    assert set(after_sigterm.trial_id) <= set(before.trial_id)

    disk_full = site_env(tmp_path, {"sitecustomize.py": DISK_FULL}, DISK_FULL_AFTER_WRITES="0")
    full = subprocess.run(
        sweep_cmd(path, results, "--resume"),
        capture_output=True,
        text=True,
        timeout=300,
        env=disk_full,
    )
    assert full.returncode == 3, (full.returncode, full.stdout[-2000:], full.stderr[-3000:])
    assert "Traceback" not in full.stderr, full.stderr[-3000:]
    lines = [line for line in full.stderr.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "No space left on device" in lines[0], full.stderr[-3000:]
    assert f"{len(before)} trial(s) recorded before it are kept" in lines[0], lines
    assert "--resume" in lines[0]
    assert pd.read_parquet(trials_file).equals(before)

    resumed = subprocess.run(
        sweep_cmd(path, results, "--resume"), capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    after = pd.read_parquet(trials_file)
    # the ETA counts the trials it replays by their recorded durations (minutes, not hours);
    # a progress line has an ETA once a trial other than the reference finished in this run
    # and another is still to come, so only when the kill left two or more of them
    new = after[~after.trial_id.isin(before.trial_id)]
    if (~new["is_reference"].astype(bool)).sum() >= 2:
        assert "ETA ~" in resumed.stdout
        assert "h" not in resumed.stdout.split("ETA ~")[-1].split(" ")[0], resumed.stdout
    assert len(after) == expected, after[["trial_id", "config_id", "seed", "status"]]
    assert after.trial_id.is_unique and not after.duplicated(["config_id", "seed"]).any()
    # nothing recorded before the kill was lost or changed
    kept = after.set_index("trial_id").loc[before.trial_id]
    assert (kept.elapsed_s.values == before.elapsed_s.values).all()
    progress = pd.read_parquet(trials_file.parent / "progress.parquet")
    assert not progress.duplicated(["trial_id", "iteration"]).any()
    assert set(progress.trial_id) == set(after.trial_id)
    # the trials the signals cut short were not recorded as censored: every one ran its budget
    assert (after.elapsed_s >= after.budget_s).all(), after[["trial_id", "elapsed_s"]]
    assert (after.status == "censored").all()
    assert not list(trials_file.parent.glob("*.tmp"))
    assert not list(trials_file.parent.glob(".*.tmp"))
    # the Optuna study kept its history: one completed Optuna trial per sampled config
    import optuna

    study = optuna.load_study(
        study_name="terminated", storage=f"sqlite:///{trials_file.parent / 'optuna.db'}"
    )
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == 3
    # the confirmation ran after the resumed search, on its own seed, with the closest miss
    spec = json.loads((trials_file.parent / "spec.json").read_text())
    assert spec["seeds"] == {"search": [0], "confirm": [1000]}
    search, confirm = after[after.stage == "search"], after[after.stage == "confirm"]
    assert len(search) == 4 and set(search.seed) == {0}
    assert len(confirm) == 2 and set(confirm.seed) == {1000} and confirm.is_baseline.sum() == 1
    from sweeps.engine.rundir.schema import confirm_configs

    assert confirm_configs(search, 1) == list(confirm[~confirm.is_baseline].config_id)


FLAKY_ENV = '''\
import os
import sys

import gymnasium
from gymnasium.envs.classic_control.cartpole import CartPoleEnv


class FlakyCartPole(CartPoleEnv):
    """CartPole whose first reset in a process of a running Ray fails once (the marker file
    says whether that happened): the trial's first attempt errors, Tune's retry runs normally.
    The driver's env check before Ray starts resets it without failing."""

    def __init__(self, marker: str = "", render_mode=None):
        super().__init__(render_mode=render_mode)
        self.marker = marker

    def reset(self, *, seed=None, options=None):
        ray = sys.modules.get("ray")
        in_ray = ray is not None and ray.is_initialized()
        if self.marker and in_ray and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("flaky env: the first attempt fails")
        return super().reset(seed=seed, options=options)


if "FlakyCartPole-v0" not in gymnasium.registry:
    gymnasium.register("FlakyCartPole-v0", entry_point=FlakyCartPole)
'''


def test_a_retried_trial_is_recorded_with_its_attempts_and_timed_from_the_first(tmp_path):
    """A real trial fails once (its env raises at the first reset) and Tune retries it
    (max_failures=1): its row says attempts=2 and its times count from the first attempt. Its
    sweep file imports from the old path ``sweeps.spec``: it runs, with one notice line."""
    # every Python process of this sweep (driver, Ray workers) registers the env
    env = site_env(
        tmp_path,
        {"flaky_env.py": FLAKY_ENV, "sitecustomize.py": "import flaky_env  # noqa: F401\n"},
    )
    marker = tmp_path / "failed-once"
    path = tmp_path / "flaky.py"
    # written from an older README: the old import path still runs, with one notice
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps.spec import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="flaky", env="FlakyCartPole-v0", env_config={{"marker": "{marker}"}},
                      algorithms=["PPO"], search_space={{"num_env_runners": choice([0])}},
                      fixed={{"recover_env_faults": False}},  # the env's error fails the trial
                      target={UNREACHABLE}, budget=Budget(time_s=4),
                      search=Search(sampler="grid", num_samples=1, seeds=1),
                      baseline={{"algorithm": "PPO", "num_env_runners": 0}})
        """)
    )
    results = tmp_path / "results"
    proc = subprocess.run(
        sweep_cmd(path, results), capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    notices = [line for line in proc.stderr.splitlines() if "deprecated" in line]
    assert notices == [
        f"notice: {path}:1: 'sweeps.spec' is deprecated; it still works, but "
        "import from 'sweeps' (from sweeps import Sweep, Budget, ...)"
    ], proc.stderr
    assert marker.exists()  # the first attempt did fail
    trials = pd.read_parquet(only_run_dir(results, "flaky") / "trials.parquet")
    assert len(trials) == 1
    row = trials.iloc[0]
    assert row.attempts == 2 and row.status == "censored", row.to_dict()
    # the retry ran its 4 s budget; the recorded time also counts the failed first attempt
    assert row.elapsed_s > row.budget_s + 0.5, row.to_dict()


def test_adaptive_capping_stops_a_trial_that_can_no_longer_be_the_fastest(tmp_path):
    """A real sweep: the baseline (DQN, Cabs, half the optimum) reaches the target in seconds
    on each of 3 seeds; a configuration that cannot learn (lr 1e-9) is stopped at margin x the
    incumbent's TTT, well inside its 60 s budget, and recorded as censored with censor_reason
    'capped'; with 2 of its 3 seeds capped its third seed is not run, and the sweep and the
    analysis say so."""
    from analysis.load import load_results
    from analysis.study import analyse

    path = tmp_path / "capped.py"
    path.write_text(
        textwrap.dedent("""\
        from sweeps import Budget, Capping, Search, Sweep, Target, choice
        SWEEP = Sweep(name="capped", env="ContosoCabs-v0", algorithms=["DQN"],
                      search_space={"num_env_runners": choice([0]), "lr": choice([1e-9])},
                      target=Target(fraction_of_optimal=0.5), budget=Budget(time_s=60),
                      search=Search(sampler="grid", num_samples=1, seeds=3,
                                    capping=Capping(margin=1.5)),
                      baseline={"algorithm": "DQN", "num_env_runners": 0})
        """)
    )
    results = tmp_path / "results"
    proc = subprocess.run(sweep_cmd(path, results), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "5 trials recorded" in proc.stdout and "1 more seed(s) skipped" in proc.stdout, (
        proc.stdout[-3000:]
    )
    run_dir = only_run_dir(results, "capped")
    trials = pd.read_parquet(run_dir / "trials.parquet")
    base = trials[trials.is_baseline]
    slow = trials[~trials.is_baseline]
    assert len(base) == 3 and (base.status == "reached").all(), base.to_dict("records")
    assert (base.censor_reason == "").all()
    assert list(slow.seed) == [0, 1], slow.to_dict("records")  # seed 2 skipped
    cap = 1.5 * base.time_to_target_s.median()
    for row in slow.itertuples():
        assert row.status == "censored" and row.censor_reason == "capped", row
        # stopped at the first iteration past the cap (iterations last ~1 s), not at the budget
        assert cap < row.elapsed_s < cap + 10 and row.elapsed_s < row.budget_s, row
    study = analyse(load_results(run_dir))
    (note,) = study.summary.loc[~study.summary.is_baseline, "note"]
    assert "2 of 2 capped" in note and "1 more seed(s) not run" in note, note


def test_step_cost_env_runners_on_fractional_cpus_and_their_memory(tmp_path):
    """A real sweep with a modelled step cost: 4 env runners of 1/4 CPU each on CartPole whose
    steps wait 5 ms and burn 2 ms of CPU fit a 2-CPU node honestly (not oversubscribed); each
    steps its 2 envs at once (an async sampling layout: 8 concurrent envs, recorded); the
    costs cap sampling at 8 x 1000/7 env steps/s; the trial's peak memory covers its 5
    processes."""
    path = tmp_path / "latency.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="latency", env="CartPole-v1", env_config={{"step_latency_ms": 5,
                                                                      "step_cpu_ms": 2}},
                      algorithms=["PPO"], search_space={{"num_env_runners": choice([4])}},
                      fixed={{"num_cpus_per_env_runner": 0.25, "num_envs_per_env_runner": 2,
                             "gym_env_vectorize_mode": "async", "train_batch_size": 400}},
                      target={UNREACHABLE}, budget=Budget(time_s=5),
                      search=Search(sampler="grid", num_samples=1, seeds=1, capping=None),
                      baseline={{"algorithm": "PPO", "num_env_runners": 4}})
        """)
    )
    results = tmp_path / "results"
    proc = subprocess.run(sweep_cmd(path, results), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (row,) = pd.read_parquet(only_run_dir(results, "latency") / "trials.parquet").itertuples()
    assert row.num_cpus == 2.0 and not row.oversubscribed  # 1 + 4 x 0.25
    assert row.step_latency_ms == 5.0 and row.step_cpu_ms == 2.0
    assert row.vectorize_mode == "async" and row.concurrent_envs == 8
    assert 0 < row.env_steps_per_s < 8 * 1000 / 7  # each env step waited 5 ms and burned 2
    assert row.peak_rss_mib > 4 * 100  # the trial process and 4 env runner processes

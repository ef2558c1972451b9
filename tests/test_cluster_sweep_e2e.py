"""The sweep runner on multi-node clusters, for real: the Azure ML bootstrap running
``python -m sweeps.run`` of a user's env over three local ranks, and a worker node lost
mid-sweep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from test_cluster_bootstrap import start_rank, wait_all
from test_cluster_support import files_containing, live_sessions
from test_envs_forms import user_folder, yaml_sweep

from cluster.auth import new_token
from cluster.local_multinode import LoopbackCluster
from cluster.nodes import free_port

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.parallel]


def write_sweep(
    folder: Path, name: str, *, num_samples: int, budget_s: float, capping: bool = True
) -> Path:
    """A tiny PPO/CartPole sweep: every trial samples in its driver (1 CPU). Grid, not random:
    a random draw of a learning rate capping has settled runs no trial, so the count of
    trials a test expects would depend on which trial a lost node capped. ``capping=False``
    for a test that expects every trial to reach the target: adaptive capping rightly stops
    the slowest learning rate (1e-4) once a faster one has reached it, on a loaded machine."""
    path = folder / f"{name}.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(
            name="{name}", env="CartPole-v1", algorithms=["PPO"],
            search_space={{"num_env_runners": choice([0]), "lr": choice([1e-4, 3e-4, 1e-3, 3e-3])}},
            fixed={{"train_batch_size": 256}},
            target=Target(metric="env_runners/episode_return_mean", value=40.0),
            budget=Budget(time_s={budget_s}),
            search=Search(sampler="grid", num_samples={num_samples}, seeds=1,
                          max_concurrent=3{"" if capping else ", capping=None"}),
            baseline={{"algorithm": "PPO", "num_env_runners": 0}},
        )
        """)
    )
    return path


def only_run_dir(results: Path, name: str) -> Path:
    runs = [p for p in (results / name).iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def test_bootstrap_runs_a_user_env_sweep_with_trials_spanning_three_nodes(tmp_path):
    """Three MPI ranks of 2 CPUs, as Azure ML starts them, form a token-authenticated Ray
    cluster on 127.0.0.1 (the workers first: they wait for a head that is not there yet);
    rank 0 runs a sweep of a user's env from a folder outside the project, which reaches every
    node; DQN and PPO sampling in their driver reach the target, and DQN and PPO with 4 env
    runners (5 CPUs: more than any node) are placed over several nodes and reach it too; every
    rank exits soon after the head, and the token is in no file."""
    from analysis.report import write_report

    folder = user_folder(tmp_path)
    # the slowest trial reached the target in 16 s beside another Ray test: 5x margin
    sweep = yaml_sweep(folder, "corridor_env:Corridor-v0", runners=(0, 4), budget_s=90)
    out, logs = tmp_path / "outputs", tmp_path / "logs"
    logs.mkdir()
    token, port = new_token(), free_port()
    cmd = [sys.executable, "-m", "sweeps.run", str(sweep), "--results", str(out), "--no-report"]
    args = ["--results-dir", str(out)]
    procs = {rank: start_rank(rank, 3, port, args, cmd, logs, token, num_cpus=2) for rank in (2, 1)}
    time.sleep(2)
    procs[0] = start_rank(0, 3, port, args, cmd, logs, token, num_cpus=2)
    ended = wait_all(procs, timeout_s=500)
    text = {r: (logs / f"rank{r}.log").read_text() for r in procs}
    assert [procs[r].returncode for r in (0, 1, 2)] == [0, 0, 0], text[0][-4000:]
    # every rank exits within 60 s of the head finishing
    assert all(ended[r] - ended[0] < 60 for r in (1, 2)), (ended, text)
    assert "the Ray head is gone" in text[1] and "the Ray head is gone" in text[2]
    boot = json.loads((out / "bootstrap.json").read_text())
    assert boot["nodes_expected"] == 3 and len(boot["nodes"]) == 3
    assert boot["token_auth"] is True and boot["ray_address"] == f"127.0.0.1:{port}"

    run_dir = only_run_dir(out, "corridor")
    env = json.loads((run_dir / "environment.json").read_text())
    assert len(env["nodes"]) == 3 and env["ray_address"] == f"127.0.0.1:{port}"
    trials = pd.read_parquet(run_dir / "trials.parquet")
    table = trials[["algorithm", "num_env_runners", "status", "nodes_used", "error"]].to_string()
    assert sorted(zip(trials.algorithm, trials.num_env_runners, strict=True)) == [
        ("DQN", 0),
        ("DQN", 4),
        ("PPO", 0),
        ("PPO", 4),
    ], table  # the baseline is PPO, 0
    assert (trials.status == "reached").all(), table
    assert (trials.node_count == 3).all(), table
    spanning = trials[trials.num_env_runners == 4]
    assert (spanning.num_cpus == 5).all() and not spanning.oversubscribed.any(), table
    assert (spanning.nodes_used.str.split(",").str.len() > 1).all(), table
    # the report says where they ran
    page = write_report(run_dir).read_text()
    assert 'id="nodes-used"' in page and "more than one node: 2 of " in page
    for nodes in spanning.nodes_used:
        assert nodes in page
    assert files_containing(tmp_path, token) == []


def running_trials(run_dir: Path) -> dict[str, int]:
    """trial_id -> session id of the process running it, for trials whose process is alive.

    The trial's process is a Ray worker of some node; its session is that node's runner
    (see cluster.nodes), which tells the node even though all nodes share 127.0.0.1.
    """
    found = {}
    for result in (run_dir / "tune").glob("*/result.json"):
        lines = [line for line in result.read_text().splitlines() if line.strip()]
        if not lines:
            continue
        row = json.loads(lines[-1])
        try:
            found[row["trial_id"]] = os.getsid(row["pid"])
        except (ProcessLookupError, KeyError):
            continue
    return found


def read_or_empty(path: Path):
    return (
        pd.read_parquet(path)
        if path.exists()
        else pd.DataFrame({"trial_id": [], "status": [], "elapsed_s": [], "iteration": []})
    )


def test_losing_a_worker_node_mid_sweep_keeps_every_recorded_trial(tmp_path):
    """SIGKILL the node that runs a trial, mid-trial: the sweep completes, that trial is
    retried or recorded as an error, and every row written before the loss is kept."""
    sweep = write_sweep(tmp_path, "tiny_fault", num_samples=4, budget_s=20)
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "sweeps.run", str(sweep), "--results", str(results), "--no-report"]
    with LoopbackCluster(nodes=3, cpus_per_node=1, log_dir=tmp_path / "logs") as cluster:
        workers = {node.pid: i for i, node in enumerate(cluster.nodes) if i > 0}
        log = open(tmp_path / "sweep.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            cmd, env=cluster.client_env(), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        # Wait until a trial on a worker node has reported an iteration, then lose that node.
        victim = run_dir = None
        deadline = time.monotonic() + 240
        while victim is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            runs = list(results.glob("tiny_fault/*"))
            if runs:
                run_dir = runs[0]
                on_workers = {t: s for t, s in running_trials(run_dir).items() if s in workers}
                if on_workers:
                    victim = sorted(on_workers.items())[0]
        assert victim is not None, (tmp_path / "sweep.log").read_text()[-4000:]
        before = read_or_empty(run_dir / "trials.parquet")
        progress_before = read_or_empty(run_dir / "progress.parquet")
        cluster.kill_node(workers[victim[1]])
        code = proc.wait(timeout=400)
        log.close()
        sessions = [node.pid for node in cluster.nodes]
    text = (tmp_path / "sweep.log").read_text()
    assert code == 0, text[-4000:]
    after = pd.read_parquet(run_dir / "trials.parquet")
    progress = pd.read_parquet(run_dir / "progress.parquet")
    # The sweep completed: every trial has one row, reached, censored or an error with its
    # reason; the trial on the lost node among them (retried by Tune, or recorded as error).
    assert after.trial_id.is_unique and len(after) >= 5  # 4 samples + the baseline
    assert set(after.status) <= {"reached", "censored", "error"}
    assert (after.loc[after.status == "error", "error"].str.len() > 0).all()
    assert victim[0] in set(after.trial_id)
    # Nothing already recorded is lost or changed.
    kept = after.set_index("trial_id").loc[list(before.trial_id)]
    assert list(kept.status) == list(before.status)
    assert list(kept.elapsed_s) == pytest.approx(list(before.elapsed_s))
    merged = progress_before.merge(
        progress, on=["trial_id", "iteration"], how="left", indicator=True
    )
    assert (merged["_merge"] == "both").all()
    assert live_sessions(sessions) == []

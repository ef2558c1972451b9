"""The Azure ML bootstrap under a real Open MPI ``mpirun``, as Azure ML's MPI jobs start it.

Azure ML runs ``mpirun`` itself, with its defaults: one rank that exits non-zero ends every
rank of the job. These tests start the same ``python -m cluster.bootstrap`` on 127.0.0.1
through Debian's ``mpirun`` (``openmpi-bin``, which ``.ci/run`` installs), with Azure ML's
variables set as its distributed-training guide documents them, each discovery variable absent
in turn, and check that the ranks form one Ray cluster and run a sweep to its target; that a
GPU-head layout's worker job finds the head through the rendezvous folder although its own
MPI master variable names another host; and that a worker rank whose Ray node is killed
mid-sweep starts it again, the job and its sweep completing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from test_cluster_support import read_probe, write_probe
from test_cluster_sweep_e2e import only_run_dir, write_sweep

from cluster.auth import new_token
from cluster.nodes import free_port, session_pids

ROOT = Path(__file__).resolve().parent.parent
MPIRUN = shutil.which("mpirun")

pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.parallel,
    pytest.mark.skipif(MPIRUN is None, reason="needs Open MPI's mpirun (Debian: openmpi-bin)"),
]


def mpirun(
    np: int, azure_env: dict[str, str], args: list[str], cmd: list[str], log: Path, token: str
) -> subprocess.Popen:
    """``mpirun -np NP python -m cluster.bootstrap ARGS -- CMD``, each rank on 127.0.0.1 with
    one CPU for Ray, ``azure_env`` exported to the ranks (``-x``) as Azure ML sets it, every
    rank's output in ``log`` tagged ``[1,RANK]``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "RAY_", "AZ_BATCH"))}
    env.update(azure_env)
    env["RAY_AUTH_TOKEN"] = token  # as `cluster.azure submit` puts it in the job
    # root in a container: Open MPI refuses to run as root without both variables
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    exported = [x for name in [*azure_env, "RAY_AUTH_TOKEN", "PATH"] for x in ("-x", name)]
    line = [
        MPIRUN,
        "--oversubscribe",
        "--tag-output",
        "-np",
        str(np),
        *exported,
        sys.executable,
        "-m",
        "cluster.bootstrap",
        "--num-cpus",
        "1",
        "--object-store-mb",
        "200",
        "--node-timeout",
        "120",
        "--log-dir",
        str(log.parent / f"{log.stem}-ray"),
        *args,
    ]
    if cmd:
        line += ["--", *cmd]
    out = open(log, "w")  # noqa: SIM115
    return subprocess.Popen(
        line, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def finish(proc: subprocess.Popen, timeout_s: float) -> int:
    """Wait for ``mpirun``; past ``timeout_s`` kill its whole session and fail."""
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        raise AssertionError(f"mpirun still running after {timeout_s} s") from None


def rank_text(text: str, rank: int) -> str:
    """What rank ``rank`` wrote, from ``mpirun --tag-output``'s log (a rank's console that
    redraws one line has no newlines between its tags, so split at the tags)."""
    parts = re.split(r"(\[1,\d+\]<std(?:out|err)>:)", text)
    return "".join(
        body
        for tag, body in zip(parts[1::2], parts[2::2], strict=True)
        if tag.startswith(f"[1,{rank}]")
    )


def sweep_command(tmp_path: Path, name: str, num_samples: int, budget_s: float):
    """The sweep's command with capping off: these tests count the trials that reach the target."""
    sweep = write_sweep(tmp_path, name, num_samples=num_samples, budget_s=budget_s, capping=False)
    out = tmp_path / "outputs"
    cmd = [sys.executable, "-m", "sweeps.run", str(sweep), "--results", str(out), "--no-report"]
    return cmd, ["--results-dir", str(out)], out


def test_mpirun_ranks_with_only_the_mpi_master_variable_run_a_sweep_to_its_target(tmp_path):
    """``mpirun -np 3`` with ``AZ_BATCHAI_MPI_MASTER_NODE`` and no ``AZ_BATCH_MASTER_NODE``:
    one Ray cluster of 3 nodes, and its sweep reaches the target in every trial."""
    cmd, args, out = sweep_command(tmp_path, "mpi_only", num_samples=2, budget_s=60)
    log = tmp_path / "mpirun.log"
    proc = mpirun(
        3,
        {"AZ_BATCHAI_MPI_MASTER_NODE": "127.0.0.1"},
        ["--port", str(free_port()), *args],
        cmd,
        log,
        new_token(),
    )
    code = finish(proc, 400)
    text = log.read_text()
    assert code == 0, text[-4000:]
    assert len(json.loads((out / "bootstrap.json").read_text())["nodes"]) == 3
    trials = pd.read_parquet(only_run_dir(out, "mpi_only") / "trials.parquet")
    assert len(trials) == 3 and (trials.status == "reached").all(), trials.to_string()
    assert (trials.node_count == 3).all()


def test_mpirun_ranks_find_the_head_by_the_documented_variable_and_survive_a_lost_node(tmp_path):
    """``mpirun -np 3`` with only ``AZ_BATCH_MASTER_NODE`` (``host:port``, Microsoft's
    documented variable): the ranks form the cluster. Rank 2's Ray node is then killed
    mid-sweep: rank 2 starts it again, no rank exits non-zero (which would end the whole MPI
    job), and the sweep completes with a row for every trial, most of them reaching the
    target (the killed node's trial may be an error)."""
    cmd, args, out = sweep_command(tmp_path, "lost_node", num_samples=4, budget_s=20)
    log = tmp_path / "mpirun.log"
    port = free_port()
    proc = mpirun(
        3,
        {"AZ_BATCH_MASTER_NODE": f"127.0.0.1:{port}"},
        ["--port", str(port), *args],
        cmd,
        log,
        new_token(),
    )
    try:
        victim = None
        deadline = time.monotonic() + 240
        while victim is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            joined = re.search(r"node pid (\d+), attempt 1", rank_text(log.read_text(), 2))
            started = list(out.glob("lost_node/*/tune"))
            if joined and started:
                time.sleep(5)  # mid-sweep: its first trials are running
                victim = int(joined.group(1))
        assert victim is not None, log.read_text()[-4000:]
        for pid in session_pids(victim):
            os.kill(pid, 9)
    finally:
        code = finish(proc, 500)
    text = log.read_text()
    assert code == 0, text[-4000:]
    rank2 = rank_text(text, 2)
    # whether the new node is up before the sweep ends depends on the machine's load: the
    # retry is what must happen, and no rank may end the job
    assert "the Ray worker node exited with code -9; starting it again (attempt 2 of 20)" in rank2
    assert "exited" not in rank_text(text, 1) and "error" not in rank2, rank2
    trials = pd.read_parquet(only_run_dir(out, "lost_node") / "trials.parquet")
    assert trials.trial_id.is_unique and len(trials) == 5, trials.to_string()  # 4 + baseline
    assert set(trials.status) <= {"reached", "censored", "error"}
    assert (trials.status == "reached").sum() >= 3, trials.to_string()


def test_a_gpu_head_layout_s_workers_find_the_head_through_the_rendezvous(tmp_path):
    """Two MPI jobs, as ``cluster.azure submit --head-compute`` makes them: the head job (one
    rank) publishes its address in the shared folder; the worker job's 2 ranks have their own
    job's master variables set, naming their own rank 0 and Ray's default port, and still join
    the head through the folder."""
    probe, out = write_probe(tmp_path), tmp_path / "outputs"
    rendezvous, token = tmp_path / "rendezvous", new_token()
    own_master = {
        "AZ_BATCHAI_MPI_MASTER_NODE": "127.0.0.1",
        "AZ_BATCH_MASTER_NODE": "127.0.0.1:6379",
    }
    workers = mpirun(
        2,
        own_master,
        ["--role", "worker", "--rendezvous", str(rendezvous)],
        [],
        tmp_path / "workers.log",
        token,
    )
    head = mpirun(
        1,
        own_master,
        [
            "--role",
            "head",
            "--nodes",
            "3",
            "--port",
            str(free_port()),
            "--head-host",
            "127.0.0.1",
            "--rendezvous",
            str(rendezvous),
            "--results-dir",
            str(out),
        ],
        [sys.executable, str(probe), str(out)],
        tmp_path / "head.log",
        token,
    )
    codes = (finish(head, 300), finish(workers, 120))
    text = (tmp_path / "head.log").read_text() + (tmp_path / "workers.log").read_text()
    assert codes == (0, 0), text[-4000:]
    record = read_probe(out)
    assert len(record["nodes"]) == 3 and len(record["task_nodes"]) == 3
    published = json.loads((out / "bootstrap.json").read_text())["ray_address"]
    assert f"joined the Ray head at {published}" in text and ":6379" not in published
    assert not (rendezvous / "head.json").exists()

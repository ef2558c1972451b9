"""The Azure ML bootstrap for real: local processes carrying the MPI variables of a job form a
Ray cluster on 127.0.0.1, run a command on rank 0, and all exit soon after the head (three
ranks running a real sweep of a user's env: tests/test_cluster_sweep_e2e.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_cluster_support import live_sessions, read_probe, write_probe

from cluster.auth import new_token
from cluster.nodes import free_port

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.ray, pytest.mark.parallel]


def start_rank(
    rank: int,
    size: int,
    port: int,
    args: list[str],
    cmd: list[str],
    logs: Path,
    token: str | None,
    extra_env: dict | None = None,
    num_cpus: int = 1,
) -> subprocess.Popen:
    """One process of the MPI job, as Azure ML would start it on node ``rank``, offering
    ``num_cpus`` CPUs to Ray."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "RAY_"))}
    env.update(
        {
            "OMPI_COMM_WORLD_RANK": str(rank),
            "OMPI_COMM_WORLD_SIZE": str(size),
            "AZ_BATCHAI_MPI_MASTER_NODE": "127.0.0.1",
        }
    )
    if token:
        env["RAY_AUTH_TOKEN"] = token  # as `cluster.azure submit` puts it in the job
    env.update(extra_env or {})
    log = open(logs / f"rank{rank}.log", "w")  # noqa: SIM115
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cluster.bootstrap",
            "--port",
            str(port),
            "--num-cpus",
            str(num_cpus),
            "--object-store-mb",
            "200",
            "--log-dir",
            str(logs / "ray"),
            *args,
            "--",
            *cmd,
        ],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_all(procs: dict[int, subprocess.Popen], timeout_s: float) -> dict[int, float]:
    """Wait for every rank; return each one's exit time (monotonic seconds)."""
    ended: dict[int, float] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(ended) < len(procs) and time.monotonic() < deadline:
            for rank, proc in procs.items():
                if rank not in ended and proc.poll() is not None:
                    ended[rank] = time.monotonic()
            time.sleep(0.1)
    finally:
        for proc in procs.values():
            if proc.poll() is None:  # a hung rank: kill its whole session, then fail below
                os.killpg(proc.pid, 9)
                proc.wait()
    assert len(ended) == len(procs), f"ranks still running after {timeout_s} s"
    return ended


def test_head_reports_missing_nodes_and_stops(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    started = time.monotonic()
    procs = {0: start_rank(0, 2, free_port(), ["--node-timeout", "4"], ["true"], logs, None)}
    wait_all(procs, timeout_s=90)
    text = (logs / "rank0.log").read_text()
    assert procs[0].returncode == 3, text
    assert "error: only 1 of 2 Ray nodes joined the head" in text
    assert "RAY_AUTH_TOKEN not set: Ray token authentication is off" in text
    assert "Traceback" not in text
    assert time.monotonic() - started < 60
    assert live_sessions([procs[0].pid]) == []


def test_two_job_layout_meets_through_the_rendezvous_folder(tmp_path):
    """GPU-head layout: a head job and a worker job (no shared MPI master) find each other
    through a shared folder, as two Azure ML jobs do through the workspace datastore."""
    probe, out, logs = write_probe(tmp_path), tmp_path / "outputs", tmp_path / "logs"
    logs.mkdir()
    rendezvous, token, port = tmp_path / "rendezvous", new_token(), free_port()
    common = ["--rendezvous", str(rendezvous)]
    env = {
        "OMPI_COMM_WORLD_RANK": "0",
        "OMPI_COMM_WORLD_SIZE": "1",
        "AZ_BATCHAI_MPI_MASTER_NODE": "",
    }
    short_tmp = tempfile.mkdtemp(prefix="rls-w-", dir="/tmp")  # Ray's sockets: <= 107 chars
    worker_args = [*common, "--role", "worker", "--temp-dir", short_tmp, "--node-timeout", "60"]
    worker = start_rank(1, 1, port, worker_args, [], logs, token, env)
    head = start_rank(
        0,
        1,
        port,
        [
            *common,
            "--role",
            "head",
            "--nodes",
            "2",
            "--head-host",
            "127.0.0.1",
            "--results-dir",
            str(out),
        ],
        [sys.executable, str(probe), str(out)],
        logs,
        token,
        env,
    )
    try:
        wait_all({0: head, 1: worker}, timeout_s=180)
    finally:
        shutil.rmtree(short_tmp, ignore_errors=True)
    text = (logs / "rank0.log").read_text() + (logs / "rank1.log").read_text()
    assert (head.returncode, worker.returncode) == (0, 0), text
    record = read_probe(out)
    assert len(record["nodes"]) == 2 and len(record["task_nodes"]) == 2
    assert not (rendezvous / "head.json").exists()  # the head withdrew its address
    assert live_sessions(record["task_sessions"]) == []

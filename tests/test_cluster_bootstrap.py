"""The Azure ML bootstrap for real: local processes carrying the MPI variables of a job form a
Ray cluster on 127.0.0.1, run a command on rank 0, and all exit soon after the head (three
ranks running a real sweep of a user's env: tests/test_cluster_sweep_e2e.py; under a real
``mpirun``, and the two-job GPU-head layout: tests/test_cluster_mpirun.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cluster_support import live_sessions

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


def test_the_driver_role_waits_for_the_nodes_of_a_cluster_it_did_not_form(tmp_path):
    """``--launcher ray`` (Azure ML's RayDistribution starts Ray on every node and the command
    on the head at once): the bootstrap's driver role runs the command once the cluster has
    its ``--nodes``, and stops with one line and exit 3 when it never does."""
    from cluster.local_multinode import LoopbackCluster

    out = tmp_path / "outputs"
    count = (
        "import ray, sys; ray.init(); "
        "open(sys.argv[1], 'w').write(str(len([n for n in ray.nodes() if n['Alive']])))"
    )
    with LoopbackCluster(nodes=2, cpus_per_node=1, log_dir=tmp_path / "logs") as cluster:
        env = {k: v for k, v in cluster.client_env().items() if not k.startswith("OMPI_")}

        def driver(nodes: int, *cmd: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "cluster.bootstrap",
                    "--role",
                    "driver",
                    "--nodes",
                    str(nodes),
                    "--node-timeout",
                    "5",
                    "--results-dir",
                    str(out),
                    "--",
                    *cmd,
                ],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )

        ran = driver(2, sys.executable, "-c", count, str(tmp_path / "seen"))
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert (tmp_path / "seen").read_text() == "2"
        assert json.loads((out / "bootstrap.json").read_text())["launcher"] == "ray"
        short = driver(3, "true")
    assert short.returncode == 3, short.stderr[-3000:]
    assert "error: only 2 of 3 Ray nodes joined the head" in short.stderr
    assert "Traceback" not in short.stderr

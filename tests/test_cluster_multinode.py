"""The loopback multi-node cluster for real: separate node processes on 127.0.0.1 with token
authentication, a command that uses all of them, and a teardown that leaves nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cluster_support import files_containing, live_sessions, read_probe, write_probe

from cluster.local_multinode import LoopbackCluster

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.ray, pytest.mark.parallel]


def test_cli_runs_a_command_on_three_nodes_and_tears_them_down(tmp_path):
    probe, out, logs = write_probe(tmp_path), tmp_path / "out", tmp_path / "logs"
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.local_multinode",
            "--nodes",
            "3",
            "--cpus-per-node",
            "1",
            "--log-dir",
            str(logs),
            "--",
            sys.executable,
            str(probe),
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.monotonic() - started < 120
    record = read_probe(out)
    # Three nodes of one CPU each, all on loopback, and the tasks used every one of them.
    assert len(record["nodes"]) == 3
    assert {n["node_ip"] for n in record["nodes"]} == {"127.0.0.1"}
    assert [n["num_cpus"] for n in record["nodes"]] == [1.0, 1.0, 1.0]
    assert set(record["task_nodes"]) == {n["node_id"] for n in record["nodes"]}
    assert record["address"].startswith("127.0.0.1:")
    # Every node ran in its own session, and nothing of any node is left.
    assert len(record["task_sessions"]) == 3
    assert live_sessions(record["task_sessions"]) == []
    # The token reached the command through its environment, and nowhere else.
    assert record["token"] not in proc.stdout + proc.stderr
    assert files_containing(logs, record["token"]) == []
    assert "nodes stopped" in proc.stderr


def test_cli_returns_the_command_exit_code_and_rejects_bad_input(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.local_multinode",
            "--nodes",
            "1",
            "--cpus-per-node",
            "1",
            "--",
            sys.executable,
            "-c",
            "import sys; sys.exit(5)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 5, proc.stderr[-2000:]
    for args, message in (
        (["--nodes", "0", "--", "true"], "--nodes must be at least 1"),
        (["--nodes", "2"], "no command"),
        (["--", "no-such-program-xyz"], "command not found"),
    ):
        bad = subprocess.run(
            [sys.executable, "-m", "cluster.local_multinode", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr


def test_a_driver_without_the_token_is_refused(tmp_path):
    code = (
        "from cluster.local import ClusterError, ray_session\n"
        "try:\n"
        "    with ray_session(): print('connected')\n"
        "except ClusterError as e: print(e)\n"
    )
    with LoopbackCluster(nodes=1, cpus_per_node=1, log_dir=tmp_path / "logs") as cluster:
        good = subprocess.run(
            [sys.executable, "-c", code],
            env=cluster.client_env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        env = cluster.client_env()
        del env["RAY_AUTH_TOKEN"], env["RAY_AUTH_MODE"]
        env["HOME"] = str(tmp_path)  # no ~/.ray/auth_token to fall back on
        started = time.monotonic()
        bad = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        refused_after = time.monotonic() - started
        sessions = [node.pid for node in cluster.nodes]
    assert good.stdout.strip() == "connected", good.stderr[-2000:]
    assert bad.stdout.startswith(f"cannot connect to the Ray cluster at {cluster.address}")
    assert "RAY_AUTH_MODE=token" in bad.stdout
    # refused after 10.5 s (Ray's fixed wait, 2 runs alone), not ray.init's minutes of retries
    assert refused_after < 60
    assert live_sessions(sessions) == []


def test_losing_a_worker_node_mid_job_loses_no_task(tmp_path):
    """Ray-level fault: SIGKILL a worker node while tasks run on all nodes: every task still
    completes (the lost node's are retried elsewhere) and Ray marks the node dead."""
    job = tmp_path / "job.py"
    job.write_text(
        "import json, sys, time\n"
        "import ray\n"
        "from cluster.local import ray_session\n"
        "with ray_session() as info:\n"
        "    @ray.remote(num_cpus=1, max_retries=2)\n"
        "    def work(i):\n"
        "        time.sleep(4)\n"
        "        return ray.get_runtime_context().get_node_id()\n"
        "    refs = [work.remote(i) for i in range(6)]\n"
        "    open(sys.argv[1], 'w').write('started')\n"
        "    done = ray.get(refs)\n"
        "    from cluster.local import alive_nodes\n"
        "    deadline = time.monotonic() + 60\n"
        "    while len(alive_nodes()) > 2 and time.monotonic() < deadline:\n"
        "        time.sleep(0.5)\n"
        "    print(json.dumps({'done': len(done), 'alive': len(alive_nodes())}))\n"
    )
    flag = tmp_path / "started"
    with LoopbackCluster(nodes=3, cpus_per_node=1, log_dir=tmp_path / "logs") as cluster:
        proc = subprocess.Popen(
            [sys.executable, str(job), str(flag)],
            env=cluster.client_env(),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # tasks are running on all three nodes now
        cluster.kill_node(2)
        stdout, stderr = proc.communicate(timeout=120)
        sessions = [node.pid for node in cluster.nodes]
    assert proc.returncode == 0, stderr[-3000:]
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result == {"done": 6, "alive": 2}
    assert live_sessions(sessions) == []
    assert os.path.exists(flag)


def test_nodes_stop_when_their_owner_is_killed(tmp_path):
    """A SIGKILLed owner cannot clean up; its node processes must still go (PDEATHSIG)."""
    owner = tmp_path / "owner.py"
    owner.write_text(
        "import json, os, sys\n"
        "from cluster.local_multinode import LoopbackCluster\n"
        "cluster = LoopbackCluster(nodes=2, cpus_per_node=1).start()\n"
        "open(sys.argv[1], 'w').write(json.dumps({'sessions': [n.pid for n in cluster.nodes],\n"
        "                                         'tmp': cluster._tmp}))\n"
        "os.kill(os.getpid(), 9)\n"
    )
    record = tmp_path / "sessions.json"
    proc = subprocess.run(
        [sys.executable, str(owner), str(record)],
        cwd=ROOT,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]
    owned = json.loads(record.read_text())
    deadline = time.monotonic() + 30
    while live_sessions(owned["sessions"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_sessions(owned["sessions"]) == []
    shutil.rmtree(owned["tmp"], ignore_errors=True)  # the killed owner could not

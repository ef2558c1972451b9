"""ray_session (embedded and existing clusters), the bootstrap's role plan, auth helpers and
the node helpers. Tests marked `ray` start a real local Ray."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cluster.auth import auth_env, configured_token, new_token, redact
from cluster.bootstrap import BootstrapError, plan_from_env
from cluster.local import ClusterError, alive_nodes, ray_session
from cluster.nodes import LOOPBACK_ENV, free_port, grpc_answers, session_pids, split_address

ROOT = Path(__file__).resolve().parent.parent


# -- auth -------------------------------------------------------------------------------------


def test_tokens_are_fresh_hex_and_redacted(tmp_path):
    a, b = new_token(), new_token()
    assert a != b and re.fullmatch(r"[0-9a-f]{64}", a) and re.fullmatch(r"[0-9a-f]{64}", b)
    assert auth_env(a) == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": a}
    assert auth_env(None) == {"RAY_AUTH_MODE": "disabled"}
    assert redact(f"failed with token {a}!", {"RAY_AUTH_TOKEN": a}) == "failed with token ***!"


def test_configured_token_looks_where_ray_looks(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert configured_token({}) is None
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("home-token\n")
    assert configured_token({}) == "home-token"
    path = tmp_path / "tok"
    path.write_text("path-token")
    assert configured_token({"RAY_AUTH_TOKEN_PATH": str(path)}) == "path-token"
    env = {"RAY_AUTH_TOKEN": "env-token", "RAY_AUTH_TOKEN_PATH": str(path)}
    assert configured_token(env) == "env-token"


# -- node helpers -----------------------------------------------------------------------------


def test_split_address():
    assert split_address("10.0.0.4:6379") == ("10.0.0.4", 6379)
    assert split_address("[::1]:6379") == ("::1", 6379)
    for bad in ("10.0.0.4", ":6379", "host:port"):
        with pytest.raises(ValueError, match="host:port"):
            split_address(bad)


def _silent_server() -> tuple[socket.socket, int]:
    """A TCP server that accepts connections and never answers (not a Ray GCS)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    conns = []
    threading.Thread(
        target=lambda: [conns.append(srv.accept()) for _ in range(8)], daemon=True
    ).start()
    return srv, srv.getsockname()[1]


def test_grpc_probe_tells_a_silent_listener_from_a_grpc_server():
    srv, port = _silent_server()
    try:
        started = time.monotonic()
        assert not grpc_answers("127.0.0.1", port, timeout_s=1.0)
        # it gives up at its 1 s timeout (median 1.0 s), not after minutes; 5x that beside
        # another test (-n 2)
        assert time.monotonic() - started < 5
    finally:
        srv.close()
    assert not grpc_answers("127.0.0.1", free_port(), timeout_s=1.0)


def test_session_pids_finds_a_child_and_its_grandchild():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess,sys,time;"
            "subprocess.Popen([sys.executable,'-c','import time;time.sleep(30)']);"
            "time.sleep(30)",
        ],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while len(session_pids(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(session_pids(proc.pid)) == 2
    finally:
        for pid in session_pids(proc.pid):
            os.kill(pid, 9)
        proc.wait()
    deadline = time.monotonic() + 5
    while session_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session_pids(proc.pid) == []


# -- the bootstrap's role plan ------------------------------------------------------------------


def test_plan_without_mpi_variables_is_embedded():
    assert plan_from_env({}).role == "embedded"


def test_plan_from_mpi_variables():
    env = {
        "OMPI_COMM_WORLD_RANK": "0",
        "OMPI_COMM_WORLD_SIZE": "4",
        "AZ_BATCHAI_MPI_MASTER_NODE": "10.0.0.4",
    }
    head = plan_from_env(env)
    assert (head.role, head.rank, head.nodes, head.head_host) == ("head", 0, 4, "10.0.0.4")
    worker = plan_from_env({**env, "OMPI_COMM_WORLD_RANK": "3"}, port=7000)
    assert (worker.role, worker.rank, worker.head_host, worker.port) == (
        "worker",
        3,
        "10.0.0.4",
        7000,
    )
    assert plan_from_env(env, nodes=2).nodes == 2


def test_the_documented_master_variable_comes_first_and_loses_its_port():
    mpi = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3"}
    both = {**mpi, "AZ_BATCH_MASTER_NODE": "10.0.0.5:6105", "AZ_BATCHAI_MPI_MASTER_NODE": "x"}
    assert plan_from_env(both).head_host == "10.0.0.5"
    only_mpi = {**mpi, "AZ_BATCH_MASTER_NODE": "", "AZ_BATCHAI_MPI_MASTER_NODE": "10.0.0.6"}
    assert plan_from_env(only_mpi).head_host == "10.0.0.6"
    assert plan_from_env({**mpi, "AZ_BATCH_MASTER_NODE": "node-0"}).head_host == "node-0"


def test_with_a_rendezvous_the_mpi_master_variables_are_not_the_head():
    """A GPU-head layout's worker job is an MPI job of its own: its master variable names its
    own rank 0, so its workers must wait for the head's address in the rendezvous folder."""
    env = {
        "OMPI_COMM_WORLD_RANK": "0",
        "OMPI_COMM_WORLD_SIZE": "2",
        "AZ_BATCHAI_MPI_MASTER_NODE": "10.0.0.9",
        "AZ_BATCH_MASTER_NODE": "10.0.0.9:6105",
    }
    worker = plan_from_env(env, role="worker", rendezvous=Path("/mnt/rendezvous"))
    assert worker.role == "worker" and worker.head_host is None
    head = plan_from_env(env, role="head", nodes=3, rendezvous=Path("/mnt/rendezvous"))
    assert head.head_host is None  # its own outward IP, published in the folder
    assert (
        plan_from_env(env, role="worker", rendezvous=Path("/r"), head_host="10.0.0.1").head_host
        == "10.0.0.1"
    )


def test_a_head_with_other_nodes_and_no_master_variable_does_not_bind_loopback():
    env = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "3"}
    assert plan_from_env(env).head_host is None  # its outward IP, which workers can reach
    assert plan_from_env({**env, "OMPI_COMM_WORLD_SIZE": "1"}).head_host == "127.0.0.1"


@pytest.mark.parametrize(
    "env, kwargs, message",
    [
        ({"OMPI_COMM_WORLD_RANK": "x"}, {}, "OMPI_COMM_WORLD_RANK='x' is not an integer"),
        (
            {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3"},
            {},
            "neither AZ_BATCH_MASTER_NODE nor AZ_BATCHAI_MPI_MASTER_NODE is set",
        ),
        ({}, {"role": "head"}, "needs the number of nodes"),
        ({}, {"role": "boss"}, "--role must be"),
    ],
)
def test_plan_rejects_bad_environments(env, kwargs, message):
    with pytest.raises(BootstrapError, match=message):
        plan_from_env(env, **kwargs)


def test_bootstrap_cli_errors_are_one_line():
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}
    env.pop("AZ_BATCHAI_MPI_MASTER_NODE", None)
    env.pop("AZ_BATCH_MASTER_NODE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "cluster.bootstrap", "--", "true"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: bootstrap: rank 1: no head to join: neither AZ_BATCH_MASTER_NODE nor "
        "AZ_BATCHAI_MPI_MASTER_NODE is set, and no --rendezvous folder"
    )


def test_bootstrap_without_mpi_runs_the_command_directly(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_")}
    out = tmp_path / "ran"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.bootstrap",
            "--",
            sys.executable,
            "-c",
            f"import os,sys; open({str(out)!r},'w').write("
            "os.environ.get('RAY_ADDRESS','-')); sys.exit(7)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 7  # the command's exit code
    assert out.read_text() == "-"  # no cluster address: sweeps.run embeds its own Ray


# -- ray_session ----------------------------------------------------------------------------------


_SESSION = (
    "import sys\n"
    "from cluster.local import ClusterError, ray_session\n"
    "try:\n"
    "    with ray_session(sys.argv[1] if len(sys.argv) > 1 else None):\n"
    "        print('connected')\n"
    "except ClusterError as e:\n"
    "    print(e)\n"
    "    sys.exit(2)\n"
)


def session_in_subprocess(*args: str, **env: str) -> tuple[int, str, str, float]:
    """Run ray_session in a fresh Python whose Ray keeps loopback addresses on loopback."""
    full_env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    full_env.update(LOOPBACK_ENV, **env)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _SESSION, *args],
        env=full_env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout.strip(), proc.stderr, time.monotonic() - started


def test_unreachable_address_fails_fast_with_one_line():
    port = free_port()
    code, out, err, seconds = session_in_subprocess(f"127.0.0.1:{port}")
    # its 5 s probe and a Python start (median 5.5 s), not ray.init's minutes of retries;
    # 5x that beside another test (-n 2)
    assert code == 2 and seconds < 30
    assert out == (
        f"cannot reach a Ray cluster at 127.0.0.1:{port} (address): nothing answered "
        f"on 127.0.0.1:{port} within 5 s"
    )
    assert "Traceback" not in err


def test_ray_address_variable_is_used_and_named():
    srv, port = _silent_server()
    try:
        code, out, err, seconds = session_in_subprocess(RAY_ADDRESS=f"127.0.0.1:{port}")
    finally:
        srv.close()
    assert code == 2 and seconds < 30  # as above
    assert out.startswith(f"no Ray cluster at 127.0.0.1:{port} (RAY_ADDRESS): something listens")
    assert "Traceback" not in err


def test_malformed_address():
    with pytest.raises(ClusterError, match="bad Ray address 'nohost'"):
        with ray_session("nohost"):
            pass


def test_alive_nodes_needs_a_session():
    with pytest.raises(ClusterError, match="not initialised"):
        alive_nodes()


@pytest.mark.ray
@pytest.mark.parallel
def test_embedded_session_is_sized_and_shut_down(monkeypatch):
    import ray

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with ray_session(num_cpus=2) as info:
        assert info.embedded and info.address == "local"
        assert len(info.nodes) == 1
        node = info.nodes[0]
        assert node["num_cpus"] == 2.0 and node["num_gpus"] == 0.0
        assert set(node) == {"node_ip", "num_cpus", "num_gpus", "node_id"}
        assert ray.get(ray.remote(lambda: 41 + 1).remote()) == 42
        with pytest.raises(ClusterError, match="already initialised"):
            with ray_session():
                pass
    assert not ray.is_initialized()
    # Shut down on Ctrl-C too.
    with pytest.raises(KeyboardInterrupt):
        with ray_session(num_cpus=1):
            raise KeyboardInterrupt
    assert not ray.is_initialized()


EMBEDDED_HOLDER = """\
import sys, time
import ray
from cluster.local import ray_session
with ray_session(None, num_cpus=1, log_to_driver=False):
    print(ray.get_runtime_context().gcs_address, flush=True)
    sys.stdin.read()  # hold the cluster until the test closes stdin
"""


@pytest.mark.ray
@pytest.mark.parallel
def test_the_embedded_ray_refuses_a_process_without_its_token():
    """Ray 2.60's gRPC servers listen on every interface (its binaries add a 0.0.0.0 listener;
    there is no loopback-only option), so what keeps other processes and hosts out of the
    default embedded Ray is its per-run token. A real embedded Ray, and a real stranger that
    knows its address but not its token: refused, in one line, quickly."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    holder = subprocess.Popen(
        [sys.executable, "-c", EMBEDDED_HOLDER],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        gcs = holder.stdout.readline().strip()
        assert gcs, "the embedded Ray did not start"
        stranger = "\n".join(
            [
                "from cluster.local import ClusterError, ray_session",
                "try:",
                f"    with ray_session({gcs!r}, log_to_driver=False): print('CONNECTED')",
                "except ClusterError as e: print('REFUSED', e)",
            ]
        )
        # both strangers at once: each waits mostly on the refusal, not on a CPU
        start = time.time()
        strangers = {
            name: subprocess.Popen(
                [sys.executable, "-c", stranger],
                cwd=ROOT,
                env=stranger_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name, stranger_env in [
                ("no token", env),
                ("another token", {**env, **auth_env(new_token())}),
            ]
        }
        for name, proc in strangers.items():
            out, err = proc.communicate(timeout=120)
            assert out.startswith("REFUSED"), (name, out, err[-2000:])
            assert "RAY_AUTH" in out or "token" in out.lower(), (name, out)
            assert time.time() - start < 60, name  # 10.5 s in 4 runs alone
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)

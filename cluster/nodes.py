"""Ray nodes as child processes we own, stopped by session.

A node is one ``python -m cluster.nodes head|worker ...`` process started in a new session. It
does what ``ray start --block`` does (build ``RayParams``, start a ``ray._private.node.Node``,
watch its processes) with two differences that matter here:

* the node IP is taken as given. ``ray start`` replaces a loopback ``--node-ip-address`` and a
  loopback ``--address`` by the machine's outward-facing IP
  (``ray._private.services.resolve_ip_for_localhost``), so a "127.0.0.1" cluster built with it
  talks over the machine's network address. Processes that must stay on loopback also get
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, the one switch that makes Ray's IP detection return
  127.0.0.1 (``ray._private.services.get_node_ip_address``; on Linux it has no other effect
  outside the ``ray start`` CLI);
* the owner decides when the node ends. :mod:`cluster.bootstrap` ends a worker node a few
  seconds after the head is gone, where ``ray start --block`` waits for its raylet to give up
  on the GCS and keeps a cloud job billing meanwhile.

The runner is a session leader; the node's GCS (head only), raylet, agents and the raylet's
worker processes all stay in its session. :meth:`RayNode.stop` asks the runner to stop the
node, SIGKILLs what is left of the session, and checks ``/proc`` that nothing survived. Nothing else on the machine is touched (never ``ray stop``, which kills every
Ray on the machine). ``ray._private`` is not a public API: it is used exactly as ``ray start``
and ``ray.cluster_utils.Cluster`` use it, and Ray is pinned (``ray==2.60.0``).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cluster.auth import auth_env

#: Default GCS port of a Ray head (``ray start --head``'s default).
DEFAULT_HEAD_PORT = 6379

#: Ray settings (``_system_config``) of every cluster this project starts: the embedded Ray
#: (:mod:`cluster.local`) and the heads of :mod:`cluster.local_multinode` and
#: :mod:`cluster.bootstrap` (a worker node takes its head's). ``worker_niceness``: Ray starts
#: every worker process (Tune's trial actors, RLlib's env runners and learners) at nice 15 by
#: default, so that any nice-0 process busy on the same core takes ~97 % of it (the kernel's
#: CFS weights 1024 against 36). A trial's env runner then all but stops sampling, and a trial
#: is timed, or stalls, by what else runs on the machine: an Algorithm built in a nice-0
#: process (a test, a notebook) starved its own env runners whenever its learner or one busy
#: process beside it held the other core. At 0, the measured processes compete as equals.
RAY_SYSTEM_CONFIG = {"worker_niceness": 0}

#: Environment that keeps Ray's IP detection on loopback (see the module docstring).
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}

# Settings every node we start gets (environment variables read by Ray's Python and C++ code).
_NODE_ENV = {
    # SIGTERM means "stop now": no 30 s drain of the node (ray/_private/node.py).
    "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
}


class NodeStartError(RuntimeError):
    """A node process exited, or did not come up in time (message: one line)."""


def is_loopback(host: str | None) -> bool:
    """True for ``localhost`` and 127.0.0.0/8 addresses."""
    return bool(host) and (host == "localhost" or host.startswith("127."))


def free_port(host: str = "127.0.0.1", exclude: tuple[int | None, ...] = ()) -> int:
    """Return a TCP port that is free on ``host`` now (the OS picks it; it may be taken later)
    and is none of ``exclude``: ports chosen earlier but not bound yet, which the OS may hand
    out again."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in exclude:
            return port


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports free on ``host`` now (see :func:`free_port`)."""
    ports: list[int] = []
    while len(ports) < count:
        ports.append(free_port(host, exclude=tuple(ports)))
    return ports


def port_open(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """True if a TCP connection to ``host:port`` succeeds within ``timeout_s`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_HTTP2_EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # length 0, type SETTINGS


def grpc_answers(host: str, port: int, timeout_s: float = 5.0) -> bool:
    """True if an HTTP/2 (gRPC) server answers at ``host:port`` within ``timeout_s`` seconds.

    Ray's GCS is a gRPC server. A client that opens a connection sends the HTTP/2 preface and a
    SETTINGS frame, and the server's first frame is a SETTINGS frame (RFC 9113, section 3.4).
    This tells a GCS from a port where something else listens (where ``ray.init`` would retry
    for minutes), without Ray and without a request.
    """
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.settimeout(timeout_s)
            s.sendall(_HTTP2_PREFACE + _HTTP2_EMPTY_SETTINGS)
            header = b""
            while len(header) < 9:
                chunk = s.recv(9 - len(header))
                if not chunk:
                    return False
                header += chunk
    except OSError:
        return False
    return header[3] == 0x04


def split_address(address: str) -> tuple[str, int]:
    """Split ``"host:port"`` into ``(host, port)``.

    Raises:
        ValueError: the address is not ``host:port`` with a numeric port (message names it).
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"Ray address {address!r} is not of the form host:port")
    return host.strip("[]"), int(port)


def session_pids(sid: int) -> list[int]:
    """PIDs of live (non-zombie) processes in session ``sid``, read from ``/proc``.

    A node runner is started as a session leader, and everything it starts stays in its
    session: the GCS, raylet and agents share its process group, while Ray's worker processes
    move to process groups of their own (so a process-group signal alone would miss them).
    """
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the command name (which may hold spaces) start after the last ')':
        # state, ppid, pgrp, session, ...
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def _signal_pids(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class RayNode:
    """One Ray node run by ``python -m cluster.nodes`` as our child, in its own session.

    Args:
        head: start a head node (GCS + raylet) instead of a worker node.
        num_cpus: logical CPUs the node offers to Ray's scheduler (may exceed physical cores).
        num_gpus: GPUs the node offers; None lets Ray detect them.
        port: head only: the GCS port (default 6379).
        address: worker only: the head's GCS address ``host:port``.
        node_ip: the IP the node advertises; None lets Ray detect it (a worker then uses the IP
            by which it reaches the head). A loopback IP keeps the whole node on loopback.
        token: the cluster's auth token (passed in the environment only), or None for a
            cluster without token authentication.
        temp_dir: Ray's temp dir (sessions, sockets, logs); None for Ray's default.
        object_store_memory: bytes of object store; None for Ray's default (30% of memory).
        log_path: file that receives the node's output; None discards it.
        extra_env: more environment variables for the node's processes.
        dashboard_port: head only: serve Ray's dashboard and its job server (the Ray Jobs
            API, :mod:`cluster.jobs`) on ``node_ip`` (default 127.0.0.1) at this port; None:
            no dashboard. Needs ``ray[default]``.
    """

    head: bool
    num_cpus: float
    num_gpus: float | None = None
    port: int = DEFAULT_HEAD_PORT
    address: str | None = None
    node_ip: str | None = None
    token: str | None = None
    temp_dir: str | None = None
    object_store_memory: int | None = None
    log_path: Path | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    dashboard_port: int | None = None
    proc: subprocess.Popen | None = field(default=None, init=False, repr=False)
    _ready_file: str | None = field(default=None, init=False, repr=False)

    def command(self) -> list[str]:
        """The node runner's command line (it never holds a secret)."""
        cmd = [sys.executable, "-m", "cluster.nodes"]
        if self.head:
            cmd += ["head", f"--port={self.port}"]
            if self.dashboard_port:
                cmd.append(f"--dashboard-port={self.dashboard_port}")
        else:
            if not self.address:
                raise ValueError("a worker RayNode needs the head's address")
            cmd += ["worker", f"--address={self.address}"]
        if self.node_ip:
            cmd.append(f"--node-ip={self.node_ip}")
        cmd.append(f"--num-cpus={self.num_cpus:g}")
        if self.num_gpus is not None:
            cmd.append(f"--num-gpus={self.num_gpus:g}")
        if self.temp_dir:
            cmd.append(f"--temp-dir={self.temp_dir}")
        if self.object_store_memory:
            cmd.append(f"--object-store-memory={int(self.object_store_memory)}")
        if self._ready_file:
            cmd.append(f"--ready-file={self._ready_file}")
        return cmd

    def environment(self) -> dict[str, str]:
        """The node's environment: ours, plus Ray settings, auth mode and token."""
        env = dict(os.environ)
        env.update(_NODE_ENV)
        env.update(auth_env(self.token))
        if is_loopback(self.node_ip) or (
            self.address and is_loopback(split_address(self.address)[0])
        ):
            env.update(LOOPBACK_ENV)
        env.update(self.extra_env)
        # Python must find this package in the runner and in Ray's worker processes.
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        # A job's `python ...` entrypoint (cluster.jobs) runs the node's own interpreter.
        bindir = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join(p for p in (bindir, env.get("PATH")) if p)
        return env

    def start(self) -> RayNode:
        """Start the node's runner process; returns at once (see :meth:`wait_up`)."""
        fd, self._ready_file = tempfile.mkstemp(prefix="rls-node-", suffix=".ready")
        os.close(fd)
        os.unlink(self._ready_file)  # the runner creates it once the node is up
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                self.command(),
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if out is not subprocess.DEVNULL:
                out.close()
        return self

    @property
    def pid(self) -> int | None:
        """PID (= session id) of the runner process, None before :meth:`start`."""
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        """True while the runner process runs."""
        return self.proc is not None and self.proc.poll() is None

    def wait_up(self, timeout_s: float = 60.0) -> None:
        """Wait until the node is up: its raylet registered with the GCS (and, for a head, the
        GCS accepts connections).

        Raises:
            NodeStartError: the runner exited, or the node was not up within ``timeout_s``
                seconds; the message names the log file.
        """
        role = "head" if self.head else "worker"
        where = f" (log: {self.log_path})" if self.log_path else ""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                code = self.proc.returncode if self.proc else None
                raise NodeStartError(
                    f"Ray {role} node process exited with code {code} before the node was up{where}"
                )
            if self._ready_file and os.path.exists(self._ready_file):
                os.unlink(self._ready_file)
                return
            time.sleep(0.2)
        raise NodeStartError(f"Ray {role} node not up after {timeout_s:.0f} s{where}")

    def pids(self) -> list[int]:
        """PIDs of all live processes of the node (its runner's session)."""
        return session_pids(self.proc.pid) if self.proc else []

    def kill(self) -> None:
        """SIGKILL every process of the node at once (simulates losing the machine)."""
        if self.proc is None:
            return
        _signal_pids(self.pids(), signal.SIGKILL)
        self.proc.wait()

    def stop(self, grace_s: float = 10.0) -> list[int]:
        """Stop the node: SIGTERM its runner (which stops the node's processes, as
        ``ray start --block`` does), then SIGKILL whatever of its session is left after
        ``grace_s`` seconds.

        Returns:
            PIDs of the node still alive at the end (normally none; any PID listed escaped).
        """
        if self.proc is None:
            return []
        if self._ready_file and os.path.exists(self._ready_file):
            os.unlink(self._ready_file)
        _signal_pids([self.proc.pid], signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            self.proc.poll()  # reap the runner so it does not linger as a zombie
            if not self.pids():
                break
            time.sleep(0.1)
        if self.pids():
            _signal_pids(self.pids(), signal.SIGKILL)
            time.sleep(0.5)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        return self.pids()


def stop_all(nodes: Sequence[RayNode], grace_s: float = 10.0) -> list[int]:
    """Stop worker nodes first, then heads; return PIDs that survived (normally none)."""
    survivors: list[int] = []
    for node in sorted(nodes, key=lambda n: n.head):
        survivors += node.stop(grace_s=grace_s)
    return survivors


# ---------------------------------------------------------------------------------------------
# The node runner: `python -m cluster.nodes head|worker ...` (what `ray start --block` does).
# ---------------------------------------------------------------------------------------------


def _run_node(args: argparse.Namespace) -> int:
    import ray._private.node
    import ray._private.parameter
    import ray._private.services as services
    import ray._private.utils
    from ray._private.authentication.authentication_token_setup import (
        ensure_token_if_auth_enabled,
    )

    # Token mode without a token fails here, with Ray's own message, not in the GCS.
    ensure_token_if_auth_enabled(None, create_token_if_missing=False)
    loopback = is_loopback(args.node_ip) or (
        args.address is not None and is_loopback(split_address(args.address)[0])
    )
    if args.head:
        node_ip = args.node_ip or services.get_node_ip_address()
    else:
        node_ip = args.node_ip or services.get_node_ip_address(args.address)
    params = ray._private.parameter.RayParams(
        node_ip_address=node_ip,
        node_name=node_ip,
        num_cpus=args.num_cpus,
        num_gpus=args.num_gpus,
        object_store_memory=args.object_store_memory,
        temp_dir=args.temp_dir,
        include_dashboard=bool(args.head and args.dashboard_port),
        dashboard_host=args.node_ip or "127.0.0.1",
        **({"dashboard_port": args.dashboard_port} if args.head and args.dashboard_port else {}),
        # Several nodes on one machine: let the OS pick every port (fixed defaults would clash).
        # not the dashboard's port, chosen (but not yet bound) by whoever started this node
        dashboard_agent_listen_port=free_port(
            "" if not loopback else "127.0.0.1", exclude=(args.dashboard_port,)
        ),
        min_worker_port=0 if loopback else None,
        max_worker_port=0 if loopback else None,
        huge_pages=False,
        _system_config=dict(RAY_SYSTEM_CONFIG) if args.head else None,
    )
    if args.head:
        params.gcs_server_port = args.port
    else:
        params.gcs_address = args.address
    node = ray._private.node.Node(params, head=args.head, shutdown_at_exit=True, spawn_reaper=True)
    # As `ray start` does: Ray's job server resolves its jobs' address ("auto") from this file
    # in the node's temp dir; without it, on a machine running another Ray, it picks any
    # running GCS and the job joins the wrong cluster.
    ray._private.utils.write_ray_address(node.gcs_address, args.temp_dir)
    role = "head" if args.head else "worker"
    print(f"Ray {role} node up: ip {node_ip}, {args.num_cpus:g} CPUs", flush=True)
    if args.ready_file:
        Path(args.ready_file).touch()
    # Like `ray start --block`: if one of the node's processes dies, end the node.
    while True:
        time.sleep(1.0)
        dead = [kind for kind, proc in node.dead_processes() if proc.returncode != 0]
        if dead:
            print(f"Ray {role} node: {', '.join(dead)} exited; stopping the node", flush=True)
            node.kill_all_processes(check_alive=False, allow_graceful=False)
            return 1


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this runner when its owner dies (``prctl(PR_SET_PDEATHSIG)``).

    The runner lives in its own session, so a SIGKILLed owner (a cancelled job, a killed test)
    would otherwise leave a Ray node running with nobody to stop it.
    """
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the owner died before the request took effect
        sys.exit(1)


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split a CLI's ``argv`` at the first ``--``: (our own options, the command to run after
    it); no ``--``: (all of argv, [])."""
    argv = list(argv)
    if "--" in argv:
        split = argv.index("--")
        return argv[:split], argv[split + 1 :]
    return argv, []


def run_command(cmd: Sequence[str], env: dict[str, str]) -> int:
    """Run ``cmd``; forward SIGTERM to it; return its exit code (128+n if killed by signal n)."""
    proc = subprocess.Popen(list(cmd), env=env)

    def forward(signum, _frame):
        proc.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                # Ctrl-C reached the command too (same process group): let it finish cleanly.
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)
    return code if code >= 0 else 128 - code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the node runner (used by :class:`RayNode`, not meant to be typed)."""
    parser = argparse.ArgumentParser(prog="python -m cluster.nodes", description=__doc__)
    parser.add_argument("role", choices=["head", "worker"])
    parser.add_argument("--port", type=int, default=DEFAULT_HEAD_PORT)
    parser.add_argument("--address", default=None)
    parser.add_argument("--node-ip", default=None)
    parser.add_argument("--num-cpus", type=float, required=True)
    parser.add_argument("--num-gpus", type=float, default=None)
    parser.add_argument("--temp-dir", default=None)
    parser.add_argument("--object-store-memory", type=int, default=None)
    parser.add_argument("--ready-file", default=None, help="created once the node is up")
    parser.add_argument(
        "--dashboard-port",
        type=int,
        default=None,
        help="head: serve the dashboard and the Ray Jobs API at this port",
    )
    args = parser.parse_args(argv)
    args.head = args.role == "head"
    args.num_cpus = int(args.num_cpus) if args.num_cpus == int(args.num_cpus) else args.num_cpus
    if args.num_gpus is not None and args.num_gpus == int(args.num_gpus):
        args.num_gpus = int(args.num_gpus)
    if not args.head and not args.address:
        parser.error("worker needs --address HOST:PORT")
    _die_with_parent()
    try:
        return _run_node(args)
    except Exception as exc:  # one line for the owner's log, not a traceback
        print(f"Ray {args.role} node failed: {type(exc).__name__}: {exc}", flush=True)
        return 1


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m cluster.nodes", main))

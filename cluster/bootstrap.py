"""Turn the N processes of an Azure ML MPI job into one Ray cluster, run a command on it.

``python -m cluster.bootstrap [--results-dir DIR] -- python -m sweeps.run SWEEP --results DIR``

Azure ML starts this once per node of a command job with
``MpiDistribution(process_count_per_instance=1)`` (its ``mpirun``) and sets, per process,
``OMPI_COMM_WORLD_RANK`` (0..N-1), ``OMPI_COMM_WORLD_SIZE`` (N), and rank 0's host in
``AZ_BATCH_MASTER_NODE`` (``host:port``, documented for multi-node jobs) and
``AZ_BATCHAI_MPI_MASTER_NODE`` (a bare host), read in that order. The protocol (ray-on-aml's
job mode, without its SDK v1 dependency):

* rank 0 starts the Ray head on the master node, waits until all N nodes have joined
  (``--node-timeout`` seconds, else a one-line error and exit code 3), writes
  ``bootstrap.json`` (nodes, timings; no secret) into ``--results-dir``, runs the command with
  ``RAY_ADDRESS`` set, stops the head and exits with the command's exit code;
* ranks > 0 wait for the head's port, start a worker node that joins it, and exit (code 0)
  a few seconds after the head is gone: the node is stopped by this process, not left to
  ``ray start --block``, which outlives the head and keeps the job billing. A node that fails
  to start or dies while the head is up is started again (``--start-attempts``); a worker that
  gives up still exits 0, since ``mpirun`` ends every rank once one exits non-zero, and the
  head's sweep retries the trials a lost node held;
* without those variables (a laptop, a single-node job) the command just runs, and
  ``sweeps.run`` starts its embedded local Ray.

Two-job layouts (a GPU head job and a CPU worker job, see ``python -m cluster.azure submit
--head-compute``) use ``--role head|worker`` and ``--rendezvous DIR``, a folder both jobs
mount: the head writes its address there and the workers read it (never the worker job's
own MPI master variables, which name the worker job's rank 0).

Authentication: when ``RAY_AUTH_TOKEN`` is in the environment (``cluster.azure submit`` puts
a fresh one into the job's environment), every node and the command run with token
authentication; without it, Ray runs with authentication off inside the job's network and a
warning says so. The token is never printed or written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cluster.auth import AUTH_MODE_VAR, AUTH_TOKEN_VAR, auth_env
from cluster.nodes import (
    DEFAULT_HEAD_PORT,
    LOOPBACK_ENV,
    NodeStartError,
    RayNode,
    is_loopback,
    port_open,
    run_command,
    split_address,
    split_command,
)

RANK_VAR = "OMPI_COMM_WORLD_RANK"
SIZE_VAR = "OMPI_COMM_WORLD_SIZE"
#: Rank 0's host in an Azure ML MPI job, in the order read: ``AZ_BATCH_MASTER_NODE``
#: (``MASTER_ADDR:MASTER_PORT``, the variable Microsoft's distributed-training guide documents
#: for multi-node jobs), then ``AZ_BATCHAI_MPI_MASTER_NODE`` (a bare host, set on single- and
#: multi-node MPI jobs alike).
MASTER_VARS = ("AZ_BATCH_MASTER_NODE", "AZ_BATCHAI_MPI_MASTER_NODE")

#: Exit codes besides the command's own.
EXIT_BAD_SETUP = 2
EXIT_NODES_MISSING = 3
EXIT_NODE_FAILED = 4

#: Seconds a Ray node of this machine may take to start (separate from --node-timeout, the
#: wait for the other machines).
NODE_START_TIMEOUT_S = 120.0

#: Attempts a worker makes to start its Ray node and join the head, at the start and again
#: whenever the node dies while the head is up (ray-on-aml retries ``ray start`` 20 times).
WORKER_START_ATTEMPTS = 20
RETRY_PAUSE_S = 3.0

#: Consecutive failed probes of the head's port after which a worker declares the head gone.
HEAD_GONE_PROBES = 3
PROBE_INTERVAL_S = 1.0


class BootstrapError(RuntimeError):
    """The cluster could not be formed (message: one line; ``code`` is the exit code)."""

    def __init__(self, message: str, code: int = EXIT_BAD_SETUP) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class NodeRole:
    """What this process does.

    Attributes:
        role: ``"embedded"`` (just run the command), ``"head"``, ``"worker"`` or ``"driver"``
            (wait for the nodes of a cluster another launcher formed, then run the command).
        rank: MPI rank (0 for the head, -1 when there is no MPI job).
        nodes: Ray nodes expected in the cluster, head included.
        head_host: host of the head (None for ``embedded``; from the rendezvous for a worker
            of a two-job layout).
        port: the head's GCS port.
    """

    role: str
    rank: int
    nodes: int
    head_host: str | None
    port: int


def plan_from_env(
    env: Mapping[str, str],
    *,
    role: str = "auto",
    nodes: int | None = None,
    port: int = DEFAULT_HEAD_PORT,
    rendezvous: Path | None = None,
    head_host: str | None = None,
) -> NodeRole:
    """Decide this process's role from the MPI variables (or ``--role``).

    Args:
        env: the process environment.
        role: ``"auto"`` (from ``OMPI_COMM_WORLD_RANK``), ``"head"``, ``"worker"`` or
            ``"driver"``.
        nodes: expected Ray nodes (default ``OMPI_COMM_WORLD_SIZE``; required for ``head``
            outside an MPI job).
        port: the head's GCS port.
        rendezvous: folder shared by head and workers of a two-job layout.
        head_host: the head's host, overriding the MPI master variables (:data:`MASTER_VARS`).

    Raises:
        BootstrapError: inconsistent or malformed variables (the message names them).
    """

    def int_var(name: str) -> int | None:
        raw = env.get(name)
        if raw is None or raw == "":
            return None
        try:
            return int(raw)
        except ValueError:
            raise BootstrapError(f"{name}={raw!r} is not an integer") from None

    rank, size = int_var(RANK_VAR), int_var(SIZE_VAR)
    # A two-job layout's worker job is an MPI job of its own: its master variables name the
    # worker job's rank 0, not the head, which only the rendezvous folder knows.
    master = head_host or (None if rendezvous is not None else master_host(env))
    if role == "auto":
        if rank is None:
            return NodeRole("embedded", -1, 1, None, port)
        role = "head" if rank == 0 else "worker"
    if role == "driver":  # a cluster another launcher formed (RayDistribution)
        if nodes is None or nodes < 1:
            raise BootstrapError("--role driver needs --nodes N: the nodes to wait for")
        return NodeRole("driver", 0 if rank is None else rank, nodes, None, port)
    if role not in ("head", "worker"):
        raise BootstrapError(f"--role must be auto, head, worker or driver, not {role!r}")
    expected = nodes if nodes is not None else size
    if role == "head":
        if expected is None or expected < 1:
            raise BootstrapError(
                f"the head needs the number of nodes: --nodes N or {SIZE_VAR} (got {expected})"
            )
        # alone, it may stay on loopback; with other nodes it must be reachable: its own IP
        host = master or ("127.0.0.1" if rendezvous is None and expected == 1 else None)
        return NodeRole("head", 0 if rank is None else rank, expected, host, port)
    if rendezvous is None and not master:
        raise BootstrapError(
            f"rank {rank}: no head to join: neither {' nor '.join(MASTER_VARS)} is set, "
            "and no --rendezvous folder"
        )
    return NodeRole("worker", -1 if rank is None else rank, expected or 0, master, port)


def master_host(env: Mapping[str, str]) -> str | None:
    """Rank 0's host from the first of :data:`MASTER_VARS` that is set and not empty (a
    ``host:port`` value gives its host), or None."""
    for name in MASTER_VARS:
        raw = (env.get(name) or "").strip()
        if raw:
            host, sep, port = raw.rpartition(":")
            return host if sep and port.isdigit() and host else raw
    return None


def _resolve(host: str) -> str:
    """IPv4 address of ``host`` (an IP is returned as is)."""
    try:
        return socket.gethostbyname(host)
    except OSError as exc:
        raise BootstrapError(f"cannot resolve the head host {host!r}: {exc}") from None


def _log(plan: NodeRole, message: str) -> None:
    who = f"rank {plan.rank}" if plan.rank >= 0 else plan.role
    print(f"[bootstrap {who}] {message}", file=sys.stderr, flush=True)


def _token(env: Mapping[str, str]) -> str | None:
    if env.get(AUTH_MODE_VAR, "").lower() == "disabled":
        return None
    token = env.get(AUTH_TOKEN_VAR, "").strip()
    return token or None


def _command_env(address: str, token: str | None, loopback: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(auth_env(token))
    if loopback:
        env.update(LOOPBACK_ENV)
    env["RAY_ADDRESS"] = address
    return env


def _wait_for_nodes(
    address: str, expected: int, timeout_s: float, plan: NodeRole
) -> tuple[list[dict], float]:
    """Connect as a driver and wait until ``expected`` nodes are alive; return them."""
    import ray

    from cluster.local import alive_nodes

    started = time.monotonic()
    ray.init(address=address, logging_level="WARNING")
    try:
        last = -1
        while True:
            nodes = alive_nodes()
            if len(nodes) != last:
                _log(plan, f"{len(nodes)} of {expected} Ray nodes joined")
                last = len(nodes)
            if len(nodes) >= expected:
                return nodes, time.monotonic() - started
            if time.monotonic() - started > timeout_s:
                raise BootstrapError(
                    f"only {len(nodes)} of {expected} Ray nodes joined the head at {address} "
                    f"within {timeout_s:.0f} s (worker ranks missing or unable to reach the "
                    f"head's port {plan.port})",
                    EXIT_NODES_MISSING,
                )
            time.sleep(1.0)
    finally:
        ray.shutdown()


def run_head(plan: NodeRole, cmd: Sequence[str], args: argparse.Namespace) -> int:
    """Rank 0: start the head, wait for all nodes, run the command, stop the head."""
    token = _token(os.environ)
    ip = _resolve(plan.head_host) if plan.head_host else _default_ip()
    loopback = is_loopback(ip)
    if loopback:
        os.environ.update(LOOPBACK_ENV)  # before `import ray`: Ray reads it at import
    os.environ.update(auth_env(token))
    if token is None:
        _log(plan, "warning: RAY_AUTH_TOKEN not set: Ray token authentication is off")
    head = RayNode(
        head=True,
        num_cpus=args.num_cpus,
        num_gpus=args.num_gpus,
        port=plan.port,
        node_ip=ip,
        token=token,
        temp_dir=args.temp_dir,
        object_store_memory=args.object_store_bytes,
        log_path=args.log_dir / f"ray-head-rank{plan.rank}.log" if args.log_dir else None,
    )
    results_dir: Path | None = args.results_dir
    started = time.monotonic()
    try:
        head.start()
        head.wait_up(NODE_START_TIMEOUT_S)
        address = f"{ip}:{plan.port}"
        _log(plan, f"Ray head up at {address}; waiting for {plan.nodes} nodes")
        if args.rendezvous:
            _publish(args.rendezvous, address)
        nodes, waited = _wait_for_nodes(address, plan.nodes, args.node_timeout, plan)
        _write_bootstrap(
            results_dir,
            address,
            plan,
            nodes,
            waited,
            cmd,
            cluster_up_s=round(time.monotonic() - started, 2),
            token_auth=token is not None,
        )
        _log(plan, f"all {plan.nodes} nodes joined; running: {' '.join(cmd)}")
        code = run_command(cmd, _command_env(address, token, loopback))
        _log(plan, f"command exited {code}; stopping the Ray head")
        return code
    except NodeStartError as exc:
        raise BootstrapError(str(exc), EXIT_NODE_FAILED) from None
    finally:
        survivors = head.stop()
        if args.rendezvous:
            _unpublish(args.rendezvous)
        if survivors:
            _log(plan, f"warning: Ray head processes {survivors} survived SIGKILL")


def run_driver(plan: NodeRole, cmd: Sequence[str], args: argparse.Namespace) -> int:
    """A cluster formed by someone else (Azure ML's ``RayDistribution`` starts Ray on every
    node and the command on the head, not waiting for the others): wait until ``--nodes`` Ray
    nodes are alive, then run the command, so that its placement check sizes the trials on
    the whole cluster, not on the nodes that happened to be up."""
    address = os.environ.get("RAY_ADDRESS") or "auto"
    nodes, waited = _wait_for_nodes(address, plan.nodes, args.node_timeout, plan)
    _write_bootstrap(args.results_dir, address, plan, nodes, waited, cmd, launcher="ray")
    _log(plan, f"all {plan.nodes} nodes are up; running: {' '.join(cmd)}")
    return run_command(cmd, dict(os.environ))


def _default_ip() -> str:
    """The IP Ray would give this node (the one it reaches the outside world from)."""
    import ray._private.services as services

    return services.get_node_ip_address()


def _publish(rendezvous: Path, address: str) -> None:
    rendezvous.mkdir(parents=True, exist_ok=True)
    tmp = rendezvous / ".head.json.tmp"
    tmp.write_text(json.dumps({"address": address, "published_at": time.time()}))
    tmp.replace(rendezvous / "head.json")


def _unpublish(rendezvous: Path) -> None:
    try:
        (rendezvous / "head.json").unlink()
    except OSError:
        pass


def _write_bootstrap(
    results_dir: Path | None,
    address: str,
    plan: NodeRole,
    nodes: object,
    waited_s: float,
    cmd: Sequence[str],
    **extra: object,
) -> None:
    """``bootstrap.json`` in ``results_dir`` (nothing without one): the Ray address, the nodes
    expected and found, the seconds waited for them, the command, and ``extra`` (the head's
    ``cluster_up_s`` and ``token_auth``, the driver's ``launcher``). No secret goes in it."""
    if not results_dir:
        return
    results_dir.mkdir(parents=True, exist_ok=True)
    _write_json(
        results_dir / "bootstrap.json",
        {
            "ray_address": address,
            "nodes_expected": plan.nodes,
            "nodes": nodes,
            "nodes_wait_s": round(waited_s, 2),
            **extra,
            "command": list(cmd),
        },
    )


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def _head_address(plan: NodeRole, args: argparse.Namespace) -> str:
    """The head's address: from the master host, or from the rendezvous folder."""
    if plan.head_host:
        return f"{_resolve(plan.head_host)}:{plan.port}"
    deadline = time.monotonic() + args.node_timeout
    path = args.rendezvous / "head.json"
    while time.monotonic() < deadline:
        try:
            return json.loads(path.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(2.0)
    raise BootstrapError(
        f"no head address in {path} after {args.node_timeout:.0f} s (head job not running?)",
        EXIT_NODES_MISSING,
    )


def run_worker(plan: NodeRole, args: argparse.Namespace, own_temp: _OwnTempDir) -> int:
    """Ranks > 0: join the head; stop the node and exit soon after the head is gone.

    A node that fails to start, or dies while the head is up, is started again, up to
    ``--start-attempts`` in all. A worker that gives up exits 0 all the same: an MPI job
    ends every rank when one exits non-zero (Open MPI's default), so a lost worker would end
    the sweep that the head runs; the head's wait for its nodes and the sweep's own trial
    retries handle the missing node instead.
    """
    address = _head_address(plan, args)
    host, port = split_address(address)
    if args.temp_dir is None and is_loopback(host):  # a head found through the rendezvous
        args.temp_dir = own_temp.make(plan)
    deadline = time.monotonic() + args.node_timeout
    while not port_open(host, port, timeout_s=2.0):
        if time.monotonic() > deadline:
            raise BootstrapError(
                f"the Ray head at {address} did not open its port within {args.node_timeout:.0f} s",
                EXIT_NODES_MISSING,
            )
        time.sleep(PROBE_INTERVAL_S)
    attempts = 0
    while True:
        attempts += 1
        outcome = _run_worker_node(plan, args, address, attempts)
        if outcome == "head gone":
            return 0
        if attempts >= args.start_attempts:
            _log(
                plan,
                f"{outcome}; giving up after {attempts} attempt(s) and leaving the "
                "missing node to the sweep (exit 0, so the MPI job goes on)",
            )
            return 0
        if not port_open(host, port, timeout_s=2.0):
            _log(plan, f"{outcome}, and the Ray head is gone")
            return 0
        _log(
            plan, f"{outcome}; starting it again (attempt {attempts + 1} of {args.start_attempts})"
        )
        time.sleep(RETRY_PAUSE_S)


def _run_worker_node(plan: NodeRole, args: argparse.Namespace, address: str, attempt: int) -> str:
    """Start one worker node and keep it until the head is gone or the node dies; returns
    ``"head gone"`` or a one-line reason the node is down."""
    host, port = split_address(address)
    node = RayNode(
        head=False,
        num_cpus=args.num_cpus,
        num_gpus=args.num_gpus,
        address=address,
        token=_token(os.environ),
        temp_dir=args.temp_dir,
        object_store_memory=args.object_store_bytes,
        log_path=args.log_dir / f"ray-worker-rank{plan.rank}.log" if args.log_dir else None,
    )
    try:
        node.start()
        node.wait_up(NODE_START_TIMEOUT_S)
        _log(plan, f"joined the Ray head at {address} (node pid {node.pid}, attempt {attempt})")
        failures = 0
        while True:
            time.sleep(PROBE_INTERVAL_S)
            if not node.alive():
                return f"the Ray worker node exited with code {node.proc.returncode}"
            failures = 0 if port_open(host, port, timeout_s=2.0) else failures + 1
            if failures >= HEAD_GONE_PROBES:
                _log(plan, "the Ray head is gone; stopping this node")
                return "head gone"
    except NodeStartError as exc:
        return str(exc)
    finally:
        survivors = node.stop()
        if survivors:
            _log(plan, f"warning: Ray worker processes {survivors} survived SIGKILL")


class _OwnTempDir:
    """This node's own Ray temp dir, made on demand and removed when the bootstrap exits:
    several nodes on one machine (loopback) must not share Ray's session folders (a short
    path: Ray's Unix sockets live under it)."""

    def __init__(self) -> None:
        self.path: str | None = None

    def make(self, plan: NodeRole) -> str:
        """Create the folder (once) and return its path."""
        if self.path is None:
            self.path = tempfile.mkdtemp(prefix=f"rls-r{max(plan.rank, 0)}-", dir="/tmp")
        return self.path

    def remove(self) -> None:
        if self.path:
            shutil.rmtree(self.path, ignore_errors=True)


def _parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    argv = list(argv)
    own, cmd = split_command(argv)
    parser = argparse.ArgumentParser(
        prog="python -m cluster.bootstrap",
        description="Form a Ray cluster from the processes of an Azure ML MPI job and run a "
        "command on rank 0.",
        epilog="example: python -m cluster.bootstrap --results-dir outputs -- "
        "python -m sweeps.run sweeps/cabs_scaling.py --results outputs",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=None,
        help="the job's output folder (bootstrap.json goes there)",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=None,
        help=f"Ray nodes expected, head included (default ${SIZE_VAR})",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_HEAD_PORT, help="head's GCS port")
    parser.add_argument(
        "--num-cpus",
        type=int,
        default=None,
        help="logical CPUs of this node (default: all CPUs of the machine)",
    )
    parser.add_argument(
        "--num-gpus", type=int, default=None, help="GPUs of this node (default: detected by Ray)"
    )
    parser.add_argument(
        "--object-store-mb",
        type=int,
        default=None,
        help="object store of this node, MiB (default: Ray's, 30%% of RAM)",
    )
    parser.add_argument(
        "--node-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for the head, and for all nodes to join (default 600)",
    )
    parser.add_argument(
        "--temp-dir",
        default=None,
        help="Ray temp dir of this node (default: Ray's; a fresh one on "
        "loopback, where several nodes share a machine)",
    )
    parser.add_argument("--log-dir", type=Path, default=None, help="Ray node logs go here")
    parser.add_argument(
        "--start-attempts",
        type=int,
        default=WORKER_START_ATTEMPTS,
        help="a worker's attempts to start its Ray node, at the start and after the node dies "
        f"(default {WORKER_START_ATTEMPTS})",
    )
    parser.add_argument(
        "--role",
        default="auto",
        choices=["auto", "head", "worker", "driver"],
        help="auto: from OMPI_COMM_WORLD_RANK; head/worker: two-job layouts; driver: wait "
        "for --nodes nodes of a running cluster ($RAY_ADDRESS, else auto), then run the command",
    )
    parser.add_argument(
        "--head-host",
        default=None,
        help=f"host of the Ray head (default: ${MASTER_VARS[0]}'s host, else ${MASTER_VARS[1]}; "
        "with --rendezvous the MPI variables are not read: the head's outward IP)",
    )
    parser.add_argument(
        "--rendezvous",
        type=Path,
        default=None,
        help="folder shared by a head job and a worker job (two-job layouts)",
    )
    args = parser.parse_args(own)
    if not cmd and args.role != "worker":
        parser.error("no command: put it after --, e.g. -- python -m sweeps.run FILE")
    for name in ("nodes", "num_cpus", "num_gpus", "object_store_mb", "start_attempts"):
        value = getattr(args, name)
        if value is not None and value < (
            1 if name in ("nodes", "object_store_mb", "start_attempts") else 0
        ):
            parser.error(f"--{name.replace('_', '-')} must be positive, got {value}")
    if args.node_timeout <= 0:
        parser.error(f"--node-timeout must be positive, got {args.node_timeout}")
    args.object_store_bytes = args.object_store_mb * 2**20 if args.object_store_mb else None
    if args.num_cpus is None:
        args.num_cpus = os.cpu_count() or 1
    return args, cmd


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the command's exit code on the head (0 on workers)."""
    args, cmd = _parse(sys.argv[1:] if argv is None else argv)
    plan: NodeRole | None = None
    own_temp = _OwnTempDir()
    try:
        plan = plan_from_env(
            os.environ,
            role=args.role,
            nodes=args.nodes,
            port=args.port,
            rendezvous=args.rendezvous,
            head_host=args.head_host,
        )
        if plan.role != "worker" and not cmd:
            raise BootstrapError(f"the {plan.role} needs a command after --")
        if plan.role == "embedded":
            _log(plan, "no MPI job variables: running the command on an embedded Ray")
            return run_command(cmd, dict(os.environ))
        if args.temp_dir is None and plan.head_host and is_loopback(_resolve(plan.head_host)):
            args.temp_dir = own_temp.make(plan)
        if args.log_dir:
            args.log_dir.mkdir(parents=True, exist_ok=True)
        # SIGTERM (the job being cancelled) must stop our Ray node too: unwind via SystemExit.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        if plan.role == "driver":
            return run_driver(plan, cmd, args)
        if plan.role == "head":
            return run_head(plan, cmd, args)
        return run_worker(plan, args, own_temp)
    except BootstrapError as exc:
        if plan is None:
            print(f"error: bootstrap: {exc}", file=sys.stderr)
        else:
            _log(plan, f"error: {exc}")
        return exc.code
    except KeyboardInterrupt:
        return 130
    finally:
        own_temp.remove()


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m cluster.bootstrap", main))

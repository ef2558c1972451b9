"""A real multi-node Ray cluster on 127.0.0.1, for tests and demos.

``python -m cluster.local_multinode --nodes 3 --cpus-per-node 2 -- python -m sweeps.run FILE``

starts one head and ``nodes - 1`` worker nodes, each a separate process tree with its own CPU
count, temp dir and raylet (see :mod:`cluster.nodes`), all bound to 127.0.0.1 and sharing a
fresh token (token authentication on). It then runs the command with ``RAY_ADDRESS``,
``RAY_AUTH_MODE`` and ``RAY_AUTH_TOKEN`` in its environment, and tears the nodes down by
process group when the command ends (or on Ctrl-C), checking that none of their processes is
left. It exits with the command's exit code. Logical CPUs may exceed the physical cores: such a
cluster tests distribution (placement, node loss, result collection), not speed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from cluster.auth import auth_env, new_token
from cluster.nodes import (
    LOOPBACK_ENV,
    NodeStartError,
    RayNode,
    free_port,
    run_command,
    split_command,
    stop_all,
)

#: Object store per node (bytes) unless asked otherwise: Ray's default (30% of RAM per node)
#: multiplied by several nodes would claim most of a laptop's shared memory.
DEFAULT_OBJECT_STORE_BYTES = 256 * 2**20


class LoopbackCluster:
    """A multi-node Ray cluster on 127.0.0.1 whose node processes this object owns.

    Args:
        nodes: number of Ray nodes, head included (>= 1).
        cpus_per_node: logical CPUs per node (default: this machine's CPUs / nodes, at least 1).
        object_store_bytes: object store per node, in bytes.
        log_dir: where node logs go (default: inside the cluster's temp dir, removed at exit).
        token: the cluster's auth token (default: a fresh random one).

    Use as a context manager::

        with LoopbackCluster(nodes=3, cpus_per_node=1) as cluster:
            subprocess.run(cmd, env=cluster.client_env())
            cluster.kill_node(2)          # lose a worker node, as if its machine died

    Raises:
        ValueError: ``nodes`` or ``cpus_per_node`` below 1.
        NodeStartError: a node did not come up (the message names its log file).
    """

    def __init__(
        self,
        nodes: int = 3,
        cpus_per_node: int | None = None,
        object_store_bytes: int = DEFAULT_OBJECT_STORE_BYTES,
        log_dir: str | Path | None = None,
        token: str | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"--nodes must be at least 1, got {nodes}")
        if cpus_per_node is None:
            cpus_per_node = max(1, (os.cpu_count() or 1) // nodes)
        if cpus_per_node < 1:
            raise ValueError(f"--cpus-per-node must be at least 1, got {cpus_per_node}")
        self.num_nodes = nodes
        self.cpus_per_node = cpus_per_node
        self.object_store_bytes = object_store_bytes
        self.token = token or new_token()
        self._log_dir = Path(log_dir) if log_dir else None
        self._tmp: str | None = None
        self.port: int | None = None
        self.nodes: list[RayNode] = []

    @property
    def address(self) -> str:
        """The head's GCS address, ``127.0.0.1:PORT``."""
        if self.port is None:
            raise RuntimeError("LoopbackCluster is not started")
        return f"127.0.0.1:{self.port}"

    def client_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for a driver process of this cluster (``RAY_ADDRESS``, auth, loopback).

        Args:
            base: environment to extend (default ``os.environ``).
        """
        env = dict(os.environ if base is None else base)
        env.update(auth_env(self.token))
        env.update(LOOPBACK_ENV)
        env["RAY_ADDRESS"] = self.address
        return env

    def start(self, timeout_s: float = 120.0) -> LoopbackCluster:
        """Start the head, then all worker nodes, and wait until every node is up."""
        # Short path: Ray's Unix sockets live under it (limit ~107 characters).
        self._tmp = tempfile.mkdtemp(prefix="rls-lb-", dir="/tmp")
        log_dir = self._log_dir or Path(self._tmp) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        common = dict(
            num_cpus=self.cpus_per_node,
            num_gpus=0,
            token=self.token,
            object_store_memory=self.object_store_bytes,
        )
        try:
            head = RayNode(
                head=True,
                port=self.port,
                node_ip="127.0.0.1",
                temp_dir=f"{self._tmp}/n0",
                log_path=log_dir / "node0-head.log",
                **common,
            )
            self.nodes.append(head.start())
            head.wait_up(timeout_s)
            for i in range(1, self.num_nodes):
                worker = RayNode(
                    head=False,
                    address=self.address,
                    temp_dir=f"{self._tmp}/n{i}",
                    log_path=log_dir / f"node{i}-worker.log",
                    **common,
                )
                self.nodes.append(worker.start())
            for worker in self.nodes[1:]:
                worker.wait_up(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def kill_node(self, index: int) -> None:
        """SIGKILL every process of node ``index`` (0 is the head) at once."""
        self.nodes[index].kill()

    def stop(self) -> list[int]:
        """Stop all nodes (workers first); remove the temp dir. Returns PIDs that survived."""
        survivors = stop_all(self.nodes)
        if self._tmp and not survivors:
            shutil.rmtree(self._tmp, ignore_errors=True)
        return survivors

    def __enter__(self) -> LoopbackCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        survivors = self.stop()
        if survivors:
            print(
                f"warning: Ray processes {survivors} of the loopback cluster survived SIGKILL",
                file=sys.stderr,
            )


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m cluster.local_multinode [--nodes N] [--cpus-per-node C] -- CMD...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    own, cmd = split_command(argv)
    parser = argparse.ArgumentParser(
        prog="python -m cluster.local_multinode",
        description="Run a command against a multi-node Ray cluster on 127.0.0.1.",
        epilog="example: python -m cluster.local_multinode --nodes 3 --cpus-per-node 2 -- "
        "python -m sweeps.run sweeps/cartpole_quick.py",
    )
    parser.add_argument("--nodes", type=int, default=3, help="Ray nodes, head included")
    parser.add_argument(
        "--cpus-per-node",
        type=int,
        default=None,
        help="logical CPUs per node (default: machine CPUs / nodes, at least 1)",
    )
    parser.add_argument(
        "--object-store-mb",
        type=int,
        default=DEFAULT_OBJECT_STORE_BYTES // 2**20,
        help="object store per node, MiB",
    )
    parser.add_argument("--log-dir", default=None, help="keep node logs here")
    args = parser.parse_args(own)
    if not cmd:
        parser.error("no command: put it after --, e.g. -- python -m sweeps.run FILE")
    if shutil.which(cmd[0]) is None and not Path(cmd[0]).exists():
        parser.error(f"command not found: {cmd[0]}")
    try:
        cluster = LoopbackCluster(
            nodes=args.nodes,
            cpus_per_node=args.cpus_per_node,
            object_store_bytes=args.object_store_mb * 2**20,
            log_dir=args.log_dir,
        )
    except ValueError as exc:
        parser.error(str(exc))
    started = time.monotonic()
    try:
        # SIGTERM (e.g. from a CI timeout) must tear the nodes down too.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        with cluster:
            print(
                f"local_multinode: {cluster.num_nodes} Ray nodes x {cluster.cpus_per_node} CPUs "
                f"at {cluster.address} (token auth on), up in "
                f"{time.monotonic() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            code = run_command(cmd, cluster.client_env())
    except NodeStartError as exc:
        print(f"error: local_multinode: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print(f"local_multinode: command exited {code}; nodes stopped", file=sys.stderr)
    return code


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m cluster.local_multinode", main))

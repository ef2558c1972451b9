"""Shared pieces of the cluster tests: a tiny Ray job and process checks (no tests here)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

#: A tiny Ray program run as the command of a cluster: it connects through ray_session (so
#: RAY_ADDRESS and the token come from its environment), runs tasks that each hold a node's
#: only CPU for a moment, and writes where they ran. For the tests only, it also writes the
#: token it was given, so that the tests can check that no log or result contains it.
PROBE = """
import json, os, sys, time
from pathlib import Path
import ray
from cluster.local import ray_session

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
with ray_session() as info:
    @ray.remote(num_cpus=1)
    def where(i):
        time.sleep(0.5)
        return ray.get_runtime_context().get_node_id(), os.getsid(0)

    ran = ray.get([where.remote(i) for i in range(3 * len(info.nodes))])
(out / "probe.json").write_text(json.dumps({
    "address": info.address,
    "nodes": info.nodes,
    "task_nodes": sorted({node for node, _ in ran}),
    "task_sessions": sorted({sid for _, sid in ran}),
}))
(out / "token.txt").write_text(os.environ.get("RAY_AUTH_TOKEN", ""))
"""


def write_probe(folder: Path) -> Path:
    """Write the probe program into ``folder``; return its path."""
    path = folder / "probe.py"
    path.write_text(PROBE)
    return path


def live_sessions(sessions) -> list[int]:
    """PIDs of live processes that belong to any of ``sessions``."""
    wanted = set(sessions)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[3]) in wanted and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def wait_gone(sessions, timeout_s: float = 15.0) -> list[int]:
    """Wait until no process of ``sessions`` is alive; return the survivors (if any)."""
    deadline = time.monotonic() + timeout_s
    while (left := live_sessions(sessions)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def files_containing(root: Path, needle: str) -> list[Path]:
    """Files under ``root`` whose bytes contain ``needle``."""
    data = needle.encode()
    return [p for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


def read_probe(out: Path) -> dict:
    """The probe's record, with the token it saw (removed from disk after reading)."""
    record = json.loads((out / "probe.json").read_text())
    token_file = out / "token.txt"
    record["token"] = token_file.read_text()
    token_file.unlink()
    assert re.fullmatch(r"[0-9a-f]{64}", record["token"]), "the command got no token"
    return record

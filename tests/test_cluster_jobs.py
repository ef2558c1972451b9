"""cluster.jobs: a real sweep submitted through the Ray Jobs API to a real local Ray head (its
job server on 127.0.0.1, token authentication on), recorded there and downloaded here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from cluster.auth import auth_env, new_token
from cluster.nodes import RayNode, free_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]


def _jobs(*args: str, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cluster.jobs", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _job_server_up(address: str, env: dict, timeout_s: float = 90) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        probe = _jobs("status", "no-such-job", "--address", address, env=env, timeout=60)
        if "no job 'no-such-job'" in probe.stderr:  # the server answered
            return
        time.sleep(2)
    raise AssertionError(f"the job server at {address} did not answer: {probe.stderr[-500:]}")


def test_a_sweep_submitted_through_the_jobs_api_is_recorded_and_downloaded(tmp_path):
    token = new_token()
    dashboard = free_port()
    head = RayNode(head=True, num_cpus=2, port=free_port(), node_ip="127.0.0.1", token=token,
                   dashboard_port=dashboard, log_path=tmp_path / "head.log").start()
    env = {**os.environ, **auth_env(token)}
    address = f"http://127.0.0.1:{dashboard}"
    try:
        head.wait_up(120)
        _job_server_up(address, env)
        # one seed, 4 s budgets: the baseline and one sampled configuration
        sub = _jobs("submit", "sweeps/cartpole_quick.py", "--address", address,
                    "--remote-results", str(tmp_path / "on_the_head"),
                    "--", "--seeds", "1", "--budget-s", "4", env=env)
        assert sub.returncode == 0, sub.stdout[-3000:] + sub.stderr[-3000:]
        job = re.search(r"^Submitted (\S+) to ", sub.stdout, re.MULTILINE).group(1)
        assert f"Job {job}: SUCCEEDED" in sub.stdout
        assert "Done: 2 trials recorded" in sub.stdout  # the streamed logs of the sweep
        status = _jobs("status", job, "--address", address, env=env)
        assert status.stdout.strip() == "SUCCEEDED", status.stderr
        down = _jobs("download", job, "--address", address, "--results",
                     str(tmp_path / "here"), env=env)
        assert down.returncode == 0, down.stderr[-2000:]
        local = Path(down.stdout.strip().splitlines()[-1])
        assert local.parent.parent == tmp_path / "here" and local.parent.name == "cartpole_quick"
        trials = pd.read_parquet(local / "trials.parquet")
        assert len(trials) == 2 and set(trials.status) <= {"reached", "censored"}
        assert set(pd.read_parquet(local / "progress.parquet").trial_id) == set(trials.trial_id)
        assert (local / "spec.json").is_file() and not (local / "tune").exists()
        # without the cluster's token the job server refuses, in one line
        stranger = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
        refused = _jobs("status", job, "--address", address, env=stranger, timeout=120)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    finally:
        head.stop()


def test_a_file_outside_the_project_is_one_line(tmp_path):
    outside = tmp_path / "s.py"
    outside.write_text("SWEEP = None\n")
    proc = _jobs("submit", str(outside), "--address", "http://127.0.0.1:9", env=dict(os.environ),
                 timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not inside the project" in lines[0], lines

"""Results in object storage (sweeps.engine.rundir.mirror): a real S3-compatible server on loopback (moto
in server mode, a test-only dependency; the ``s3`` fixture in conftest.py), analysis reading a
run back from its URI, and an unreachable store refused before Ray starts. A real sweep writing
to it with --results s3://...: tests/test_envs_forms.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import s3_keys

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs" / "data" / "cabs_scaling" / "20261122-203334"


def _py(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_run_in_s3_is_analysed_from_its_uri(s3):
    for f in RUN.iterdir():
        s3["client"].upload_file(str(f), "rl-results", f"results/cabs_scaling/{RUN.name}/{f.name}")
    uri = f"s3://rl-results/results/cabs_scaling/{RUN.name}"
    report = _py("analysis.report", uri, env=s3["env"])
    assert report.returncode == 0, report.stderr[-2000:]
    assert report.stdout.strip() == f"{uri}/report.html"
    assert f"results/cabs_scaling/{RUN.name}/report.html" in s3_keys(s3["client"])
    plan = _py("analysis.plan", uri, env=s3["env"])
    assert plan.returncode == 0 and "Cheapest" in plan.stdout, plan.stderr[-2000:]
    missing = _py("analysis.report", "s3://rl-results/results/nothing/here", env=s3["env"])
    assert missing.returncode == 2 and "no trials.parquet there" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr


def test_an_unreachable_store_is_one_line_before_ray_starts(s3, tmp_path):
    # one attempt: botocore's retries of a refused connection take ~11 s and test nothing here
    env = {**s3["env"], "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1"}
    proc = _py(
        "sweeps.run",
        "sweeps/cartpole_quick.py",
        "--results",
        "s3://rl-results/results",
        env=env,
        timeout=180,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--results: cannot write to s3://rl-results/results" in lines[0], (
        lines
    )


# A real sweep writing its run to S3 and analysed from there: tests/test_envs_forms.py
# (test_a_user_env_outside_the_project_reaches_its_target_on_the_embedded_ray), which runs
# the sweep it needs anyway.

"""Results in object storage (sweeps.storage): a real S3-compatible server on loopback (moto
in server mode, a test-only dependency), a real sweep writing to it with --results s3://...,
and analysis reading the run back from its URI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs" / "data" / "cabs_scaling" / "20261122-203334"


@pytest.fixture()
def s3(tmp_path, monkeypatch):
    """A moto S3 server on 127.0.0.1 with one bucket; the env that points clients at it."""
    import boto3
    from moto.server import ThreadedMotoServer

    from cluster.nodes import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
           "RL_SCALING_STAGING": str(tmp_path / "cache")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    client.create_bucket(Bucket="rl-results")
    try:
        yield {"env": {**os.environ, **env}, "client": client}
    finally:
        server.stop()


def _keys(client, prefix: str = "") -> set[str]:
    out = client.list_objects_v2(Bucket="rl-results", Prefix=prefix)
    return {o["Key"] for o in out.get("Contents", [])}


def _py(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_a_run_in_s3_is_analysed_from_its_uri(s3):
    for f in RUN.iterdir():
        s3["client"].upload_file(str(f), "rl-results", f"results/cabs_scaling/{RUN.name}/{f.name}")
    uri = f"s3://rl-results/results/cabs_scaling/{RUN.name}"
    report = _py("analysis.report", uri, env=s3["env"])
    assert report.returncode == 0, report.stderr[-2000:]
    assert report.stdout.strip() == f"{uri}/report.html"
    assert f"results/cabs_scaling/{RUN.name}/report.html" in _keys(s3["client"])
    plan = _py("analysis.plan", uri, env=s3["env"])
    assert plan.returncode == 0 and "Cheapest" in plan.stdout, plan.stderr[-2000:]
    missing = _py("analysis.report", "s3://rl-results/results/nothing/here", env=s3["env"])
    assert missing.returncode == 2 and "no trials.parquet there" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr


def test_an_unreachable_store_is_one_line_before_ray_starts(s3, tmp_path):
    env = {**s3["env"], "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    proc = _py("sweeps.run", "sweeps/cartpole_quick.py", "--results", "s3://rl-results/results",
               env=env, timeout=180)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--results: cannot write to s3://rl-results/results" in lines[0], lines


@pytest.mark.ray
@pytest.mark.slow
def test_a_real_sweep_writes_its_run_to_s3_and_is_reanalysed_from_there(s3, tmp_path):
    path = tmp_path / "s3sweep.py"
    path.write_text(
        "from sweeps.spec import Budget, Search, Sweep, Target, choice\n"
        "SWEEP = Sweep(name='s3sweep', env='CartPole-v1', algorithms=['PPO'],\n"
        "    search_space={'num_env_runners': choice([0])}, target=Target(value=1e6),\n"
        "    budget=Budget(time_s=3), search=Search(sampler='grid', num_samples=1, seeds=2),\n"
        "    baseline={'algorithm': 'PPO', 'num_env_runners': 0})\n")
    proc = _py("sweeps.run", str(path), "--results", "s3://rl-results/results", env=s3["env"])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    keys = _keys(s3["client"], "results/s3sweep/")
    run_ids = {k.split("/")[2] for k in keys}
    assert len(run_ids) == 1, keys
    uri = f"s3://rl-results/results/s3sweep/{run_ids.pop()}"
    assert f"results in {uri}" in proc.stdout
    names = {k.split("/")[-1] for k in keys}
    assert {"trials.parquet", "progress.parquet", "spec.json", "environment.json",
            "optuna.db", "report.html"} <= names, names
    report = _py("analysis.report", uri, "-o", str(tmp_path / "again.html"), env=s3["env"])
    assert report.returncode == 0, report.stderr[-2000:]
    from sweeps.storage import fetch_run

    local = fetch_run(uri)
    trials = pd.read_parquet(local / "trials.parquet")
    assert len(trials) == 2 and (trials.status == "censored").all()
    assert set(pd.read_parquet(local / "progress.parquet").trial_id) == set(trials.trial_id)

"""cluster.jobs and cluster.kuberay's job: a user's sweep submitted through the Ray Jobs API to a
real local Ray head (its job server on 127.0.0.1, token authentication on), recorded there and
downloaded here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from test_envs_forms import user_folder, yaml_sweep

from cluster.auth import auth_env, new_token
from cluster.nodes import RayNode, free_ports

# beside other Ray tests (`-n 2`); the tests sharing the job server run on one worker
pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.parallel,
    pytest.mark.xdist_group("job_server"),
]
ROOT = Path(__file__).resolve().parents[1]


def _jobs(*args: str, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cluster.jobs", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _job_server_up(address: str, env: dict, timeout_s: float = 90) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        probe = _jobs("status", "no-such-job", "--address", address, env=env, timeout=60)
        if "no job 'no-such-job'" in probe.stderr:  # the server answered
            return
        time.sleep(2)
    raise AssertionError(f"the job server at {address} did not answer: {probe.stderr[-500:]}")


@pytest.fixture(scope="module")
def job_server(tmp_path_factory):
    """A real 2-CPU Ray head on 127.0.0.1 with its job server and token authentication;
    yields ``(address, env)``: the job server's URL and an environment holding the token."""
    logs = tmp_path_factory.mktemp("head")
    token = new_token()
    dashboard, port = free_ports(2)
    # its own temp dir (short: Ray's socket paths must fit 107 bytes), as on a cluster's head;
    # other Ray instances may run on this machine beside it
    temp_dir = tempfile.mkdtemp(prefix="ray-jobs-")
    head = RayNode(
        head=True,
        num_cpus=2,
        port=port,
        node_ip="127.0.0.1",
        token=token,
        dashboard_port=dashboard,
        log_path=logs / "head.log",
        temp_dir=temp_dir,
    ).start()
    env = {**os.environ, **auth_env(token)}
    address = f"http://127.0.0.1:{dashboard}"
    try:
        head.wait_up(120)
        # what the job server resolves its jobs' "auto" address from, whatever else runs here
        assert Path(temp_dir, "ray_current_cluster").read_text() == f"127.0.0.1:{port}"
        _job_server_up(address, env)
        yield address, env
    finally:
        head.stop()
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_users_sweep_outside_the_project_is_submitted_recorded_and_downloaded(
    job_server, tmp_path
):
    """The sweep file and its env module live in a folder of the user's, outside the
    project: that folder is the job's working_dir and the project's packages its py_modules,
    so the trial's env runners import the user's module on the cluster."""
    address, env = job_server
    folder = user_folder(tmp_path)
    path = yaml_sweep(folder, "corridor_env:Corridor-v0", runners=(0,), algorithms=("PPO",))
    sub = _jobs(
        "submit",
        str(path),
        "--address",
        address,
        "--remote-results",
        str(tmp_path / "on_the_head"),
        env=env,
    )
    assert sub.returncode == 0, sub.stdout[-3000:] + sub.stderr[-3000:]
    job = re.search(r"^Submitted (\S+) to ", sub.stdout, re.MULTILINE).group(1)
    assert "python -m sweeps.run corridor.yaml" in sub.stdout
    assert f"Job {job}: SUCCEEDED" in sub.stdout
    assert "Done: 1 trials recorded" in sub.stdout  # the streamed logs of the sweep
    status = _jobs("status", job, "--address", address, env=env)
    assert status.stdout.strip() == "SUCCEEDED", status.stderr
    down = _jobs(
        "download", job, "--address", address, "--results", str(tmp_path / "here"), env=env
    )
    assert down.returncode == 0, down.stderr[-2000:]
    local = Path(down.stdout.strip().splitlines()[-1])
    assert local.parent.parent == tmp_path / "here" and local.parent.name == "corridor"
    trials = pd.read_parquet(local / "trials.parquet")
    table = trials[["algorithm", "num_env_runners", "status", "error"]].to_string()
    assert len(trials) == 1 and (trials.status == "reached").all(), table
    assert json.loads((local / "spec.json").read_text())["env"] == "corridor_env:Corridor-v0"
    assert set(pd.read_parquet(local / "progress.parquet").trial_id) == set(trials.trial_id)
    assert (local / "spec.json").is_file() and not (local / "tune").exists()
    # without the cluster's token the job server refuses, in one line
    stranger = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
    refused = _jobs("status", job, "--address", address, env=stranger, timeout=120)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_the_kuberay_manifest_runs_a_packed_user_folder_as_its_job_would(job_server, tmp_path):
    """What KubeRay's submitter does with the RayJob: the manifest's entrypoint and
    runtimeEnvYAML submitted to a Ray job server. The user's folder, zipped by ``pack``, is
    fetched by Ray from its URI (``file://`` here, https/s3/abfss on a cluster) as the
    working_dir; the project comes from the installed package, as in the image."""
    import yaml

    address, env = job_server
    folder = user_folder(tmp_path)
    path = yaml_sweep(folder, "corridor_env:Corridor-v0", runners=(0,), algorithms=("PPO",))
    (folder / "results").mkdir()
    (folder / "results" / "old.txt").write_text("not shipped")
    packed = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.kuberay",
            "pack",
            str(path),
            "-o",
            str(tmp_path / "code.zip"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert packed.returncode == 0, packed.stderr[-2000:]
    with zipfile.ZipFile(tmp_path / "code.zip") as z:
        assert sorted(z.namelist()) == ["user/corridor.yaml", "user/corridor_env.py"]
    manifest = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.kuberay",
            "rayjob",
            str(path),
            "--workers",
            "1",
            "--cpus-per-worker",
            "2",
            "--code-uri",
            (tmp_path / "code.zip").as_uri(),
            "--results",
            "s3://bucket/r",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert manifest.returncode == 0, manifest.stderr[-2000:]
    spec = yaml.safe_load(manifest.stdout)["spec"]
    entrypoint = spec["entrypoint"].replace(" --results s3://bucket/r", "")
    assert entrypoint == "python -m sweeps.run corridor.yaml --address auto"
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    assert runtime_env == {"working_dir": (tmp_path / "code.zip").as_uri()}
    # KubeRay's submitter (K8sJobMode) runs `ray job submit` with the manifest's fields; the
    # head is this machine, so the results go where this test can read them
    (tmp_path / "runtime_env.yaml").write_text(spec["runtimeEnvYAML"])
    submit = subprocess.run(
        [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "job",
            "submit",
            "--address",
            address,
            "--submission-id",
            f"kuberay-{os.getpid()}",
            "--runtime-env",
            str(tmp_path / "runtime_env.yaml"),
            "--",
            *f"{entrypoint} --no-report --results {tmp_path}".split(),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    status = _jobs("status", f"kuberay-{os.getpid()}", "--address", address, env=env)
    logs = submit.stdout + submit.stderr
    assert status.stdout.strip() == "SUCCEEDED", logs[-3000:]
    assert "Done: 1 trials recorded" in logs, logs[-3000:]
    (run_dir,) = (tmp_path / "corridor").iterdir()
    trials = pd.read_parquet(run_dir / "trials.parquet")
    assert (trials.status == "reached").all(), trials[["status", "error"]].to_string()


def test_code_outside_the_uploaded_folder_is_one_line(tmp_path):
    """A sweep file whose code_dirs lie outside its folder (which is what is uploaded) is
    refused before anything is submitted, as is a sweep file that does not validate."""
    folder = user_folder(tmp_path)
    (tmp_path / "common").mkdir()
    path = yaml_sweep(folder, "corridor_env:Corridor-v0", extra="code_dirs: [../common]\n")
    bad = folder / "bad.py"
    bad.write_text("SWEEP = None\n")
    for file, message in ((path, "lies outside"), (bad, "bad.py")):
        proc = _jobs(
            "submit",
            str(file),
            "--address",
            "http://127.0.0.1:9",
            env=dict(os.environ),
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], lines

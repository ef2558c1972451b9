"""cluster.kuberay: the RayJob manifest of a sweep, validated offline against KubeRay's RayJob
CRD (tests/data/kuberay/, Apache-2.0) as a Kubernetes API server with the operator would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CRD = ROOT / "tests" / "data" / "kuberay" / "ray.io_rayjobs.yaml"


@pytest.fixture(scope="module")
def rayjob_schema() -> dict:
    crd = yaml.safe_load(CRD.read_text())
    assert crd["spec"]["names"]["kind"] == "RayJob"
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return v1["schema"]["openAPIV3Schema"]


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m cluster.kuberay ARGS``: in this process (its imports paid once), or, with
    ``env``, in a subprocess with that environment."""
    if env is not None:
        return subprocess.run(
            [sys.executable, "-m", "cluster.kuberay", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
    import contextlib
    import io

    from cluster.kuberay import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)  # the sweep files are named relative to the project, as in the docs
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_the_issue_command_prints_a_manifest_the_crd_accepts(rayjob_schema):
    proc = _cli("rayjob", "sweeps/cabs_scaling.py", "--workers", "4", "--cpus-per-worker", "8")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # stderr: only the warning that results die with the head pod without --results-pvc
    assert proc.stderr.strip().splitlines() == [
        "warning: no --results-pvc: the results stay on the head pod and are deleted with it "
        "when the job ends"
    ], proc.stderr
    manifest = yaml.safe_load(proc.stdout)
    jsonschema.validate(manifest, rayjob_schema)
    assert manifest["apiVersion"] == "ray.io/v1" and manifest["kind"] == "RayJob"
    spec = manifest["spec"]
    assert spec["entrypoint"] == "python -m sweeps.run sweeps/cabs_scaling.py --address auto"
    assert spec["shutdownAfterJobFinishes"] is True
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == {"working_dir": "/home/ray/rl-scaling"}
    # (14 configs x 1 seed + 14 confirmed x 3 seeds) of <= 45 s (+60 s each) one at a time,
    # + 15 min for the pods
    assert spec["activeDeadlineSeconds"] == (14 + 42) * (45 + 60) + 900
    cluster = spec["rayClusterSpec"]
    import ray

    assert cluster["rayVersion"] == ray.__version__
    assert cluster["authOptions"] == {"mode": "token"}
    assert cluster["headGroupSpec"]["rayStartParams"] == {"num-cpus": "0"}
    (workers,) = cluster["workerGroupSpecs"]
    assert workers["replicas"] == workers["minReplicas"] == workers["maxReplicas"] == 4
    (container,) = workers["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"cpu": "8", "memory": "32Gi"}
    assert container["resources"]["requests"] == container["resources"]["limits"]


def test_a_gpu_sweep_with_results_on_a_volume_validates_too(rayjob_schema):
    proc = _cli(
        "rayjob",
        "sweeps/pong_impala_16cpu.py",
        "--workers",
        "1",
        "--cpus-per-worker",
        "16",
        "--gpus-per-worker",
        "1",
        "--memory",
        "64Gi",
        "--image",
        "myacr.azurecr.io/rl-scaling:0.1.0",
        "--results-pvc",
        "rl-results",
        "--namespace",
        "rl",
        "--name",
        "Pong_IMPALA 16",
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    manifest = yaml.safe_load(proc.stdout)
    jsonschema.validate(manifest, rayjob_schema)
    assert manifest["metadata"]["name"] == "pong-impala-16"
    assert manifest["metadata"]["namespace"] == "rl"
    assert manifest["spec"]["entrypoint"].endswith("--results /home/ray/results")
    head = manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert head["volumes"] == [
        {"name": "results", "persistentVolumeClaim": {"claimName": "rl-results"}}
    ]
    worker = manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert worker["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert worker["containers"][0]["image"] == "myacr.azurecr.io/rl-scaling:0.1.0"


def test_the_schema_check_is_not_vacuous(rayjob_schema):
    """What the API server would refuse, the offline validation refuses too."""
    from cluster.kuberay import rayjob_manifest

    manifest = rayjob_manifest("sweeps/cartpole_quick.py", workers=2, cpus_per_worker=4)
    jsonschema.validate(manifest, rayjob_schema)
    bad = yaml.safe_load(yaml.safe_dump(manifest))
    bad["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = "four"
    with pytest.raises(jsonschema.ValidationError, match="'four' is not of type 'integer'"):
        jsonschema.validate(bad, rayjob_schema)
    bad = yaml.safe_load(yaml.safe_dump(manifest))
    bad["spec"]["rayClusterSpec"]["authOptions"]["mode"] = "password"
    with pytest.raises(jsonschema.ValidationError, match="'password' is not one of"):
        jsonschema.validate(bad, rayjob_schema)


def test_results_to_object_storage(rayjob_schema):
    proc = _cli(
        "rayjob",
        "sweeps/cartpole_quick.py",
        "--workers",
        "2",
        "--cpus-per-worker",
        "4",
        "--results",
        "abfs://results/rl",
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    manifest = yaml.safe_load(proc.stdout)
    jsonschema.validate(manifest, rayjob_schema)
    assert manifest["spec"]["entrypoint"].endswith("--results abfs://results/rl")
    for bad, message in (
        (["--results", "results"], "needs an object-store URI"),
        (["--results", "s3://b/r", "--results-pvc", "r"], "give one"),
    ):
        proc = _cli(
            "rayjob", "sweeps/cartpole_quick.py", "--workers", "2", "--cpus-per-worker", "4", *bad
        )
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_a_trial_spans_worker_pods_and_one_larger_than_the_group_is_one_line():
    """Ray places a trial's bundles over several pods: 16 CPUs fit 4 pods of 8 (PACK); on
    one pod of 8 they cannot be placed, said in one line."""
    spans = _cli(
        "rayjob", "sweeps/cabs_scaling_16cpu.py", "--workers", "4", "--cpus-per-worker", "8"
    )
    assert spans.returncode == 0, spans.stderr
    proc = _cli(
        "rayjob", "sweeps/cabs_scaling_16cpu.py", "--workers", "1", "--cpus-per-worker", "8"
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert (
        "(APEX, num_env_runners=15: 16 CPUs, 0 GPUs) cannot be placed on 1 worker pod(s) of 8 "
        "CPUs and 0 GPUs (PACK): it asks for 16 CPUs and the cluster has 8 in all" in lines[0]
    ), lines[0]


def test_apply_without_a_kubeconfig_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    proc = _cli(
        "rayjob",
        "sweeps/cartpole_quick.py",
        "--workers",
        "1",
        "--cpus-per-worker",
        "4",
        "--results-pvc",
        "r",
        "--image",
        "myacr.azurecr.io/rl-scaling:0.1.0",
        "--apply",
        env=env,
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--apply:" in lines[0], lines
    assert "kubectl is not on PATH" in lines[0] or "no kubeconfig" in lines[0]


def test_the_image_recipe_uses_the_pinned_ray_and_puts_the_project_where_the_job_looks():
    import ray

    from cluster.kuberay import PROJECT_DIR

    text = (ROOT / "cluster" / "Dockerfile").read_text()
    assert (
        f"ARG RAY_IMAGE=rayproject/ray:{ray.__version__}-" in text and "FROM ${RAY_IMAGE}" in text
    )
    assert f"RAY_IMAGE=rayproject/ray:{ray.__version__}-py311-gpu" in text  # the GPU recipe
    assert f"WORKDIR {PROJECT_DIR}" in text
    # ray owns the WORKDIR before its `pip install -e .` (the classic builder makes it root's)
    assert text.index(f"chown ray:users {PROJECT_DIR}") < text.index(f"\nWORKDIR {PROJECT_DIR}")
    # the build context is the project root: .dockerignore sends what COPY takes and nothing
    # else (not .venv, .git or results/)
    ignore = [
        line
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert ignore[0] == "*"  # everything out, then what the image needs back in
    copied = {
        name for line in text.splitlines() if line.startswith("COPY") for name in line.split()[2:-1]
    }
    allowed = {entry[1:].rstrip("/") for entry in ignore if entry.startswith("!")}
    assert copied == allowed, (copied, allowed)
    # the image installs what CI tests: the same pins file as the README's test command
    readme = (ROOT / "README.md").read_text()
    assert "-c tests/constraints.txt" in readme
    (install,) = [line for line in text.splitlines() if line.startswith("RUN pip install")]
    assert install.rstrip().endswith("-e . -c tests/constraints.txt"), install


def test_the_azure_ml_conda_file_pins_what_ci_tests():
    """The job's conda file pins every project requirement to the version installed here;
    where CI pins one (tests/constraints.txt, the analysis stack), that is CI's version, as
    in this environment, which the README's test command installs with those pins."""
    from packaging.requirements import Requirement

    from cluster.azure_specs import TORCH_CPU_INDEX, conda_spec

    ci = {}
    for line in (ROOT / "tests" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            ci[req.name.lower()] = str(req.specifier).removeprefix("==")
    pip = conda_spec()["dependencies"][-1]["pip"]
    assert pip[0] == TORCH_CPU_INDEX
    pinned = {Requirement(p).name.lower(): str(Requirement(p).specifier) for p in pip[1:]}
    shared = set(ci) & set(pinned)
    assert shared >= {"pandas", "scipy", "lifelines", "plotly", "optuna"}, shared
    for name in shared:
        assert pinned[name] == f"=={ci[name]}", (name, pinned[name], ci[name])
    assert pinned["torch"] == "==2.13.0" and pinned["ray"] == "==2.60.0"


def test_the_capacity_plan_prints_launch_commands_that_work(rayjob_schema):
    """A plan of 4 x Standard_D16s_v5 names the Azure ML and KubeRay commands that would run
    the sweep; the KubeRay one, run as printed, gives a manifest the CRD accepts."""
    import shlex

    from analysis.plan import launch_lines, load_vm_sizes, sweep_file_of

    vms = list(load_vm_sizes().values())
    file = sweep_file_of({"command": "python -m sweeps.run sweeps/cabs_scaling.py --seeds 3"})
    assert file == "sweeps/cabs_scaling.py"
    azure, kuberay = launch_lines({"vm": "Standard_D16s_v5", "nodes": 4}, vms, file)
    assert str(azure) == (
        "Run it on Azure ML: python -m cluster.azure submit sweeps/cabs_scaling.py "
        "--nodes 4 --vm Standard_D16s_v5"
    )
    assert str(kuberay).startswith(f"{kuberay.label}: {kuberay.command} (node pool: 4 x ")
    command = kuberay.command
    assert command == (
        "python -m cluster.kuberay rayjob sweeps/cabs_scaling.py --workers 4 "
        "--cpus-per-worker 15 --results-pvc rl-results"
    )
    proc = _cli(*shlex.split(command)[3:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    jsonschema.validate(yaml.safe_load(proc.stdout), rayjob_schema)


def test_a_users_sweep_outside_the_project_needs_its_packed_folder(
    rayjob_schema, tmp_path, capsys, clean_imports
):
    """The image holds only the project: a sweep file elsewhere is refused without --code-uri,
    in one line that says how (pack, upload, --code-uri); with it, the zip is the job's
    working_dir and the entrypoint names the file inside it. The manifest passes the CRD."""
    from test_envs_forms import user_folder, yaml_sweep

    from cluster.kuberay import main

    def cli(*args: str):
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    folder = user_folder(tmp_path)
    path = str(yaml_sweep(folder, "corridor_env:Corridor-v0"))
    common = ("--workers", "2", "--cpus-per-worker", "2", "--results-pvc", "r")
    code, _, err = cli("rayjob", path, *common)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "python -m cluster.kuberay pack" in lines[0] and "--code-uri" in lines[0]
    uri = "https://store.example/code/corridor.zip"
    code, out, err = cli("rayjob", path, *common, "--code-uri", uri)
    assert code == 0, err[-2000:]
    manifest = yaml.safe_load(out)
    jsonschema.validate(manifest, rayjob_schema)
    assert manifest["spec"]["entrypoint"].startswith("python -m sweeps.run corridor.yaml ")
    assert yaml.safe_load(manifest["spec"]["runtimeEnvYAML"]) == {"working_dir": uri}
    for args, message in (
        (
            [str(ROOT / "sweeps" / "cartpole_quick.py"), *common, "--code-uri", uri],
            "lies inside the project",
        ),
        ([path, *common, "--code-uri", "corridor.zip"], "needs the URI of a .zip"),
        ([path, *common, "--code-uri", uri, "--working-dir", uri], "--working-dir replaces"),
    ):
        code, _, err = cli("rayjob", *args)
        assert code == 2 and message in err, err
        assert len(err.strip().splitlines()) == 1, err
    code, _, err = cli(
        "pack", str(ROOT / "sweeps" / "cartpole_quick.py"), "-o", str(tmp_path / "x.zip")
    )
    assert code == 2 and "nothing to pack" in err, err


def test_gpu_workers_tolerate_gpu_taints_and_default_to_the_gpu_image(rayjob_schema):
    from cluster.kuberay import GPU_TOLERATIONS, rayjob_manifest

    gpu = rayjob_manifest(
        "sweeps/cartpole_quick.py", workers=2, cpus_per_worker=6, gpus_per_worker=1
    )
    jsonschema.validate(gpu, rayjob_schema)
    (group,) = gpu["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert group["template"]["spec"]["tolerations"] == GPU_TOLERATIONS
    assert group["template"]["spec"]["containers"][0]["image"].endswith("-gpu")
    cpu = rayjob_manifest("sweeps/cartpole_quick.py", workers=2, cpus_per_worker=6)
    (group,) = cpu["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert "tolerations" not in group["template"]["spec"]
    assert not group["template"]["spec"]["containers"][0]["image"].endswith("-gpu")


def test_apply_needs_a_registry_image_and_object_store_code_uris_their_packages(
    tmp_path, clean_imports
):
    from test_envs_forms import user_folder, yaml_sweep

    proc = _cli(
        "rayjob",
        "sweeps/cartpole_quick.py",
        "--workers",
        "1",
        "--cpus-per-worker",
        "4",
        "--results-pvc",
        "r",
        "--apply",
    )
    assert proc.returncode == 2 and "--apply needs --image REGISTRY/" in proc.stderr, proc.stderr
    path = str(yaml_sweep(user_folder(tmp_path), "corridor_env:Corridor-v0"))
    common = ["--workers", "2", "--cpus-per-worker", "2", "--results-pvc", "r"]
    proc = _cli("rayjob", path, *common, "--code-uri", "s3://bucket/corridor.zip")
    assert proc.returncode == 2 and "smart_open[s3] and boto3" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = _cli(
        "rayjob",
        path,
        *common,
        "--code-uri",
        "abfss://c@a.dfs.core.windows.net/x.zip",
        "--image",
        "myacr.azurecr.io/rl-scaling-adlfs:1",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_fractional_cpu_limit_gives_ray_the_whole_cpus_the_placement_check_counted(rayjob_schema):
    """KubeRay rounds a pod's CPU limit up for Ray (7.5 -> 8); the manifest sets Ray's CPUs to
    the whole CPUs of the pod instead, and a pod of under one CPU is refused in one line."""
    from cluster.kuberay import KubeRayError, rayjob_manifest, sweep_plan

    manifest = rayjob_manifest("sweeps/cartpole_quick.py", workers=2, cpus_per_worker=7.5)
    jsonschema.validate(manifest, rayjob_schema)
    (group,) = manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert group["rayStartParams"] == {"num-cpus": "7"}
    limits = group["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert str(limits["cpu"]) in ("7.5", "7500m")  # the pod keeps what it asked for
    assert (
        sweep_plan("sweeps/cartpole_quick.py", 7, 0, 2)["deadline_s"]
        == manifest["spec"]["activeDeadlineSeconds"]
    )
    with pytest.raises(KubeRayError, match="needs at least 1 whole CPU"):
        rayjob_manifest("sweeps/cartpole_quick.py", workers=2, cpus_per_worker=0.5)


def test_the_fetch_recipe_copies_the_results_share_into_a_tarball_analysis_loads(tmp_path):
    """docs/cluster.md's step 5, run here as its pod would: the claim it mounts is the one the
    sweep's RayJob writes to (--results-pvc), `--quiet` keeps kubectl's "pod deleted" out of
    the tarball, and the container's own command, run on a share holding a recorded run,
    writes to stdout a tarball from which the analysis loads every trial."""
    import json
    import shlex
    import shutil
    import tarfile

    from analysis.load import load_results

    doc = (ROOT / "docs" / "cluster.md").read_text()
    (recipe,) = [line for line in doc.splitlines() if line.startswith("kubectl run fetch ")]
    words = shlex.split(recipe)
    assert {"--rm", "-i", "--quiet", "--restart=Never"} <= set(words), words
    assert words[-2:] == [">", "results.tgz"]
    (overrides,) = [w.removeprefix("--overrides=") for w in words if w.startswith("--overrides=")]
    pod = json.loads(overrides)["spec"]
    (volume,) = pod["volumes"]
    (container,) = pod["containers"]
    claim = volume["persistentVolumeClaim"]["claimName"]
    assert f"--results-pvc {claim}" in doc and f"metadata: {{name: {claim}}}" in doc
    (mount,) = container["volumeMounts"]
    assert mount["name"] == volume["name"]

    # the share as the RayJob leaves it: <results root>/<sweep>/<run>
    run = sorted((ROOT / "docs" / "data" / "cabs_scaling").iterdir())[-1]
    share = tmp_path / "share"
    shutil.copytree(run, share / "cabs_scaling" / run.name)
    command = [share.as_posix() if w == mount["mountPath"] else w for w in container["command"]]
    tarball = tmp_path / "results.tgz"
    with tarball.open("wb") as out:
        subprocess.run(command, stdout=out, check=True)
    fetched = tmp_path / "fetched"
    with tarfile.open(tarball) as tar:  # a stray line in the stream would fail here
        tar.extractall(fetched, filter="data")
    copy = fetched / "cabs_scaling" / run.name
    assert len(load_results(copy).trials) == len(load_results(run).trials) > 0

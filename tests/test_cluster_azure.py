"""Azure ML specs built offline, the CLI's dry runs and errors, and the service calls of
``submit``/``download``/``cancel`` against a fake workspace client (the only mock: Azure's
service is the external boundary). No credentials, no network."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

pytest.importorskip("azure.ai.ml")

from azure.ai.ml import MpiDistribution, RayDistribution, load_job  # noqa: E402
from packaging.requirements import Requirement  # noqa: E402
from test_envs_forms import user_folder, yaml_sweep  # noqa: E402

from cluster import azure, azure_specs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SWEEP = "sweeps/cartpole_quick.py"
TOKEN_LIKE = "f" * 64


def job_dict(job) -> dict:
    """A job as the YAML that Azure ML reads."""
    return yaml.safe_load(azure.job_yaml(job))


# -- environment ------------------------------------------------------------------------------


def test_conda_spec_pins_every_project_dependency_to_an_allowed_version():
    spec = azure.conda_spec()
    python = spec["dependencies"][0]
    assert python == f"python={sys.version_info.major}.{sys.version_info.minor}"
    pip = spec["dependencies"][2]["pip"]
    assert pip[0] == azure_specs.TORCH_CPU_INDEX  # CPU nodes: torch's CPU build
    pins = {Requirement(p).name: Requirement(p) for p in pip[1:]}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, as a package, for Python 3.10 (the dev extra installs it)
        import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["azure"]
    for text in wanted:
        req = Requirement(text)
        assert req.name in pins, f"{req.name} missing from the job's conda file"
        pin = pins[req.name]
        assert pin.extras == req.extras
        (spec_,) = list(pin.specifier)
        assert spec_.operator == "==", f"{pin} is not pinned"
        assert req.specifier.contains(spec_.version), f"{pin} violates {req}"
        assert "+" not in spec_.version  # no local build labels such as +cpu
    assert "pytest" not in pins  # dev tools stay off the cluster
    gpu_pip = azure.conda_spec(gpu=True)["dependencies"][2]["pip"]
    assert gpu_pip == pip[1:]  # GPU nodes: the same pins, torch from PyPI (its CUDA build)
    assert azure_specs.environment_spec(gpu=True).conda_file["dependencies"][2]["pip"] == gpu_pip


def test_the_default_vm_is_in_the_price_table_so_the_default_path_checks_placement():
    size = azure_specs.DEFAULT_CPU_VM
    assert azure_specs.target_shape(3, None) == "3x8:0", size  # Standard_F8s_v2: 8 vCPUs


# -- compute ----------------------------------------------------------------------------------


def test_compute_spec_single_cluster():
    (spec,) = azure.compute_specs(
        "cpu-cluster",
        size="Standard_F16s_v2",
        min_instances=0,
        max_instances=8,
        low_priority=True,
        idle_s=600,
    )
    d = spec._to_dict()
    assert d["name"] == "cpu-cluster" and d["type"] == "amlcompute"
    assert d["size"] == "Standard_F16s_v2"
    assert (d["min_instances"], d["max_instances"]) == (0, 8)
    assert d["tier"] == "low_priority"
    assert d["idle_time_before_scale_down"] == 600


def test_compute_spec_gpu_head_layout_is_two_clusters_on_one_subnet():
    head, workers = azure.compute_specs(
        "rls",
        layout="gpu-head",
        low_priority=True,
        max_instances=6,
        vnet="rl-vnet",
        subnet="default",
    )
    h, w = head._to_dict(), workers._to_dict()
    assert h["name"] == "rls-head" and w["name"] == "rls-workers"
    assert h["size"] == azure.DEFAULT_GPU_VM and w["size"] == azure.DEFAULT_CPU_VM
    assert h["max_instances"] == 1 and h["tier"] == "dedicated"  # never lose the head
    assert w["max_instances"] == 6 and w["tier"] == "low_priority"
    assert (
        h["network_settings"]
        == w["network_settings"]
        == {"vnet_name": "rl-vnet", "subnet": "default"}
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(name="9bad"), "compute name"),
        (dict(name="ok", min_instances=5, max_instances=2), "--min 5 / --max 2"),
        (dict(name="ok", idle_s=-1), "--idle-s"),
        (dict(name="ok", layout="gpu-head"), "needs --vnet and --subnet"),
        (dict(name="ok", layout="ring"), "--layout"),
    ],
)
def test_compute_spec_rejects_bad_input(kwargs, message):
    with pytest.raises(azure.AzureError, match=message):
        azure.compute_specs(**kwargs)


# -- jobs -------------------------------------------------------------------------------------


def test_mpi_job_spec():
    (job,) = azure.job_specs(
        ROOT / SWEEP,
        nodes=4,
        compute="cpu-cluster",
        timeout_s=3600,
        token=TOKEN_LIKE,
        sweep_args=["--budget-s", "60"],
    )
    assert isinstance(job.distribution, MpiDistribution)
    assert job.distribution.process_count_per_instance == 1
    assert job.resources.instance_count == 4
    assert job.compute == "cpu-cluster"
    assert job.environment_variables["RAY_AUTH_TOKEN"] == TOKEN_LIKE
    assert job.environment_variables["RAY_AUTH_MODE"] == "token"
    # the job's sweeps.run logs to the job's run: its environment names the callbacks
    from sweeps.engine.tuning import CALLBACKS_VAR

    assert job.environment_variables[CALLBACKS_VAR] == "cluster.azure_logging:azure_ml_callbacks"
    assert job.command.startswith("python -m cluster.bootstrap --results-dir ${{outputs.results}}")
    assert (
        "-- python -m sweeps.run sweeps/cartpole_quick.py --results ${{outputs.results}} "
        "--budget-s 60" in job.command
    )
    d = job_dict(job)
    assert d["type"] == "command"
    assert d["distribution"] == {"process_count_per_instance": 1, "type": "mpi"}
    assert d["resources"]["instance_count"] == 4
    assert d["resources"]["shm_size"] == "8g"
    assert d["outputs"]["results"] == {"mode": "rw_mount", "type": "uri_folder"}
    assert d["limits"]["timeout"] == 3600
    assert d["environment"]["image"] == azure.CPU_IMAGE
    assert d["environment"]["conda_file"] == azure.conda_spec()
    assert d["experiment_name"] == "rl-scaling-cartpole_quick"
    assert d["tags"]["project"] == "rl-scaling"
    # The YAML never carries the token.
    assert "RAY_AUTH_TOKEN" not in d["environment_variables"]
    assert TOKEN_LIKE not in azure.job_yaml(job)


def test_serverless_job_uses_the_vm_size():
    (job,) = azure.job_specs(ROOT / SWEEP, nodes=2, vm="Standard_D8s_v5")
    d = job_dict(job)
    assert "compute" not in d
    assert d["resources"]["instance_type"] == "Standard_D8s_v5"
    assert d["resources"]["instance_count"] == 2


def test_gpu_head_layout_is_a_head_job_and_a_worker_job_with_one_rendezvous():
    head, workers = azure.job_specs(
        ROOT / SWEEP,
        nodes=5,
        compute="rls-workers",
        head_compute="rls-head",
        token=TOKEN_LIKE,
        group="g1",
    )
    h, w = job_dict(head), job_dict(workers)
    assert h["compute"] == "azureml:rls-head" and h["resources"]["instance_count"] == 1
    assert w["compute"] == "azureml:rls-workers" and w["resources"]["instance_count"] == 4
    assert w["distribution"]["type"] == "mpi"
    assert h["environment"]["image"] == azure.GPU_IMAGE
    assert w["environment"]["image"] == azure.CPU_IMAGE
    assert "--role head --nodes 5 --rendezvous ${{outputs.rendezvous}}" in h["command"]
    assert "--role worker --rendezvous ${{outputs.rendezvous}}" in w["command"]
    assert "sweeps.run" in h["command"] and "sweeps.run" not in w["command"]
    path = "azureml://datastores/workspaceblobstore/paths/rl-scaling/rendezvous/g1/"
    assert h["outputs"]["rendezvous"]["path"] == w["outputs"]["rendezvous"]["path"] == path
    assert head.tags["group"] == workers.tags["group"] == "g1"
    # Both jobs share the token (one Ray cluster).
    assert head.environment_variables["RAY_AUTH_TOKEN"] == TOKEN_LIKE
    assert workers.environment_variables["RAY_AUTH_TOKEN"] == TOKEN_LIKE


@pytest.mark.parametrize(
    "flags, kind", [(["--launcher", "ray"], "ray"), (["--ray-distribution"], "ray"), ([], "mpi")]
)
def test_the_launcher_flag_chooses_the_job_kind(flags, kind, cli):
    """`--launcher ray` (alias `--ray-distribution`) is the RayDistribution job; the default is
    the MPI bootstrap. `--dry-run` prints the job YAML without contacting Azure (the sweep
    file's check is tested on its own below)."""
    proc = cli("submit", str(SWEEP), "--nodes", "2", "--dry-run", "--no-check", *flags)
    assert proc.returncode == 0, proc.stderr[-2000:]
    distribution = yaml.safe_load(proc.stdout.split("\n---")[0])["distribution"]
    assert distribution["type"] == kind


def test_ray_distribution_job():
    (job,) = azure.job_specs(ROOT / SWEEP, nodes=3, compute="cpu", ray_distribution=True)
    assert isinstance(job.distribution, RayDistribution)
    d = job_dict(job)
    assert d["distribution"]["type"] == "ray"
    assert d["distribution"]["include_dashboard"] is False
    # the command waits for the 3 nodes Azure ML starts, then runs the sweep on them
    assert d["command"].startswith(
        "python -m cluster.bootstrap --role driver --nodes 3 "
        "--results-dir ${{outputs.results}} -- python -m sweeps.run "
        "sweeps/cartpole_quick.py"
    )
    assert d["command"].endswith("--address auto")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(nodes=0), "--nodes 0"),
        (dict(nodes=2, timeout_s=0), "--timeout-s"),
        (dict(nodes=1, compute="c", head_compute="h"), "--nodes >= 2"),
        (dict(nodes=3, head_compute="h"), "needs --compute"),
        (dict(nodes=3, compute="c", head_compute="h", ray_distribution=True), "do not combine"),
        (dict(nodes=2, compute="bad name!"), "not an Azure ML compute name"),
    ],
)
def test_job_spec_rejects_bad_input(kwargs, message):
    with pytest.raises(azure.AzureError, match=message):
        azure.job_specs(ROOT / SWEEP, **kwargs)


def test_a_users_sweep_outside_the_project_travels_as_a_job_input(tmp_path, clean_imports):
    """The user's folder (sweep file and env module) is a uri_folder input that azure-ai-ml
    uploads at submission; the command reads the sweep file from the input's mount; the
    YAML loads back with the input pointing at the folder."""
    folder = user_folder(tmp_path)
    path = yaml_sweep(folder, "corridor_env:Corridor-v0")
    (job,) = azure.job_specs(path, nodes=2, vm="Standard_D8s_v5")
    assert (
        "-- python -m sweeps.run ${{inputs.sweep_folder}}/corridor.yaml --results "
        "${{outputs.results}}" in job.command
    )
    d = job_dict(job)
    assert d["inputs"]["sweep_folder"]["type"] == "uri_folder"
    assert d["inputs"]["sweep_folder"]["mode"] == "ro_mount"
    assert d["experiment_name"] == "rl-scaling-corridor"
    yml = ROOT / f".test-user-input-{os.getpid()}.yml"  # relative code path: beside the project
    try:
        yml.write_text(azure.job_yaml(job))
        loaded = load_job(yml)
    finally:
        yml.unlink(missing_ok=True)
    assert (ROOT / loaded.inputs["sweep_folder"].path).resolve() == folder.resolve()
    assert Path(loaded.code).resolve() == ROOT


def test_job_spec_rejects_code_outside_the_uploaded_folder(tmp_path, clean_imports):
    folder = user_folder(tmp_path)
    (tmp_path / "common").mkdir()
    path = yaml_sweep(folder, "corridor_env:Corridor-v0", extra="code_dirs: [../common]\n")
    with pytest.raises(azure.AzureError, match="lies outside .*move it into that folder"):
        azure.job_specs(path, nodes=2)
    with pytest.raises(azure.AzureError, match="no such file"):
        azure.job_specs(ROOT / "sweeps" / "nope.py", nodes=2)


# -- CLI: dry runs and errors -----------------------------------------------------------------


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AZURE")}
    return subprocess.run(
        [sys.executable, "-m", "cluster.azure", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_submit_dry_run_prints_yaml_that_load_job_reads(tmp_path):
    proc = run_cli("submit", SWEEP, "--nodes", "3", "--compute", "cpu-cluster", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in proc.stdout.split("---\n") if d.strip()]
    assert len(docs) == 1
    path = ROOT / f".test-dry-run-{os.getpid()}.yml"  # relative code path: beside the project
    try:
        path.write_text(docs[0])
        job = load_job(path)
    finally:
        path.unlink(missing_ok=True)
    assert job.resources.instance_count == 3
    assert isinstance(job.distribution, MpiDistribution)
    assert Path(job.code).resolve() == ROOT
    assert "RAY_AUTH_TOKEN" not in proc.stdout


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run `python -m cluster.azure ARGS` in this process; returns code, stdout, stderr."""

    def run(*args: str, cwd: Path = ROOT) -> SimpleNamespace:
        monkeypatch.chdir(cwd)
        for var in [v for v in os.environ if v.startswith("AZURE")]:
            monkeypatch.delenv(var)
        code = azure.main(list(args))
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)

    return run


def test_submit_dry_run_checks_the_sweep_file_first(cli):
    bad = ROOT / "sweeps" / f"_test_bad_{os.getpid()}.py"
    bad.write_text("SWEEP = 42\n")
    try:
        proc = cli("submit", str(bad.relative_to(ROOT)), "--nodes", "2", "--dry-run")
    finally:
        bad.unlink()
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: cluster.azure submit: sweep file")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_compute_dry_run_prints_both_clusters(cli):
    proc = cli(
        "compute",
        "rls",
        "--layout",
        "gpu-head",
        "--vnet",
        "v",
        "--subnet",
        "s",
        "--low-priority",
        "--dry-run",
    )
    assert proc.returncode == 0, proc.stderr
    docs = [yaml.safe_load(d) for d in proc.stdout.split("---\n") if d.strip()]
    assert [d["name"] for d in docs] == ["rls-head", "rls-workers"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["submit", SWEEP, "--nodes", "0", "--dry-run", "--no-check"], "--nodes 0"),
        (
            ["submit", SWEEP, "--nodes", "2", "--vm", "X", "--compute", "c", "--dry-run"],
            "--vm and --compute",
        ),
        (["compute", "rls", "--layout", "gpu-head", "--dry-run"], "needs --vnet"),
    ],
)
def test_cli_errors_are_one_line(cli, args, message):
    proc = cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_cli_without_workspace_says_how_to_configure_one(cli, tmp_path):
    proc = cli("status", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no Azure ML workspace" in proc.stderr and "config.json" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# -- the service boundary: a fake MLClient ------------------------------------------------------


class FakeJobs:
    """Records what `cluster.azure` asks of Azure ML's job operations."""

    def __init__(self, existing=(), fail_on=None, download_tree=None):
        self.created, self.cancelled, self.downloads = [], [], []
        self.existing = list(existing)
        self.fail_on = fail_on
        self.download_tree = download_tree or {}

    def create_or_update(self, job):
        if self.fail_on and self.fail_on in job.display_name:
            raise RuntimeError("quota exceeded for family FSv2")
        created = SimpleNamespace(
            name=f"job-{len(self.created)}",
            display_name=job.display_name,
            status="Starting",
            studio_url=None,
            tags=job.tags,
            outputs=job.outputs,
            job=job,
        )
        self.created.append(created)
        self.existing.append(created)
        return created

    def begin_cancel(self, name):
        self.cancelled.append(name)

    def get(self, name):
        for job in self.existing:
            if job.name == name:
                return job
        raise RuntimeError(f"job {name} not found")

    def list(self):
        return list(self.existing)

    def download(self, name, download_path, output_name=None):
        self.downloads.append((name, output_name))
        root = Path(download_path) / "named-outputs" / output_name
        for rel, text in self.download_tree.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)


class FakeCompute:
    """The workspace's compute clusters (name -> VM size), and the ones created."""

    def __init__(self, sizes=None):
        self.sizes = dict(sizes or {})
        self.specs = []

    def begin_create_or_update(self, spec):
        self.specs.append(spec)
        return SimpleNamespace(result=lambda: spec)

    def get(self, name):
        if name not in self.sizes:
            raise RuntimeError(f"compute {name} not found")
        return SimpleNamespace(name=name, size=self.sizes[name])


def fake_client(compute=None, **kwargs):
    return SimpleNamespace(jobs=FakeJobs(**kwargs), compute=FakeCompute(compute))


def test_submit_sends_the_job_with_a_fresh_token_and_never_prints_it(monkeypatch, capsys):
    client = fake_client()
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    code = azure.main(["submit", SWEEP, "--nodes", "3", "--compute", "cpu", "--no-check"])
    assert code == 0
    (created,) = client.jobs.created
    job = created.job
    assert job.resources.instance_count == 3
    token = job.environment_variables["RAY_AUTH_TOKEN"]
    assert re.fullmatch(r"[0-9a-f]{64}", token), token
    out = capsys.readouterr()
    assert token not in out.out + out.err
    assert "submitted job-0" in out.out
    # A second submission gets another token.
    azure.main(["submit", SWEEP, "--nodes", "3", "--compute", "cpu", "--no-check"])
    assert client.jobs.created[1].job.environment_variables["RAY_AUTH_TOKEN"] != token


def test_submit_gpu_head_layout_cancels_the_head_job_if_the_worker_job_fails(monkeypatch, capsys):
    client = fake_client(fail_on="workers")
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    code = azure.main(
        ["submit", SWEEP, "--nodes", "3", "--compute", "wk", "--head-compute", "hd", "--no-check"]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "quota exceeded" in err and len(err.strip().splitlines()) == 1
    assert [j.display_name for j in client.jobs.created] == ["cartpole_quick x3 head"]
    assert client.jobs.cancelled == ["job-0"]


def test_cancel_cancels_every_job_of_the_submission(monkeypatch):
    client = fake_client()
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    azure.main(
        ["submit", SWEEP, "--nodes", "3", "--compute", "wk", "--head-compute", "hd", "--no-check"]
    )
    azure.main(["submit", SWEEP, "--nodes", "2", "--compute", "wk", "--no-check"])
    assert azure.main(["cancel", "job-0"]) == 0
    assert sorted(client.jobs.cancelled) == ["job-0", "job-1"]  # not job-2


def test_download_merges_run_folders_into_results(monkeypatch, tmp_path):
    tree = {
        "cartpole_quick/20260101-000000/spec.json": "{}",
        "cartpole_quick/20260101-000000/trials.parquet": "x",
        "bootstrap.json": json.dumps({"nodes": [1, 2, 3]}),
    }
    client = fake_client(download_tree=tree)
    client.jobs.existing.append(SimpleNamespace(name="job-x", tags={}, outputs={"results": 1}))
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    results = tmp_path / "results"
    assert azure.main(["download", "job-x", "--results", str(results)]) == 0
    run = results / "cartpole_quick" / "20260101-000000"
    assert (run / "spec.json").exists() and (run / "trials.parquet").read_text() == "x"
    assert json.loads((run / "bootstrap.json").read_text()) == {"nodes": [1, 2, 3]}
    assert client.jobs.downloads == [("job-x", "results")]
    # Never overwrites a run that is already there.
    with pytest.raises(azure.AzureError, match="exists already"):
        azure.download_results(client, "job-x", results)


def test_compute_creates_both_clusters_of_the_gpu_head_layout(monkeypatch, capsys):
    client = SimpleNamespace(compute=FakeCompute(), jobs=FakeJobs())
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    code = azure.main(
        [
            "compute",
            "rls",
            "--layout",
            "gpu-head",
            "--vnet",
            "v",
            "--subnet",
            "s",
            "--max",
            "6",
            "--low-priority",
        ]
    )
    assert code == 0
    assert [s.name for s in client.compute.specs] == ["rls-head", "rls-workers"]
    assert [s.tier for s in client.compute.specs] == ["dedicated", "low_priority"]
    assert capsys.readouterr().out.splitlines() == [
        "compute rls-head: ready",
        "compute rls-workers: ready",
    ]


def test_status_lists_only_this_projects_jobs(monkeypatch, capsys):
    client = fake_client()
    client.jobs.existing.append(
        SimpleNamespace(name="other", tags={}, status="Completed", display_name="not ours")
    )
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    azure.main(["submit", SWEEP, "--nodes", "2", "--compute", "cpu", "--no-check"])
    capsys.readouterr()
    assert azure.main(["status"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("job-0\tStarting\tcartpole_quick x2")


def test_compute_accepts_the_readme_spelling(cli):
    proc = cli("compute", "--vm", "Standard_D16s_v5", "--max-nodes", "4", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    spec = yaml.safe_load(proc.stdout.split("---\n", 1)[1])
    assert (spec["name"], spec["size"], spec["max_instances"]) == (
        azure.DEFAULT_COMPUTE,
        "Standard_D16s_v5",
        4,
    )


def test_submit_checks_the_sweep_against_the_target_vm_not_this_machine(cli):
    """A GPU sweep passes the check for GPU VMs although this machine has none (4 x
    NC4as_T4_v3: 16 vCPUs, 4 GPUs in all), and fails it for CPU-only VMs, in one line."""
    sweep = "sweeps/pong_impala_16cpu.py"
    assert azure.target_shape(4, "Standard_NC4as_T4_v3") == "4x4:1"
    assert azure.target_shape(2, "Standard_Unknown") is None
    ok = cli("submit", sweep, "--nodes", "4", "--vm", "Standard_NC4as_T4_v3", "--dry-run")
    assert ok.returncode == 0, ok.stderr
    cpu_only = cli("submit", sweep, "--nodes", "4", "--vm", "Standard_D16s_v5", "--dry-run")
    lines = cpu_only.stderr.strip().splitlines()
    assert cpu_only.returncode == 2 and len(lines) == 1, cpu_only.stderr
    assert "it asks for 1 GPUs and the cluster has 0 in all" in lines[0], lines[0]


def test_submit_to_a_compute_cluster_checks_the_sweep_against_its_vm_size(cli, monkeypatch):
    """With --compute, the cluster's VM size comes from the workspace: a GPU sweep passes on a
    GPU cluster and is refused on a CPU one in one line, before any job is created; a dry
    run asks nothing and says the trials are checked at submission."""
    sweep = "sweeps/pong_impala_16cpu.py"
    client = fake_client(compute={"gpu": "Standard_NC4as_T4_v3", "cpu": "Standard_D16s_v5"})
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    ok = cli("submit", sweep, "--nodes", "4", "--compute", "gpu")
    assert ok.returncode == 0, ok.stderr
    assert [j.job.compute for j in client.jobs.created] == ["gpu"]
    refused = cli("submit", sweep, "--nodes", "4", "--compute", "cpu")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert "it asks for 1 GPUs and the cluster has 0 in all" in lines[0], lines[0]
    assert len(client.jobs.created) == 1
    missing = cli("submit", sweep, "--nodes", "4", "--compute", "nope")
    assert missing.returncode == 1 and "--compute nope: reading its VM size" in missing.stderr
    monkeypatch.setattr(azure, "workspace_client", lambda: pytest.fail("a dry run asked Azure"))
    dry = cli("submit", sweep, "--nodes", "4", "--compute", "cpu", "--dry-run")
    assert dry.returncode == 0 and "checked against its VM size at submission" in dry.stderr
    assert len(dry.stderr.strip().splitlines()) == 1, dry.stderr
    # a size the table does not know: the file is validated, and the note says so
    client.compute.sizes["odd"] = "Standard_Unknown"
    monkeypatch.setattr(azure, "workspace_client", lambda: client)
    odd = cli("submit", sweep, "--nodes", "4", "--compute", "odd")
    assert odd.returncode == 0 and "Standard_Unknown (odd) is not in" in odd.stderr

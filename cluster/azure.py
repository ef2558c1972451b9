"""Run sweeps on Azure ML compute (azure-ai-ml v2): ``python -m cluster.azure SUBCOMMAND``.

Subcommands::

    compute [NAME] [--size VM] [--min N] [--max N] [--low-priority] [--idle-s S]
                 [--layout single|gpu-head] [--head-size VM] [--vnet V --subnet S]
    submit SWEEP_FILE --nodes N [--vm SIZE | --compute NAME] [--head-compute NAME]
                 [--launcher mpi|ray] [--experiment NAME] [--timeout-s S] [--dry-run]
    status [JOB]
    download JOB [--results DIR]
    cancel JOB

``submit`` sends one command job with ``MpiDistribution(process_count_per_instance=1)`` over
``--nodes`` instances; each instance runs :mod:`cluster.bootstrap`, which forms the Ray cluster
and runs ``python -m sweeps.run SWEEP_FILE`` on rank 0, writing results into the job's
``results`` output. ``--vm SIZE`` runs it on serverless compute of that VM size, ``--compute``
on an existing AmlCompute cluster. ``--head-compute GPU_CLUSTER`` gives the layout of the seeds
(a GPU head node, CPU worker nodes): Azure ML jobs are homogeneous, so that is two jobs, a
one-node head job and an (N-1)-node worker job, meeting through a rendezvous folder on the
workspace's default datastore; both clusters must share a virtual network (``compute
--layout gpu-head --vnet V --subnet S`` creates such a pair). ``--launcher ray`` (alias
``--ray-distribution``) uses azure-ai-ml's experimental ``RayDistribution`` instead (Azure ML
starts Ray itself); ``--launcher mpi``, the MPI bootstrap, is the default.

The job's environment is the Azure ML OpenMPI base image plus a conda file that pins this
project's dependencies to the versions installed here (:func:`conda_spec`). ``--dry-run``
prints the job YAML (for ``az ml job create -f``) and contacts nothing.

Workspace: ``AZURE_SUBSCRIPTION_ID``, ``AZURE_RESOURCE_GROUP`` and ``AZUREML_WORKSPACE_NAME``
if all are set, else the ``config.json`` that the Azure portal offers for download
(``MLClient.from_config``, searched from the current folder upwards and in ``.azureml/``).
Credentials come from azure-identity's ``DefaultAzureCredential`` (``az login``, managed
identity, environment variables); nothing secret is written anywhere. Each submitted job gets
a fresh Ray auth token in its environment variables (``RAY_AUTH_TOKEN``), which are visible to
the workspace's users only; it is never printed, and ``--dry-run`` output leaves it out.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster.auth import AUTH_MODE_VAR, AUTH_TOKEN_VAR, new_token
from sweeps.cli import EXIT_BAD_INPUT

#: Root of this project: uploaded as the job's code.
PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: Azure ML base images with OpenMPI (the MPI launcher of the job) and, for GPUs, CUDA.
CPU_IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04:latest"
GPU_IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-cuda11.8-cudnn8-ubuntu22.04:latest"

#: Default VM sizes: compute-optimised CPU workers; one T4 GPU for a GPU head.
DEFAULT_CPU_VM = "Standard_F8s_v2"
DEFAULT_GPU_VM = "Standard_NC4as_T4_v3"

#: Name of the compute cluster that ``compute`` creates when none is given.
DEFAULT_COMPUTE = "rl-scaling-cpu"

#: Tag that marks the jobs of this project (``status`` lists those).
PROJECT_TAG = "rl-scaling"

#: The datastore of the rendezvous folder of two-job layouts.
RENDEZVOUS_DATASTORE = "workspaceblobstore"

_NAME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]{1,31}$")


class AzureError(RuntimeError):
    """A bad request (``code`` 2) or an Azure ML failure (``code`` 1); the message is one line:
    what, where, why."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------------------------
# Environment: the conda file
# ---------------------------------------------------------------------------------------------


def _project_requirements() -> list[str]:
    """This project's requirement strings (main + ``azure`` extra), from pyproject.toml.

    Falls back to the installed package's metadata when pyproject.toml is not beside the
    package (an installed wheel).
    """
    pyproject = PROJECT_ROOT / "pyproject.toml"
    if pyproject.exists():
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            tomllib = None
        if tomllib is not None:
            project = tomllib.loads(pyproject.read_text())["project"]
            return list(project["dependencies"]) + list(
                project.get("optional-dependencies", {}).get("azure", [])
            )
    reqs = []
    for req in md.requires("rl-scaling") or []:
        spec, _, marker = req.partition(";")
        marker = marker.replace(" ", "")
        if not marker or marker == 'extra=="azure"':
            reqs.append(spec.strip())
    return reqs


def conda_spec(python: str | None = None) -> dict[str, Any]:
    """The job's conda environment: Python and pip requirements pinned to installed versions.

    Each requirement of this project (main dependencies and the ``azure`` extra) is pinned to
    the version installed in this Python (``name[extras]==version``), so the cluster runs
    what was tested here; a requirement not installed here keeps its own specifier.

    Args:
        python: Python version for the job (default: this interpreter's ``major.minor``).

    Returns:
        A conda environment dict (``name``, ``channels``, ``dependencies``).
    """
    from packaging.requirements import Requirement

    pins = []
    for text in _project_requirements():
        req = Requirement(text)
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        try:
            # "2.13.0+cpu" -> "2.13.0": a local version label names a build, not a release.
            version = md.version(req.name).split("+", 1)[0]
            pins.append(f"{req.name}{extras}=={version}")
        except md.PackageNotFoundError:
            pins.append(f"{req.name}{extras}{req.specifier}")
    python = python or f"{sys.version_info.major}.{sys.version_info.minor}"
    return {
        "name": "rl-scaling",
        "channels": ["conda-forge"],
        "dependencies": [f"python={python}", "pip", {"pip": pins}],
    }


def environment_spec(gpu: bool = False):
    """An anonymous Azure ML ``Environment``: OpenMPI base image + :func:`conda_spec`."""
    from azure.ai.ml.entities import Environment

    return Environment(image=GPU_IMAGE if gpu else CPU_IMAGE, conda_file=conda_spec())


# ---------------------------------------------------------------------------------------------
# Compute
# ---------------------------------------------------------------------------------------------


def compute_specs(
    name: str,
    *,
    size: str = DEFAULT_CPU_VM,
    min_instances: int = 0,
    max_instances: int = 4,
    low_priority: bool = False,
    idle_s: int = 300,
    layout: str = "single",
    head_size: str = DEFAULT_GPU_VM,
    vnet: str | None = None,
    subnet: str | None = None,
) -> list:
    """AmlCompute cluster specs: one cluster, or a GPU head cluster plus a CPU worker cluster.

    Args:
        name: cluster name (``layout="gpu-head"`` creates ``NAME-head`` and ``NAME-workers``).
        size: VM size of the (worker) nodes.
        min_instances, max_instances: autoscale bounds of the (worker) cluster.
        low_priority: low-priority (preemptible, cheaper) VMs for the (worker) cluster; the
            head cluster is always dedicated: losing the head loses the run.
        idle_s: seconds a node stays idle before the cluster scales down.
        layout: ``"single"`` or ``"gpu-head"``.
        head_size: VM size of the head cluster (``gpu-head``).
        vnet, subnet: virtual network and subnet for the clusters; required by ``gpu-head``,
            whose two jobs must reach each other.

    Raises:
        AzureError: invalid name, bounds or layout (the message names the argument).
    """
    from azure.ai.ml.entities import AmlCompute, NetworkSettings

    if not _NAME_RE.match(name):
        raise AzureError(
            f"compute name {name!r}: 2-32 letters, digits or '-', starting with a letter"
        )
    if min_instances < 0 or max_instances < 1 or min_instances > max_instances:
        raise AzureError(
            f"--min {min_instances} / --max {max_instances}: need 0 <= min <= max and max >= 1"
        )
    if idle_s < 0:
        raise AzureError(f"--idle-s {idle_s}: must be >= 0 seconds")
    if layout not in ("single", "gpu-head"):
        raise AzureError(f"--layout {layout!r}: single or gpu-head")
    network = NetworkSettings(vnet_name=vnet, subnet=subnet) if (vnet or subnet) else None
    tier = "low_priority" if low_priority else "dedicated"
    if layout == "single":
        return [
            AmlCompute(
                name=name,
                size=size,
                min_instances=min_instances,
                max_instances=max_instances,
                tier=tier,
                idle_time_before_scale_down=idle_s,
                network_settings=network,
                tags={"project": PROJECT_TAG},
            )
        ]
    if not (vnet and subnet):
        raise AzureError(
            "--layout gpu-head needs --vnet and --subnet: the head job and the worker job run "
            "on different clusters and must reach each other"
        )
    if len(name) > 24:
        raise AzureError(f"compute name {name!r}: at most 24 characters with --layout gpu-head")
    return [
        AmlCompute(
            name=f"{name}-head",
            size=head_size,
            min_instances=0,
            max_instances=1,
            tier="dedicated",
            idle_time_before_scale_down=idle_s,
            network_settings=network,
            tags={"project": PROJECT_TAG, "role": "ray-head"},
        ),
        AmlCompute(
            name=f"{name}-workers",
            size=size,
            min_instances=min_instances,
            max_instances=max_instances,
            tier=tier,
            idle_time_before_scale_down=idle_s,
            network_settings=network,
            tags={"project": PROJECT_TAG, "role": "ray-workers"},
        ),
    ]


# ---------------------------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------------------------


#: The job input that holds the folder of a sweep file outside the project.
SWEEP_FOLDER_INPUT = "sweep_folder"


def _sweep_path(sweep_file: str | Path) -> tuple[str, dict[str, Any]]:
    """Where the job finds the sweep file (its shell-quoted path in the job's command), and
    the job's inputs that carry it.

    A sweep file inside the project is found relative to the job's code folder (the project).
    One outside it travels as a ``uri_folder`` input, :data:`SWEEP_FOLDER_INPUT`: its folder,
    with the user's env module and ``code_dirs`` (azure-ai-ml uploads a local input path at
    submission), read from the input's mount; ``sweeps.run`` ships the user's modules from
    there to the other nodes.

    Raises:
        AzureError: no such file, a sweep file outside the project that does not validate,
            or its code outside its folder.
    """
    from azure.ai.ml import Input

    path = Path(sweep_file).resolve()
    if not path.is_file():
        raise AzureError(f"sweep file {sweep_file}: no such file")
    if path.is_relative_to(PROJECT_ROOT):
        return _shell_quote(path.relative_to(PROJECT_ROOT).as_posix()), {}
    from sweeps.sweep_file import SpecError, code_root, load_sweep

    try:
        root = code_root(load_sweep(path), path, PROJECT_ROOT)
    except SpecError as e:
        raise AzureError(f"sweep file {e}") from None
    inputs = {SWEEP_FOLDER_INPUT: Input(type="uri_folder", path=str(root), mode="ro_mount")}
    return (f"${{{{inputs.{SWEEP_FOLDER_INPUT}}}}}/"
            + _shell_quote(path.relative_to(root).as_posix()), inputs)


def _sweep_name(sweep_path: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "-", Path(sweep_path).stem)


def _shell_quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def job_specs(
    sweep_file: str | Path,
    *,
    nodes: int,
    vm: str | None = None,
    compute: str | None = None,
    head_compute: str | None = None,
    ray_distribution: bool = False,
    experiment: str | None = None,
    timeout_s: int | None = None,
    token: str | None = None,
    group: str | None = None,
    sweep_args: Sequence[str] = (),
) -> list:
    """The command job(s) of a sweep run on ``nodes`` Azure ML nodes.

    Args:
        sweep_file: the sweep file: inside this project (the job's code folder), or anywhere
            (its folder is uploaded as a job input, :func:`_sweep_path`).
        nodes: Ray nodes, head included (>= 1).
        vm: VM size for serverless compute (used when ``compute`` is None; default
            ``DEFAULT_CPU_VM``).
        compute: name of an AmlCompute cluster for the job (for the worker job with
            ``head_compute``).
        head_compute: AmlCompute cluster of a separate one-node head job (GPU head layout).
        ray_distribution: use ``RayDistribution`` (experimental) instead of the MPI bootstrap.
        experiment: Azure ML experiment name (default ``rl-scaling-<sweep file stem>``).
        timeout_s: wall-clock limit of the job(s), seconds.
        token: Ray auth token put into the jobs' environment variables (None: none; the
            bootstrap then runs Ray without token authentication).
        group: id shared by the jobs of one submission (tag, rendezvous folder; default new).
        sweep_args: more arguments for ``python -m sweeps.run`` (e.g. ``--budget-s 60``).

    Returns:
        ``[job]``, or ``[head_job, worker_job]`` with ``head_compute``: ``CommandJob`` objects.

    Raises:
        AzureError: bad arguments (the message names the argument).
    """
    from azure.ai.ml import MpiDistribution, Output, RayDistribution

    if nodes < 1:
        raise AzureError(f"--nodes {nodes}: need at least 1 node")
    if timeout_s is not None and timeout_s <= 0:
        raise AzureError(f"--timeout-s {timeout_s}: must be positive")
    if head_compute and nodes < 2:
        raise AzureError("--head-compute needs --nodes >= 2 (one head, at least one worker)")
    if head_compute and not compute:
        raise AzureError("--head-compute needs --compute: the worker nodes' cluster")
    if head_compute and ray_distribution:
        raise AzureError("--head-compute and --ray-distribution do not combine")
    for label, value in (("--compute", compute), ("--head-compute", head_compute)):
        if value is not None and not _NAME_RE.match(value):
            raise AzureError(f"{label} {value!r}: not an Azure ML compute name")
    sweep_path, inputs = _sweep_path(sweep_file)
    name = _sweep_name(str(sweep_file))
    experiment = experiment or f"rl-scaling-{name}"
    group = group or uuid.uuid4().hex[:12]
    extra = " ".join(_shell_quote(a) for a in sweep_args)
    results_arg = "--results ${{outputs.results}}"
    sweep_cmd = f"python -m sweeps.run {sweep_path} {results_arg}"
    if extra:
        sweep_cmd += f" {extra}"
    env_vars = {"PYTHONUNBUFFERED": "1"}
    if token:
        env_vars.update({AUTH_MODE_VAR: "token", AUTH_TOKEN_VAR: token})
    tags = {"project": PROJECT_TAG, "sweep": name, "group": group, "nodes": str(nodes)}
    results = {"results": Output(type="uri_folder", mode="rw_mount")}
    common = dict(
        code=str(PROJECT_ROOT),
        inputs=inputs,
        experiment_name=experiment,
        environment_variables=env_vars,
        timeout_s=timeout_s,
    )

    def placement(cluster: str | None, count: int) -> dict:
        if cluster:
            return {"compute": cluster, "instance_count": count}
        return {"instance_count": count, "instance_type": vm or DEFAULT_CPU_VM}

    if ray_distribution:
        job = _command_job(
            # Azure ML starts Ray on every node and runs the command on the head.
            command=f"{sweep_cmd} --address auto",
            environment=environment_spec(),
            distribution=RayDistribution(include_dashboard=False),
            outputs=results,
            display_name=f"{name} x{nodes} (RayDistribution)",
            tags={**tags, "launcher": "ray-distribution"},
            **placement(compute, nodes),
            **common,
        )
        return [job]
    if not head_compute:
        job = _command_job(
            command="python -m cluster.bootstrap --results-dir ${{outputs.results}} "
            f"--log-dir logs/ray -- {sweep_cmd}",
            environment=environment_spec(),
            distribution=MpiDistribution(process_count_per_instance=1),
            outputs=results,
            display_name=f"{name} x{nodes}",
            tags={**tags, "launcher": "mpi-bootstrap"},
            **placement(compute, nodes),
            **common,
        )
        return [job]
    rendezvous_path = (
        f"azureml://datastores/{RENDEZVOUS_DATASTORE}/paths/rl-scaling/rendezvous/{group}/"
    )
    rendezvous = Output(type="uri_folder", mode="rw_mount", path=rendezvous_path)
    head = _command_job(
        command="python -m cluster.bootstrap --role head "
        f"--nodes {nodes} --rendezvous ${{{{outputs.rendezvous}}}} "
        f"--results-dir ${{{{outputs.results}}}} --log-dir logs/ray -- {sweep_cmd}",
        environment=environment_spec(gpu=True),
        outputs={**results, "rendezvous": rendezvous},
        display_name=f"{name} x{nodes} head",
        tags={**tags, "launcher": "mpi-bootstrap", "role": "ray-head"},
        **placement(head_compute, 1),
        **common,
    )
    workers = _command_job(
        command="python -m cluster.bootstrap --role worker "
        "--rendezvous ${{outputs.rendezvous}} --log-dir logs/ray",
        environment=environment_spec(),
        distribution=MpiDistribution(process_count_per_instance=1),
        outputs={"rendezvous": rendezvous},
        display_name=f"{name} x{nodes} workers",
        tags={**tags, "launcher": "mpi-bootstrap", "role": "ray-workers"},
        **placement(compute, nodes - 1),
        **common,
    )
    return [head, workers]


def _command_job(*, instance_count: int, instance_type: str | None = None,
                 compute: str | None = None, timeout_s: int | None = None, **kwargs: Any):
    """A ``CommandJob`` (azure-ai-ml's public entity, as ``az ml job create`` reads one) of
    ``instance_count`` nodes of ``instance_type`` (serverless) or on ``compute``, with 8 GiB of
    ``/dev/shm`` (Ray's object store lives there; Docker's default is 64 MB)."""
    from azure.ai.ml.entities import CommandJob, CommandJobLimits, JobResourceConfiguration

    resources = JobResourceConfiguration(instance_count=instance_count,
                                         instance_type=instance_type, shm_size="8g")
    limits = CommandJobLimits(timeout=timeout_s) if timeout_s is not None else None
    return CommandJob(resources=resources, compute=compute, limits=limits, **kwargs)


def job_yaml(job) -> str:
    """The YAML of a job as ``az ml job create -f`` reads it, from the project folder.

    The code path and a local input folder (a sweep folder outside the project) are written
    relative to the current folder (save the YAML there), the
    anonymous environment loses its generated name and version, and no Ray token is
    included (``RAY_AUTH_TOKEN``/``RAY_AUTH_MODE`` are dropped: such a job runs Ray without
    token authentication inside its network; ``submit`` without ``--dry-run`` adds one).
    """
    import yaml

    buffer = io.StringIO()
    job.dump(buffer)
    data = yaml.safe_load(buffer.getvalue())
    data["code"] = os.path.relpath(PROJECT_ROOT, Path.cwd())
    for name, spec in (data.get("inputs") or {}).items():
        local = getattr(job.inputs.get(name), "path", None)
        if isinstance(spec, dict) and local and Path(str(local)).is_dir():
            # dump() spells a local folder as an asset id (azureml:...); the CLI uploads a path
            spec["path"] = os.path.relpath(str(local), Path.cwd())
    env = data.get("environment")
    if isinstance(env, dict):
        for key in ("name", "version", "tags"):
            env.pop(key, None)
    env_vars = data.get("environment_variables") or {}
    for var in (AUTH_TOKEN_VAR, AUTH_MODE_VAR):
        env_vars.pop(var, None)
    for key in ("inputs", "parameters", "properties"):
        if not data.get(key):
            data.pop(key, None)
    if isinstance(data.get("resources"), dict) and not data["resources"].get("properties"):
        data["resources"].pop("properties", None)
    ordered = {"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"}
    ordered.update(data)
    return yaml.safe_dump(ordered, sort_keys=False, width=100)


# ---------------------------------------------------------------------------------------------
# The workspace (the service boundary)
# ---------------------------------------------------------------------------------------------


def workspace_client():
    """An ``MLClient`` for the workspace named by the environment or by ``config.json``.

    Raises:
        AzureError: no workspace configured (the message says how to configure one).
    """
    from azure.ai.ml import MLClient
    from azure.identity import DefaultAzureCredential

    credential = DefaultAzureCredential()
    sub, rg, ws = (
        os.environ.get("AZURE_SUBSCRIPTION_ID"),
        os.environ.get("AZURE_RESOURCE_GROUP"),
        os.environ.get("AZUREML_WORKSPACE_NAME"),
    )
    if sub and rg and ws:
        return MLClient(credential, subscription_id=sub, resource_group_name=rg, workspace_name=ws)
    try:
        return MLClient.from_config(credential=credential)
    except Exception as exc:
        raise AzureError(
            "no Azure ML workspace: put the workspace's config.json (Azure portal > workspace > "
            "Download config.json) in this folder, or set AZURE_SUBSCRIPTION_ID, "
            f"AZURE_RESOURCE_GROUP and AZUREML_WORKSPACE_NAME ({type(exc).__name__})"
        ) from None


def _service_error(action: str, exc: Exception) -> AzureError:
    message = " ".join(str(exc).split())
    if len(message) > 300:
        message = message[:297] + "..."
    return AzureError(f"{action}: {type(exc).__name__}: {message}", code=1)


def create_compute(client, specs: Sequence) -> list[str]:
    """Create or update each AmlCompute spec; return the names, waiting for each."""
    names = []
    for spec in specs:
        try:
            client.compute.begin_create_or_update(spec).result()
        except Exception as exc:
            raise _service_error(f"creating compute {spec.name}", exc) from None
        names.append(spec.name)
    return names


def submit_jobs(client, jobs: Sequence) -> list:
    """Submit jobs in order (the head job first); return the created jobs."""
    created = []
    for job in jobs:
        try:
            created.append(client.jobs.create_or_update(job))
        except Exception as exc:
            for done in created:  # do not leave half a layout running
                try:
                    client.jobs.begin_cancel(done.name)
                except Exception:
                    pass
            raise _service_error(f"submitting {job.display_name}", exc) from None
    return created


def _group_jobs(client, name: str) -> list:
    """The job ``name`` and the other jobs of its submission (same ``group`` tag)."""
    try:
        job = client.jobs.get(name)
    except Exception as exc:
        raise _service_error(f"job {name}", exc) from None
    group = (job.tags or {}).get("group")
    jobs = [job]
    if group:
        try:
            for other in client.jobs.list():
                if other.name != name and (other.tags or {}).get("group") == group:
                    jobs.append(other)
        except Exception as exc:
            raise _service_error("listing jobs", exc) from None
    return jobs


def download_results(client, name: str, results: Path) -> list[Path]:
    """Download a job's ``results`` output and merge its run folders into ``results``.

    The output holds ``<sweep>/<run_id>/`` folders (what ``sweeps.run --results`` writes)
    and ``bootstrap.json``, which is copied into each run folder.

    Returns:
        The run folders created under ``results``.

    Raises:
        AzureError: download failed, the output holds no run folder, or a run folder exists
            already under ``results`` (nothing is overwritten).
    """
    jobs = _group_jobs(client, name)
    head = next((j for j in jobs if "results" in (j.outputs or {})), jobs[0])
    with tempfile.TemporaryDirectory(prefix="rls-download-") as tmp:
        try:
            client.jobs.download(head.name, download_path=tmp, output_name="results")
        except Exception as exc:
            raise _service_error(f"downloading the results of job {head.name}", exc) from None
        out = Path(tmp) / "named-outputs" / "results"
        if not out.is_dir():
            raise AzureError(f"job {head.name}: its results output was not downloaded ({tmp})")
        runs = sorted(p.parent for p in out.glob("*/*/spec.json"))
        if not runs:
            raise AzureError(f"job {head.name}: no results in its output (did the sweep run?)")
        created = []
        for run in runs:
            dest = results / run.parent.name / run.name
            if dest.exists():
                raise AzureError(f"{dest} exists already: not overwriting it")
        for run in runs:
            dest = results / run.parent.name / run.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(run, dest)
            if (out / "bootstrap.json").exists():
                shutil.copy2(out / "bootstrap.json", dest / "bootstrap.json")
            created.append(dest)
        return created


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def target_shape(nodes: int, vm: str | None, head_vm: str | None = None) -> str | None:
    """The ``sweeps.run --cluster`` shape of ``nodes`` VMs of size ``vm`` (serverless compute:
    default ``DEFAULT_CPU_VM``), or, with ``head_vm``, one head of that size and ``nodes - 1``
    of ``vm``, from ``analysis/vm_sizes.csv``; None for a size the table does not list."""
    from analysis.catalogue import load_vm_sizes

    sizes = load_vm_sizes()
    size, head = sizes.get(vm or DEFAULT_CPU_VM), sizes.get(head_vm) if head_vm else None
    if size is None or (head_vm and head is None):
        return None
    if head is None:
        return f"{int(nodes)}x{size.vcpus}:{size.gpus}"
    shape = f"1x{head.vcpus}:{head.gpus}"
    return shape + (f"+{int(nodes) - 1}x{size.vcpus}:{size.gpus}" if nodes > 1 else "")


def compute_size(client, name: str) -> str:
    """The VM size of the workspace's AmlCompute cluster ``name`` (``client.compute.get``).

    Raises:
        AzureError: no such cluster, or the service refused (code 1).
    """
    try:
        return str(client.compute.get(name).size)
    except Exception as exc:  # noqa: BLE001 - the SDK's errors are many; one line says which
        raise _service_error(f"--compute {name}: reading its VM size", exc) from None


def _check_sweep(sweep_file: str, cluster: str | None = None) -> None:
    """Validate the sweep file here before paying for VMs, as ``sweeps.run --dry-run`` does:
    the file, every point's RLlib config and, with ``cluster`` (:func:`target_shape`), every
    kind of trial placed on that shape by Ray's rule (:func:`sweeps.placement.feasibility`);
    without it the trials' sizes are not checked (the target's shape is unknown).

    Raises:
        AzureError: the file does not pass, in one line.
    """
    from sweeps.logs import quiet_logs
    from sweeps.placement import cluster_shape, feasibility, trial_setup
    from sweeps.sweep_file import SpecError, check_points, load_sweep, sweep_target

    quiet_logs()  # RLlib's new-API-stack notices while the sweep's configs are built
    try:
        sweep = load_sweep(sweep_file)
        target = sweep_target(sweep, sweep_file)
        check_points(sweep, sweep_file)
        if cluster is not None:
            nodes = cluster_shape(cluster)
            feasibility(sweep, trial_setup(sweep, target, nodes), sweep_file, nodes)
    except SpecError as e:
        raise AzureError(f"sweep file {e}") from None


def _cmd_compute(args) -> int:
    specs = compute_specs(
        args.name,
        size=args.size or DEFAULT_CPU_VM,
        min_instances=args.min,
        max_instances=args.max,
        low_priority=args.low_priority,
        idle_s=args.idle_s,
        layout=args.layout,
        head_size=args.head_size,
        vnet=args.vnet,
        subnet=args.subnet,
    )
    if args.dry_run:
        for spec in specs:
            buffer = io.StringIO()
            spec.dump(buffer)
            print("---")
            print(buffer.getvalue().rstrip())
        return 0
    client = workspace_client()
    for name in create_compute(client, specs):
        print(f"compute {name}: ready")
    return 0


def _cmd_submit(args) -> int:
    if args.vm and args.compute:
        raise AzureError("--vm and --compute exclude each other (--vm means serverless compute)")
    client = None
    if not args.no_check:
        # serverless: the VM size is given; --compute: the workspace knows it (a dry run
        # contacts nothing, so it validates the file without placing the trials)
        shape, unknown = target_shape(args.nodes, args.vm), args.vm
        if args.compute and args.dry_run:
            shape, unknown = None, None
            print(f"note: --compute {args.compute}: the trials are checked against its VM "
                  "size at submission (a dry run does not ask the workspace)", file=sys.stderr)
        elif args.compute:
            client = workspace_client()
            size = compute_size(client, args.compute)
            head = compute_size(client, args.head_compute) if args.head_compute else None
            shape, unknown = target_shape(args.nodes, size, head), f"{size} ({args.compute})"
        if shape is None and unknown:
            print(f"note: {unknown} is not in analysis/vm_sizes.csv: the sweep file is "
                  "validated, its trials' sizes are not checked", file=sys.stderr)
        _check_sweep(args.sweep_file, shape)
    token = None if args.dry_run else new_token()
    jobs = job_specs(
        args.sweep_file,
        nodes=args.nodes,
        vm=args.vm,
        compute=args.compute,
        head_compute=args.head_compute,
        ray_distribution=args.ray_distribution or args.launcher == "ray",
        experiment=args.experiment,
        timeout_s=args.timeout_s,
        token=token,
        sweep_args=args.sweep_args,
    )
    if args.dry_run:
        for job in jobs:
            print("---")
            print(job_yaml(job).rstrip())
        return 0
    client = client or workspace_client()
    for job in submit_jobs(client, jobs):
        print(f"submitted {job.name} ({job.display_name}): {job.status}")
        if getattr(job, "studio_url", None):
            print(f"  {job.studio_url}")
    return 0


def _cmd_status(args) -> int:
    client = workspace_client()
    try:
        if args.job:
            jobs = _group_jobs(client, args.job)
        else:
            jobs = [j for j in client.jobs.list() if (j.tags or {}).get("project") == PROJECT_TAG]
    except AzureError:
        raise
    except Exception as exc:
        raise _service_error("listing jobs", exc) from None
    if not jobs:
        print("no rl-scaling jobs in this workspace")
        return 0
    for job in jobs[: args.limit]:
        created = getattr(getattr(job, "creation_context", None), "created_at", None)
        print(f"{job.name}\t{job.status}\t{job.display_name}\t{created or ''}")
    return 0


def _cmd_download(args) -> int:
    client = workspace_client()
    for run in download_results(client, args.job, Path(args.results)):
        print(f"downloaded {run}")
    return 0


def _cmd_cancel(args) -> int:
    client = workspace_client()
    for job in _group_jobs(client, args.job):
        try:
            client.jobs.begin_cancel(job.name)
        except Exception as exc:
            raise _service_error(f"cancelling {job.name}", exc) from None
        print(f"cancel requested: {job.name}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m cluster.azure`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m cluster.azure", description="Run sweeps on Azure ML compute."
    )
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("compute", help="create or update an AmlCompute cluster (or a pair)")
    p.add_argument(
        "name", nargs="?", default=DEFAULT_COMPUTE, help=f"cluster name (default {DEFAULT_COMPUTE})"
    )
    p.add_argument(
        "--size", "--vm", dest="size", default=None, help=f"VM size (default {DEFAULT_CPU_VM})"
    )
    p.add_argument(
        "--min", "--min-nodes", dest="min", type=int, default=0, help="minimum nodes (default 0)"
    )
    p.add_argument(
        "--max", "--max-nodes", dest="max", type=int, default=4, help="maximum nodes (default 4)"
    )
    p.add_argument("--low-priority", action="store_true", help="low-priority (preemptible) VMs")
    p.add_argument("--idle-s", type=int, default=300, help="idle seconds before scale-down")
    p.add_argument(
        "--layout",
        choices=["single", "gpu-head"],
        default="single",
        help="gpu-head: NAME-head (1 GPU node) + NAME-workers (CPU nodes)",
    )
    p.add_argument("--head-size", default=DEFAULT_GPU_VM, help="VM size of the GPU head")
    p.add_argument("--vnet", default=None, help="virtual network name (gpu-head needs it)")
    p.add_argument("--subnet", default=None, help="subnet name or id (gpu-head needs it)")
    p.add_argument("--dry-run", action="store_true", help="print the compute YAML only")
    p.set_defaults(func=_cmd_compute)

    p = sub.add_parser(
        "submit",
        help="run a sweep file on N Azure ML nodes",
        epilog="arguments after -- go to sweeps.run, e.g. -- --budget-s 60",
    )
    p.add_argument("sweep_file")
    p.add_argument("--nodes", type=int, required=True, help="Ray nodes, head included")
    p.add_argument(
        "--vm", default=None, help=f"serverless compute of this VM size (default {DEFAULT_CPU_VM})"
    )
    p.add_argument("--compute", default=None, help="an AmlCompute cluster instead of --vm")
    p.add_argument(
        "--head-compute",
        default=None,
        help="GPU cluster for a separate one-node head job (workers on --compute)",
    )
    p.add_argument(
        "--launcher",
        choices=["mpi", "ray"],
        default="mpi",
        help="how the nodes form a Ray cluster: mpi = this project's MPI bootstrap (default), "
        "ray = azure-ai-ml's experimental RayDistribution",
    )
    p.add_argument(
        "--ray-distribution",
        action="store_true",
        help="the same as --launcher ray",
    )
    p.add_argument("--experiment", default=None, help="experiment name")
    p.add_argument("--timeout-s", type=int, default=None, help="job wall-clock limit, seconds")
    p.add_argument(
        "--no-check",
        action="store_true",
        help="skip the local `sweeps.run --dry-run` check of the sweep file",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the job YAML (for `az ml job create -f`); contact nothing",
    )
    p.set_defaults(func=_cmd_submit)

    p = sub.add_parser("status", help="status of a job, or of this project's recent jobs")
    p.add_argument("job", nargs="?", default=None)
    p.add_argument("--limit", type=int, default=20)
    p.set_defaults(func=_cmd_status)

    p = sub.add_parser("download", help="download a job's results into results/")
    p.add_argument("job")
    p.add_argument("--results", default="results", help="results folder (default results/)")
    p.set_defaults(func=_cmd_download)

    p = sub.add_parser("cancel", help="cancel a job (and the other job of a GPU-head layout)")
    p.add_argument("job")
    p.set_defaults(func=_cmd_cancel)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: one-line errors, exit code 2 for bad input, 1 for service failures."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, extra = argv[:split], argv[split + 1 :]
    parser = build_parser()
    args = parser.parse_args(argv)
    if extra and args.cmd != "submit":
        parser.error(f"{args.cmd}: unexpected arguments after --: {' '.join(extra)}")
    args.sweep_args = extra
    try:
        return args.func(args)
    except AzureError as exc:
        print(f"error: cluster.azure {args.cmd}: {exc}", file=sys.stderr)
        return exc.code
    except ImportError as exc:
        print(
            f"error: cluster.azure {args.cmd}: {exc.name or exc} is not installed: "
            "pip install -e '.[azure]'",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except subprocess.TimeoutExpired:
        print(f"error: cluster.azure {args.cmd}: the sweep file check timed out", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    from sweeps.cli import guard

    raise SystemExit(guard("python -m cluster.azure", main))

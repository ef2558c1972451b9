"""Azure ML job and compute specs, built offline (azure-ai-ml's public entities): the job's
conda file pinned to this environment's versions, its environment, AmlCompute specs, the
command jobs of a sweep (one MPI job, or a GPU head job and a CPU worker job) and their YAML
as ``az ml job create -f`` reads it. Nothing here contacts Azure
(:mod:`cluster.azure_client` does; :mod:`cluster.azure` is the command line).
"""

from __future__ import annotations

import importlib.metadata as md
import io
import os
import re
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster.auth import AUTH_MODE_VAR, AUTH_TOKEN_VAR
from sweeps.engine.tuning import CALLBACKS_VAR

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


#: pip option that makes ``torch==X`` resolve to PyTorch's CPU build ``X+cpu`` (a local
#: version sorts above ``X``); without it pip takes PyPI's Linux wheel, the CUDA build, ~2 GiB
#: of CUDA libraries a CPU node never uses. The Dockerfile installs with the same index.
TORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"


def conda_spec(python: str | None = None, gpu: bool = False) -> dict[str, Any]:
    """The job's conda environment: Python and pip requirements pinned to installed versions.

    Each requirement of this project (main dependencies and the ``azure`` extra) is pinned to
    the version installed in this Python (``name[extras]==version``), so the cluster runs
    what was tested here; a requirement not installed here keeps its own specifier. For CPU
    nodes the pip list starts with :data:`TORCH_CPU_INDEX`, so torch is PyTorch's CPU build.

    Args:
        python: Python version for the job (default: this interpreter's ``major.minor``).
        gpu: for GPU nodes: torch from PyPI, its CUDA build.

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
        "dependencies": [
            f"python={python}",
            "pip",
            {"pip": pins if gpu else [TORCH_CPU_INDEX, *pins]},
        ],
    }


def environment_spec(gpu: bool = False):
    """An anonymous Azure ML ``Environment``: OpenMPI base image + :func:`conda_spec`."""
    from azure.ai.ml.entities import Environment

    return Environment(image=GPU_IMAGE if gpu else CPU_IMAGE, conda_file=conda_spec(gpu=gpu))


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

    def cluster(name: str, size: str, lo: int, hi: int, tier: str, role: str | None = None):
        return AmlCompute(
            name=name,
            size=size,
            min_instances=lo,
            max_instances=hi,
            tier=tier,
            idle_time_before_scale_down=idle_s,
            network_settings=network,
            tags={"project": PROJECT_TAG, **({"role": role} if role else {})},
        )

    if layout == "single":
        return [cluster(name, size, min_instances, max_instances, tier)]
    if not (vnet and subnet):
        raise AzureError(
            "--layout gpu-head needs --vnet and --subnet: the head job and the worker job run "
            "on different clusters and must reach each other"
        )
    if len(name) > 24:
        raise AzureError(f"compute name {name!r}: at most 24 characters with --layout gpu-head")
    return [
        cluster(f"{name}-head", head_size, 0, 1, "dedicated", "ray-head"),
        cluster(f"{name}-workers", size, min_instances, max_instances, tier, "ray-workers"),
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
    from sweeps.engine.sweep_file import SpecError, code_root, load_sweep

    try:
        root = code_root(load_sweep(path), path, PROJECT_ROOT)
    except SpecError as e:
        raise AzureError(f"sweep file {e}") from None
    inputs = {SWEEP_FOLDER_INPUT: Input(type="uri_folder", path=str(root), mode="ro_mount")}
    return (
        f"${{{{inputs.{SWEEP_FOLDER_INPUT}}}}}/" + _shell_quote(path.relative_to(root).as_posix()),
        inputs,
    )


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
    from sweeps.engine.cli import shell_line, sweep_argv

    outputs = "${{outputs.results}}"  # Azure ML substitutes it: the shell must see it as written
    # the sweep's path is quoted already, around the input's placeholder
    sweep_cmd = shell_line(
        sweep_argv(sweep_path, "--results", outputs, *sweep_args), verbatim={sweep_path, outputs}
    )
    # the job's sweeps.run logs each trial to the job's run through MLflow
    env_vars = {"PYTHONUNBUFFERED": "1", CALLBACKS_VAR: "cluster.azure_logging:azure_ml_callbacks"}
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
            # Azure ML starts Ray on every node and runs the command on the head at once,
            # without waiting for the other nodes: the bootstrap's driver role waits for them
            command=f"python -m cluster.bootstrap --role driver --nodes {int(nodes)} "
            f"--results-dir ${{{{outputs.results}}}} -- {sweep_cmd} --address auto",
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


def _command_job(
    *,
    instance_count: int,
    instance_type: str | None = None,
    compute: str | None = None,
    timeout_s: int | None = None,
    **kwargs: Any,
):
    """A ``CommandJob`` (azure-ai-ml's public entity, as ``az ml job create`` reads one) of
    ``instance_count`` nodes of ``instance_type`` (serverless) or on ``compute``, with 8 GiB of
    ``/dev/shm`` (Ray's object store lives there; Docker's default is 64 MB)."""
    from azure.ai.ml.entities import CommandJob, CommandJobLimits, JobResourceConfiguration

    resources = JobResourceConfiguration(
        instance_count=instance_count, instance_type=instance_type, shm_size="8g"
    )
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

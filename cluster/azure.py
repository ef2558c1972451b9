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
import io
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from cluster.auth import new_token
from cluster.azure_client import (
    compute_size,
    create_compute,
    download_results,
    group_jobs,
    service_error,
    submit_jobs,
    workspace_client,
)
from cluster.azure_specs import (
    CPU_IMAGE,
    DEFAULT_COMPUTE,
    DEFAULT_CPU_VM,
    DEFAULT_GPU_VM,
    GPU_IMAGE,
    PROJECT_TAG,
    AzureError,
    compute_specs,
    conda_spec,
    job_specs,
    job_yaml,
    target_shape,
)
from sweeps.engine.cli import EXIT_BAD_INPUT

# the specs and the client, re-exported: `from cluster.azure import job_specs` keeps working
__all__ = [
    "CPU_IMAGE",
    "DEFAULT_COMPUTE",
    "DEFAULT_CPU_VM",
    "DEFAULT_GPU_VM",
    "GPU_IMAGE",
    "AzureError",
    "build_parser",
    "compute_size",
    "compute_specs",
    "conda_spec",
    "create_compute",
    "download_results",
    "job_specs",
    "job_yaml",
    "main",
    "submit_jobs",
    "target_shape",
    "workspace_client",
]

# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def _check_sweep(sweep_file: str, cluster: str | None = None) -> None:
    """Validate the sweep file here before paying for VMs, as ``sweeps.run --dry-run`` does:
    the file, every point's RLlib config and, with ``cluster`` (:func:`target_shape`), every
    kind of trial placed on that shape by Ray's rule (:func:`sweeps.engine.placement.feasibility`);
    without it the trials' sizes are not checked (the target's shape is unknown).

    Raises:
        AzureError: the file does not pass, in one line.
    """
    from sweeps.engine.logs import quiet_logs
    from sweeps.engine.placement import cluster_shape, feasibility, trial_setup
    from sweeps.engine.sweep_file import SpecError, check_points, load_sweep, sweep_target

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
            print(
                f"note: --compute {args.compute}: the trials are checked against its VM "
                "size at submission (a dry run does not ask the workspace)",
                file=sys.stderr,
            )
        elif args.compute:
            client = workspace_client()
            size = compute_size(client, args.compute)
            head = compute_size(client, args.head_compute) if args.head_compute else None
            shape, unknown = target_shape(args.nodes, size, head), f"{size} ({args.compute})"
        if shape is None and unknown:
            print(
                f"note: {unknown} is not in analysis/vm_sizes.csv: the sweep file is "
                "validated, its trials' sizes are not checked",
                file=sys.stderr,
            )
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
            jobs = group_jobs(client, args.job)
        else:
            jobs = [j for j in client.jobs.list() if (j.tags or {}).get("project") == PROJECT_TAG]
    except AzureError:
        raise
    except Exception as exc:
        raise service_error("listing jobs", exc) from None
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
    for job in group_jobs(client, args.job):
        try:
            client.jobs.begin_cancel(job.name)
        except Exception as exc:
            raise service_error(f"cancelling {job.name}", exc) from None
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
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m cluster.azure", main))

"""The Azure ML workspace, the service boundary of :mod:`cluster.azure`: the ``MLClient``,
creating compute, submitting and finding jobs, downloading a job's results. Every call the
service refuses becomes one :class:`~cluster.azure_specs.AzureError` line (code 1).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cluster.azure_specs import AzureError
from sweeps.engine import rundir

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


def service_error(action: str, exc: Exception) -> AzureError:
    """One :class:`AzureError` line (code 1) for a call the service refused: ``action``, the
    SDK's exception type and its message (whitespace folded, at most 300 characters)."""
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
            raise service_error(f"creating compute {spec.name}", exc) from None
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
            raise service_error(f"submitting {job.display_name}", exc) from None
    return created


def group_jobs(client, name: str) -> list:
    """The job ``name`` and the other jobs of its submission (same ``group`` tag)."""
    try:
        job = client.jobs.get(name)
    except Exception as exc:
        raise service_error(f"job {name}", exc) from None
    group = (job.tags or {}).get("group")
    jobs = [job]
    if group:
        try:
            for other in client.jobs.list():
                if other.name != name and (other.tags or {}).get("group") == group:
                    jobs.append(other)
        except Exception as exc:
            raise service_error("listing jobs", exc) from None
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
    jobs = group_jobs(client, name)
    head = next((j for j in jobs if "results" in (j.outputs or {})), jobs[0])
    with tempfile.TemporaryDirectory(prefix="rls-download-") as tmp:
        try:
            client.jobs.download(head.name, download_path=tmp, output_name="results")
        except Exception as exc:
            raise service_error(f"downloading the results of job {head.name}", exc) from None
        out = Path(tmp) / "named-outputs" / "results"
        if not out.is_dir():
            raise AzureError(f"job {head.name}: its results output was not downloaded ({tmp})")
        runs = sorted(p.parent for p in out.glob(f"*/*/{rundir.SPEC}"))
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


def compute_size(client, name: str) -> str:
    """The VM size of the workspace's AmlCompute cluster ``name`` (``client.compute.get``).

    Raises:
        AzureError: no such cluster, or the service refused (code 1).
    """
    try:
        return str(client.compute.get(name).size)
    except Exception as exc:  # noqa: BLE001 - the SDK's errors are many; one line says which
        raise service_error(f"--compute {name}: reading its VM size", exc) from None

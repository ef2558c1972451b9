"""A sweep as a KubeRay ``RayJob`` on Kubernetes (AKS with its managed KubeRay extension, or
any cluster running the KubeRay operator).

Usage::

    python -m cluster.kuberay rayjob FILE --workers 4 --cpus-per-worker 8 [--memory 32Gi]
        [--gpus-per-worker 0] [--image IMAGE] [--results URI | --results-pvc CLAIM]
        [--working-dir URI | --code-uri URI]
        [--namespace NS] [--name NAME] [--apply]
    python -m cluster.kuberay pack FILE [-o code.zip]

prints a ``kind: RayJob`` manifest (``apiVersion: ray.io/v1``, KubeRay's RayJob CRD) that runs
``python -m sweeps.run FILE`` as the job's entrypoint on a Ray cluster the operator creates for
it and deletes when the job ends (``shutdownAfterJobFinishes``):

- **head group**: one pod that runs the driver (``sweeps.run``, Optuna, the recorder) and no
  trials (``num-cpus: "0"``), 2 CPUs and 8 GiB;
- **worker group**: ``--workers`` pods of ``--cpus-per-worker`` CPUs (requests = limits, so
  Ray counts exactly those), ``--memory`` and ``--gpus-per-worker`` (``nvidia.com/gpu``);
  every kind of trial the sweep can produce must fit the worker group by Ray's placement rule
  (:func:`sweeps.engine.placement.placement_problem`: each bundle on some pod, all of them in the
  group, over several pods unless the sweep's ``placement_strategy`` is STRICT_PACK): if one
  does not, the command says which and exits 2;
- **the project as the runtime environment**: the image (default ``rl-scaling:<version>``,
  built from ``cluster/Dockerfile``) holds the project at ``/home/ray/rl-scaling``; the job's
  ``runtimeEnvYAML`` makes that folder the job's ``working_dir``, so every pod runs the code
  the job was submitted with (``--working-dir URI`` uses a zip of the project instead,
  ``git archive`` uploaded to Blob storage or any HTTPS/S3 URI Ray can fetch);
- **a sweep file outside the project** (the user's own env beside it): ``pack FILE`` zips its
  folder, the user uploads the zip and passes ``--code-uri URI``; that zip becomes the job's
  ``working_dir`` and the project comes from the image, where it is installed;
- **results**: ``--results URI`` (``abfs://container/prefix`` on Azure, ``s3://``, ``gs://``:
  :mod:`sweeps.engine.rundir.mirror`; the image needs the matching extra and the pods the store's
  credentials, e.g. AKS workload identity) uploads each result file as it is written;
  ``--results-pvc CLAIM`` mounts a PersistentVolumeClaim (Azure Files or Blob CSI on AKS) at
  ``/home/ray/results`` and writes there. Either way the results outlive the cluster; with
  neither they are deleted with the head pod (a warning says so);
- **deadline**: ``activeDeadlineSeconds`` = the sweep's trials × (budget + 60 s start-up) /
  concurrent trials + 15 min for pods to start, so a stuck job cannot bill forever;
- **Ray version**: ``rayVersion`` is the Ray the project pins (``ray.__version__``);
- **authentication**: ``authOptions: {mode: token}``: the operator keeps Ray's token in a
  Kubernetes Secret and gives it to every pod (Ray 2.60's token authentication).

``--apply`` pipes the manifest to ``kubectl apply -f -`` when a kubeconfig exists
(``$KUBECONFIG`` or ``~/.kube/config``) and ``kubectl`` is on PATH; otherwise one line says
what is missing (exit 2). Offline, the manifest is validated against the RayJob CRD's OpenAPI
schema in the tests (tests/data/kuberay/), as the API server would validate it.

Exit codes (:mod:`sweeps.engine.cli`): 0 printed (or applied); 2 bad input, a trial that does not fit
a worker pod, or no kubeconfig for ``--apply``; 1 ``kubectl`` failed.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from sweeps.engine.cli import EXIT_BAD_INPUT, sweep_argv

#: Where cluster/Dockerfile puts the project in the image, and where results go on the head.
PROJECT_DIR = "/home/ray/rl-scaling"
#: This project's root here (sweep files inside it are run from the image's copy).
ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = "/home/ray/results"
#: Seconds allowed per trial on top of its budget (actor start-up, evaluation, Tune's turn).
TRIAL_STARTUP_S = 60.0
#: Seconds for the operator to schedule pods, pull images and start Ray.
CLUSTER_STARTUP_S = 900.0
HEAD_CPUS = 2
HEAD_MEMORY = "8Gi"


class KubeRayError(Exception):
    """Bad input or an unusable environment; the message is one line."""


def _dns_name(text: str) -> str:
    """A Kubernetes object name (DNS-1123 label, at most 63 characters) from ``text``."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (name or "sweep")[:63].rstrip("-")


def sweep_plan(
    file: str, cpus_per_worker: float, gpus_per_worker: float, workers: int = 1
) -> dict[str, Any]:
    """Load and check a sweep file against the worker group: ``workers`` pods of
    ``cpus_per_worker`` CPUs and ``gpus_per_worker`` GPUs (the head runs no trials).

    Returns:
        ``{"sweep": Sweep, "trials": int, "deadline_s": int, "largest": (algorithm,
        num_env_runners, CPUs, GPUs)}`` (CPUs and GPUs of the largest trial).

    Raises:
        KubeRayError: the file is bad (the loader's one line) or a trial cannot be placed on
            the worker group (which one, what it asks for and why).
    """
    from sweeps.engine.placement import placement_problem, trial_requests
    from sweeps.engine.search import expected_trials
    from sweeps.engine.sweep_file import SpecError, check_points, load_sweep, sweep_target
    from sweeps.engine.trainable import TrialSetup

    try:
        sweep = load_sweep(file)
        target = sweep_target(sweep)
        check_points(sweep, file)
        requests = trial_requests(
            sweep,
            TrialSetup.of(
                sweep,
                target,
                cpus_per_worker,
                max_node_gpus=gpus_per_worker,
                cluster_cpus=cpus_per_worker * workers,
            ),
        )
    except SpecError as e:
        raise KubeRayError(str(e)) from None
    pods = [{"CPU": float(cpus_per_worker), "GPU": float(gpus_per_worker)}] * workers
    for r in sorted(requests, key=lambda r: (-r.cpus, -r.gpus)):  # the largest one is named
        problem = placement_problem(r.bundles, pods, sweep.placement_strategy)
        if problem:
            raise KubeRayError(
                f"{file}: a trial ({r.algorithm}, num_env_runners={r.num_env_runners}: "
                f"{r.cpus:g} CPUs, {r.gpus:g} GPUs) cannot be placed on {workers} worker pod(s) "
                f"of {cpus_per_worker:g} CPUs and {gpus_per_worker:g} GPUs "
                f"({sweep.placement_strategy}): {problem}; raise --workers, "
                "--cpus-per-worker or --gpus-per-worker"
            )
    largest = tuple(max(requests, key=lambda r: (r.cpus, r.gpus))[:4])
    trials = expected_trials(sweep)
    budget = sweep.budget.time_s or 3600.0
    waves = math.ceil(trials / sweep.search.max_concurrent)
    deadline = int(waves * (budget + TRIAL_STARTUP_S) + CLUSTER_STARTUP_S)
    return {"sweep": sweep, "trials": trials, "deadline_s": deadline, "largest": largest}


def _container(
    image: str, cpus: float, memory: str, gpus: float, mounts: list[dict[str, Any]]
) -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": f"{cpus:g}", "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = f"{gpus:g}"
    c: dict[str, Any] = {
        "name": "ray",
        "image": image,
        "resources": {"requests": dict(limits), "limits": limits},
    }
    if mounts:
        c["volumeMounts"] = mounts
    return c


def rayjob_manifest(
    file: str,
    *,
    workers: int,
    cpus_per_worker: float,
    memory: str = "32Gi",
    gpus_per_worker: float = 0,
    image: str | None = None,
    results_pvc: str | None = None,
    working_dir: str | None = None,
    results: str | None = None,
    code_uri: str | None = None,
    namespace: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The ``RayJob`` manifest (a dict, ``yaml.safe_dump`` it) that runs ``file`` on KubeRay.

    Args:
        file: the sweep file: inside the project (run from the image's copy), or anywhere
            with ``code_uri``.
        workers: worker pods (``replicas = minReplicas = maxReplicas``), ≥ 1.
        cpus_per_worker: CPUs per worker pod (Kubernetes requests = limits), > 0.
        memory: memory per worker pod, a Kubernetes quantity (``32Gi``).
        gpus_per_worker: ``nvidia.com/gpu`` per worker pod.
        image: container image with the project at :data:`PROJECT_DIR` (default
            ``rl-scaling:<version>``, or ``rl-scaling:<version>-gpu`` with GPUs, built from
            cluster/Dockerfile; ``--apply`` needs the registry's name of it).
        results_pvc: a PersistentVolumeClaim mounted at :data:`RESULTS_DIR` on the head.
        results: an object-store URI for the results (``sweeps.run --results URI``).
        working_dir: a zip URI of the project for the runtime env (default: the image's copy).
        code_uri: a zip URI of the folder of a sweep file outside the project (:func:`pack`
            writes it: the sweep file, the user's env module, ``code_dirs``), the job's
            ``working_dir``; the project then comes from the image, where it is installed.
        namespace, name: the RayJob's metadata (default name ``rl-scaling-<sweep name>``).

    Raises:
        KubeRayError: bad sizes, a trial that does not fit a worker pod, or a sweep file
            outside the project without ``code_uri``.
    """
    import ray

    if workers < 1:
        raise KubeRayError(f"--workers: must be >= 1, got {workers}")
    if not cpus_per_worker > 0:
        raise KubeRayError(f"--cpus-per-worker: must be > 0, got {cpus_per_worker:g}")
    if gpus_per_worker < 0:
        raise KubeRayError(f"--gpus-per-worker: must be >= 0, got {gpus_per_worker:g}")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?", memory):
        raise KubeRayError(f"--memory: {memory!r} is not a Kubernetes quantity (e.g. 32Gi)")
    # KubeRay gives Ray a pod's CPU limit rounded up (7.5 -> num-cpus 8), more than the pod
    # has; Ray gets the whole CPUs instead, and the placement check counts those
    ray_cpus = math.floor(cpus_per_worker)
    if ray_cpus < 1:
        raise KubeRayError(
            f"--cpus-per-worker {cpus_per_worker:g}: a Ray worker pod needs at "
            "least 1 whole CPU (Ray counts whole CPUs per node)"
        )
    plan = sweep_plan(file, ray_cpus, gpus_per_worker, workers)
    sweep = plan["sweep"]
    custom_image = image is not None
    image = image or f"rl-scaling:{project_version()}{'-gpu' if gpus_per_worker else ''}"
    run_file, runtime_env = _code(sweep, file, working_dir, code_uri, custom_image)
    entry = sweep_argv(run_file, "--address", "auto")
    head_mounts, head_volumes = [], []
    if results and results_pvc:
        raise KubeRayError("--results and --results-pvc: give one")
    if results:
        from sweeps.engine.rundir.mirror import is_uri

        if not is_uri(results):
            raise KubeRayError(
                f"--results {results!r}: needs an object-store URI "
                "(abfs://, s3://, gs://); a path would be on the head pod"
            )
        entry += ["--results", results]
    if results_pvc:
        entry += ["--results", RESULTS_DIR]
        head_mounts = [{"name": "results", "mountPath": RESULTS_DIR}]
        head_volumes = [{"name": "results", "persistentVolumeClaim": {"claimName": results_pvc}}]
    head_pod: dict[str, Any] = {
        "containers": [_container(image, HEAD_CPUS, HEAD_MEMORY, 0, head_mounts)]
    }
    if head_volumes:
        head_pod["volumes"] = head_volumes
    metadata: dict[str, Any] = {
        "name": _dns_name(name or f"rl-scaling-{sweep.name}"),
        "labels": {
            "app.kubernetes.io/name": "rl-scaling",
            "rl-scaling/sweep": _dns_name(sweep.name),
        },
    }
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": metadata,
        "spec": {
            "entrypoint": " ".join(entry),
            "runtimeEnvYAML": yaml.safe_dump(runtime_env, sort_keys=False),
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 600,
            "activeDeadlineSeconds": plan["deadline_s"],
            "submissionMode": "K8sJobMode",
            "rayClusterSpec": {
                "rayVersion": ray.__version__,
                # Ray 2.60's token authentication, the token kept in a Secret the operator
                # creates and mounts into every pod (never in the manifest or a log)
                "authOptions": {"mode": "token"},
                "headGroupSpec": {
                    # the driver only: trials go to the workers
                    "rayStartParams": {"num-cpus": "0"},
                    "template": {"spec": head_pod},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": workers,
                        "minReplicas": workers,
                        "maxReplicas": workers,
                        "rayStartParams": {"num-cpus": str(ray_cpus)},
                        "template": {
                            "spec": {
                                "containers": [
                                    _container(image, cpus_per_worker, memory, gpus_per_worker, [])
                                ],
                                **({"tolerations": GPU_TOLERATIONS} if gpus_per_worker else {}),
                            }
                        },
                    }
                ],
            },
        },
    }


#: Packages Ray's runtime env needs to fetch a ``working_dir`` of each object-store scheme
#: (``ray/_private/runtime_env/protocol.py``); https needs only smart_open, which Ray's image
#: has (``ray[default]``).
CODE_URI_PACKAGES = {
    "s3": "smart_open[s3] and boto3",
    "gs": "smart_open[gcs] and google-cloud-storage",
    "azure": "azure-storage-blob, azure-identity and smart_open[azure]",
    "abfss": "adlfs and azure-identity",
}

#: Tolerations of a GPU worker pod: AKS's GPU node pools are created with the taint
#: ``sku=gpu:NoSchedule`` in Microsoft's GPU guide, and NVIDIA's GPU operator taints with
#: ``nvidia.com/gpu``; without a toleration the pod never schedules on either.
GPU_TOLERATIONS = [
    {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]


def _code(
    sweep, file: str, working_dir: str | None, code_uri: str | None, custom_image: bool = False
) -> tuple[str, dict[str, Any]]:
    """The sweep file's path in the job's working directory, and the job's runtime env."""
    from sweeps.engine.sweep_file import SpecError, code_root

    path = Path(file).resolve()
    try:
        root = code_root(sweep, path, ROOT)
    except SpecError as e:
        raise KubeRayError(str(e)) from None
    if root == ROOT:
        if code_uri:
            raise KubeRayError(
                f"--code-uri: {file} lies inside the project, which the image "
                "holds; --code-uri is for a sweep file outside it"
            )
        return path.relative_to(ROOT).as_posix(), {"working_dir": working_dir or PROJECT_DIR}
    if working_dir:
        raise KubeRayError(
            "--working-dir replaces the project; with a sweep file outside the "
            "project, build the image from that project instead"
        )
    if not code_uri:
        raise KubeRayError(
            f"{file} lies outside the project, and the image holds only the project: zip its "
            f"folder (python -m cluster.kuberay pack {file} -o code.zip), upload the zip where "
            "the cluster can fetch it (https, s3, gs, abfss) and pass --code-uri URI"
        )
    if "://" not in code_uri or not code_uri.endswith(".zip"):
        raise KubeRayError(
            f"--code-uri {code_uri!r}: needs the URI of a .zip Ray can fetch "
            "(https://, s3://, gs://, abfss://)"
        )
    scheme = code_uri.split("://", 1)[0].lower()
    if scheme in CODE_URI_PACKAGES and not custom_image:
        raise KubeRayError(
            f"--code-uri {code_uri!r}: Ray fetches {scheme}:// URIs with "
            f"{CODE_URI_PACKAGES[scheme]}, which the project's image (cluster/Dockerfile) "
            "lacks: upload the zip where https reaches it (a Blob SAS URL), or pass --image "
            "with an image that has them"
        )
    return path.relative_to(root).as_posix(), {"working_dir": code_uri}


#: Left out of :func:`pack`'s zip: caches, version control, results and virtual environments.
PACK_SKIP = frozenset({"__pycache__", ".git", "results", ".venv", ".ipynb_checkpoints"})


def pack(file: str, out: str | Path) -> list[str]:
    """Zip the folder of a sweep file outside the project for ``--code-uri``: one top-level
    folder (Ray's layout for a remote ``working_dir``, whose top folder it strips), holding the
    sweep file, the user's env module and ``code_dirs``; caches, ``.git``, ``results/`` and
    virtual environments are left out (:data:`PACK_SKIP`).

    Returns:
        The zipped paths, relative to the folder.

    Raises:
        KubeRayError: the sweep file does not validate, or its code lies outside its folder.
    """
    import zipfile

    from sweeps.engine.sweep_file import SpecError, code_root, load_sweep

    path = Path(file).resolve()
    try:
        root = code_root(load_sweep(path), path, ROOT)
    except SpecError as e:
        raise KubeRayError(str(e)) from None
    if root == ROOT:
        raise KubeRayError(
            f"{file} lies inside the project, which the image holds: nothing to pack"
        )
    out = Path(out).resolve()
    names = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root)
            if p == out or not p.is_file() or PACK_SKIP & set(rel.parts) or p.suffix == ".pyc":
                continue
            z.write(p, f"{root.name}/{rel.as_posix()}")
            names.append(rel.as_posix())
    return names


def project_version() -> str:
    """The project's version: installed metadata, else pyproject.toml's (a source checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rl-scaling")
    except PackageNotFoundError:
        text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
        return re.search(r'^version = "([^"]+)"', text, re.MULTILINE).group(1)


def kubeconfig() -> Path | None:
    """The kubeconfig ``kubectl`` would use (``$KUBECONFIG``'s first file, else
    ``~/.kube/config``), or None when there is none."""
    env = os.environ.get("KUBECONFIG")
    candidates = (
        [Path(p) for p in env.split(os.pathsep) if p] if env else [Path.home() / ".kube" / "config"]
    )
    return next((p for p in candidates if p.is_file()), None)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cluster.kuberay",
        description="Run a sweep as a KubeRay RayJob on Kubernetes.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rayjob", help="print (or --apply) the RayJob manifest of a sweep")
    r.add_argument("file", help="sweep file (outside the project: with --code-uri)")
    r.add_argument("--workers", type=int, required=True, help="worker pods")
    r.add_argument("--cpus-per-worker", type=float, required=True, help="CPUs per worker pod")
    r.add_argument("--memory", default="32Gi", help="memory per worker pod (default 32Gi)")
    r.add_argument("--gpus-per-worker", type=float, default=0, help="GPUs per worker pod")
    r.add_argument(
        "--image",
        default=None,
        help="image with the project at /home/ray/rl-scaling (cluster/Dockerfile)",
    )
    r.add_argument(
        "--results", default=None, help="object-store URI for the results (abfs://, s3://, gs://)"
    )
    r.add_argument(
        "--results-pvc",
        default=None,
        help="PersistentVolumeClaim for the results (else they die with the head pod)",
    )
    r.add_argument(
        "--working-dir",
        default=None,
        help="zip URI of the project for the runtime env (default: the image's copy)",
    )
    r.add_argument(
        "--code-uri",
        default=None,
        help="zip URI of a sweep file's folder outside the project (see pack)",
    )
    r.add_argument("--namespace", default=None)
    r.add_argument("--name", default=None, help="RayJob name (default rl-scaling-<sweep>)")
    r.add_argument("--apply", action="store_true", help="kubectl apply -f - the manifest")
    k = sub.add_parser("pack", help="zip a sweep file's folder outside the project for --code-uri")
    k.add_argument("file", help="sweep file outside the project")
    k.add_argument("-o", "--output", default="code.zip", help="the zip to write (code.zip)")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit code (see the module docstring)."""
    args = build_parser().parse_args(argv)
    from sweeps.engine.logs import quiet_logs

    quiet_logs()  # RLlib's new-API-stack notices while the sweep's configs are checked
    if args.cmd == "pack":
        try:
            names = pack(args.file, args.output)
        except KubeRayError as e:
            print(f"error: cluster.kuberay pack: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"{args.output}: {len(names)} files; upload it and pass its URI as --code-uri")
        return 0
    try:
        manifest = rayjob_manifest(
            args.file,
            workers=args.workers,
            cpus_per_worker=args.cpus_per_worker,
            memory=args.memory,
            gpus_per_worker=args.gpus_per_worker,
            image=args.image,
            results_pvc=args.results_pvc,
            working_dir=args.working_dir,
            results=args.results,
            code_uri=args.code_uri,
            namespace=args.namespace,
            name=args.name,
        )
        if args.apply:
            if args.image is None:
                raise KubeRayError(
                    "--apply needs --image REGISTRY/rl-scaling:TAG: a cluster pulls the image "
                    "from a registry (build and push cluster/Dockerfile, see docs/cluster.md)"
                )
            if shutil.which("kubectl") is None:
                raise KubeRayError(
                    "--apply: kubectl is not on PATH (print the manifest "
                    "without --apply and apply it where kubectl is)"
                )
            if kubeconfig() is None:
                raise KubeRayError(
                    "--apply: no kubeconfig ($KUBECONFIG or ~/.kube/config); "
                    "for AKS: az aks get-credentials -g GROUP -n CLUSTER"
                )
    except KubeRayError as e:
        print(f"error: cluster.kuberay {args.cmd}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    text = yaml.safe_dump(manifest, sort_keys=False)
    if not (args.results_pvc or args.results):
        print(
            "warning: no --results-pvc: the results stay on the head pod and are deleted "
            "with it when the job ends",
            file=sys.stderr,
        )
    if not args.apply:
        sys.stdout.write(text)
        return 0
    proc = subprocess.run(["kubectl", "apply", "-f", "-"], input=text, text=True)
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m cluster.kuberay", main))

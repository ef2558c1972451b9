"""Run a sweep on a long-lived Ray cluster through the Ray Jobs API.

Usage::

    python -m cluster.jobs submit FILE --address http://HEAD:8265 [--no-follow]
        [--remote-results DIR] [-- SWEEPS.RUN ARGS]
    python -m cluster.jobs status JOB --address ...
    python -m cluster.jobs logs JOB --address ... [--follow]
    python -m cluster.jobs stop JOB --address ...
    python -m cluster.jobs download JOB --address ... [--results results]

``submit`` packages this project as the job's ``working_dir`` (Ray's runtime environment: the
upload leaves out what ``.gitignore`` lists, and ``.git``), or, for a sweep file outside the
project, the sweep file's folder (with the user's env module and ``code_dirs``) as the
``working_dir`` and the project's packages as ``py_modules`` (:func:`upload`); runs
``python -m sweeps.run FILE --results DIR --no-report`` as the job's entrypoint on the
cluster's head (``DIR``, default ``~/rl-scaling-results`` on the head, outlives the job), and
streams the job's logs; Ctrl-C detaches (the job keeps running). ``download`` copies the run's
results (Parquet, JSON and the Optuna database, not Tune's folder) through the Jobs API itself:
a small job packs the run directory and prints it into its logs, which this side unpacks into
``results/<sweep>/<run_id>/``; no shared file system or object store is needed.

Uses the standard Ray Job Submission SDK (``ray.job_submission.JobSubmissionClient``; the
``jobs`` extra installs ``ray[default]``, which the cluster's head needs too for its job
server). A token-protected cluster needs
``RAY_AUTH_MODE=token`` and its ``RAY_AUTH_TOKEN`` in this environment, as for
``sweeps.run --address``.

Exit codes (:mod:`sweeps.engine.cli`): 0 done (``submit``: the job succeeded, or Ctrl-C detached);
1 the job failed or was stopped; 2 bad input (a sweep file that does not validate, code outside
the uploaded folder, no such job, unreachable address).
"""

from __future__ import annotations

import argparse
import base64
import io
import re
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from sweeps.engine import rundir
from sweeps.engine.cli import EXIT_BAD_INPUT

ROOT = Path(__file__).resolve().parents[1]
#: Where results go on the cluster's head (the job's own folder is deleted with the job).
DEFAULT_REMOTE_RESULTS = "~/rl-scaling-results"
#: Files of a run directory that ``download`` copies (Tune's state stays on the cluster).
RESULT_FILES = rundir.RUN_FILES
_BEGIN, _END = "-----BEGIN RL-SCALING RESULTS-----", "-----END RL-SCALING RESULTS-----"
_RUN_DIR = re.compile(r"^Sweep \S+: results in (\S+)$", re.MULTILINE)
FINAL = ("SUCCEEDED", "FAILED", "STOPPED")


class JobsError(Exception):
    """Bad input or an unusable cluster; the message is one line."""


def client(address: str):
    """A ``JobSubmissionClient`` for ``address`` (``http://HOST:8265``).

    Raises:
        JobsError: nothing answers there, or it refuses us (auth), in one line.
    """
    try:
        from ray.job_submission import JobSubmissionClient

        return JobSubmissionClient(address)
    except ImportError as e:
        raise JobsError(
            f"the Ray Jobs client is not installed ({e.name}): pip install -e '.[jobs]'"
        ) from None
    except Exception as e:  # noqa: BLE001 - requests/ConnectionError/RuntimeError from the SDK
        msg = " ".join(str(e).split())[:300]
        raise JobsError(f"--address {address}: cannot reach the Ray job server: {msg}") from None


def entrypoint(file: str, remote_results: str, extra: list[str]) -> str:
    """The job's shell command: the sweep with its results in ``remote_results`` on the head."""
    from sweeps.engine.cli import shell_line, sweep_argv

    # `~` is left unquoted so the head's shell expands it
    verbatim = {remote_results} if remote_results.startswith("~") else set()
    argv = sweep_argv(file, "--results", remote_results, "--no-report", *extra)
    return shell_line(argv, verbatim)


#: The project's packages, shipped beside a sweep folder that lies outside the project.
PACKAGES = ("sweeps", "envs", "analysis", "cluster")


def upload(file: str) -> tuple[str, dict[str, Any]]:
    """Where ``file`` runs on the cluster: its path relative to the job's working directory,
    and the job's runtime environment.

    A sweep file inside the project runs from the project (the ``working_dir``). A sweep file
    elsewhere runs from its own folder (the ``working_dir``: the file, the user's env module
    and ``code_dirs``), with the project's packages as ``py_modules``, so a user's workload
    needs no copy into the project. Ray skips what ``.gitignore`` lists in either folder.

    Raises:
        JobsError: no such file, or a sweep file that does not validate (one line).
    """
    from sweeps.engine.sweep_file import SpecError, code_root, load_sweep

    path = Path(file).resolve()
    if not path.is_file():
        raise JobsError(f"{file}: no such sweep file")
    try:
        root = code_root(load_sweep(path), path, ROOT)
    except SpecError as e:
        raise JobsError(str(e)) from None
    return path.relative_to(root).as_posix(), runtime_env(root)


def runtime_env(root: Path = ROOT) -> dict[str, Any]:
    """The job's runtime environment: ``root`` as its ``working_dir`` (Ray skips what
    .gitignore lists), and the project's packages as ``py_modules`` when ``root`` is not the
    project."""
    env: dict[str, Any] = {"working_dir": str(root), "excludes": [".git"]}
    if Path(root).resolve() != ROOT:
        env["py_modules"] = [str(ROOT / p) for p in PACKAGES]
    return env


def wait(jobs, job_id: str, timeout_s: float | None = None, poll_s: float = 2.0) -> str:
    """Poll until the job ends; returns its final status (``SUCCEEDED``, ``FAILED``, ...)."""
    start = time.time()
    while True:
        status = str(jobs.get_job_status(job_id))
        status = status.split(".")[-1]
        if status in FINAL:
            return status
        if timeout_s is not None and time.time() - start > timeout_s:
            raise JobsError(f"job {job_id}: still {status} after {timeout_s:g} s")
        time.sleep(poll_s)


def follow(jobs, job_id: str) -> None:
    """Print the job's logs as they come until it ends (Ray's ``tail_job_logs``)."""
    import asyncio

    async def _tail():
        async for chunk in jobs.tail_job_logs(job_id):
            sys.stdout.write(chunk)
            sys.stdout.flush()

    asyncio.run(_tail())


def remote_run_dir(logs: str) -> str:
    """The run directory ``sweeps.run`` announced in a job's logs.

    Raises:
        JobsError: the logs name none (the sweep did not start).
    """
    found = _RUN_DIR.findall(logs)
    if not found:
        raise JobsError(
            "its logs name no results directory (did the sweep start? see "
            "`python -m cluster.jobs logs JOB`)"
        )
    return found[-1]


def pack(run_dir: str) -> int:
    """Print ``run_dir``'s result files as a base64 tar.gz between two marker lines (run on
    the cluster by ``download``)."""
    src = Path(run_dir).expanduser()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in RESULT_FILES:
            if (src / name).is_file():
                tar.add(src / name, arcname=name)
    print(_BEGIN)
    text = base64.b64encode(buf.getvalue()).decode()
    for i in range(0, len(text), 76):
        print(text[i : i + 76])
    print(_END)
    return 0


def unpack(logs: str, dest: Path) -> list[str]:
    """Extract what :func:`pack` printed in ``logs`` into ``dest``; returns the file names."""
    m = re.search(re.escape(_BEGIN) + r"\s*(.*?)\s*" + re.escape(_END), logs, re.DOTALL)
    if m is None:
        raise JobsError("the packing job printed no results (see its logs)")
    data = base64.b64decode("".join(m.group(1).split()))
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        names = [n for n in tar.getnames() if n in RESULT_FILES]  # nothing else, no paths
        for name in names:
            (dest / name).write_bytes(tar.extractfile(name).read())
    return names


def download(jobs, job_id: str, results: Path) -> Path:
    """Copy job ``job_id``'s run directory to ``results/<sweep>/<run_id>/``; returns it."""
    run_dir = remote_run_dir(jobs.get_job_logs(job_id))
    packer = jobs.submit_job(
        entrypoint=f"python -m cluster.jobs pack {run_dir}", runtime_env=runtime_env()
    )
    status = wait(jobs, packer, timeout_s=600)
    logs = jobs.get_job_logs(packer)
    if status != "SUCCEEDED":
        raise JobsError(
            f"the packing job {packer} ended {status}: " + " ".join(logs.split())[-200:]
        )
    parts = Path(run_dir).parts
    dest = results / parts[-2] / parts[-1]
    if not unpack(logs, dest):
        raise JobsError(f"{run_dir} on the cluster holds no results yet")
    return dest


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cluster.jobs",
        description="Run a sweep on a Ray cluster via the Ray Jobs API.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    def verb(name: str, help_: str) -> argparse.ArgumentParser:
        v = sub.add_parser(name, help=help_)
        v.add_argument(
            "--address", required=name != "pack", help="the cluster's job server, http://HEAD:8265"
        )
        return v

    s = verb("submit", "submit a sweep file and follow its logs (Ctrl-C detaches)")
    s.add_argument("file", help="sweep file (its folder is uploaded when outside the project)")
    s.add_argument(
        "--remote-results",
        default=DEFAULT_REMOTE_RESULTS,
        help=f"results root on the head (default {DEFAULT_REMOTE_RESULTS})",
    )
    s.add_argument("--no-follow", action="store_true", help="print the job id and return")
    for name, help_ in (
        ("status", "print the job's status"),
        ("stop", "stop the job"),
        ("logs", "print the job's logs"),
    ):
        v = verb(name, help_)
        v.add_argument("job")
        if name == "logs":
            v.add_argument("--follow", action="store_true")
    d = verb("download", "copy the job's results to results/<sweep>/<run_id>/")
    d.add_argument("job")
    d.add_argument("--results", default="results", help="local results root (default results)")
    k = sub.add_parser("pack", help=argparse.SUPPRESS)
    k.add_argument("run_dir")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit code (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1 :], argv[: argv.index("--")]
    args = build_parser().parse_args(argv)
    if args.cmd == "pack":
        return pack(args.run_dir)
    try:
        file, env = upload(args.file) if args.cmd == "submit" else ("", {})
        jobs = client(args.address)
        if args.cmd == "submit":
            job_id = jobs.submit_job(
                entrypoint=entrypoint(file, args.remote_results, extra), runtime_env=env
            )
            print(f"Submitted {job_id} to {args.address}: python -m sweeps.run {file}", flush=True)
            if args.no_follow:
                return 0
            try:
                follow(jobs, job_id)
            except KeyboardInterrupt:
                print(
                    f"\nDetached; the job keeps running. Follow it with: python -m "
                    f"cluster.jobs logs {job_id} --address {args.address} --follow"
                )
                return 0
            status = wait(jobs, job_id)
            print(
                f"Job {job_id}: {status}. Results: python -m cluster.jobs download {job_id} "
                f"--address {args.address}"
            )
            return 0 if status == "SUCCEEDED" else 1
        _known(jobs, args.job)
        if args.cmd == "status":
            print(str(jobs.get_job_status(args.job)).split(".")[-1])
        elif args.cmd == "stop":
            jobs.stop_job(args.job)
            print(f"Job {args.job}: {wait(jobs, args.job, timeout_s=120)}")
        elif args.cmd == "logs":
            if args.follow:
                follow(jobs, args.job)
            else:
                sys.stdout.write(jobs.get_job_logs(args.job))
        elif args.cmd == "download":
            print(download(jobs, args.job, Path(args.results)))
        return 0
    except JobsError as e:
        print(f"error: cluster.jobs {args.cmd}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _known(jobs, job_id: str) -> None:
    try:
        jobs.get_job_info(job_id)
    except Exception:  # noqa: BLE001 - the SDK raises RuntimeError for an unknown id
        raise JobsError(f"no job {job_id!r} on this cluster") from None


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m cluster.jobs", main))

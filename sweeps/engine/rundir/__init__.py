"""The run directory's owner: its file names, its files with their schema version (JSON here,
Parquet and the columns in :mod:`sweeps.engine.rundir.schema`), a new run's directory and the
latest one, its lock, the checks before a run is resumed (docs/results.md), and its copy in
object storage (:mod:`sweeps.engine.rundir.mirror`).

A run directory, ``results/<sweep>/<run_id>/``, holds what one ``python -m sweeps.run``
recorded. Every module that reads or writes one names its files through these constants
(``tests/test_sweeps_rundir.py`` fails on a file name spelled anywhere else), so the layout can
change in one place. The Parquet files carry :data:`~sweeps.engine.rundir.schema.SCHEMA_VERSION`
in their metadata (:func:`~sweeps.engine.rundir.schema.write_parquet`), the JSON files under
:data:`JSON_VERSION_KEY` (:func:`write_json`, :func:`read_json`).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sweeps.engine.cli import SpecError

#: One row per finished trial (:data:`sweeps.engine.rundir.schema.TRIAL_COLUMNS`).
TRIALS = "trials.parquet"
#: One row per evaluation (per training iteration without a cadence) of every trial
#: (:data:`sweeps.engine.rundir.schema.PROGRESS_COLUMNS`).
PROGRESS = "progress.parquet"
#: The resolved sweep spec the run was started with (kept on ``--resume``).
SPEC = "spec.json"
#: Versions, machine, Ray cluster, command line and times of the run.
ENVIRONMENT = "environment.json"
#: The Optuna study (SQLite) the search sampled from.
OPTUNA_DB = "optuna.db"
#: The HTML report (:mod:`analysis.report`).
REPORT = "report.html"
#: Tracebacks of failed trials, one block per trial.
ERRORS_LOG = "errors.log"
#: Tune's own state (what ``--resume`` restores); never mirrored or downloaded.
TUNE_DIR = "tune"
#: The lock a running ``sweeps.run`` holds on the directory.
LOCK = ".lock"

#: What object storage mirrors and the launchers download: the results, not Tune's state.
RUN_FILES = (TRIALS, PROGRESS, SPEC, ENVIRONMENT, OPTUNA_DB, REPORT)

#: The key of :data:`sweeps.engine.rundir.schema.SCHEMA_VERSION` in the run's JSON files.
JSON_VERSION_KEY = "schema_version"


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON atomically (a temporary file of this process, then
    ``os.replace``), the schema version first under :data:`JSON_VERSION_KEY`.

    Raises:
        OSError: the file cannot be written (the previous version of ``path`` is intact).
    """
    from sweeps.engine.rundir.schema import SCHEMA_VERSION

    path = Path(path)
    body = {
        JSON_VERSION_KEY: SCHEMA_VERSION,
        **{k: v for k, v in data.items() if k != JSON_VERSION_KEY},
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(body, indent=2, default=str) + "\n")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def read_json(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``, without its schema version (files written before versions
    were recorded are version 1).

    Raises:
        sweeps.engine.rundir.schema.SchemaError: another schema version than this code reads, or not a JSON
            object; one line.
        OSError: the file cannot be read; json.JSONDecodeError (a ValueError): not JSON.
    """
    from sweeps.engine.rundir.schema import SCHEMA_VERSION, SchemaError

    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: expected a JSON object, got {type(data).__name__}")
    version = data.pop(JSON_VERSION_KEY, 1)
    if version != SCHEMA_VERSION:
        raise SchemaError(
            f"{path}: results schema version {version!r}, but this rl-scaling reads version "
            f"{SCHEMA_VERSION} (docs/results.md); analyse it with the rl-scaling that wrote it"
        )
    return data


def started_at(run: Path) -> str:
    """A run's recorded start (environment.json ``started_at``, ISO 8601 UTC), or ``""``."""
    try:
        return str(read_json(run / ENVIRONMENT).get("started_at") or "")
    except (OSError, ValueError):
        return ""


def run_dir_for(root: Path, name: str, resume: bool, source: str) -> Path:
    """``<root>/<name>/<run_id>``: a new run directory of the sweep ``name``, or its latest
    run on --resume.

    A new run id is the UTC start time (``YYYYmmdd-HHMMSS``), suffixed ``-2``, ``-3``, ... when
    taken; the directory is created here (``mkdir`` fails if it exists), so two processes
    starting in the same second never share one. On ``--resume`` the latest run is the one
    with the newest recorded start time (``environment.json``), not the last name: a copy
    named ``backup`` does not win.

    Raises:
        SpecError: ``--resume`` and no earlier run with a Tune state.
    """
    base = root / name
    if resume:
        runs = [p for p in base.glob("*") if (p / TUNE_DIR).is_dir()] if base.is_dir() else []
        if not runs:
            raise SpecError(f"{source}: --resume: no earlier run of sweep {name!r} under {base}")
        return max(runs, key=lambda p: (started_at(p), p.stat().st_mtime))
    run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = base / (run_id if n == 1 else f"{run_id}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise SpecError(f"{source}: results: no free run id under {base}")


def discard_unused_run_dir(run_dir: Path) -> bool:
    """Remove a new run directory that holds nothing but its lock files (a run refused after
    it claimed the directory, e.g. by the placement check on a cluster it connected to), and
    its sweep's folder if that is then empty. Release the lock first.

    Returns:
        True when it was removed; False (and nothing touched) when it holds anything else.
    """
    try:
        names = {p.name for p in run_dir.iterdir()}
    except OSError:
        return False
    if not names <= {LOCK, f"{LOCK}.pid"}:
        return False
    for name in names:
        (run_dir / name).unlink(missing_ok=True)
    run_dir.rmdir()
    try:
        run_dir.parent.rmdir()  # only when empty
    except OSError:
        pass
    return True


def lock_run_dir(run_dir: Path, source: str):
    """Take the run directory's lock (``<run_dir>/.lock``, the ``filelock`` library) for this
    process: one ``sweeps.run`` per results directory, on ``--resume`` too.

    Returns:
        The held ``filelock.FileLock`` (release it, or use it as a context manager).

    Raises:
        SpecError: another process holds it; the message names its pid.
    """
    import filelock

    lock = filelock.FileLock(str(run_dir / LOCK))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        try:
            holder = (run_dir / f"{LOCK}.pid").read_text().strip()
        except OSError:
            holder = "unknown"
        raise SpecError(
            f"{source}: results: {run_dir} is in use by another sweeps.run "
            f"(pid {holder}); wait for it to finish or choose another --results"
        ) from None
    (run_dir / f"{LOCK}.pid").write_text(f"{os.getpid()}\n")
    return lock


def spec_changes(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted names of the fields that differ between two spec.json dicts, with both values."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += spec_changes(a, b, f"{name}.")
        elif a != b:
            out.append(f"{name} ({json.dumps(a, default=str)} -> {json.dumps(b, default=str)})")
    return out


#: Ray Tune's experiment state files in a run's ``tune/`` folder, newest restored.
TUNE_STATE_PATTERNS = ("experiment_state-*.json", "search_gen_state-*.json", "searcher-state-*.pkl")


def check_resume_dir(run_dir: Path, source: str) -> None:
    """Refuse, before Ray starts, to resume a run directory that is damaged or foreign.

    Checks what ``--resume`` reads: Tune's saved state (``tune/tuner.pkl``, what
    ``tune.Tuner.can_restore`` looks for), the recorded ``trials.parquet`` and
    ``progress.parquet`` (readable Parquet files of this results schema version, when present:
    a run killed before its first trial finished has none) and ``environment.json``. Stray ``*.tmp`` files of a killed
    writer are not damage (the recorder removes them).

    Raises:
        SpecError: one line naming the file and what is wrong with it.
    """
    import pyarrow.parquet as pq

    def bad(name: str, why: str) -> SpecError:
        return SpecError(
            f"{source}: --resume: run {run_dir} cannot be resumed: {name}: {why}; "
            "move it aside and start a new run"
        )

    if not (run_dir / TUNE_DIR / "tuner.pkl").is_file():
        raise bad("tune/tuner.pkl", "missing (no saved Ray Tune state)")
    # Tune restores the newest of each (greatest name); an empty one is a file that a kill cut
    # while Tune copied it without sweeps.engine.rundir.tune_files' whole-file writes
    for pattern in ("tuner.pkl", *TUNE_STATE_PATTERNS):
        newest = max((run_dir / TUNE_DIR).glob(pattern), default=None)
        if newest is not None and newest.stat().st_size == 0:
            raise bad(f"{TUNE_DIR}/{newest.name}", "empty (cut by a kill while Ray Tune saved it)")
    from sweeps.engine.rundir.schema import SCHEMA_VERSION, SchemaError, schema_version

    for name in (TRIALS, PROGRESS):
        path = run_dir / name
        if path.exists():
            try:
                pq.read_schema(path)
                version = schema_version(path)
            except SchemaError as e:
                raise bad(name, str(e).split(": ", 1)[-1]) from None
            except Exception as e:  # noqa: BLE001 - pyarrow raises several types for bad files
                raise bad(name, f"not a readable Parquet file ({type(e).__name__})") from None
            if version != SCHEMA_VERSION:
                raise bad(
                    name,
                    f"results schema version {version}, this rl-scaling writes "
                    f"version {SCHEMA_VERSION}",
                )
    try:
        read_json(run_dir / ENVIRONMENT)
    except (OSError, ValueError) as e:
        raise bad(ENVIRONMENT, f"missing or not JSON ({type(e).__name__})") from None


def check_resume_spec(run_dir: Path, spec: dict[str, Any], source: str, allow: bool) -> None:
    """Refuse to resume a run whose sweep file changed since it started.

    Raises:
        SpecError: one line listing the changed fields, unless ``allow``.
    """
    try:
        old = read_json(run_dir / SPEC)
    except (OSError, ValueError) as e:
        raise SpecError(
            f"{source}: --resume: {run_dir / SPEC} is missing or corrupt "
            f"({type(e).__name__}); this is not a run of this tool to resume"
        ) from None
    changes = spec_changes(old, spec)
    if changes and not allow:
        raise SpecError(
            f"{source}: --resume: the sweep changed since run {run_dir.name} "
            f"started: {'; '.join(changes)}; resume with the original file, start a "
            "new run, or pass --allow-changed-spec (spec.json keeps what ran)"
        )


def check_results_root(root: Path, source: str) -> None:
    """Check that results can be written under ``root`` (created if missing) before Ray starts.

    Raises:
        SpecError: one line naming ``root`` and the OS's reason.
    """
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise SpecError(f"{source}: results: cannot write to {root}: {e.strerror or e}") from None

"""The run directory's file names: the one place they are spelled (docs/results.md).

A run directory, ``results/<sweep>/<run_id>/``, holds what one ``python -m sweeps.run``
recorded. Every module that reads or writes one names its files through these constants
(``tests/test_sweeps_rundir.py`` fails on a file name spelled anywhere else), so the layout can
change in one place. The Parquet files carry :data:`sweeps.schema.SCHEMA_VERSION` in their
metadata (:func:`sweeps.schema.write_parquet`), the JSON files under :data:`JSON_VERSION_KEY`
(:func:`write_json`, :func:`read_json`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: One row per finished trial (:data:`sweeps.schema.TRIAL_COLUMNS`).
TRIALS = "trials.parquet"
#: One row per evaluation (per training iteration without a cadence) of every trial
#: (:data:`sweeps.schema.PROGRESS_COLUMNS`).
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

#: The key of :data:`sweeps.schema.SCHEMA_VERSION` in the run's JSON files.
JSON_VERSION_KEY = "schema_version"


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON atomically (a temporary file of this process, then
    ``os.replace``), the schema version first under :data:`JSON_VERSION_KEY`.

    Raises:
        OSError: the file cannot be written (the previous version of ``path`` is intact).
    """
    from sweeps.schema import SCHEMA_VERSION

    path = Path(path)
    body = {JSON_VERSION_KEY: SCHEMA_VERSION,
            **{k: v for k, v in data.items() if k != JSON_VERSION_KEY}}
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
        sweeps.schema.SchemaError: another schema version than this code reads, or not a JSON
            object; one line.
        OSError: the file cannot be read; json.JSONDecodeError (a ValueError): not JSON.
    """
    from sweeps.schema import SCHEMA_VERSION, SchemaError

    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: expected a JSON object, got {type(data).__name__}")
    version = data.pop(JSON_VERSION_KEY, 1)
    if version != SCHEMA_VERSION:
        raise SchemaError(
            f"{path}: results schema version {version!r}, but this rl-scaling reads version "
            f"{SCHEMA_VERSION} (docs/results.md); analyse it with the rl-scaling that wrote it")
    return data

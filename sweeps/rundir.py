"""The run directory's file names: the one place they are spelled (docs/results.md).

A run directory, ``results/<sweep>/<run_id>/``, holds what one ``python -m sweeps.run``
recorded. Every module that reads or writes one names its files through these constants
(``tests/test_sweeps_rundir.py`` fails on a file name spelled anywhere else), so the layout can
change in one place. The Parquet files carry :data:`sweeps.schema.SCHEMA_VERSION` in their
metadata (:func:`sweeps.schema.write_parquet`).
"""

from __future__ import annotations

#: One row per finished trial (:data:`sweeps.schema.TRIAL_COLUMNS`).
TRIALS = "trials.parquet"
#: One row per training iteration of every trial (:data:`sweeps.schema.PROGRESS_COLUMNS`).
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

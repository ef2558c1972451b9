"""Load a results directory (``docs/results.md``) into memory, from files alone.

Example::

    from analysis.load import load_results
    res = load_results("results/cabs_scaling/20260101-120000")
    res.trials.head()          # one row per trial (pandas DataFrame)
    res.progress.head()        # one row per trial per training iteration
    res.spec["target"]         # {"metric": ..., "value": ..., ...}
    res.study                  # optuna.Study, or None without optuna.db

Bad input raises :class:`ResultsError` whose message is one line: what is wrong, where, why.
Missing optional parts (progress, spec, environment, optuna.db) are not errors: they become
empty values plus a line in ``Results.warnings``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.fmt import config_name
from sweeps.engine import rundir
from sweeps.engine.rundir.schema import (
    REQUIRED_PROGRESS_COLUMNS,
    REQUIRED_TRIAL_COLUMNS,
    TRIAL_DEFAULTS,
    VOCAB_COLUMNS,
    SchemaError,
    concurrent_envs,
    read_parquet,
)

__all__ = ["REQUIRED_TRIAL_COLUMNS", "Results", "ResultsError", "load_results", "runs_in"]

# Column names, defaults and the version check: sweeps.engine.rundir.schema (one owner for the schema).
# Progress columns every run since the first has had (filled with NaN if absent); the later
# ones (evaluation, noise scale) stay absent in older runs, so the analysis can tell.
_PROGRESS_COLUMNS = (
    "trial_id",
    "iteration",
    "wall_time_s",
    "env_steps",
    "episodes",
    "episode_return_mean",
    "learner_updates",
    "env_steps_per_s",
)


class ResultsError(ValueError):
    """A results directory cannot be analysed; the message is one line (what, where, why)."""


@dataclass
class Results:
    """Everything in one results directory.

    Attributes:
        path: the directory.
        trials: one row per trial (columns of ``trials.parquet``, missing optional ones filled).
        progress: one row per trial per iteration (may be empty).
        spec: the resolved sweep (``spec.json``), ``{}`` if absent.
        environment: versions / machine (``environment.json``), ``{}`` if absent.
        study: the Optuna study in ``optuna.db`` (``None`` if absent or unreadable).
        warnings: one line per thing that was missing or repaired while loading.
    """

    path: Path
    trials: pd.DataFrame
    progress: pd.DataFrame
    spec: dict[str, Any]
    environment: dict[str, Any]
    study: Any = None
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """Sweep name (``spec["name"]``, else the parent folder's name)."""
        return str(self.spec.get("name") or self.path.parent.name or self.path.name)

    @property
    def seeds(self) -> int | None:
        """Seeds per configuration (``spec["search"]["seeds"]``), None without a spec."""
        seeds = (self.spec.get("search") or {}).get("seeds")
        return int(seeds) if isinstance(seeds, int | float) and seeds >= 1 else None


def _read_json(path: Path, warnings: list[str]) -> dict[str, Any]:
    if not path.is_file():
        warnings.append(f"{path.name} is missing in {path.parent}: its section is left out")
        return {}
    try:
        return rundir.read_json(path)
    except SchemaError as exc:
        raise ResultsError(str(exc)) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc})") from None


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return read_parquet(path)
    except SchemaError as exc:
        raise ResultsError(str(exc)) from None
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise ResultsError(f"{path}: cannot read parquet ({type(exc).__name__}: {exc})") from None


def _fill_trials(
    trials: pd.DataFrame, spec: dict[str, Any], where: Path, warnings: list[str]
) -> pd.DataFrame:
    missing = [c for c in REQUIRED_TRIAL_COLUMNS if c not in trials.columns]
    if missing:
        raise ResultsError(
            f"{where}: trials.parquet lacks column(s) {', '.join(missing)} (see docs/results.md)"
        )
    trials = trials.copy()
    for col, default in TRIAL_DEFAULTS.items():
        if col not in trials.columns:
            trials[col] = default
    trials["trial_id"] = trials["trial_id"].astype(str)
    trials["algorithm"] = trials["algorithm"].astype(str)
    trials["num_env_runners"] = pd.to_numeric(trials["num_env_runners"]).astype(int)
    trials["status"] = trials["status"].astype(str)
    trials["censor_reason"] = trials["censor_reason"].fillna("").astype(str)
    trials.loc[
        (trials["status"] == "censored") & (trials["censor_reason"] == ""), "censor_reason"
    ] = "budget"
    trials["oversubscribed"] = trials["oversubscribed"].fillna(False).astype(bool)
    trials["num_gpus"] = pd.to_numeric(trials["num_gpus"]).fillna(0.0)
    trials["vectorize_mode"] = trials["vectorize_mode"].fillna("sync").astype(str)
    unknown = pd.to_numeric(trials["concurrent_envs"], errors="coerce").isna()
    if unknown.any():  # recorded before the layout was: derived from it
        trials["concurrent_envs"] = pd.to_numeric(trials["concurrent_envs"], errors="coerce")
        trials.loc[unknown, "concurrent_envs"] = [
            concurrent_envs(
                max(int(t.num_env_runners), 0),
                int(t.num_envs_per_env_runner) if pd.notna(t.num_envs_per_env_runner) else 1,
                t.vectorize_mode,
                bool(t.is_reference),
            )
            for t in trials[unknown].itertuples()
        ]
    trials["concurrent_envs"] = trials["concurrent_envs"].astype(int)
    bad = sorted(set(trials["status"]) - {"reached", "censored", "error"})
    if bad:
        raise ResultsError(
            f"{where}: trials.parquet has unknown status value(s) {bad}; "
            "expected reached, censored or error"
        )
    if trials["trial_id"].duplicated().any():
        dup = trials.loc[trials["trial_id"].duplicated(), "trial_id"].iloc[0]
        raise ResultsError(f"{where}: trials.parquet lists trial_id {dup!r} more than once")
    if "config_id" not in trials.columns:
        params = [c for c in trials.columns if c.startswith("param_")]
        keys = ["algorithm", *VOCAB_COLUMNS, *params]
        keys = [k for k in keys if k in trials.columns]
        trials["config_id"] = trials[keys].astype(str).agg("|".join, axis=1)
        warnings.append(
            "trials.parquet has no config_id: configurations grouped by their parameter values"
        )
    trials["config_id"] = trials["config_id"].astype(str)
    if "is_baseline" not in trials.columns:
        base = spec.get("baseline") or {}
        alg = base.get("algorithm")
        n = base.get("num_env_runners")
        if alg is not None and n is not None:
            trials["is_baseline"] = (trials["algorithm"] == alg) & (
                trials["num_env_runners"] == int(n)
            )
            warnings.append(
                "trials.parquet has no is_baseline: baseline taken from "
                f"spec.json ({config_name(alg, n)})"
            )
        else:
            trials["is_baseline"] = False
    trials["is_baseline"] = trials["is_baseline"].fillna(False).astype(bool)
    trials["is_reference"] = trials["is_reference"].fillna(False).astype(bool)
    if trials["num_cpus"].isna().any():
        # docs/results.md: driver + env runners (+ learners); the sweep runner always writes it.
        trials["num_cpus"] = trials["num_cpus"].fillna(1.0 + trials["num_env_runners"])
    return trials


def _fill_progress(progress: pd.DataFrame, where: Path) -> pd.DataFrame:
    missing = [c for c in REQUIRED_PROGRESS_COLUMNS if c not in progress.columns]
    if missing:
        raise ResultsError(
            f"{where}: progress.parquet lacks column(s) {', '.join(missing)} (see docs/results.md)"
        )
    progress = progress.copy()
    for col in _PROGRESS_COLUMNS:
        if col not in progress.columns:
            progress[col] = np.nan
    progress["trial_id"] = progress["trial_id"].astype(str)
    if progress["iteration"].isna().all():
        progress["iteration"] = progress.groupby("trial_id").cumcount() + 1
    return progress.sort_values(["trial_id", "iteration"], kind="stable").reset_index(drop=True)


def _load_study(db: Path, name: str | None, warnings: list[str]) -> Any:
    if not db.is_file():
        warnings.append("optuna.db is missing: no optimisation history or parameter importances")
        return None
    try:
        # Refuse files that are not SQLite before Optuna tries to create tables in them.
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            con.execute("select name from sqlite_master limit 1").fetchall()
    except sqlite3.DatabaseError as exc:
        warnings.append(f"optuna.db is not a readable SQLite file ({exc}): study left out")
        return None
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    storage = f"sqlite:///{db}"
    try:
        names = [s.study_name for s in optuna.get_all_study_summaries(storage=storage)]
    except Exception as exc:  # an old/foreign schema raises several types
        warnings.append(
            f"optuna.db cannot be opened by Optuna ({type(exc).__name__}): study left out"
        )
        return None
    if not names:
        warnings.append("optuna.db holds no study")
        return None
    chosen = name if name in names else None
    if chosen is None:
        if len(names) == 1:
            chosen = names[0]
            if name:
                warnings.append(f"optuna.db has no study {name!r}; using its only study {chosen!r}")
        else:
            warnings.append(f"optuna.db has no study {name!r} (it has {names}): study left out")
            return None
    return optuna.load_study(study_name=chosen, storage=storage)


def _current_names(spec: dict[str, Any]) -> dict[str, Any]:
    """A recorded ``spec.json`` with RLlib's old parameter names (``num_workers``; runs recorded
    before the vocabulary took the current names) renamed to the current ones."""
    from sweeps.engine.algorithms.vocabulary import DEPRECATED_NAMES

    def rename(d: Any) -> Any:
        return {DEPRECATED_NAMES.get(k, k): v for k, v in d.items()} if isinstance(d, dict) else d

    spec = dict(spec)
    for section in ("search_space", "fixed", "baseline"):
        if section in spec:
            spec[section] = rename(spec[section])
    for section in ("per_algorithm", "per_algorithm_fixed"):
        if isinstance(spec.get(section), dict):
            spec[section] = {a: rename(p) for a, p in spec[section].items()}
    return spec


def runs_in(folder: Path) -> list[Path]:
    """The run folders of a sweep's results folder (those holding a ``trials.parquet``), by
    run id (a run id is its UTC start time, so the last is the latest); empty when none."""
    return sorted(p for p in folder.iterdir() if (p / rundir.TRIALS).is_file())


def load_results(path: str | Path) -> Results:
    """Read one results directory.

    Args:
        path: a ``results/<sweep>/<run_id>/`` directory (docs/results.md), or its URI in
            object storage (``s3://bucket/results/<sweep>/<run_id>``, :mod:`sweeps.engine.rundir.mirror`).

    Returns:
        :class:`Results`; optional files that are missing become empty values and a warning.

    Raises:
        ResultsError: the directory or ``trials.parquet`` is missing, a file is unreadable, or
            a required column (``trial_id, algorithm, num_env_runners, seed, status``) is absent.
    """
    from sweeps.engine.rundir import mirror

    if mirror.is_uri(path):  # object storage: read a local copy of the run's files
        try:
            path = mirror.fetch_run(str(path))
        except OSError as e:
            raise ResultsError(f"{path}: {e.strerror or e}") from None
    path = mirror.local_path(path)
    if not path.exists():
        raise ResultsError(f"{path}: no such results directory")
    if not path.is_dir():
        raise ResultsError(f"{path}: not a directory (give a results/<sweep>/<run_id>/ folder)")
    trials_file = path / rundir.TRIALS
    if not trials_file.is_file():
        # a sweep's folder (results/<sweep>/) is the commonest wrong folder: name its runs
        runs = runs_in(path)
        if runs:
            raise ResultsError(
                f"{path}: a sweep's folder with {len(runs)} run(s), not one run: give one, "
                f"e.g. the latest, {runs[-1]} (python -m analysis.history reads them all)"
            )
        raise ResultsError(
            f"{path}: no trials.parquet (is this a results/<sweep>/<run_id>/ "
            "folder? see docs/results.md)"
        )
    warnings: list[str] = []
    spec = _current_names(_read_json(path / rundir.SPEC, warnings))
    environment = _read_json(path / rundir.ENVIRONMENT, warnings)
    trials = _fill_trials(_read_parquet(trials_file), spec, path, warnings)
    progress_file = path / rundir.PROGRESS
    if progress_file.is_file():
        progress = _fill_progress(_read_parquet(progress_file), path)
    else:
        warnings.append(
            "progress.parquet is missing: time-to-target taken from trials.parquet "
            "and no learning curves"
        )
        progress = pd.DataFrame({c: pd.Series(dtype=float) for c in _PROGRESS_COLUMNS})
        progress["trial_id"] = progress["trial_id"].astype(str)
    study = _load_study(path / rundir.OPTUNA_DB, spec.get("name"), warnings)
    return Results(
        path=path,
        trials=trials,
        progress=progress,
        spec=spec,
        environment=environment,
        study=study,
        warnings=warnings,
    )

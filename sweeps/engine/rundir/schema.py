"""The results schema (docs/results.md): one owner for what ``trials.parquet`` and
``progress.parquet`` hold, their version, and the rules every writer and reader share.

- :data:`TRIAL_COLUMNS` / :data:`PROGRESS_COLUMNS`: column name → dtype kind, in the order
  written; :data:`TRIAL_DEFAULTS`: what a reader fills in for a column an older run lacks.
- :data:`SCHEMA_VERSION`: written into every parquet file's key-value metadata by
  :func:`write_parquet` and checked by :func:`read_parquet` (:class:`SchemaError`, one line, for
  another version).
- :func:`first_crossing`: when a learning curve reaches the target (the recorder's
  ``time_to_target_s`` and the analysis' re-computation for another target use it alike).
- :func:`censored_objective`: what a trial that missed the target scores for Optuna.
- :func:`skipped_seeds`: the seeds adaptive capping left unrun (a majority of a
  configuration's seeds capped).

``sweeps.engine.record`` writes through this module, ``analysis.load`` reads through it and
``analysis.synthetic`` builds its rows with the same functions. Light: pandas and pyarrow only.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "as_float",
    "PROGRESS_COLUMNS",
    "REQUIRED_PROGRESS_COLUMNS",
    "REQUIRED_TRIAL_COLUMNS",
    "SCHEMA_VERSION",
    "SchemaError",
    "TRIAL_COLUMNS",
    "TRIAL_DEFAULTS",
    "VERSION_KEY",
    "VOCAB_COLUMNS",
    "censored_objective",
    "concurrent_envs",
    "config_id",
    "conform",
    "first_crossing",
    "read_parquet",
    "schema_version",
    "write_parquet",
]

#: Version of the layout below. Bump it when a column changes meaning or type (not when an
#: optional column is added: readers fill those in from :data:`TRIAL_DEFAULTS`). Files written
#: before the version was recorded (no metadata key) have this layout and read as version 1.
SCHEMA_VERSION = 1

#: Parquet key-value metadata key holding :data:`SCHEMA_VERSION` (as ASCII digits).
VERSION_KEY = b"rl_scaling.schema_version"

#: Trial-config keys recorded as trials.parquet columns of the same name (every other
#: parameter becomes ``param_<name>``).
VOCAB_COLUMNS = (
    "num_env_runners",
    "num_envs_per_env_runner",
    "train_batch_size",
    "rollout_fragment_length",
    "lr",
)

#: trials.parquet: column → dtype kind (``str``, ``int``, ``float``, ``bool``), in the order the
#: recorder writes them; plus ``param_<name>`` columns of any kind. Meanings: docs/results.md.
TRIAL_COLUMNS: dict[str, str] = {
    "trial_id": "str",
    "config_id": "str",
    "is_baseline": "bool",
    "is_reference": "bool",
    "algorithm": "str",
    "num_env_runners": "int",
    "num_envs_per_env_runner": "int",
    "num_learners": "int",
    "train_batch_size": "float",
    "rollout_fragment_length": "float",
    "lr": "float",
    "seed": "int",
    "status": "str",
    "time_to_target_s": "float",
    "steps_to_target": "float",
    "budget_s": "float",
    "budget_env_steps": "float",
    "elapsed_s": "float",
    "total_env_steps": "int",
    "target_metric": "str",
    "target_value": "float",
    "final_return": "float",
    "best_return": "float",
    "env_steps_per_s": "float",
    "learner_updates": "float",
    "eval_time_s": "float",
    "num_cpus": "float",
    "num_gpus": "float",
    "oversubscribed": "bool",
    "node_ip": "str",
    "error": "str",
    "objective": "float",
    "censor_reason": "str",
    "peak_rss_mib": "float",
    "node_count": "int",
    "step_latency_ms": "float",
    "step_cpu_ms": "float",
    "attempts": "int",
    "error_kind": "str",
    "nodes_used": "str",
    "ttt_resolution_s": "float",
    "stage": "str",
    "vectorize_mode": "str",
    "concurrent_envs": "int",
    "env_restarts": "int",
    "env_runner_restarts": "int",
    "start": "str",
    "startup_s": "float",
    "cold_startup_s": "float",
}

#: Columns without which no analysis is possible.
REQUIRED_TRIAL_COLUMNS = ("trial_id", "algorithm", "num_env_runners", "seed", "status")

#: What a reader fills in for an optional trials.parquet column an older run lacks.
TRIAL_DEFAULTS: dict[str, Any] = {
    "num_envs_per_env_runner": 1,
    "num_learners": 0,
    "time_to_target_s": np.nan,
    "steps_to_target": np.nan,
    "ttt_resolution_s": np.nan,
    "budget_s": np.nan,
    "budget_env_steps": np.nan,
    "elapsed_s": np.nan,
    "total_env_steps": np.nan,
    "target_metric": "episode_return_mean",
    "target_value": np.nan,
    "final_return": np.nan,
    "best_return": np.nan,
    "env_steps_per_s": np.nan,
    "learner_updates": np.nan,
    "num_cpus": np.nan,
    "num_gpus": 0.0,
    "oversubscribed": False,
    "node_count": 1,
    "node_ip": "",
    "error": "",
    # runs recorded before stall detection: every error was an exception
    "error_kind": "",
    "nodes_used": "",  # runs recorded before it: where the env runners ran is unknown
    "objective": np.nan,
    "is_reference": False,
    "eval_time_s": np.nan,
    "attempts": 1,
    "censor_reason": "",  # runs recorded before adaptive capping: every censoring was "budget"
    "step_latency_ms": 0.0,
    "step_cpu_ms": 0.0,
    "peak_rss_mib": np.nan,
    "stage": "search",  # runs recorded before stages: every trial was a search trial
    # runs recorded before the sampling layout was a searched dimension: RLlib's default
    "vectorize_mode": "sync",
    "concurrent_envs": np.nan,  # readers derive it from the layout (concurrent_envs())
    # runs recorded before env faults were counted: an env that raised ended its trial
    "env_restarts": 0,
    "env_runner_restarts": 0,
    # runs recorded before warm trials: every trial started its own processes
    "start": "cold",
    "startup_s": np.nan,
    "cold_startup_s": np.nan,
}

#: progress.parquet: column → dtype kind, one row per trial per training iteration.
PROGRESS_COLUMNS: dict[str, str] = {
    "trial_id": "str",
    "iteration": "int",
    "wall_time_s": "float",
    "env_steps": "int",
    "episodes": "int",
    "episode_return_mean": "float",
    "evaluation_return": "float",
    "eval_time_s": "float",
    "learner_updates": "float",
    "env_steps_per_s": "float",
    "target_metric_value": "float",
    "grad_noise_scale": "float",
    "grad_norm_sq": "float",
    "grad_trace_cov": "float",
    "replay_ratio": "float",
    "driver_cpu_s": "float",
    "learner_cpu_s": "float",
    "stage": "str",
    "env_restarts": "int",
    "env_runner_restarts": "int",
    "gradient_staleness": "float",
    "dropped_gradients": "int",
    "bytes_per_update": "float",
    "server_busy_s": "float",
}

#: progress.parquet columns without which no learning curve can be read.
REQUIRED_PROGRESS_COLUMNS = ("trial_id", "wall_time_s")


def as_float(x: Any) -> float:
    """``x`` as a float; NaN when it is not a number (None, a string such as RLlib's
    ``"auto"``). What a numeric column of a run file holds for a value it cannot read."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def concurrent_envs(
    num_env_runners: int,
    num_envs_per_env_runner: int,
    vectorize_mode: str = "sync",
    is_reference: bool = False,
) -> int:
    """The env steps of one sampling layout that can wait at once (docs/design.md, *concurrent
    envs*): every env runner (the driver's own when there are none) steps its
    ``num_envs_per_env_runner`` envs in turn when ``"sync"`` (one env step waits at a time) and
    all at once, each in its own process, when ``"async"``; the single-process reference
    steps one env.

    Example:
        >>> concurrent_envs(16, 8, "sync"), concurrent_envs(2, 16, "async"), concurrent_envs(0, 4, "async")
        (16, 32, 4)
    """
    if is_reference:
        return 1
    runners = max(1, int(num_env_runners))
    return runners * int(num_envs_per_env_runner) if vectorize_mode == "async" else runners


class SchemaError(ValueError):
    """A results file has another schema version (or unreadable metadata); one-line message."""


_DTYPES = {"str": object, "int": "int64", "float": "float64", "bool": "bool"}


def conform(df: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """``df`` with the columns the schema ``columns`` names cast to their dtype kind (an int
    column holding NaN stays float); other columns untouched. Returns a new frame."""
    df = df.copy()
    for col, kind in columns.items():
        if col not in df.columns or str(df[col].dtype) == str(_DTYPES[kind]):
            continue
        if kind == "int" and df[col].isna().any():
            continue
        df[col] = df[col].astype(_DTYPES[kind])
    return df


def write_parquet(
    df: pd.DataFrame, path: str | Path, columns: dict[str, str] | None = None
) -> None:
    """Write ``df`` to ``path`` atomically with :data:`SCHEMA_VERSION` in its metadata, its
    schema ``columns`` (:data:`TRIAL_COLUMNS` or :data:`PROGRESS_COLUMNS`) cast to their
    dtypes (:func:`conform`).

    Atomic: a temporary file of this process (its pid in the name, so two processes never
    share one), then ``os.replace``; on an ``OSError`` the previous version of ``path`` is
    intact and the error propagates.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if columns is not None:
        df = conform(df, columns)
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), VERSION_KEY: str(SCHEMA_VERSION).encode()}
    )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def schema_version(path: str | Path) -> int:
    """The schema version recorded in a parquet file (1 for files written before versions
    were recorded).

    Raises:
        SchemaError: the version in the metadata is not an integer.
        OSError, pyarrow.ArrowInvalid: the file is missing or not parquet.
    """
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(VERSION_KEY)
    if raw is None:
        return 1
    try:
        return int(raw.decode())
    except (UnicodeDecodeError, ValueError):
        raise SchemaError(
            f"{path}: schema version {raw!r} in its metadata is not an integer"
        ) from None


def read_parquet(path: str | Path) -> pd.DataFrame:
    """Read a results parquet file written with this :data:`SCHEMA_VERSION`.

    Raises:
        SchemaError: the file has another schema version; the message is one line and says
            which version this code reads.
        OSError, pyarrow.ArrowInvalid: the file is missing or not parquet.
    """
    version = schema_version(path)
    if version != SCHEMA_VERSION:
        raise SchemaError(
            f"{path}: results schema version {version}, but this rl-scaling reads version "
            f"{SCHEMA_VERSION} (docs/results.md); analyse it with the rl-scaling that wrote it"
        )
    return pd.read_parquet(path)


def config_id(algorithm: str, params: dict[str, Any]) -> str:
    """The ``config_id`` column: a stable short id of one configuration (the same for all its
    seeds), ``<algorithm>-<first 8 hex digits of the SHA-1 of its params as sorted JSON>``,
    e.g. ``DQN-1a2b3c4d``."""
    blob = json.dumps(params, sort_keys=True, default=str)
    return f"{algorithm}-{hashlib.sha1(blob.encode()).hexdigest()[:8]}"


def first_crossing(
    wall_time_s: Any, env_steps: Any, values: Any, target: float, budget_s: float | None = None
) -> tuple[float, float, int]:
    """When a learning curve first reaches the target within the trial's time budget.

    Args:
        wall_time_s: shape (I,), seconds since trial start at the end of each iteration.
        env_steps: shape (I,), env steps sampled by then.
        values: shape (I,), target metric per iteration (NaN before the first episode ends;
            NaN never counts as reaching the target).
        target: threshold; an iteration counts when ``value >= target`` (ties count).
        budget_s: the trial's time budget (seconds), or None/NaN for none: an iteration that
            ended after it never counts (a trial whose iteration overran its budget, e.g.
            behind a hung env step, is censored at the budget, never reached after it).

    Returns:
        ``(time_to_target_s, steps_to_target, index)``; ``(nan, nan, -1)`` if never reached.
    """
    values = np.asarray(values, dtype=float)
    ok = np.nan_to_num(values, nan=-np.inf) >= target
    if budget_s is not None and math.isfinite(float(budget_s)):
        ok &= np.asarray(wall_time_s, dtype=float) <= float(budget_s)
    hit = np.flatnonzero(ok)
    if hit.size == 0:
        return math.nan, math.nan, -1
    i = int(hit[0])
    return (
        float(np.asarray(wall_time_s, dtype=float)[i]),
        float(np.asarray(env_steps, dtype=float)[i]),
        i,
    )


def ttt_resolution(wall_time_s, index: int) -> float:
    """How finely a time-to-target is measured: the seconds between the measurement that
    crossed the target (``index`` from :func:`first_crossing`) and the one before it (the
    trial's start for the first), the interval in which the crossing happened. NaN when
    ``index`` < 0 (never reached).

    Args:
        wall_time_s: shape (I,), seconds since trial start at each measurement.
        index: the crossing's position in ``wall_time_s``.
    """
    if index < 0:
        return math.nan
    t = np.asarray(wall_time_s, dtype=float)
    return float(t[index] - (t[index - 1] if index > 0 else 0.0))


def censored_objective(budget_s: float, best: float, target: float) -> float:
    """Optuna's objective for a trial that did not reach the target (seconds).

    ``budget_s × (1 + shortfall)`` with ``shortfall = clip((target − best) / |target|, 0, 1)``
    (``best`` NaN → shortfall 1; ``target`` 0 → shortfall 1 if ``best < 0`` else 0). Always
    ≥ ``budget_s`` > any reached time-to-target, so a censored trial never looks faster than
    a reached one, and among censored trials the one closer to the target looks better.
    """
    if best is None or not math.isfinite(best):
        shortfall = 1.0
    else:
        shortfall = (target - best) / abs(target) if target != 0 else float(best < target)
        shortfall = min(max(shortfall, 0.0), 1.0)
    return float(budget_s) * (1.0 + shortfall)


#: Exceptions of Ray's own machinery (a lost node or process, a timeout, no room): a trial
#: that ends with one says nothing about its configuration, so its other seeds still run.
SYSTEM_ERRORS = re.compile(
    r"\b(ActorDiedError|ActorUnavailableError|RayActorError|NodeDiedError|WorkerCrashedError|"
    r"OutOfMemoryError|ObjectLostError|OwnerDiedError|RaySystemError|GetTimeoutError|"
    r"TimeoutError|ActorUnschedulableError|TaskUnschedulableError|RpcError)\b"
)


#: The two stages of a run (docs/design.md, *stage*): the search, on its own seeds, and the
#: confirmation of its best configurations on fresh ones.
STAGES = ("search", "confirm")


def search_stage(trials: Any) -> list[dict[str, Any]]:
    """The search stage's rows of ``trials`` (a ``trials.parquet`` frame or row dicts; a row
    without ``stage`` is a search row), as row dicts."""
    rows = trials.to_dict("records") if isinstance(trials, pd.DataFrame) else list(trials)
    return [r for r in rows if r.get("stage", "search") != "confirm"]


def confirm_configs(trials: Any, top_k: int, per: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The ``config_id`` of the search's ``top_k`` fastest sampled configurations, fastest
    first, then, with ``per``, the fastest of each *cell* not among them (each algorithm at
    each value combination of the ``per`` parameters, e.g. ``("num_env_runners",)``; cells in
    the order of algorithm, then values): those a confirmation stage runs again
    (:class:`sweeps.engine.sweep_spec.Confirm`).

    Fastest by the search's censored median TTT: the median over a configuration's search
    trials of their ``objective`` (the TTT of a trial that reached the target, else
    :func:`censored_objective`, above the budget: a censored seed ranks slower than every
    reached one, a closer miss before a wider one). Trials that ended in an error have no
    objective; a configuration without any is never confirmed. The baseline and the reference
    are not candidates (a confirmation runs them anyway). Ties keep the order of first record.

    Args:
        trials: recorded trial rows (``config_id``, ``is_baseline``, ``is_reference``,
            ``objective``, optional ``stage``; with ``per``, ``algorithm`` and those
            parameters, as columns or ``param_<name>``).
        top_k: how many of the overall fastest to return at most.
        per: the parameters that define the cells (empty: ``top_k`` alone).
    """
    values: dict[str, list[float]] = {}
    cell_of: dict[str, tuple] = {}
    for row in search_stage(trials):
        if row.get("is_baseline") or row.get("is_reference"):
            continue
        cid = str(row["config_id"])
        objective = float(row.get("objective") if row.get("objective") is not None else np.nan)
        values.setdefault(cid, [])
        if per:
            cell_of[cid] = (
                str(row.get("algorithm")),
                *(_cell_value(row.get(n, row.get(f"param_{n}"))) for n in per),
            )
        if math.isfinite(objective):
            values[cid].append(objective)
    ranked = sorted((float(np.median(v)), i, cid) for i, (cid, v) in enumerate(values.items()) if v)
    chosen = [cid for _, _, cid in ranked[: int(top_k)]]
    best: dict[tuple, str] = {}
    for _, _, cid in ranked:
        if per:
            best.setdefault(cell_of[cid], cid)
    for cell in sorted(
        best, key=lambda c: tuple((0, x) if isinstance(x, (int, float)) else (1, str(x)) for x in c)
    ):
        if best[cell] not in chosen:
            chosen.append(best[cell])
    return chosen


def _cell_value(x: Any) -> Any:
    """A cell coordinate that sorts and compares: numbers as floats, missing as ``"-"``."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return float(x)
    return str(x)


def failed_seeds(trials: Any, seeds: int) -> dict[str, int]:
    """Seeds of each configuration left unrun because one of its trials raised an error of
    the env's or the configuration's: ``{config_id: count}``.

    A trial that raised (``error_kind == "exception"``) with anything but an error of Ray's
    machinery (:data:`SYSTEM_ERRORS`: a lost node, a timeout) would raise again with the next
    seed, so a sweep runs no more of its configuration's seeds: it fails fast instead of
    spending every seed's budget on the same traceback. Stalled trials do not count (a stall
    may depend on the seed). The baseline and the reference count like any configuration.

    Args:
        trials: recorded trial rows, a ``trials.parquet`` frame or a list of row dicts
            (``config_id``, ``status``, ``error_kind``, ``error``).
        seeds: seeds per configuration (``search.seeds``).

    Returns:
        ``config_id`` -> seeds not run (``seeds`` minus its recorded trials, at least 0).
    """
    rows = search_stage(trials)
    recorded: dict[str, int] = {}
    failed: set[str] = set()
    for row in rows:
        cid = str(row["config_id"])
        recorded[cid] = recorded.get(cid, 0) + 1
        if (
            row.get("status") == "error"
            and row.get("error_kind") == "exception"
            and not SYSTEM_ERRORS.search(str(row.get("error") or ""))
        ):
            failed.add(cid)
    return {cid: max(int(seeds) - recorded[cid], 0) for cid in failed}


def skipped_seeds(trials: Any, seeds: int) -> dict[str, int]:
    """Seeds of each configuration that adaptive capping left unrun: ``{config_id: count}``.

    A sampled configuration (not the baseline, not the reference) with more than half of its
    ``seeds`` capped (``censor_reason == "capped"``) cannot have a median TTT below the
    smallest of its caps whatever its other seeds would give: with ``c > seeds / 2`` values
    above the cap, the median of ``seeds`` values is above it too (for an even ``seeds``, both
    middle values are). So a sweep runs no more of its seeds: adaptive capping bounds a
    configuration's whole evaluation, not one run (Hutter, Hoos, Leyton-Brown and Stuetzle,
    "ParamILS", JAIR 36, 2009, section 5). ``sweeps.engine.search.SeededSearch`` applies this rule
    and ``sweeps.run`` and ``analysis`` count with it, from the recorded rows alone.

    Args:
        trials: recorded trial rows, a ``trials.parquet`` frame or a list of row dicts
            (``config_id``, ``is_baseline``, ``is_reference``, ``censor_reason``).
        seeds: seeds per configuration in the sweep (``search.seeds``).

    Returns:
        ``config_id`` -> seeds not run (``seeds`` minus its recorded trials, at least 0), for
        the configurations the rule stopped; others are absent.
    """
    rows = search_stage(trials)
    recorded: dict[str, int] = {}
    capped: dict[str, int] = {}
    for row in rows:
        if row.get("is_baseline") or row.get("is_reference"):
            continue
        cid = str(row["config_id"])
        recorded[cid] = recorded.get(cid, 0) + 1
        capped[cid] = capped.get(cid, 0) + (row.get("censor_reason") == "capped")
    return {
        cid: max(int(seeds) - recorded[cid], 0) for cid, c in capped.items() if 2 * c > int(seeds)
    }

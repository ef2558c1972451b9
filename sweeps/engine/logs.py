"""Quiet logs: what Ray, Tune, RLlib and Optuna print that a user of a sweep cannot act on."""

from __future__ import annotations

import os

__all__ = ["QUIET_LOGGERS", "divert_worker_death_banners", "quiet_environment", "quiet_logs"]


def quiet_environment() -> None:
    """Environment variables Ray and Tune read when they are imported or start: Tune's classic
    status table instead of per-iteration dumps, deduplicated worker logs, Tune's experiment
    state saved every second (``--resume`` loses at most ~1 s), no warning about that, no
    deprecation warnings from inside the libraries. Values already set are kept. Called by the
    command line before it imports Ray, never on import."""
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "100")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")


class _DropTuneLines:
    """A logging filter dropping Tune's lines the suite says better itself: a failed trial's
    traceback (the recorder prints one line; the traceback goes to the run's errors.log), the
    list of trials that did not complete, and "Resume experiment with: Tuner.restore(...)"
    (the suite prints its own ``--resume`` command)."""

    def __init__(self, verbose: bool = False):
        self.prefixes = ("Experiment has been interrupted",) + (
            () if verbose else ("Trial task failed for trial", "Trials did not complete")
        )

    def filter(self, record) -> bool:
        return not str(record.msg).startswith(self.prefixes)


class _OneLineSyncError:
    """A logging filter turning Tune's "Saving experiment state to storage ... failed" error
    into one line without its traceback. Tune copies its staging folder to the run's folder in
    the background while it writes new state files there; a file renamed between the copy's
    listing and its read fails the copy (FileNotFoundError), most often as Ctrl-C forces a last
    save. Tune's own copy of its experiment state is then one save behind; the sweep's records
    (trials.parquet, progress.parquet), which ``--resume`` reads, are written apart and are
    not affected."""

    PREFIX = "Saving experiment state to storage"

    def filter(self, record) -> bool:
        if str(record.msg).startswith(self.PREFIX) and record.exc_info:
            exc = record.exc_info[1]
            record.msg = (
                f"{record.getMessage()}{type(exc).__name__}: {exc} (Tune's copy of "
                "its experiment state may be one save behind; the sweep's own "
                "records are not affected)"
            )
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


#: The loggers :func:`quiet_logs` sets to ERROR (unless verbose).
QUIET_LOGGERS = ("ray.rllib", "ray.tune.utils.util", "ray.tune.analysis.experiment_analysis")


def quiet_logs(verbose: bool = False) -> None:
    """Hide Ray/RLlib/Optuna warnings a user cannot act on (deprecations inside RLlib, the
    new-API-stack notice); with ``log_to_driver=False`` the trials' own output stays in Ray's
    session logs. Trial errors surface as the recorder's one line per trial and their
    tracebacks in the run's errors.log; Tune's failed background save of its experiment state
    is one line (:class:`_OneLineSyncError`). ``verbose`` (``--verbose``) keeps the warnings
    and Tune's tracebacks; Tune's "Resume experiment with: Tuner.restore" always goes (the suite
    says how to resume)."""
    import logging

    import ray.rllib  # noqa: F401 - it configures its logger on import; override after

    for name in ("ray.tune.execution.tune_controller", "ray.tune.tune"):
        logger = logging.getLogger(name)
        for f in [f for f in logger.filters if isinstance(f, _DropTuneLines)]:
            logger.removeFilter(f)
        logger.addFilter(_DropTuneLines(verbose))
    if verbose:
        return
    state = logging.getLogger("ray.tune.execution.experiment_state")
    if not any(isinstance(f, _OneLineSyncError) for f in state.filters):
        state.addFilter(_OneLineSyncError())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


#: Ray's raylet messages a sweep's console does not show: a worker process that died (an env
#: runner whose simulator crashed it, a killed trial actor). The trial's own line says how many
#: env runners were restarted; the message goes to the run's log file.
WORKER_DEATH = "worker died or was killed"


def divert_worker_death_banners(log_path, verbose: bool = False) -> None:
    """Send Ray's "A worker died or was killed ..." banners (the raylet's error messages, which
    the driver prints whatever ``log_to_driver`` says) to ``log_path`` instead of the console,
    each with its time; other raylet messages are printed as Ray prints them. The trial's
    console line counts what the banner reported (``env_runner_restarts``). ``verbose``
    (``--verbose``): Ray's banners stay on the console. Idempotent; the last call's path wins.
    """
    if verbose:
        return
    import time
    from pathlib import Path

    import ray._private.worker as ray_worker

    original = getattr(
        ray_worker.print_to_stdstream, "_sweeps_original", ray_worker.print_to_stdstream
    )
    path = Path(log_path)

    def print_to_stdstream(data, ignore_prefix: bool):
        lines = data.get("lines") or []
        if data.get("pid") == "raylet" and any(WORKER_DEATH in str(line) for line in lines):
            try:
                with open(path, "a") as f:
                    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    for line in lines:
                        f.write(f"{stamp} ray: {line}\n")
                return
            except OSError:
                pass  # the console, rather than nowhere
        original(data, ignore_prefix)

    print_to_stdstream._sweeps_original = original
    ray_worker.print_to_stdstream = print_to_stdstream

"""Quiet logs: what Ray, Tune, RLlib and Optuna print that a user of a sweep cannot act on."""

from __future__ import annotations

import os

__all__ = ["QUIET_LOGGERS", "quiet_environment", "quiet_logs"]


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
        self.prefixes = ("Experiment has been interrupted",) + (() if verbose else (
            "Trial task failed for trial", "Trials did not complete"))

    def filter(self, record) -> bool:
        return not str(record.msg).startswith(self.prefixes)


#: The loggers :func:`quiet_logs` sets to ERROR (unless verbose).
QUIET_LOGGERS = ("ray.rllib", "ray.tune.utils.util", "ray.tune.analysis.experiment_analysis")


def quiet_logs(verbose: bool = False) -> None:
    """Hide Ray/RLlib/Optuna warnings a user cannot act on (deprecations inside RLlib, the
    new-API-stack notice); with ``log_to_driver=False`` the trials' own output stays in Ray's
    session logs. Trial errors surface as the recorder's one line per trial and their
    tracebacks in the run's errors.log. ``verbose`` (``--verbose``) keeps the warnings and
    Tune's tracebacks; Tune's "Resume experiment with: Tuner.restore" always goes (the suite
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
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)

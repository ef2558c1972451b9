"""Log trial metrics to the Azure ML job's run through MLflow, when running in Azure ML.

``azure_ml_callbacks()`` returns ``[AzureMLMetricsCallback()]`` inside an Azure ML job and
``[]`` anywhere else (MLflow is not even imported then). Azure ML sets ``AZUREML_RUN_ID`` and
points ``MLFLOW_TRACKING_URI`` at the workspace (the ``azureml://`` scheme comes from the
azureml-mlflow plugin); ``MLFLOW_RUN_ID`` names the job's own run.

Each Tune trial becomes a child run of the job's run (named after the trial, with its scalar
config as parameters), and every result the trial reports is logged there with the training
iteration as the step: episode return mean, env steps, wall-clock seconds, throughput, and the
other numbers the trainable reports. This is what the seeds' callback did with
``episode_reward_mean``, in MLflow's vocabulary. Logging is best effort: a failure is reported
once on stderr and never stops the sweep.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from ray.tune import Callback

from sweeps.engine.record import LiveOnRestore

#: Tune's own bookkeeping keys: not metrics.
_NOT_METRICS = {
    "timestamp",
    "pid",
    "date",
    "hostname",
    "node_ip",
    "trial_id",
    "experiment_id",
    "experiment_tag",
    "config",
    "done",
    "training_iteration",
    "iterations_since_restore",
    "time_since_restore",
    "timesteps_since_restore",
    "checkpoint_dir_name",
    "should_checkpoint",
}

#: MLflow limits: parameter values are strings of at most 6000 characters (Azure ML: 500).
_MAX_PARAM_CHARS = 500
_MAX_PARAMS = 100


def in_azure_ml_job(env: Mapping[str, str] | None = None) -> bool:
    """True inside an Azure ML job: ``AZUREML_RUN_ID`` and ``MLFLOW_TRACKING_URI`` are set."""
    env = os.environ if env is None else env
    return bool(env.get("AZUREML_RUN_ID")) and bool(env.get("MLFLOW_TRACKING_URI"))


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}/"))
        else:
            out[name] = value
    return out


def result_metrics(result: Mapping[str, Any]) -> dict[str, float]:
    """Numeric metrics of one Tune result: finite numbers (bools as 0/1), nested keys joined
    by ``/``, Tune's bookkeeping keys left out."""
    metrics = {}
    for key, value in _flatten({k: v for k, v in result.items() if k not in _NOT_METRICS}).items():
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, int | float) and math.isfinite(value):
            metrics[key] = float(value)
    return metrics


def mlflow_params(config: Mapping[str, Any]) -> dict[str, str]:
    """Scalar entries of a trial's config as MLflow parameters (strings, truncated)."""
    params = {}
    for key, value in sorted(_flatten(config).items()):
        if isinstance(value, str | int | float | bool) or value is None:
            params[key] = str(value)[:_MAX_PARAM_CHARS]
        if len(params) >= _MAX_PARAMS:
            break
    return params


class AzureMLMetricsCallback(LiveOnRestore, Callback):
    """Tune callback: one MLflow child run per trial under the Azure ML job's run.

    Args:
        tracking_uri: MLflow tracking URI (default ``MLFLOW_TRACKING_URI``).
        parent_run_id: the job's run (default ``MLFLOW_RUN_ID``, else ``AZUREML_RUN_ID``).
    """

    live_role = "callback.azure_ml"  # a resumed sweep logs with this process's

    def __init__(self, tracking_uri: str | None = None, parent_run_id: str | None = None):
        self._make_live()
        self.tracking_uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        self.parent_run_id = (
            parent_run_id or os.environ.get("MLFLOW_RUN_ID") or os.environ.get("AZUREML_RUN_ID")
        )
        self._client = None
        self._experiment_id: str | None = None
        self._runs: dict[str, str] = {}  # trial_id -> MLflow run id
        self._broken = False

    # -- best effort ---------------------------------------------------------------------------
    def _safely(self, what: str, fn, *args) -> Any:
        if self._broken:
            return None
        try:
            return fn(*args)
        except Exception as exc:  # never let logging stop the sweep
            self._broken = True
            print(
                f"warning: Azure ML metric logging off after failing to {what}: "
                f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
                file=sys.stderr,
            )
            return None

    def _connect(self) -> None:
        from mlflow.tracking import MlflowClient

        self._client = MlflowClient(tracking_uri=self.tracking_uri)
        self._experiment_id = self._client.get_run(self.parent_run_id).info.experiment_id

    def _run_for(self, trial) -> str:
        run_id = self._runs.get(trial.trial_id)
        if run_id is None:
            if self._client is None:
                self._connect()
            run = self._client.create_run(
                self._experiment_id,
                run_name=str(trial),
                tags={"mlflow.parentRunId": self.parent_run_id, "trial_id": trial.trial_id},
            )
            run_id = self._runs[trial.trial_id] = run.info.run_id
            params = mlflow_params(trial.config or {})
            if params:
                from mlflow.entities import Param

                self._client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()])
        return run_id

    def _log_result(self, trial, result: Mapping[str, Any]) -> None:
        from mlflow.entities import Metric

        run_id = self._run_for(trial)
        step = int(result.get("training_iteration", 0))
        timestamp = int(float(result.get("timestamp") or time.time()) * 1000)
        metrics = [
            Metric(key, value, timestamp, step) for key, value in result_metrics(result).items()
        ]
        if metrics:
            self._client.log_batch(run_id, metrics=metrics)

    def _finish(self, trial, status: str) -> None:
        run_id = self._runs.pop(trial.trial_id, None)
        if run_id is not None:
            self._client.set_terminated(run_id, status=status)

    # -- Tune hooks ----------------------------------------------------------------------------
    def on_trial_start(self, iteration, trials, trial, **info):
        self._safely("start a run", self._run_for, trial)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._safely("log metrics", self._log_result, trial, result)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._safely("end a run", self._finish, trial, "FINISHED")

    def on_trial_error(self, iteration, trials, trial, **info):
        self._safely("end a run", self._finish, trial, "FAILED")


def azure_ml_callbacks() -> list:
    """``[AzureMLMetricsCallback()]`` inside an Azure ML job, ``[]`` elsewhere."""
    if not in_azure_ml_job():
        return []
    return [AzureMLMetricsCallback()]

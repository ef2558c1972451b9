"""Trial metrics reach an MLflow tracking store as child runs of the job's run (here a local
MLflow file store stands in for the Azure ML workspace; the callback cannot tell them apart),
and outside Azure ML nothing is logged and MLflow is not imported."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.azure_logging import (
    AzureMLMetricsCallback,
    in_azure_ml_job,
    mlflow_params,
    result_metrics,
)
from sweeps.engine.cli import SpecError
from sweeps.engine.tuning import CALLBACKS_VAR, platform_callbacks

ROOT = Path(__file__).resolve().parent.parent


def test_outside_azure_ml_there_is_no_callback_and_no_mlflow_import():
    env = {
        k: v for k, v in os.environ.items() if k not in ("AZUREML_RUN_ID", "MLFLOW_TRACKING_URI")
    }
    code = (
        "import sys\nfrom cluster.azure_logging import azure_ml_callbacks\n"
        "print(azure_ml_callbacks(), 'mlflow' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.strip() == "[] False", proc.stderr[-2000:]
    assert not in_azure_ml_job({"AZUREML_RUN_ID": "x"})
    assert in_azure_ml_job({"AZUREML_RUN_ID": "x", "MLFLOW_TRACKING_URI": "azureml://w"})


def test_platform_callbacks_are_named_by_the_jobs_environment(monkeypatch):
    """sweeps.run loads the callbacks CALLBACKS_VAR names (an Azure ML job names MLflow's);
    none without it; a name that cannot be loaded is one line of bad input."""
    monkeypatch.delenv("AZUREML_RUN_ID", raising=False)
    assert platform_callbacks({}) == []
    assert platform_callbacks({CALLBACKS_VAR: "cluster.azure_logging:azure_ml_callbacks"}) == []
    for bad, why in (
        ("cluster.azure_logging", "not module:function"),
        ("cluster.nope:f", "ModuleNotFoundError"),
        ("cluster.azure_logging:nope", "AttributeError"),
    ):
        with pytest.raises(SpecError, match=why) as e:
            platform_callbacks({CALLBACKS_VAR: bad})
        assert CALLBACKS_VAR in str(e.value) and "\n" not in str(e.value)


def test_result_metrics_keeps_finite_numbers_only():
    result = {
        "episode_return_mean": 21.5,
        "env_steps": 4000,
        "reached": True,
        "best_return": math.nan,
        "node_ip": "10.0.0.4",
        "timestamp": 1.0,
        "env_runners": {"episode_return_mean": 21.5, "module": "x"},
        "config": {"lr": 0.1},
        "training_iteration": 3,
    }
    assert result_metrics(result) == {
        "episode_return_mean": 21.5,
        "env_steps": 4000.0,
        "reached": 1.0,
        "env_runners/episode_return_mean": 21.5,
    }
    assert mlflow_params(
        {"algorithm": "PPO", "lr": 1e-3, "model": {"fcnet": [64, 64]}, "seed": 0}
    ) == {"algorithm": "PPO", "lr": "0.001", "seed": "0"}


@pytest.mark.ray
@pytest.mark.parallel
def test_tune_trials_become_child_runs_with_their_metrics(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient
    from ray import tune

    from cluster.local import ray_session

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("rl-scaling-test")
    parent = client.create_run(experiment).info.run_id  # the Azure ML job's run
    monkeypatch.setenv("AZUREML_RUN_ID", parent)
    monkeypatch.setenv("MLFLOW_RUN_ID", parent)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    # the job's environment names the callbacks (cluster.azure_specs); sweeps.run loads them
    callbacks = platform_callbacks({CALLBACKS_VAR: "cluster.azure_logging:azure_ml_callbacks"})
    assert len(callbacks) == 1 and isinstance(callbacks[0], AzureMLMetricsCallback)

    def trainable(config):
        for i in range(3):
            tune.report(
                {
                    "episode_return_mean": config["scale"] * (i + 1),
                    "env_steps": 100 * (i + 1),
                    "wall_time_s": 0.1 * (i + 1),
                    "reached": i == 2,
                }
            )

    with ray_session(num_cpus=2):
        tune.Tuner(
            trainable,
            param_space={"scale": tune.grid_search([1.0, 2.0])},
            run_config=tune.RunConfig(
                storage_path=str(tmp_path / "tune"), callbacks=callbacks, verbose=0
            ),
        ).fit()

    children = client.search_runs([experiment], f"tags.mlflow.parentRunId = '{parent}'")
    assert len(children) == 2
    by_scale = {float(run.data.params["scale"]): run for run in children}
    assert set(by_scale) == {1.0, 2.0}
    for scale, run in by_scale.items():
        assert run.info.status == "FINISHED"
        history = client.get_metric_history(run.info.run_id, "episode_return_mean")
        assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [
            (1, scale),
            (2, 2 * scale),
            (3, 3 * scale),
        ]
        assert run.data.metrics["env_steps"] == 300
        assert run.data.metrics["reached"] == 1.0

"""RLlib's other algorithms by their RLlib names (SAC), validated by RLlib's own config, and
the continuous-action reference (SB3-SAC), end to end on Pendulum."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_online_rllib_algorithm_can_be_named_and_offline_ones_are_refused():
    from ray.rllib.algorithms.registry import ALGORITHMS as RLLIB

    from sweeps.engine.algorithms import ALGORITHMS, REFUSED

    assert set(RLLIB) <= set(ALGORITHMS) | set(REFUSED) | {"DQN"}  # RLlib's DQN: RLLIB-DQN
    assert {"SAC", "DreamerV3"} <= set(ALGORITHMS) and {"BC", "CQL", "IQL", "MARWIL"} <= set(
        REFUSED
    )


def test_a_generic_algorithm_takes_rllibs_keys_and_names_the_closest_for_a_typo():
    from sweeps.engine.algorithms import UnknownParameterError, build_config, known_params

    config = build_config(
        {
            "algorithm": "SAC",
            "num_env_runners": 2,
            "actor_lr": 1e-3,
            "tau": 0.01,
            "train_batch_size": 128,
        },
        "Pendulum-v1",
    )
    assert (config.num_env_runners, config.actor_lr, config.tau) == (2, 1e-3, 0.01)
    assert config.train_batch_size_per_learner == 128
    assert {"actor_lr", "critic_lr", "twin_q", "n_step"} <= known_params("SAC")
    with pytest.raises(UnknownParameterError, match="did you mean 'actor_lr'"):
        build_config({"algorithm": "SAC", "actor_lrr": 1e-3}, "Pendulum-v1")
    with pytest.raises(ValueError, match="'CQL' is an offline algorithm"):
        build_config({"algorithm": "CQL"}, "Pendulum-v1")


def test_sweep_files_name_generic_algorithms_and_references_with_one_line_errors(tmp_path):
    from sweeps.engine.sweep_file import SpecError, load_sweep

    def sweep(body: str) -> Path:
        path = tmp_path / "s.py"
        path.write_text(
            "from sweeps import Budget, Sweep, Target\n"
            f"SWEEP = Sweep(name='s', target=Target(value=-400.0), "
            f"budget=Budget(time_s=5), baseline=None, {body})\n"
        )
        return path

    load_sweep(sweep("env='Pendulum-v1', algorithms=['SAC'], reference={'algorithm': 'SB3-SAC'}"))
    for body, fragment in (
        ("env='Pendulum-v1', algorithms=['CQL']", "algorithms[0]: CQL is an offline algorithm"),
        (
            "env='Pendulum-v1', algorithms=['SAC'], fixed={'twinq': True}",
            "fixed.twinq: unknown parameter for algorithm SAC (did you mean 'twin_q'?",
        ),
        (
            "env='CartPole-v1', algorithms=['PPO'], reference={'algorithm': 'SB3-SAC'}",
            "reference: SB3-SAC needs a continuous (Box) action space",
        ),
    ):
        with pytest.raises(SpecError) as e:
            load_sweep(sweep(body))
        assert fragment in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.ray
@pytest.mark.parallel
def test_sac_and_the_sb3_sac_reference_run_end_to_end_on_pendulum(tmp_path):
    """Short budgets: the path (continuous actions through the evaluation protocol, the
    reference, the report) is what is checked, not reaching the target."""
    import pandas as pd

    path = tmp_path / "pendulum.py"
    path.write_text(
        (ROOT / "sweeps" / "pendulum_sac.py")
        .read_text()
        .replace("time_s=90", "time_s=6")
        .replace("choice([0, 1])", "choice([0])")
    )
    proc = subprocess.run(
        [sys.executable, "-m", "sweeps.run", str(path), "--results", str(tmp_path / "results")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (tmp_path / "results" / "pendulum_sac").iterdir()
    trials = pd.read_parquet(run_dir / "trials.parquet")
    table = trials[["algorithm", "status", "best_return", "error"]].to_string()
    assert sorted(trials.algorithm) == ["SAC", "SB3-SAC"], table
    assert set(trials.status) <= {"reached", "censored"}, table
    # a greedy evaluation of continuous actions in Pendulum's bounds: -16.3 * 200 <= return <= 0
    assert trials.best_return.between(-3300, 0).all(), table
    progress = pd.read_parquet(run_dir / "progress.parquet")
    assert progress.evaluation_return.notna().all() and progress.env_steps.max() > 0
    assert (run_dir / "report.html").is_file()


@pytest.mark.parametrize("algorithm", ["SB3-PPO", "SB3-SAC"])
def test_the_references_act_in_a_continuous_action_space(algorithm):
    """SB3-PPO and SB3-SAC on Pendulum (Box actions), no Ray: two short iterations, each with
    a greedy evaluation of continuous actions inside Pendulum's bounds."""
    from sweeps.engine.reference import run_reference

    reports = []

    def report(r):
        reports.append(r)
        return len(reports) >= 2

    run_reference(
        {
            "algorithm": algorithm,
            "seed": 0,
            "min_time_s_per_iteration": 0.2,
            "total_timesteps": 5_000,
            **({"n_steps": 64, "batch_size": 64} if algorithm == "SB3-PPO" else {}),
        },
        env_id="Pendulum-v1",
        env_config={},
        evaluation={"episodes": 2, "seed": 0},
        budget_env_steps=None,
        report=report,
    )
    assert len(reports) == 2 and reports[-1]["env_steps"] > 0
    assert all(-3300 <= r["evaluation_return"] <= 0 for r in reports), reports

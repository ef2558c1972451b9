"""The study model's warnings (analysis.study)."""

from __future__ import annotations


def test_env_faults_are_flagged_when_their_rates_differ():
    """Trials that recovered from env faults are counted in a warning, and configurations
    whose faults per 1,000 env steps differ more than twofold are named: their TTTs were
    measured under different fault loads."""
    import pandas as pd

    from analysis.study import fault_warnings

    rows = pd.DataFrame(
        {
            "config_id": ["a", "a", "b", "b"],
            "algorithm": ["PPO"] * 4,
            "num_env_runners": [1, 1, 8, 8],
            "total_env_steps": [10_000] * 4,
            "env_restarts": [2, 2, 10, 12],
            "env_runner_restarts": [0, 0, 1, 0],
        }
    )
    lines = fault_warnings(rows)
    assert len(lines) == 2
    assert lines[0].startswith("4 trial(s) recovered from env faults (27 restarts in all")
    assert "PPO N=1: 0.20; PPO N=8: 1.15" in lines[1]
    same = rows.assign(env_restarts=[2, 2, 3, 2], env_runner_restarts=0)
    assert len(fault_warnings(same)) == 1  # 0.20 and 0.25 per 1,000: alike
    assert fault_warnings(rows.assign(env_restarts=0, env_runner_restarts=0)) == []
    assert fault_warnings(rows.drop(columns=["env_restarts", "env_runner_restarts"])) == []

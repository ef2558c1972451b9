"""The evaluation protocol and the single-process reference, without Ray."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sweeps.engine.evaluation import GreedyEvaluator, trial_evaluator

CABS = "ContosoCabs-v0"


def _fixed_policy(obs: np.ndarray) -> np.ndarray:
    """A deterministic, state-dependent policy: (B, 36) one-hot observations -> (B,) rides."""
    w = np.random.default_rng(0).normal(size=(obs.shape[1], 25))
    return np.argmax(obs @ w, axis=1)


def test_fixed_seeds_make_every_evaluation_of_a_policy_identical() -> None:
    a = GreedyEvaluator(CABS, {}, episodes=5, seed=10_000)
    b = GreedyEvaluator(CABS, {}, episodes=5, seed=10_000)
    other = GreedyEvaluator(CABS, {}, episodes=5, seed=20_000)
    first = a.evaluate(_fixed_policy)
    assert a.evaluate(_fixed_policy) == first == b.evaluate(_fixed_policy)
    assert other.evaluate(_fixed_policy) != first  # other start states, other return
    assert a.evaluations == 2 and 0 < a.total_time_s < 5


def test_trials_in_one_process_share_an_evaluator_that_measures_like_a_new_one() -> None:
    """A reused trial process keeps its evaluator (no 20 envs rebuilt between trials); the
    next trial's measurements are what a new evaluator would give, its counters from 0."""
    first = trial_evaluator(CABS, {"num_cities": 5}, episodes=4, seed=7)
    first.evaluate(_fixed_policy)
    first.evaluate(_fixed_policy)
    again = trial_evaluator(CABS, {"num_cities": 5}, episodes=4, seed=7)
    assert again is first and again.evaluations == 0 and again.total_time_s == 0.0
    fresh = GreedyEvaluator(CABS, {"num_cities": 5}, episodes=4, seed=7)
    assert again.evaluate(_fixed_policy) == fresh.evaluate(_fixed_policy)
    other = trial_evaluator(CABS, {"num_cities": 5}, episodes=4, seed=8)  # another protocol
    assert other is not first and other.seed == 8 and len(other.envs) == 4


def test_every_episode_runs_to_its_end() -> None:
    """The mean is over whole episodes: a constant 'no ride' policy earns nothing but runs
    every episode to the end of its month."""
    ev = GreedyEvaluator(CABS, {}, episodes=3, seed=1)
    steps = []

    def no_ride(obs):
        steps.append(len(obs))
        loc = np.argmax(obs[:, :5], axis=1)
        return loc * 6  # action p*m + q with p == q == loc: stay put

    ret = ev.evaluate(no_ride)
    assert math.isfinite(ret) and len(steps) > 10 and steps[-1] >= 1


def test_sb3_reference_reports_iterations_and_stops_when_told(tmp_path, monkeypatch) -> None:
    import tempfile

    from sweeps.engine.reference import run_reference

    # SB3 logs to a fresh tempdir/SB3-<date> folder per learn() unless given a logger
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)

    reports = []

    def report(r):
        reports.append(r)
        return len(reports) >= 2  # stop after the second iteration

    run_reference(
        {"algorithm": "SB3-DQN", "seed": 0, "min_time_s_per_iteration": 0.3},
        env_id=CABS,
        env_config={},
        evaluation={"episodes": 4, "seed": 10_000},
        budget_env_steps=None,
        report=report,
    )
    assert len(reports) == 2
    first, second = reports
    assert 0.3 <= first["wall_time_s"] < second["wall_time_s"]
    assert 0 < first["env_steps"] < second["env_steps"]
    assert second["eval_time_s"] > first["eval_time_s"] > 0
    assert math.isfinite(second["evaluation_return"])
    assert list(tmp_path.glob("SB3-*")) == []  # no log folder left in the machine's temp folder


def test_an_evaluation_falls_due_on_its_own_cadence() -> None:
    from sweeps.engine.evaluation import Cadence

    assert not Cadence().active and Cadence().due(0.0, 0)  # none: every iteration
    by_time = Cadence(every_s=0.5)
    by_time.ended(1.0, 100)
    assert not by_time.due(1.49, 10_000) and by_time.due(1.5, 100)
    by_steps = Cadence(every_env_steps=200)
    by_steps.ended(1.0, 100)
    assert not by_steps.due(99.0, 299) and by_steps.due(1.0, 300)
    either = Cadence(every_s=0.5, every_env_steps=200)
    either.ended(0.0, 0)
    assert either.due(0.1, 200) and either.due(0.5, 1) and not either.due(0.4, 199)


def test_the_reference_evaluates_on_the_cadence_from_its_initial_policy(
    tmp_path, monkeypatch
) -> None:
    """With a cadence, the reference evaluates its initial policy (0 env steps), then every
    ``every_env_steps`` env steps or ``every_s`` seconds, not once per 5 s iteration."""
    import tempfile

    from sweeps.engine.reference import run_reference

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    for cadence in ({"every_env_steps": 150}, {"every_s": 0.05}):
        reports = []

        def report(r, reports=reports):
            reports.append(r)
            return len(reports) >= 4

        run_reference(
            {"algorithm": "SB3-DQN", "seed": 0, "min_time_s_per_iteration": 5.0},
            env_id=CABS,
            env_config={},
            evaluation={"episodes": 4, "seed": 10_000, **cadence},
            budget_env_steps=None,
            report=report,
        )
        steps = [r["env_steps"] for r in reports]
        assert len(reports) == 4 and steps[0] == 0 and reports[0]["learner_updates"] == 0
        if "every_env_steps" in cadence:
            assert steps == [0, 150, 300, 450]
        else:  # 4 evaluations 0.05 s apart, where iterations would have given one in 5 s
            assert 0 < steps[1] < steps[2] < steps[3]
            assert reports[-1]["wall_time_s"] < 5.0, reports
        assert reports[-1]["eval_time_s"] > reports[0]["eval_time_s"] > 0


def test_a_reference_s_horizon_is_the_budget_or_its_default_and_ends_it_only_when_set() -> None:
    from sweeps.engine.reference import REFERENCE_DEFAULTS, schedule_horizon

    default = REFERENCE_DEFAULTS["SB3-DQN"]["total_timesteps"]
    dqn = {"algorithm": "SB3-DQN"}
    horizon, run_steps, ends = schedule_horizon(dqn, None)  # a time budget only
    assert horizon == default and run_steps > 10**15 and not ends
    assert schedule_horizon(dqn, 5_000) == (5_000, 5_000, False)  # the env-step budget
    assert schedule_horizon({**dqn, "total_timesteps": 3_000}, None) == (3_000, 3_000, True)
    assert schedule_horizon({**dqn, "total_timesteps": 3_000}, 2_000) == (3_000, 2_000, False)
    assert schedule_horizon({**dqn, "total_timesteps": 3_000}, 9_000) == (3_000, 3_000, True)


def test_a_reference_with_a_time_budget_trains_past_its_default_horizon(
    tmp_path, monkeypatch
) -> None:
    """No hidden step cap: with no env-step budget and no ``total_timesteps`` set, SB3-DQN
    trains past its schedules' horizon on CartPole-v1 (rl-zoo's preset: 50,000 env steps;
    exploration at its final value there),
    until its caller (the time budget, the target) stops it; a ``total_timesteps`` the sweep
    sets ends training there, and the report says the horizon ended it."""
    import tempfile

    from sweeps.engine.reference import run_reference
    from sweeps.engine.search import defaults_for

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    horizon = defaults_for("SB3-DQN", "CartPole-v1")["total_timesteps"]
    assert horizon == 50_000
    # no gradient step (learning_starts beyond the run): only the env steps and the schedule
    fast = {
        "algorithm": "SB3-DQN",
        "seed": 0,
        "min_time_s_per_iteration": 0.5,
        "learning_starts": 10**6,
    }
    reports = []

    def report(r):
        reports.append(r)
        return r["env_steps"] > horizon + 2_000

    run_reference(
        fast,
        env_id="CartPole-v1",
        env_config={},
        evaluation={"episodes": 1, "seed": 10_000},
        budget_env_steps=None,
        report=report,
    )
    assert reports[-1]["env_steps"] > horizon + 2_000, reports[-1]
    assert not any(r["done"] for r in reports) and {r["stop_reason"] for r in reports} == {""}

    reports.clear()
    run_reference(
        {**fast, "total_timesteps": 1_500},
        env_id="CartPole-v1",
        env_config={},
        evaluation={"episodes": 1, "seed": 10_000},
        budget_env_steps=None,
        report=lambda r: reports.append(r) or False,
    )
    assert reports[-1]["env_steps"] == 1_500 and reports[-1]["done"], reports[-1]
    assert reports[-1]["stop_reason"] == "horizon"


def test_a_censored_trial_keeps_the_reason_its_last_result_gives() -> None:
    from sweeps.engine.record import trial_row

    progress = [
        {
            "wall_time_s": 2.0,
            "env_steps": 1_500,
            "target_metric_value": 20.0,
            "learner_updates": 0.0,
            "eval_time_s": 0.1,
        }
    ]
    target = {"metric": "evaluation", "value": 150.0}
    config = {"algorithm": "SB3-DQN", "is_reference": True}
    ended = trial_row(
        "t", config, progress, {"censor_reason": "horizon"}, target, {"time_s": 60}, None
    )
    assert ended["status"] == "censored" and ended["censor_reason"] == "horizon"
    assert (
        trial_row("t", config, progress, {}, target, {"time_s": 60}, None)["censor_reason"]
        == "budget"
    )


def test_reference_params_are_checked() -> None:
    from sweeps.engine.reference import check_reference

    check_reference({"algorithm": "SB3-DQN", "learning_rate": 5e-4})
    with pytest.raises(ValueError, match="unknown reference 'SB3-A2C'"):
        check_reference({"algorithm": "SB3-A2C"})
    with pytest.raises(ValueError, match="^n_epochs: unknown parameter for SB3-DQN"):
        check_reference({"algorithm": "SB3-DQN", "n_epochs": 3})
    with pytest.raises(ValueError, match="^batch_size: must be a positive number"):
        check_reference({"algorithm": "SB3-PPO", "batch_size": 0})

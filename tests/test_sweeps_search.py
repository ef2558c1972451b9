"""Sweep semantics: baseline first, each config × each seed, seed-averaged objective to Optuna."""

from __future__ import annotations

import math

import optuna
import pytest
from ray.tune.search import Searcher

from sweeps.search import (
    SeededSearch,
    censored_objective,
    grid_points,
    make_optuna_search,
    trial_params,
)
from sweeps.spec import Budget, Search, Sweep, Target, choice, loguniform


def make_sweep(**kw) -> Sweep:
    base = dict(
        name="s", env="CartPole-v1", algorithms=["DQN", "IMPALA"],
        search_space={"num_env_runners": choice([1, 2]), "lr": loguniform(1e-4, 1e-3)},
        per_algorithm={"IMPALA": {"rollout_fragment_length": choice([20, 50])}},
        fixed={"gamma": 0.98}, per_algorithm_fixed={"DQN": {"train_batch_size": 64}},
        target=Target(value=100.0), budget=Budget(time_s=10),
        search=Search(sampler="tpe", num_samples=3, seeds=2),
    )
    base.update(kw)
    return Sweep(**base)


def test_censored_objective():
    # shortfall = (100 - 60) / 100 = 0.4 -> 60 s * 1.4
    assert censored_objective(60, 60.0, 100.0) == pytest.approx(84.0)
    assert censored_objective(60, 150.0, 100.0) == pytest.approx(60.0)  # clipped at 0
    assert censored_objective(60, -500.0, 100.0) == pytest.approx(120.0)  # clipped at 1
    assert censored_objective(60, math.nan, 100.0) == pytest.approx(120.0)  # no episode yet
    assert censored_objective(60, -150.0, -100.0) == pytest.approx(90.0)  # negative targets


def test_trial_params_strip_algorithm_prefix():
    cfg = {"algorithm": "IMPALA", "num_env_runners": 2, "IMPALA.rollout_fragment_length": 50,
           "__fixed__": '{"gamma": 0.98}'}
    assert trial_params(cfg) == {"algorithm": "IMPALA", "gamma": 0.98, "num_env_runners": 2,
                                 "rollout_fragment_length": 50}


def test_grid_points_cover_every_combination():
    sweep = make_sweep(search_space={"num_env_runners": choice([1, 2])})
    points = grid_points(sweep)
    assert len(points) == 2 + 2 * 2  # DQN: 2 workers; IMPALA: 2 workers x 2 fragments
    assert {"algorithm": "IMPALA", "num_env_runners": 2, "IMPALA.rollout_fragment_length": 20} in points
    with pytest.raises(ValueError, match="choice"):
        grid_points(make_sweep())  # lr is loguniform


def test_seeded_search_baseline_first_then_every_seed(tmp_path):
    sweep = make_sweep()
    inner, n = make_optuna_search(sweep, f"sqlite:///{tmp_path / 'optuna.db'}")
    search = SeededSearch(inner, seeds=2, baseline={"algorithm": "DQN", "num_env_runners": 1},
                          num_configs=n)
    search.set_search_properties("objective", "min", {})
    assert search.total_trials == (3 + 1) * 2
    configs = [search.suggest(f"t{i}") for i in range(search.total_trials)]
    assert search.suggest("extra") == Searcher.FINISHED
    assert [c["is_baseline"] for c in configs[:2]] == [True, True]
    assert [c["seed"] for c in configs] == [0, 1] * 4
    for a, b in zip(configs[::2], configs[1::2], strict=True):
        assert a["config_id"] == b["config_id"]
        assert {k: v for k, v in a.items() if k != "seed"} == {k: v for k, v in b.items() if k != "seed"}
    sampled = configs[2:]
    for c in sampled:
        assert c["algorithm"] in ("DQN", "IMPALA") and c["gamma"] == 0.98
        assert ("rollout_fragment_length" in c) == (c["algorithm"] == "IMPALA")
        assert (c.get("train_batch_size") == 64) == (c["algorithm"] == "DQN")
    # Optuna hears one seed-averaged value per config, only once both seeds finished.
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    search.on_trial_complete("t2", {"objective": 10.0})
    assert not [t for t in study.trials if t.state.is_finished()]
    search.on_trial_complete("t3", {"objective": 30.0})
    done = [t for t in study.trials if t.state.is_finished()]
    assert len(done) == 1 and done[0].value == pytest.approx(20.0)
    # baseline results never reach Optuna
    search.on_trial_complete("t0", {"objective": 5.0})
    search.on_trial_complete("t1", {"objective": 5.0})
    assert len([t for t in study.trials if t.state.is_finished()]) == 1
    # a config whose seeds all errored is a failed Optuna trial
    search.on_trial_complete("t4", None, error=True)
    search.on_trial_complete("t5", None, error=True)
    states = sorted(t.state.name for t in study.trials if t.state.is_finished())
    assert states == ["COMPLETE", "FAIL"]


def test_first_seed_shifts_every_configurations_seeds(tmp_path):
    """``Search.first_seed``: a confirmation run on seeds the defaults were not tuned on; the
    reference, the baseline and every sampled configuration run the same shifted seeds."""
    sweep = make_sweep(search=Search(sampler="tpe", num_samples=2, seeds=3, first_seed=10))
    inner, n = make_optuna_search(sweep, f"sqlite:///{tmp_path / 'optuna.db'}")
    search = SeededSearch(inner, seeds=3, baseline={"algorithm": "DQN", "num_env_runners": 1},
                          reference={"algorithm": "SB3-DQN"}, num_configs=n,
                          first_seed=sweep.search.first_seed)
    search.set_search_properties("objective", "min", {})
    configs = [search.suggest(f"t{i}") for i in range(search.total_trials)]
    assert search.suggest("extra") == Searcher.FINISHED
    assert [c["seed"] for c in configs] == [10, 11, 12] * 4
    assert [c["is_reference"] for c in configs[:3]] == [True] * 3
    with pytest.raises(ValueError, match="first_seed"):
        Search(seeds=2, first_seed=-1)

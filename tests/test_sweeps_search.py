"""Sweep semantics: baseline first, each config × each seed, seed-averaged objective to Optuna."""

from __future__ import annotations

import math

import optuna
import pytest
from ray.tune.search import Searcher

from sweeps import Budget, Search, Sweep, Target, choice, loguniform
from sweeps.engine.search import (
    DefineByRun,
    SeededSearch,
    censored_objective,
    grid_points,
    grid_shortfall,
    make_optuna_search,
    trial_params,
)


def make_sweep(**kw) -> Sweep:
    base = dict(
        name="s",
        env="CartPole-v1",
        algorithms=["DQN", "IMPALA"],
        search_space={"num_env_runners": choice([1, 2]), "lr": loguniform(1e-4, 1e-3)},
        per_algorithm={"IMPALA": {"rollout_fragment_length": choice([20, 50])}},
        fixed={"gamma": 0.98},
        per_algorithm_fixed={"DQN": {"train_batch_size": 64}},
        target=Target(value=100.0),
        budget=Budget(time_s=10),
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
    cfg = {
        "algorithm": "IMPALA",
        "num_env_runners": 2,
        "IMPALA.rollout_fragment_length": 50,
        "__fixed__": '{"gamma": 0.98}',
    }
    assert trial_params(cfg) == {
        "algorithm": "IMPALA",
        "gamma": 0.98,
        "num_env_runners": 2,
        "rollout_fragment_length": 50,
    }


def test_grid_points_cover_every_combination():
    sweep = make_sweep(search_space={"num_env_runners": choice([1, 2])})
    points = grid_points(sweep)
    assert len(points) == 2 + 2 * 2  # DQN: 2 workers; IMPALA: 2 workers x 2 fragments
    assert {
        "algorithm": "IMPALA",
        "num_env_runners": 2,
        "IMPALA.rollout_fragment_length": 20,
    } in points
    with pytest.raises(ValueError, match="choice"):
        grid_points(make_sweep())  # lr is loguniform


def test_an_algorithms_own_grid_parameter_replaces_the_shared_one():
    """A per-algorithm choice of a shared parameter is that algorithm's whole range for it:
    each configuration once, not once per shared value."""
    sweep = make_sweep(
        search_space={"num_env_runners": choice([1, 2, 4])},
        per_algorithm={
            "DQN": {"num_env_runners": choice([1])},
            "IMPALA": {"num_env_runners": choice([2, 4]), "rollout_fragment_length": choice([20])},
        },
    )
    resolved = [trial_params(p) for p in grid_points(sweep)]
    assert resolved == [
        {"algorithm": "DQN", "num_env_runners": 1},
        {"algorithm": "IMPALA", "num_env_runners": 2, "rollout_fragment_length": 20},
        {"algorithm": "IMPALA", "num_env_runners": 4, "rollout_fragment_length": 20},
    ]
    # the define-by-run space asks Optuna for the algorithm's own parameter only (a fixed
    # trial raises on a parameter it was not given)
    trial = optuna.trial.FixedTrial(
        {"algorithm": "IMPALA", "IMPALA.num_env_runners": 4, "IMPALA.rollout_fragment_length": 20}
    )
    DefineByRun(sweep)(trial)
    assert set(trial.params) == {
        "algorithm",
        "IMPALA.num_env_runners",
        "IMPALA.rollout_fragment_length",
    }


def test_a_grid_cut_short_by_num_samples_says_what_will_not_run():
    sweep = make_sweep(
        search_space={"num_env_runners": choice([1, 2])},
        search=Search(sampler="grid", num_samples=3, seeds=1),
    )
    # DQN: 2 points less the default baseline (1 env runner), IMPALA: 2 x 2; the first 3
    # leave 2 of IMPALA's
    assert grid_shortfall(sweep) == (
        "note: the grid has 5 configurations and "
        "search.num_samples=3 runs the first 3; not run: IMPALA (2)"
    )
    assert (
        grid_shortfall(
            sweep.model_copy(update={"search": Search(sampler="grid", num_samples=5, seeds=1)})
        )
        is None
    )
    assert grid_shortfall(make_sweep()) is None  # not a grid


def test_seeded_search_baseline_first_then_every_seed(tmp_path):
    sweep = make_sweep()
    inner, n = make_optuna_search(sweep, f"sqlite:///{tmp_path / 'optuna.db'}")
    search = SeededSearch(
        inner,
        seeds=2,
        baseline={"algorithm": "DQN", "num_env_runners": 1},
        num_configs=n,
        env=sweep.env,  # its presets fill the recorded columns
    )
    search.set_search_properties("objective", "min", {})
    assert search.total_trials == (3 + 1) * 2
    configs = [search.suggest(f"t{i}") for i in range(search.total_trials)]
    assert search.suggest("extra") == Searcher.FINISHED
    assert [c["is_baseline"] for c in configs[:2]] == [True, True]
    assert [c["seed"] for c in configs] == [0, 1] * 4
    for a, b in zip(configs[::2], configs[1::2], strict=True):
        assert a["config_id"] == b["config_id"]
        assert {k: v for k, v in a.items() if k != "seed"} == {
            k: v for k, v in b.items() if k != "seed"
        }
    sampled = configs[2:]
    for c in sampled:
        assert c["algorithm"] in ("DQN", "IMPALA") and c["gamma"] == 0.98
        # IMPALA's own space; DQN gets its default on CartPole-v1, rl-zoo's preset's round of
        # train_freq = 256 env steps, and every config records the key
        assert c["rollout_fragment_length"] in ([20, 50] if c["algorithm"] == "IMPALA" else [256])
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
    search = SeededSearch(
        inner,
        seeds=3,
        baseline={"algorithm": "DQN", "num_env_runners": 1},
        reference={"algorithm": "SB3-DQN"},
        num_configs=n,
        first_seed=sweep.search.first_seed,
    )
    search.set_search_properties("objective", "min", {})
    configs = [search.suggest(f"t{i}") for i in range(search.total_trials)]
    assert search.suggest("extra") == Searcher.FINISHED
    assert [c["seed"] for c in configs] == [10, 11, 12] * 4
    assert [c["is_reference"] for c in configs[:3]] == [True] * 3
    with pytest.raises(ValueError, match="first_seed"):
        Search(seeds=2, first_seed=-1)


def test_skipped_seeds_follow_the_median():
    """A configuration is settled once more than half of its seeds are capped: the median of
    all its seeds is then above the cap, whatever the rest give; the baseline and the reference
    are never judged so."""
    from sweeps.engine.rundir.schema import skipped_seeds

    def rows(cid, reasons, **kw):
        return [{"config_id": cid, "censor_reason": r, **kw} for r in reasons]

    trials = (
        rows("a", ["capped", "capped"])
        + rows("b", ["capped", ""])
        + rows("c", ["capped", "capped", "capped"])
        + rows("d", ["capped", "budget"])
        + rows("base", ["capped", "capped"], is_baseline=True)
    )
    assert skipped_seeds(trials, 3) == {"a": 1, "c": 0}
    assert skipped_seeds(trials, 4) == {"c": 1}  # 2 of 4 capped: the median may still be low
    assert skipped_seeds(trials, 1) == {"a": 0, "b": 0, "c": 0, "d": 0}


def test_seeded_search_skips_the_seeds_capping_settled(tmp_path):
    """Two of three seeds capped: the third is not run, Optuna hears the mean of the two, the
    next configuration starts; the baseline's seeds all run whatever happens to them."""
    from sweeps.engine.record import ResultsRecorder

    sweep = make_sweep(search=Search(sampler="tpe", num_samples=2, seeds=3))
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    inner, n = make_optuna_search(sweep, storage)
    rec = ResultsRecorder(
        tmp_path,
        target={"metric": "training", "value": 1.0},
        budget={"time_s": 10.0, "env_steps": None},
        command_start=0.0,
    )
    search = SeededSearch(
        inner,
        seeds=3,
        baseline={"algorithm": "DQN", "num_env_runners": 1},
        num_configs=n,
        recorder=rec,
    )
    search.set_search_properties("objective", "min", {})

    def finish(tid, config, reason, objective):
        rec.trials.append(
            {
                "config_id": config["config_id"],
                "is_baseline": config["is_baseline"],
                "is_reference": False,
                "censor_reason": reason,
                "objective": objective,
            }
        )
        search.on_trial_complete(tid, {"objective": objective})

    for i in range(3):  # the baseline is never skipped, capped or not
        finish(f"b{i}", search.suggest(f"b{i}"), "capped", 30.0)
    first = search.suggest("c0")
    finish("c0", first, "capped", 20.0)
    assert search.suggest("c1")["config_id"] == first["config_id"]  # 1 of 3: not settled
    finish("c1", first, "capped", 24.0)
    nxt = search.suggest("c2")
    assert nxt["config_id"] != first["config_id"] and nxt["seed"] == 0
    assert search.skipped == {first["config_id"]: 1}
    study = optuna.load_study(study_name="s", storage=storage)
    done = [t for t in study.trials if t.state.is_finished()]
    assert len(done) == 1 and done[0].value == pytest.approx(22.0)
    for i, tid in enumerate(("c2", "c3", "c4")):
        config = nxt if i == 0 else search.suggest(tid)
        finish(tid, config, "", 5.0)  # reached: every seed runs
    assert search.suggest("extra") == Searcher.FINISHED
    assert [t.value for t in study.trials] == [pytest.approx(22.0), pytest.approx(5.0)]
    # no recorder (capping off): every seed runs
    plain = SeededSearch(
        make_optuna_search(sweep, f"sqlite:///{tmp_path / 'o2.db'}")[0],
        seeds=3,
        baseline=None,
        num_configs=1,
    )
    plain.set_search_properties("objective", "min", {})
    assert len([plain.suggest(f"p{i}") for i in range(3)]) == 3 and plain.skipped == {}


def test_every_declared_algorithm_is_measured_before_the_sampler_takes_over():
    """Three algorithms, three samples, for several sampler seeds: whatever the sampler would
    draw, the first configurations are one per algorithm, in the declared order, at the
    algorithms' defaults where the space holds them (a random draw covers all three in that
    order with probability 1/27 per seed)."""
    import optuna

    from sweeps import Budget, Search, Sweep, Target, choice, loguniform
    from sweeps.engine.search import sweep_search

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for sampler_seed in range(4):
        sweep = Sweep(
            name="cover",
            env="CartPole-v1",
            algorithms=["PPO", "IMPALA", "APPO"],
            search_space={"num_env_runners": choice([1, 2]), "lr": loguniform(1e-5, 1e-1)},
            target=Target(value=100.0),
            budget=Budget(time_s=5),
            search=Search(sampler="random", num_samples=3, seeds=1, sampler_seed=sampler_seed),
            baseline={"algorithm": "PPO", "num_env_runners": 1},
        )
        search, _ = sweep_search(sweep, "sqlite:///:memory:")
        configs = []
        for i in range(search.total_trials):
            configs.append(search.suggest(f"t{i}"))
            search.on_trial_complete(f"t{i}", {"objective": 1.0})
        sampled = [c for c in configs if not c["is_baseline"]]
        assert [c["algorithm"] for c in sampled] == ["PPO", "IMPALA", "APPO"], sampled
        # PPO's default num_env_runners (1) is the baseline's: its queued point takes 2; its
        # lr is PPO's default on CartPole-v1 (rl-zoo's preset)
        assert sampled[0]["num_env_runners"] == 2 and sampled[0]["lr"] == 1e-3
        assert sampled[1]["num_env_runners"] == 1


def test_too_few_samples_for_the_declared_algorithms_is_one_line(tmp_path):
    from sweeps.engine.sweep_file import SpecError, load_sweep

    path = tmp_path / "few.py"
    path.write_text(
        "from sweeps import Budget, Search, Sweep, Target\n"
        "SWEEP = Sweep(name='few', env='CartPole-v1', algorithms=['PPO', 'IMPALA', "
        "'APPO'], target=Target(value=100.0), budget=Budget(time_s=5), "
        "search=Search(num_samples=2))\n"
    )
    with pytest.raises(
        SpecError,
        match=r"search.num_samples: 2 cannot give each of the 3 "
        r"algorithms one configuration; give at least 3$",
    ):
        load_sweep(path)


def test_the_confirmation_runs_the_searchs_fastest_on_fresh_seeds(tmp_path):
    """search.confirm: once every search trial ended (not before), the reference, the baseline
    and the top_k configurations by censored median TTT run on the confirmation seeds, never
    the search's; Optuna hears nothing of them; the total counts both stages."""
    from sweeps import Confirm
    from sweeps.engine.record import ResultsRecorder
    from sweeps.engine.search import expected_trials, sweep_search

    sweep = make_sweep(
        search=Search(
            sampler="tpe",
            num_samples=3,
            seeds=2,
            confirm=Confirm(top_k=2, seeds=3, per_env_runners=False),
        ),
        baseline={"algorithm": "DQN", "num_env_runners": 1},
        reference={"algorithm": "SB3-DQN"},
    )
    assert sweep.search.search_seeds == [0, 1] and sweep.search.confirm_seeds == [1000, 1001, 1002]
    rec = ResultsRecorder(
        tmp_path,
        target={"metric": "training", "value": 1.0},
        budget={"time_s": 10.0, "env_steps": None},
        command_start=0.0,
    )
    search, n = sweep_search(sweep, f"sqlite:///{tmp_path / 'optuna.db'}", recorder=rec)
    search.set_search_properties("objective", "min", {})
    assert search.total_trials == expected_trials(sweep) == (3 + 2) * 2 + (2 + 2) * 3
    # the search: reference, baseline, 3 configurations x 2 seeds; config i takes i + 5 s
    # (config 1's second seed is censored: its median is the censored objective, above 10 s)
    search_configs, running = [], []
    for i in range(10):
        config = search.suggest(f"s{i}")
        assert config["stage"] == "search" and config["seed"] in (0, 1)
        search_configs.append(config)
    sampled = list(
        dict.fromkeys(
            c["config_id"] for c in search_configs if not (c["is_baseline"] or c["is_reference"])
        )
    )
    objective = {sampled[0]: [7.0, 7.0], sampled[1]: [5.0, 19.0], sampled[2]: [6.0, 6.0]}
    for i, config in enumerate(search_configs):
        values = objective.get(config["config_id"], [3.0, 3.0])
        value = values[config["seed"]]
        if i < 9:
            rec.trials.append({**config, "objective": value, "censor_reason": ""})
            search.on_trial_complete(f"s{i}", {"objective": value})
        else:
            running.append((f"s{i}", config, value))
    assert search.suggest("wait") is None  # the last search trial still runs: no choice yet
    tid, config, value = running[0]
    rec.trials.append({**config, "objective": value, "censor_reason": ""})
    search.on_trial_complete(tid, {"objective": value})
    confirm = [search.suggest(f"c{i}") for i in range(12)]
    assert search.suggest("done") == Searcher.FINISHED
    assert {c["stage"] for c in confirm} == {"confirm"}
    assert {c["seed"] for c in confirm} == {1000, 1001, 1002}
    chosen = [c["config_id"] for c in confirm if not (c["is_baseline"] or c["is_reference"])]
    # censored median: config 2 (6 s) before config 0 (7 s); config 1 (median 12 s) is out
    assert search.confirmed == [sampled[2], sampled[0]]
    assert set(chosen) == set(search.confirmed)  # run grouped by shape, not by rank
    assert sum(c["is_reference"] for c in confirm) == sum(c["is_baseline"] for c in confirm) == 3
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    told = len([t for t in study.trials if t.state.is_finished()])
    for i in range(len(confirm)):
        search.on_trial_complete(f"c{i}", {"objective": 1.0})
    assert len([t for t in study.trials if t.state.is_finished()]) == told == 3


def test_the_confirmation_holds_each_algorithms_fastest_at_each_env_runner_count(tmp_path):
    """A search whose space varies num_env_runners confirms, besides its top_k, the fastest
    configuration of every algorithm at every env runner count (Confirm.per_env_runners is on
    by default there); the search measures every such cell first, so each has a candidate;
    the confirmation runs them grouped by algorithm and env runner count, the most first."""
    from sweeps import Confirm
    from sweeps.engine.record import ResultsRecorder
    from sweeps.engine.rundir.schema import confirm_configs
    from sweeps.engine.search import confirm_axes, confirm_cells, expected_trials, sweep_search

    sweep = make_sweep(
        search=Search(sampler="tpe", num_samples=6, seeds=1, confirm=Confirm(top_k=1, seeds=2)),
        baseline={"algorithm": "DQN", "num_env_runners": 1},
        reference={"algorithm": "SB3-DQN"},
        search_space={"num_env_runners": choice([1, 2, 4]), "lr": loguniform(1e-4, 1e-3)},
    )
    assert confirm_axes(sweep) == ("num_env_runners",)
    assert [(c["algorithm"], c["num_env_runners"]) for c in confirm_cells(sweep)] == [
        (a, n) for a in ("DQN", "IMPALA") for n in (1, 2, 4)
    ]
    assert (
        confirm_axes(
            make_sweep(search=Search(num_samples=3, confirm=Confirm(per_env_runners=False)))
        )
        == ()
    )
    assert confirm_axes(make_sweep(search=Search(num_samples=3))) == ()  # no confirmation
    rec = ResultsRecorder(
        tmp_path,
        target={"metric": "training", "value": 1.0},
        budget={"time_s": 10.0, "env_steps": None},
        command_start=0.0,
    )
    search, n = sweep_search(sweep, f"sqlite:///{tmp_path / 'optuna.db'}", recorder=rec)
    search.set_search_properties("objective", "min", {})
    # 6 sampled + baseline + reference, then at most 1 + 6 cells (6 sampled) + 2, x 2 seeds
    assert search.total_trials == expected_trials(sweep) == 8 + (6 + 2) * 2
    configs = [search.suggest(f"s{i}") for i in range(8)]
    sampled = [c for c in configs if not (c["is_baseline"] or c["is_reference"])]
    # every (algorithm, env runner count) measured once, the baseline's cell by the baseline
    cells = {(c["algorithm"], c["num_env_runners"]) for c in sampled}
    assert cells | {("DQN", 1)} == {(a, k) for a in ("DQN", "IMPALA") for k in (1, 2, 4)}
    for i, c in enumerate(configs):  # faster with more env runners, IMPALA faster than DQN
        value = 10.0 / max(c["num_env_runners"], 1) + (c["algorithm"] == "DQN")
        rec.trials.append({**c, "objective": value, "censor_reason": ""})
        search.on_trial_complete(f"s{i}", {"objective": value})
    confirm = []
    while (c := search.suggest(f"c{len(confirm)}")) not in (None, Searcher.FINISHED):
        confirm.append(c)
    chosen = [c for c in confirm if not (c["is_baseline"] or c["is_reference"])]
    # the baseline stands for its own cell; every other cell's fastest is confirmed
    assert {(c["algorithm"], c["num_env_runners"]) for c in chosen} == cells
    assert {c["seed"] for c in confirm} == {1000, 1001}
    assert search.confirmed == confirm_configs(rec.trials, 1, ("num_env_runners",))
    assert search.confirmed[0] == next(
        c["config_id"] for c in sampled if (c["algorithm"], c["num_env_runners"]) == ("IMPALA", 4)
    )
    # grouped by shape, each count's seeds together: the algorithm of the search's last trial
    # first (its env runners are parked), each algorithm from its most env runners down
    last = configs[-1]["algorithm"]
    order = [(c["algorithm"], c["num_env_runners"]) for c in confirm if not c["is_reference"]]
    assert order == sorted(order, key=lambda x: (x[0] != last, x[0], -x[1]))
    assert len(set(order)) == len(set(cells | {("DQN", 1)}))


def test_confirm_per_cell_rules_are_checked_before_ray(tmp_path):
    from sweeps.engine.sweep_file import SpecError, load_sweep

    head = (
        "from sweeps import Budget, Confirm, Search, Sweep, Target, choice\n"
        "SWEEP = Sweep(name='c', env='CartPole-v1', algorithms=['PPO', 'IMPALA'], "
        "search_space={'num_env_runners': choice([1, 2, 4])}, target=Target(value=100.0), "
        "budget=Budget(time_s=5), "
    )
    few = tmp_path / "few.py"
    few.write_text(head + "search=Search(num_samples=4, confirm=Confirm()))\n")
    with pytest.raises(
        SpecError,
        match=r"search.num_samples: 4 cannot measure each of the 6 "
        r"cells",
    ):
        load_sweep(few)
    unknown = tmp_path / "unknown.py"
    unknown.write_text(
        head + "search=Search(num_samples=6, confirm=Confirm(per_params=['gamma'])))\n"
    )
    with pytest.raises(SpecError, match=r"search.confirm.per_params: 'gamma' is not searched"):
        load_sweep(unknown)


def test_confirmation_seeds_never_overlap_the_search_seeds():
    from pydantic import ValidationError

    from sweeps import Confirm

    assert Search(seeds=3, first_seed=999, confirm=Confirm(seeds=2)).confirm_seeds == [1002, 1003]
    assert Search(seeds=2, confirm=Confirm(seeds=2, first_seed=2)).confirm_seeds == [2, 3]
    with pytest.raises(ValidationError, match="overlap the search's 0..4"):
        Search(seeds=5, confirm=Confirm(seeds=2, first_seed=3))
    assert Search(seeds=2).confirm_seeds == []


def test_a_configuration_sampled_again_after_capping_settled_it_leaves_the_expected_count(
    tmp_path,
):
    """The sampler draws a configuration capping has settled again (one learning rate to
    draw from): none of its seeds runs, and the run counts them as skipped, not as trials
    an interrupted run left out."""
    from sweeps.engine.record import ResultsRecorder
    from sweeps.engine.search import sweep_search

    sweep = make_sweep(
        algorithms=["DQN"],
        per_algorithm={},
        search_space={"num_env_runners": choice([1]), "lr": choice([1e-3])},
        search=Search(sampler="random", num_samples=2, seeds=1),
    )
    rec = ResultsRecorder(
        tmp_path,
        target={"metric": "training", "value": 1.0},
        budget={"time_s": 10.0, "env_steps": None},
        command_start=0.0,
    )
    search, _ = sweep_search(sweep, f"sqlite:///{tmp_path / 'optuna.db'}", recorder=rec)
    search.set_search_properties("objective", "min", {})
    for tid in ("t0", "t1"):  # the baseline, then the one configuration, capped
        config = search.suggest(tid)
        rec.trials.append({**config, "censor_reason": "capped", "objective": 20.0})
        search.on_trial_complete(tid, {"objective": 20.0})
    assert not config["is_baseline"]
    assert search.suggest("t2") == Searcher.FINISHED  # the second draw is the same one
    assert search.resampled == 1 and search.total_trials == 3

"""Presets (sweeps.engine.presets): library defaults are the library's, Contoso Cabs' tuning is
a preset that reproduces the settings every shipped Cabs sweep ran with, a sweep's own values
win, and a user's env gets the library defaults."""

from __future__ import annotations

import glob
import inspect
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Every algorithm's and reference's defaults as they were before presets existed (all Cabs
#: tuning), saved from the code of that revision (its ``revision`` key).
BEFORE = json.loads((ROOT / "tests" / "data" / "cabs_resolved_params.json").read_text())


def _cabs_sweeps():
    from sweeps.engine.sweep_file import load_sweep

    files = sorted(
        glob.glob(str(ROOT / "sweeps" / "*.py"))
        + glob.glob(str(ROOT / "sweeps" / "*.yaml"))
        + glob.glob(str(ROOT / "sweeps" / "experiments" / "*.py"))
    )
    out = []
    for f in files:
        if Path(f).name in ("__init__.py", "run.py", "spec.py"):
            continue
        sweep = load_sweep(f)
        if sweep.env == "ContosoCabs-v0":
            out.append((Path(f).name, sweep))
    return out


def _norm(d):
    return json.loads(json.dumps(d, sort_keys=True, default=str))


def test_every_shipped_cabs_configuration_resolves_to_the_settings_it_ran_with():
    """Item 5 of the presets' issue: each point of every shipped Cabs sweep (each choice, both
    bounds of each range, the baseline, the reference) resolves through the Cabs presets to
    exactly what it resolved to from the old tuned defaults. Keys the old defaults left unset
    (RLlib's or SB3's value applied) resolve to the library default, which the tests below
    check is RLlib's or SB3's own value."""
    from sweeps.engine.reference import REFERENCE_ALGORITHMS
    from sweeps.engine.search import library_defaults
    from sweeps.engine.search import resolve_params as resolve
    from sweeps.engine.sweep_file import sweep_points

    sweeps = _cabs_sweeps()
    assert len(sweeps) >= 20, [n for n, _ in sweeps]
    checked = 0
    for name, sweep in sweeps:
        points = sweep_points(sweep)
        if sweep.reference:
            points.append(("reference", dict(sweep.reference)))
        for where, params in points:
            algo = params["algorithm"]
            old = BEFORE["references" if algo in REFERENCE_ALGORITHMS else "algorithms"][algo]
            new = _norm(resolve(params, sweep.env))
            before = _norm({**old, **params})
            assert {k: new.get(k) for k in before} == before, (name, where)
            lib = _norm(library_defaults(algo))
            assert {k: v for k, v in new.items() if k not in before} == {
                k: lib[k] for k in new if k not in before
            }, (name, where)
            checked += 1
    assert checked > 300


def test_the_cabs_presets_hold_every_old_default_of_every_algorithm():
    from sweeps.engine.presets import CABS_ENV
    from sweeps.engine.search import defaults_for

    for kind in ("algorithms", "references"):
        for algo, old in BEFORE[kind].items():
            if algo == "SB3-SAC":  # continuous actions: never on Cabs; SB3's 1 M buffer now
                continue
            new = _norm(defaults_for(algo, CABS_ENV))
            assert {k: new.get(k) for k in old} == _norm(old), algo


def _model_defaults():
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    m = DefaultModelConfig()
    return {"hidden_sizes": list(m.fcnet_hiddens), "fcnet_activation": m.fcnet_activation}


@pytest.mark.parametrize("name", ["DQN", "RLLIB-DQN", "APEX", "PPO", "IMPALA", "APPO", "SEED"])
def test_library_defaults_are_rllib_s_own(name):
    """Every default an algorithm shares with RLlib's config class is RLlib's value, except
    what the suite sets for every algorithm (one env runner, the learner in the trial's
    process, iterations of >= 1 s) and, for APEX, the Ape-X paper's settings."""
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.algorithms.ppo import PPOConfig

    from sweeps.engine.algorithms import ALGORITHMS
    from sweeps.engine.algorithms.apex_defaults import APEX_ALGO_DEFAULTS

    cls = {
        "DQN": DQNConfig,
        "RLLIB-DQN": DQNConfig,
        "APEX": DQNConfig,
        "PPO": PPOConfig,
        "IMPALA": IMPALAConfig,
        "APPO": APPOConfig,
        "SEED": IMPALAConfig,
    }[name]
    rllib = cls()
    suite = {"num_env_runners", "num_learners", "min_time_s_per_iteration"}
    suite |= {"num_cpus_per_env_runner"} if name == "SEED" else set()  # light actors
    paper = set(APEX_ALGO_DEFAULTS) if name == "APEX" else set()
    defaults = ALGORITHMS[name].defaults
    model = _model_defaults()
    replay = rllib.replay_buffer_config if hasattr(rllib, "replay_buffer_config") else {}
    derived = {
        "buffer_size": replay.get("capacity"),
        "prioritized_replay": replay.get("type") == "PrioritizedEpisodeReplayBuffer",
        "prioritized_replay_alpha": replay.get("alpha"),
        "prioritized_replay_beta": replay.get("beta"),
        "reward_scale": 1.0,
    }
    compared = 0
    for key, value in defaults.items():
        if key in suite or key in paper:
            continue
        if key in model:
            expected = model[key]
        elif key in derived:
            expected = derived[key]
        elif hasattr(rllib, key):
            expected = getattr(rllib, key)
        else:
            continue  # the suite's own key (updates_per_learner_call, SEED's inference)
        assert _norm(value) == _norm(expected), (name, key, value, expected)
        compared += 1
    assert compared >= 8


@pytest.mark.parametrize("name", ["SB3-DQN", "SB3-PPO", "SB3-SAC"])
def test_reference_defaults_are_sb3_s_own(name):
    import stable_baselines3 as sb3

    from sweeps.engine.reference import REFERENCE_ALGORITHMS, REFERENCE_DEFAULTS

    sig = inspect.signature(getattr(sb3, REFERENCE_ALGORITHMS[name]).__init__).parameters
    compared = 0
    for key, value in REFERENCE_DEFAULTS[name].items():
        if key in sig:
            assert value == sig[key].default, (name, key)
            compared += 1
    assert compared >= 7
    assert REFERENCE_DEFAULTS[name]["reward_scale"] == 1.0


def test_a_sweep_s_values_win_and_a_user_env_gets_library_defaults():
    from sweeps.engine.algorithms import ALGORITHMS
    from sweeps.engine.presets import CABS_ENV, find_preset, preset_names
    from sweeps.engine.search import defaults_for
    from sweeps.engine.search import resolve_params as resolve

    cabs = resolve({"algorithm": "DQN", "lr": 0.123}, CABS_ENV)
    assert cabs["lr"] == 0.123 and cabs["reward_scale"] == 0.01
    user = resolve({"algorithm": "DQN"}, "my_pkg.envs:Corridor-v0")
    assert user == {"algorithm": "DQN", **ALGORITHMS["DQN"].defaults}
    assert user["reward_scale"] == 1.0
    assert find_preset("IMPALA", "CartPole-v1") is None
    assert defaults_for("IMPALA", "CartPole-v1") == dict(ALGORITHMS["IMPALA"].defaults)
    assert preset_names(["DQN", "PPO", "IMPALA", "SB3-DQN"], "CartPole-v1") == {
        "DQN": "rl-zoo",
        "PPO": "rl-zoo",
        "IMPALA": None,
        "SB3-DQN": "rl-zoo",
    }


def test_rl_zoo_presets_translate_sb3_s_names():
    """rl-zoo's DQN CartPole-v1 entry: 128 gradient steps of 64 every 256 env steps is a replay
    ratio of 32; epsilon decays over 16 % of 50 k steps; SB3's DQN is vanilla."""
    from sweeps.engine.presets import find_preset

    dqn = find_preset("DQN", "CartPole-v1").values
    assert dqn["training_intensity"] == 32.0
    assert dqn["epsilon"] == [[0, 1.0], [8000, 0.04]]
    assert (dqn["double_q"], dqn["dueling"], dqn["prioritized_replay"]) == (False, False, False)
    acro = find_preset("DQN", "Acrobot-v1").values
    assert acro["training_intensity"] == 128.0  # gradient_steps -1: one per env step
    ppo = find_preset("PPO", "CartPole-v1").values
    assert ppo["train_batch_size"] == 256 and ppo["num_envs_per_env_runner"] == 8
    assert ppo["rollout_fragment_length"] == "auto"  # 256 / 8 envs = rl-zoo's 32 steps
    assert find_preset("SB3-PPO", "Acrobot-v1").values["n_steps"] == 4096
    pong = find_preset("DQN", "PongNoFrameskip-v4").values
    assert pong["epsilon"] == [[0, 1.0], [1_000_000, 0.01]] and pong["training_intensity"] == 8.0
    assert "hidden_sizes" not in pong  # a CNN encoder
    assert find_preset("SB3-DQN", "PongNoFrameskip-v4") is None  # no Atari reference


@pytest.mark.parametrize("env", ["CartPole-v1", "Acrobot-v1", "PongNoFrameskip-v4"])
@pytest.mark.parametrize("algo", ["DQN", "PPO"])
def test_rl_zoo_presets_build_valid_rllib_configs(env, algo):
    from sweeps.engine.algorithms import build_config
    from sweeps.engine.presets import find_preset

    assert find_preset(algo, env).name == "rl-zoo"
    env_config = {"frame_size": 42, "framestack": 4} if "Pong" in env else {}
    build_config({"algorithm": algo}, env, env_config).validate()


def test_spec_json_and_the_report_name_each_algorithm_s_preset_and_the_reference_horizon():
    from analysis.report import _defaults_note
    from sweeps.engine.sweep_file import load_sweep, resolved_spec

    sweep = load_sweep(ROOT / "sweeps" / "cabs_scaling.py")
    spec = resolved_spec(sweep, {"metric": "evaluation", "value": 1.0}, "cabs_scaling.py")
    assert spec["presets"] == {
        "APEX": "contoso-cabs",
        "IMPALA": "contoso-cabs",
        "SB3-DQN": "contoso-cabs",
    }
    note = _defaults_note(spec)
    assert "APEX: preset <code>contoso-cabs</code>" in note
    # the Cabs preset's 20 k horizon with a time budget only; exploration over its first 10 %
    assert "over 20,000 env steps" in note and "over the first 2,000" in note
    assert "hold their final values" in note
    user = {**spec, "env": "my_pkg.envs:Corridor-v0", "presets": {"APEX": None}}
    assert "APEX: library defaults" in _defaults_note(user)
    assert "over 100,000 env steps" in _defaults_note(user)
    ends = {**spec, "reference": {"algorithm": "SB3-DQN", "total_timesteps": 5_000}}
    assert "censor_reason &#39;horizon&#39;" in _defaults_note(ends)  # HTML-escaped


def test_the_dry_run_says_which_preset_each_algorithm_took(capsys):
    from sweeps.run import main

    assert main([str(ROOT / "sweeps" / "cartpole_presets.py"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Defaults on CartPole-v1" in out
    assert "  DQN: preset 'rl-zoo'" in out and "  SB3-DQN: preset 'rl-zoo'" in out


def test_the_published_preset_checks_reached_the_target_in_every_seed():
    """docs/presets.md's current runs (its first headline region per env): every trial, each
    algorithm on its rl-zoo preset with nothing set by hand, reached gymnasium's threshold
    within the sweep's budget, every algorithm on its rl-zoo preset."""
    import re

    import pandas as pd

    page = (ROOT / "docs" / "presets.md").read_text()
    runs = re.findall(r"<!-- generated: headline from data/(\w+)/(\d{8}-\d{6}) -->", page)
    current = {}
    for sweep, run_id in runs:
        current.setdefault(sweep, run_id)  # the page lists the current run first
    assert set(current) == {"cartpole_presets", "acrobot_presets"}
    for sweep, run_id in current.items():
        run = ROOT / "docs" / "data" / sweep / run_id
        trials = pd.read_parquet(run / "trials.parquet")
        assert set(trials["algorithm"]) == {"DQN", "PPO", "SB3-DQN"}, run
        assert len(trials) == 9 and trials["time_to_target_s"].notna().all(), run
        spec = json.loads((run / "spec.json").read_text())
        assert spec["presets"] == {"DQN": "rl-zoo", "PPO": "rl-zoo", "SB3-DQN": "rl-zoo"}, run

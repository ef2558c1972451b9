"""The shared vocabulary → RLlib AlgorithmConfig mapping, errors, presets and Ape-X's ε_i.

No Ray cluster is started here: configs are built and inspected, never run.
"""

from __future__ import annotations

import math

import pytest
from presets import SEED_BASELINE  # tests/presets.py (pytest puts tests/ on sys.path)

from sweeps.engine.algorithms import (
    ALGORITHMS,
    SHARED_PARAMS,
    UnknownParameterError,
    build_config,
    extract_metrics,
    known_params,
)

CABS = "ContosoCabs-v0"


def test_registry_names_the_suites_eight_algorithms_and_rllibs_other_online_ones():
    assert set(ALGORITHMS) == {
        "DQN",
        "APEX",
        "IMPALA",
        "PPO",
        "APPO",
        "RLLIB-DQN",
        "SEED",
        "GORILA",
        "SAC",
        "DreamerV3",
    }


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_known_params_hold_shared_vocabulary_and_defaults(name):
    known = known_params(name)
    assert set(SHARED_PARAMS) <= known
    # every tuned default is a key a sweep could also set
    assert set(ALGORITHMS[name].defaults) <= known
    assert "algorithm" not in known


def test_unknown_key_error_names_key_algorithm_and_known():
    with pytest.raises(UnknownParameterError) as e:
        build_config({"algorithm": "APEX", "foo": 1}, CABS)
    msg = str(e.value)
    assert msg.startswith("unknown parameter 'foo' for algorithm APEX (known: ")
    assert "weights_sync_period" in msg and "num_env_runners" in msg
    # callers that catch ValueError (the sweep file's validation) catch it too
    with pytest.raises(ValueError, match="unknown parameter 'foo'"):
        build_config({"algorithm": "APEX", "foo": 1}, CABS)


def test_algorithm_specific_key_of_another_algorithm_is_unknown():
    # V-trace's clip is IMPALA's, not DQN's
    with pytest.raises(
        UnknownParameterError, match="'vtrace_clip_rho_threshold' for algorithm DQN"
    ):
        build_config({"algorithm": "DQN", "vtrace_clip_rho_threshold": 1.0}, CABS)


@pytest.mark.parametrize("bad", [{"algorithm": "TD3"}, {"num_env_runners": 1}, {"algorithm": None}])
def test_unknown_or_missing_algorithm(bad):
    with pytest.raises(ValueError, match="algorithm") as e:
        build_config(bad, CABS)
    assert "DQN" in str(e.value)
    with pytest.raises(ValueError, match="unknown algorithm 'TD3'"):
        known_params("TD3")


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"num_env_runners": -1}, "'num_env_runners'"),
        ({"num_env_runners": 1.5}, "'num_env_runners'"),
        ({"lr": 0}, "'lr'"),
        ({"gamma": 1.5}, "'gamma'"),
        ({"hidden_sizes": [64, 0]}, "'hidden_sizes'"),
        ({"hidden_sizes": 64}, "'hidden_sizes'"),
        ({"train_batch_size": "big"}, "'train_batch_size'"),
        ({"reward_scale": -1}, "'reward_scale'"),
        ({"gym_env_vectorize_mode": "fast"}, "'gym_env_vectorize_mode'"),
        ({"gym_env_vectorize_mode": "vector_entry_point"}, "'sync', 'async'"),
    ],
)
def test_bad_values_raise_one_line_errors(params, fragment):
    with pytest.raises(ValueError) as e:
        build_config({"algorithm": "DQN", **params}, CABS)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_shared_vocabulary_maps_onto_rllib_names():
    c = build_config(
        {
            "algorithm": "IMPALA",
            "num_env_runners": 3,
            "num_envs_per_env_runner": 4,
            "rollout_fragment_length": 20,
            "train_batch_size": 1000,
            "lr": 2e-3,
            "gamma": 0.97,
            "hidden_sizes": [32, 16],
            "num_learners": 2,
            "num_epochs": 1,  # Cabs' preset makes 4 passes: refused with several learners
            "num_gpus_per_learner": 0,
            "seed": 7,
            "vtrace_clip_rho_threshold": 0.9,
        },
        CABS,
        {"time_matrix_seed": 3},
    )
    # each sub-env recovers from its own faults (sweeps.engine.env_faults)
    assert c.env == f"{CABS}+recovering" and c.env_config == {"time_matrix_seed": 3}
    assert c.num_env_runners == 3 and c.num_envs_per_env_runner == 4
    assert c.rollout_fragment_length == 20
    assert c.num_learners == 2 and c.train_batch_size_per_learner == 500  # 1000 over 2 learners
    assert c.total_train_batch_size == 1000
    assert c.lr == 2e-3 and c.gamma == 0.97 and c.seed == 7
    assert c.model_config["fcnet_hiddens"] == [32, 16]
    assert c.vtrace_clip_rho_threshold == 0.9
    assert c.enable_rl_module_and_learner and c.enable_env_runner_and_connector_v2


def test_missing_keys_take_the_env_s_preset_else_the_library_s():
    from sweeps.engine.search import defaults_for

    c = build_config({"algorithm": "DQN"}, CABS)
    d = defaults_for("DQN", CABS)  # Contoso Cabs' preset
    assert c.num_envs_per_env_runner == d["num_envs_per_env_runner"] > 1
    assert c.rollout_fragment_length == d["rollout_fragment_length"] != "auto"
    assert c.reward_scale == 0.01
    lib = build_config({"algorithm": "DQN"}, "MountainCar-v0")  # no preset: RLlib's
    assert (lib.num_envs_per_env_runner, lib.rollout_fragment_length) == (1, "auto")
    assert (lib.reward_scale, lib.lr, lib.train_batch_size) == (1.0, 5e-4, 32)
    assert c.min_sample_timesteps_per_iteration == 0  # RLlib's DQN default: 1000 env steps
    assert c.min_time_s_per_iteration == d["min_time_s_per_iteration"]
    assert c.replay_buffer_config["type"] == "PrioritizedEpisodeReplayBuffer"
    # no Tune system-usage thread: Trainable.stop() would wait out its 0.7 s poll per trial
    assert c.log_sys_usage is False and c.get("log_sys_usage") is False


def test_num_workers_zero_means_sampling_in_the_driver():
    c = build_config({"algorithm": "DQN", "num_env_runners": 0}, CABS)
    assert c.num_env_runners == 0
    bundles = c.algo_class.default_resource_request(c).bundles
    assert sum(b.get("CPU", 0) for b in bundles) == 1  # just the driver


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
@pytest.mark.parametrize("workers", [1, 2])
def test_resource_request_is_driver_plus_env_runners(name, workers):
    c = build_config({"algorithm": name, "num_env_runners": workers}, CABS)
    bundles = c.algo_class.default_resource_request(c).bundles
    # one CPU per env runner unless the algorithm's defaults ask less (SEED's light actors);
    # GORILA's learner actors are bundles of their own
    defaults = ALGORITHMS[name].defaults
    per_runner = defaults.get("num_cpus_per_env_runner", 1)
    learners = (
        defaults["num_learners"] * defaults["num_cpus_per_learner"] if name == "GORILA" else 0
    )
    assert sum(b.get("CPU", 0) for b in bundles) == 1 + workers * per_runner + learners
    assert sum(b.get("GPU", 0) for b in bundles) == 0


def test_dqn_options_and_replay_choice():
    c = build_config(
        {
            "algorithm": "DQN",
            "double_q": False,
            "dueling": False,
            "n_step": 5,
            "prioritized_replay": False,
            "buffer_size": 1234,
        },
        CABS,
    )
    assert (c.double_q, c.dueling, c.n_step) == (False, False, 5)
    assert c.replay_buffer_config == {"type": "EpisodeReplayBuffer", "capacity": 1234}
    c = build_config({"algorithm": "DQN", "prioritized_replay_alpha": 0.5}, CABS)
    assert c.replay_buffer_config["alpha"] == 0.5


def test_dqn_is_rllibs_dqn_learner_on_the_suites_replay_and_rllib_dqn_is_rllibs():
    from ray.rllib.algorithms.dqn import DQN, DQNConfig

    from sweeps.engine.algorithms.replay_dqn import ReplayDQN, TransitionEnvRunner

    c = build_config(
        {"algorithm": "DQN", "updates_per_learner_call": 4, "training_intensity": 6.0}, CABS
    )
    assert isinstance(c, DQNConfig) and c.algo_class is ReplayDQN and issubclass(ReplayDQN, DQN)
    assert c.env_runner_cls is TransitionEnvRunner
    assert (c.updates_per_learner_call, c.training_intensity) == (4, 6.0)
    assert c.reward_scale == 0.01  # the Cabs preset
    r = build_config({"algorithm": "RLLIB-DQN"}, CABS)
    assert r.algo_class is DQN and type(r) is DQNConfig
    assert r.training_intensity == 2.0  # the Cabs preset; RLlib's own: None
    # The suite's DQN learns from 1-step returns (tuned on Cabs); RLlib's DQN keeps its 3.
    assert (c.n_step, r.n_step) == (1, 3)
    with pytest.raises(
        UnknownParameterError, match="'updates_per_learner_call' for algorithm RLLIB-DQN"
    ):
        build_config({"algorithm": "RLLIB-DQN", "updates_per_learner_call": 4}, CABS)
    with pytest.raises(ValueError, match="training_intensity"):
        build_config({"algorithm": "DQN", "training_intensity": -1.0}, CABS).validate()


def test_seed_baseline_preset_is_the_seed_articles_agent():
    p = SEED_BASELINE
    c = build_config(p, CABS)
    assert c.algo_class.__name__ == "DQN"  # RLlib's own class
    assert c.model_config["fcnet_hiddens"] == [36, 36]
    assert c.total_train_batch_size == 64 and c.gamma == 0.98 and c.num_env_runners == 1
    eps = c.epsilon
    assert eps[0][1] > eps[-1][1]  # ε decays


def test_pong_impala_sweep_settings_build_the_how_to_config():
    """The shipped Pong study's settings (one source: sweeps/pong_impala.py) build and pass
    RLlib's own validation (its minibatch must divide into fragments of 50)."""
    from pathlib import Path

    from sweeps.engine.sweep_file import load_sweep

    sweep = load_sweep(Path(__file__).parents[1] / "sweeps" / "pong_impala.py")
    c = build_config(
        {"algorithm": "IMPALA", "num_env_runners": 15, **sweep.fixed}, sweep.env, sweep.env_config
    )
    c.validate()
    assert c.algo_class.__name__ == "IMPALA"
    assert c.rollout_fragment_length == 50 and c.total_train_batch_size == 1000
    assert c.num_epochs == 2 and c.env_config == {"frame_size": 42, "framestack": 4}
    assert c.minibatch_size is None and c.num_env_runners == 15
    assert c._learner_connector is None  # reward_scale 1.0: Pong's rewards reach the learner as is


def test_actor_epsilons_follow_horgan_et_al():
    from sweeps.engine.algorithms.apex_dqn import actor_epsilon

    assert actor_epsilon(0, 1) == 0.4
    eps = [actor_epsilon(i, 8) for i in range(8)]
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4**8)
    assert eps[3] == pytest.approx(0.4 ** (1 + 7 * 3 / 7))
    assert all(a > b for a, b in zip(eps, eps[1:], strict=False))
    with pytest.raises(ValueError, match="out of range"):
        actor_epsilon(3, 3)


def test_apex_config_is_a_dqn_config_with_apex_defaults():
    from ray.rllib.algorithms.dqn import DQN, DQNConfig

    from sweeps.engine.algorithms.apex_dqn import ApexDQN, ApexDQNConfig, ApexEnvRunner

    c = build_config({"algorithm": "APEX", "weights_sync_period": 5, "epsilon": 0.3}, CABS)
    assert isinstance(c, DQNConfig) and issubclass(c.algo_class, DQN) and c.algo_class is ApexDQN
    assert c.env_runner_cls is ApexEnvRunner
    assert (c.weights_sync_period, c.epsilon, c.epsilon_alpha) == (5, 0.3, 7.0)
    # The sweeps' Cabs-tuned 1-step returns; ApexDQNConfig itself keeps the paper's 3.
    assert c.n_step == 1 and c.double_q and c.dueling
    assert ApexDQNConfig().n_step == 3
    assert build_config({"algorithm": "APEX", "n_step": 3}, CABS).n_step == 3
    assert c.replay_buffer_config["type"] == "PrioritizedEpisodeReplayBuffer"
    # No RLlib evaluation of its own: the suite's evaluation protocol measures every algorithm.
    assert not c.evaluation_interval


def test_extract_metrics_reads_the_right_keys():
    result = {
        "num_env_steps_sampled_lifetime": 5000,
        "env_runners": {
            "num_episodes_lifetime": 40,
            "episode_return_mean": 100.0,
            "num_env_steps_sampled_lifetime": 5000,
        },
        "evaluation": {"env_runners": {"episode_return_mean": 250.0}},
        "learners": {
            "default_policy": {
                "num_module_steps_trained_lifetime": 6400,
                "module_train_batch_size_mean": 64.0,
            },
            "__all_modules__": {"num_env_steps_trained_lifetime": 6400},
        },
    }
    m = extract_metrics("DQN", result)
    noise = {
        k: m.pop(k)
        for k in (
            "grad_noise_scale",
            "grad_norm_sq",
            "grad_trace_cov",
            "replay_ratio",
            "learner_cpu_s",
            "gradient_staleness",
            "bytes_per_update",
            "server_busy_s",
        )
    }
    assert m == {
        "env_steps": 5000,
        "episodes": 40,
        "episode_return_mean": 100.0,
        "learner_updates": 100.0,
        "env_restarts": 0,
        "dropped_gradients": 0,  # GORILA's parameter server only
    }
    assert all(math.isnan(v) for v in noise.values())  # not measured, no replay: NaN
    result["learners"]["__all_modules__"]["update_cpu_s"] = 3.5  # the learner clock's sum
    assert extract_metrics("DQN", result)["learner_cpu_s"] == 3.5
    gorila = {"learner_cpu_s": 7.0, "staleness_mean": 4.3, "dropped_gradients": 2}
    gorila |= {"bytes_per_update": 1e5, "server_busy_s": 1.25}
    g = extract_metrics("GORILA", {**result, "gorila": gorila})
    assert (g["learner_cpu_s"], g["gradient_staleness"], g["dropped_gradients"]) == (7.0, 4.3, 2)
    assert (g["bytes_per_update"], g["server_busy_s"]) == (1e5, 1.25)
    result["learners"]["default_policy"].update(
        {"grad_noise_scale": 120.0, "grad_norm_sq": 0.5, "grad_trace_cov": 60.0}
    )
    m = extract_metrics("DQN", result)
    assert (m["grad_noise_scale"], m["grad_norm_sq"], m["grad_trace_cov"]) == (120.0, 0.5, 60.0)
    m = extract_metrics(
        "APEX", {**result, "replay": {"learner_updates_lifetime": 77, "replay_ratio": 2.5}}
    )
    assert m["episode_return_mean"] == 100.0  # the exploring episodes', for APEX too
    assert m["learner_updates"] == 77
    assert m["replay_ratio"] == 2.5
    # env faults: the sub-envs' recoveries and RLlib's own re-makes, summed
    faulty = {
        **result,
        "env_runners": {**result["env_runners"], "num_env_faults": 3, "num_env_step_failures": 2},
    }
    assert extract_metrics("PPO", faulty)["env_restarts"] == 5
    empty = extract_metrics("IMPALA", {"env_runners": {}})
    assert empty["env_steps"] == 0 and math.isnan(empty["episode_return_mean"])
    assert math.isnan(empty["learner_updates"])


def test_register_with_tune_makes_apex_a_trainable():
    from ray.tune.registry import get_trainable_cls

    from sweeps.engine.algorithms import register_with_tune
    from sweeps.engine.algorithms.apex_dqn import ApexDQN

    register_with_tune()
    register_with_tune()  # idempotent
    assert get_trainable_cls("APEX") is ApexDQN
    assert get_trainable_cls("DQN").__name__ == "DQN"  # RLlib's own names stay RLlib's


def test_old_rllib_names_are_aliases(capsys):
    """build_config takes num_workers / num_envs_per_worker as num_env_runners /
    num_envs_per_env_runner (RLlib's old names) and says so on stderr."""
    from sweeps.engine.algorithms import vocabulary

    vocabulary._NOTIFIED.clear()
    c = build_config(
        {"algorithm": "PPO", "num_workers": 3, "num_envs_per_worker": 2}, "CartPole-v1"
    )
    assert (c.num_env_runners, c.num_envs_per_env_runner) == (3, 2)
    err = capsys.readouterr().err
    assert "'num_workers' is RLlib's old name of 'num_env_runners'" in err
    with pytest.raises(ValueError, match="give only 'num_env_runners'"):
        build_config({"algorithm": "PPO", "num_workers": 3, "num_env_runners": 3}, "CartPole-v1")


def test_importing_the_algorithms_does_no_work():
    """Importing sweeps.engine.algorithms (what validation, --dry-run and cluster.azure submit do)
    loads neither torch nor RLlib (so probes no GPU) and builds no preset."""
    import subprocess
    import sys

    code = (
        "import sys, sweeps.engine.algorithms as a, sweeps.engine.sweep_file\n"
        "heavy = [m for m in ('torch', 'ray.rllib', 'ray', 'gymnasium') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert 'sweeps.engine.algorithms.vocabulary' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", ["IMPALA", "APPO"])
def test_asynchronous_algorithms_sync_weights_without_rllibs_state_server(name):
    """The suite's IMPALA and APPO broadcast weights from the Algorithm: RLlib's default
    ``EnvRunnerStateServer`` held every env runner's first sample ~4-6 s on 2 cores
    (docs/benchmarks.md, "Trial start-up"; the sampling itself: test_algorithms_learning)."""
    from sweeps.engine.algorithms import build_config

    assert build_config({"algorithm": name}, "CartPole-v1").use_env_runner_state_server is False
    import importlib

    rllib = importlib.import_module(f"ray.rllib.algorithms.{name.lower()}")
    assert getattr(rllib, f"{name}Config")().use_env_runner_state_server is True  # RLlib's


@pytest.mark.parametrize("name", ["DQN", "APEX", "IMPALA", "PPO", "APPO", "RLLIB-DQN"])
def test_the_sampling_layout_is_a_parameter_of_every_rllib_based_algorithm(name):
    """``gym_env_vectorize_mode`` by RLlib's name, for RLlib's algorithms and the suite's own;
    the built config's layout (:func:`sweeps.engine.trainable.sampling_layout`) counts the env
    steps that can wait at once and the processes an async layout starts."""
    from sweeps.engine.trainable import sampling_layout

    assert "gym_env_vectorize_mode" in known_params(name)
    c = build_config(
        {
            "algorithm": name,
            "num_env_runners": 2,
            "num_envs_per_env_runner": 4,
            "gym_env_vectorize_mode": "async",
        },
        CABS,
    )
    assert c.gym_env_vectorize_mode == "async"
    assert sampling_layout(c) == {
        "vectorize_mode": "async",
        "concurrent_envs": 8,
        "env_processes": 8,
    }
    c = build_config({"algorithm": name, "num_env_runners": 0, "num_envs_per_env_runner": 4}, CABS)
    assert sampling_layout(c) == {
        "vectorize_mode": "sync",
        "concurrent_envs": 1,
        "env_processes": 0,
    }


def test_a_removed_parameter_says_why_in_one_line():
    from sweeps.engine.algorithms.vocabulary import UnknownParameterError

    with pytest.raises(
        UnknownParameterError,
        match="'num_replay_shards' of algorithm APEX was "
        "removed: .*ran fewer learner updates/s.*delete the key",
    ) as error:
        build_config({"algorithm": "APEX", "num_replay_shards": 1}, "ContosoCabs-v0")
    assert "\n" not in str(error.value)

"""SB3 as a configuration of a sweep, not only as its reference: Stable-Baselines3 with a
vectorized env (``n_envs`` sub-envs, ``vec_env="subproc"``: SB3's ``SubprocVecEnv``), what a
user with a slow simulator tries before Ray, searched, placed and recorded in the sampling
layout's words (``vectorize_mode``, ``concurrent_envs``) beside the RLlib trials."""

from __future__ import annotations

import textwrap

import pandas as pd
import pytest
from sweep_runs import run_sweep  # tests/sweep_runs.py (pytest puts tests/ on sys.path)

from sweeps.engine.env_faults import EnvFaultLimit

CABS = "ContosoCabs-v0"

# A simulator that drops its connection now and then (tests/test_sweeps_env_faults.py's, on
# Contoso Cabs): every forked sub-env draws from its own copy of the seeded stream.
FLAKY_ENV = """\
import random

import gymnasium

import envs


class Flaky(gymnasium.Wrapper):
    rng = random.Random(0)

    def step(self, action):
        if Flaky.rng.random() < 1.0 / 40:
            raise ConnectionError("simulator dropped the connection")
        return self.env.step(action)


gymnasium.register("FlakyCabs-v0", entry_point=lambda config=None: Flaky(envs.make_env("ContosoCabs-v0", dict(config or {}))))
"""


def sweep_text(name: str, *, sb3: str, extra: str = "") -> str:
    return textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(
            name="{name}", env="ContosoCabs-v0",
            env_config={{"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 2}},
            algorithms=["SB3-DQN"],
            per_algorithm={{"SB3-DQN": {{"n_envs": choice([4])}}}},
            per_algorithm_fixed={{"SB3-DQN": {sb3}}},
            target=Target(fraction_of_optimal=0.95), budget=Budget(time_s=30),
            search=Search(sampler="grid", num_samples=1, seeds=1, capping=None),
            baseline=None, reference={{"algorithm": "SB3-DQN"}}{extra},
        )
        """)


def test_an_sb3_configuration_is_validated_and_placed_with_its_sub_env_processes(tmp_path):
    from sweeps.engine.placement import trial_requests, trial_setup
    from sweeps.engine.sweep_file import load_sweep, sweep_target

    path = tmp_path / "sb3.py"
    path.write_text(sweep_text("sb3", sb3='{"vec_env": "subproc", "train_freq": 1}'))
    sweep = load_sweep(path)
    requests = trial_requests(
        sweep, trial_setup(sweep, sweep_target(sweep, str(path)), [{"CPU": 2.0}])
    )
    (req,) = requests
    assert (req.algorithm, req.num_env_runners, req.cpus, req.bundles) == (
        "SB3-DQN",
        0,
        1.0,
        [{"CPU": 1.0}],
    )
    assert (req.vectorize_mode, req.concurrent_envs, req.env_processes) == ("async", 4, 4)
    assert req.outside_ray() == ", +4 env processes (~180 MiB)"

    # stepped in turn in the trial's process: one env step waits at a time, no processes
    path.write_text(sweep_text("sb3", sb3='{"vec_env": "dummy"}'))
    sweep = load_sweep(path)
    (req,) = trial_requests(
        sweep, trial_setup(sweep, sweep_target(sweep, str(path)), [{"CPU": 2.0}])
    )
    assert (req.vectorize_mode, req.concurrent_envs, req.env_processes) == ("sync", 1, 0)


def test_a_vectorized_sb3_run_steps_every_sub_env_and_bounds_their_faults_together(
    tmp_path, monkeypatch
):
    """Four forked sub-envs of a flaky simulator: the env steps of all four count, and their
    episodes and env faults are summed; past ``max_env_restarts`` (all sub-envs together) the
    trial ends with :class:`EnvFaultLimit`, as a one-env reference does."""
    import tempfile

    from sweeps.engine.reference import run_reference

    (tmp_path / "flaky_sb3_env.py").write_text(FLAKY_ENV)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    reports = []

    def report(r):
        reports.append(r)
        return len(reports) >= 3

    config = {
        "algorithm": "SB3-DQN",
        "seed": 0,
        "n_envs": 4,
        "vec_env": "subproc",
        "min_time_s_per_iteration": 0.4,
    }
    kwargs = dict(
        env_id="flaky_sb3_env:FlakyCabs-v0",
        env_config={"step_latency_ms": 2},
        evaluation={"episodes": 2, "seed": 10_000},
        budget_env_steps=None,
    )
    run_reference(config, report=report, **kwargs)
    last = reports[-1]
    assert last["env_steps"] > 0 and last["env_steps"] % 4 == 0, reports
    assert last["episodes"] > 0 and last["env_restarts"] > 0, reports
    assert [r["env_restarts"] for r in reports] == sorted(r["env_restarts"] for r in reports)

    with pytest.raises(EnvFaultLimit, match="max_env_restarts=1"):
        run_reference({**config, "max_env_restarts": 1}, report=lambda r: False, **kwargs)


@pytest.mark.ray
@pytest.mark.parallel
def test_a_sweep_records_an_sb3_configuration_beside_its_one_env_reference(tmp_path):
    """A real sweep: SB3-DQN with 4 sub-envs in SubprocVecEnv as a configuration, and the
    SB3-DQN reference. The configuration's row says 0 env runners x 4 async envs, 4 concurrent
    envs, not the reference; the reference's, one env stepped serially."""
    path = tmp_path / "sb3.py"
    path.write_text(
        sweep_text("sb3", sb3='{"vec_env": "subproc", "train_freq": 1, "gradient_steps": 1}')
    )
    results = tmp_path / "results"
    run_sweep(path, results)
    (run_dir,) = (results / "sb3").iterdir()
    trials = pd.read_parquet(run_dir / "trials.parquet").set_index("is_reference")
    columns = [
        "algorithm",
        "num_env_runners",
        "num_envs_per_env_runner",
        "vectorize_mode",
        "concurrent_envs",
    ]
    assert trials.loc[False, columns].tolist() == ["SB3-DQN", 0, 4, "async", 4]
    assert trials.loc[True, columns].tolist() == ["SB3-DQN", 0, 1, "sync", 1]
    for ref in (False, True):
        assert trials.loc[ref, "status"] in ("reached", "censored"), trials.to_dict("records")
        assert trials.loc[ref, "total_env_steps"] > 0
    assert trials.loc[False, "total_env_steps"] % 4 == 0

"""Env faults (sweeps.engine.env_faults): an env whose step or reset raises is re-made and its
episode dropped, counted, and a trial ends as an error only past its limit; here without Ray
(the wrapper the reference uses, the evaluation protocol) and in a real sweep."""

from __future__ import annotations

import json
import textwrap

import gymnasium
import numpy as np
import pandas as pd
import pytest
from sweep_runs import run_sweep  # tests/sweep_runs.py (pytest puts tests/ on sys.path)

from sweeps.engine.env_faults import EnvFaultLimit, RecoveringEnv

# A user's env module: CartPole or Contoso Cabs behind a simulator that drops its connection
# on about 1 in 500 steps and resets, at random, as a real one does. Each process draws its
# faults from the same seeded stream, not from its pid or the clock. Random, not
# every 499th call: a deterministic schedule ends every episode of 499 steps or more, so an
# evaluation that re-runs a faulted episode from its seed could never finish one.
FLAKY_ENV = """\
import random

import gymnasium

import envs


class Flaky(gymnasium.Wrapper):
    rng = random.Random(0)

    def __init__(self, env, every=499):
        super().__init__(env)
        self.every = every

    def _tick(self, what):
        if Flaky.rng.random() < 1.0 / self.every:
            raise ConnectionError(f"simulator dropped the connection during {what}")

    def reset(self, **kwargs):
        self._tick("reset")
        return self.env.reset(**kwargs)

    def step(self, action):
        self._tick("step")
        return self.env.step(action)


def flaky_cabs(config=None):
    config = dict(config or {})
    every = int(config.pop("fault_every", 499))
    return Flaky(envs.make_env("ContosoCabs-v0", config), every)


gymnasium.register("FlakyCabs-v0", entry_point=flaky_cabs)


def flaky_cartpole(config=None):
    config = dict(config or {})
    every = int(config.pop("fault_every", 499))
    return Flaky(gymnasium.make("CartPole-v1", **config), every)


gymnasium.register("FlakyCartPole-v0", entry_point=flaky_cartpole)
"""


class _Counting(gymnasium.Env):
    """Steps count up; step number ``fail_at`` (of this instance) raises."""

    observation_space = gymnasium.spaces.Box(0, 1e9, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)
    made = 0

    def __init__(self, fail_at=None, length=10):
        _Counting.made += 1
        self.fail_at, self.length, self.t = fail_at, length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.fail_at is not None and self.t == self.fail_at:
            raise ConnectionError("dropped")
        return np.full(1, self.t, np.float32), 1.0, self.t >= self.length, False, {}


def test_a_failed_step_re_makes_the_env_and_ends_its_episode_truncated():
    made = []

    def make():
        made.append(_Counting(fail_at=3 if not made else None))
        return made[-1]

    env = RecoveringEnv(make, max_restarts=5)
    env.reset(seed=0)
    assert env.step(0)[1:3] == (1.0, False)
    env.step(0)
    obs, reward, terminated, truncated, info = env.step(0)  # the faulted step
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["env_fault"] == "ConnectionError: dropped" and obs[0] == 0  # a fresh episode
    assert env.restarts == 1 and len(made) == 2 and env.env is made[1]
    for _ in range(9):
        assert env.step(0)[1] == 1.0  # the new env runs on


def test_past_its_limit_a_failing_env_raises():
    env = RecoveringEnv(lambda: _Counting(fail_at=1), max_restarts=3)
    env.reset()
    for _ in range(3):
        assert env.step(0)[3] is True
    with pytest.raises(EnvFaultLimit, match="4 env restarts, more than max_env_restarts=3"):
        env.step(0)


def test_an_env_that_never_resets_ends_instead_of_being_re_made_for_ever():
    class NoReset(_Counting):
        def reset(self, *, seed=None, options=None):
            raise ConnectionError("refused")

    env = RecoveringEnv(NoReset)
    with pytest.raises(EnvFaultLimit, match="reset failed 10 times in a row"):
        env.reset()
    with pytest.raises(ConnectionError):  # recovery off: the env's own error
        RecoveringEnv(NoReset, recover=False).reset()


def test_a_step_that_hangs_past_env_step_timeout_s_is_a_fault():
    """A step that blocks for 30 s with ``step_timeout_s=0.5``: the caller waits about 0.5 s,
    the env is re-made and the episode ends truncated, as for an error; the re-made env runs
    on in a new helper thread."""
    import time

    class Hangs(_Counting):
        def step(self, action):
            if self.fail_at is not None and self.t + 1 == self.fail_at:
                time.sleep(30)
            return super().step(action)

    made = []

    def make():
        made.append(Hangs(fail_at=2 if not made else None))
        return made[-1]

    env = RecoveringEnv(make, step_timeout_s=0.5)
    env.reset(seed=0)
    assert env.step(0)[1] == 1.0
    began = time.monotonic()
    obs, reward, terminated, truncated, info = env.step(0)  # the hung step
    assert time.monotonic() - began < 5
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["env_fault"].startswith(
        "EnvStepTimeout: step did not return within env_step_timeout_s=0.5 s"
    )
    assert env.restarts == 1 and len(made) == 2 and obs[0] == 0
    for _ in range(9):
        assert env.step(0)[1] == 1.0
    # without a timeout the calls run in the caller's thread, as before
    plain = RecoveringEnv(lambda: _Counting())
    plain.reset()
    assert plain.step(0)[1] == 1.0 and plain._thread is None


def test_recovering_env_names_carry_the_step_timeout():
    from sweeps.engine.env_faults import parse_recovering_name, recovering_env_name

    assert recovering_env_name("m:Env-v0") == "m:Env-v0+recovering"
    assert parse_recovering_name(recovering_env_name("Cabs+step_cost", 2.5)) == (
        "Cabs+step_cost",
        True,
        2.5,
    )
    assert parse_recovering_name("CartPole-v1") == ("CartPole-v1", False, None)


def test_the_evaluation_protocol_re_runs_a_faulted_episode_from_its_seed(monkeypatch):
    """An evaluation episode whose env raises is played again from its own seed on a re-made
    env: the mean return is the one without faults (never a partial episode's)."""
    from sweeps.engine import evaluation

    fail = {"next": True}

    def env_for_protocol(env_id, env_config=None):
        fail_at = 4 if fail["next"] else None
        fail["next"] = False
        return _Counting(fail_at=fail_at, length=6)

    monkeypatch.setattr(evaluation, "evaluation_env", env_for_protocol)
    evaluator = evaluation.GreedyEvaluator("Counting", {}, episodes=3, seed=0)
    assert evaluator.evaluate(lambda obs: np.zeros(len(obs), int)) == 6.0
    assert evaluator.restarts == 1


@pytest.mark.ray
@pytest.mark.parallel  # no wall-clock threshold: each trial reaches its target far inside budget
@pytest.mark.slow
def test_a_flaky_simulator_does_not_sink_a_study(tmp_path):
    """A real sweep on CartPole behind a simulator that raises on about 1 in 500 steps and
    resets: PPO and the suite's DQN, sampling in the driver and with an env runner, and the
    SB3-DQN reference all reach the target within their budget, each with its env restarts
    recorded. The target is the shipped CartPole sweeps' (sweeps/cartpole_quick.py),
    150, a random policy's ~22 times seven. A user's env takes the library defaults, which
    favour no env and learn slowly; the study sets the Contoso Cabs presets' fast settings
    (sweeps.engine.presets), which reach this target well inside the budget."""
    from sweeps.engine.presets import CABS_ENV, preset_values

    fast = {a: preset_values(a, CABS_ENV) for a in ("PPO", "DQN", "SB3-DQN")}
    # The preset's SB3 horizon (20 k env steps) would end a slow seed's run there (censored):
    # 1 of 24 seeds needed 17 k. The same ε schedule (decayed by 2 k env steps) over a 60 k
    # horizon lets the time budget, not the horizon, bound it.
    fast["SB3-DQN"] = {**fast["SB3-DQN"], "total_timesteps": 60_000, "exploration_fraction": 1 / 30}
    (tmp_path / "flaky_env.py").write_text(FLAKY_ENV)
    path = tmp_path / "flaky.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="flaky", env="flaky_env:FlakyCartPole-v0", algorithms=["PPO", "DQN"],
                      search_space={{"num_env_runners": choice([0, 1])}},
                      per_algorithm_fixed={{"PPO": {fast["PPO"]!r}, "DQN": {fast["DQN"]!r}}},
                      target=Target(value=150.0), budget=Budget(time_s=60),
                      search=Search(sampler="grid", num_samples=4, seeds=1, capping=None),
                      baseline=None, reference={{"algorithm": "SB3-DQN", **{fast["SB3-DQN"]!r}}})
        """)
    )
    results = tmp_path / "results"
    proc = run_sweep(path, results)
    (run_dir,) = (results / "flaky").iterdir()
    trials = pd.read_parquet(run_dir / "trials.parquet")
    progress = pd.read_parquet(run_dir / "progress.parquet")
    rows = trials[
        ["algorithm", "num_env_runners", "seed", "status", "env_restarts", "time_to_target_s"]
    ].to_dict("records")
    assert len(trials) == 5, rows
    assert set(trials.seed) == {0}, rows
    assert (trials.status == "reached").all(), json.dumps(rows, default=str)
    assert (trials.env_restarts > 0).all(), rows
    assert "env faults:" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
    # the counts never go back over a trial's iterations
    for _, p in progress.groupby("trial_id"):
        assert p.env_restarts.is_monotonic_increasing


# A simulator whose step hangs: the process's 3,000th env step blocks for 90 s, then returns.
HANGING_ENV = '''\
import time

import gymnasium

import envs


class Hanging(gymnasium.Wrapper):
    steps = 0

    def step(self, action):
        Hanging.steps += 1
        if Hanging.steps == 3000:
            time.sleep(90)
        return self.env.step(action)


class HangingInTraining(gymnasium.Wrapper):
    """The process's 200th env step blocks for 90 s: with no env runner that step is the
    first iteration's sampling, before any evaluation, whatever the machine's speed."""

    steps = 0

    def step(self, action):
        HangingInTraining.steps += 1
        if HangingInTraining.steps == 200:
            time.sleep(90)
        return self.env.step(action)


class HangingEarly(gymnasium.Wrapper):
    """Each instance's 500th env step blocks for 90 s (training and evaluation envs alike)."""

    def __init__(self, env):
        super().__init__(env)
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps == 500:
            time.sleep(90)
        return self.env.step(action)


gymnasium.register("HangingCabs-v0",
                   entry_point=lambda config=None: Hanging(envs.make_env("ContosoCabs-v0",
                                                                         dict(config or {}))))
gymnasium.register("HangingInTrainingCabs-v0",
                   entry_point=lambda config=None: HangingInTraining(
                       envs.make_env("ContosoCabs-v0", dict(config or {}))))
gymnasium.register("HangingEarlyCabs-v0",
                   entry_point=lambda config=None: HangingEarly(
                       envs.make_env("ContosoCabs-v0", dict(config or {}))))
'''


@pytest.mark.ray
@pytest.mark.slow  # one at a time: it checks wall-clock bounds
def test_a_hung_step_does_not_hold_the_trial_past_its_budget(tmp_path):
    """A trial whose env step blocks for 90 s, far past its 15 s budget, sampling in the
    trial's own thread (no env runner: the worst case, the iteration itself is blocked): the
    budget's watchdog ends it about WATCHDOG_GRACE_S after the budget, censored at the budget,
    never reached, and the sweep goes on without waiting for the hung step."""
    import time

    from sweeps.engine.trainable import WATCHDOG_GRACE_S

    (tmp_path / "hanging_env.py").write_text(HANGING_ENV)
    path = tmp_path / "hanging.py"
    path.write_text(
        textwrap.dedent("""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="hanging", env="hanging_env:HangingCabs-v0", algorithms=["PPO"],
                      search_space={"num_env_runners": choice([0])},
                      target=Target(value=2900.0), budget=Budget(time_s=15),
                      search=Search(sampler="grid", num_samples=1, seeds=1, capping=None),
                      baseline=None)
        """)
    )
    results = tmp_path / "results"
    began = time.monotonic()
    run_sweep(path, results)
    took = time.monotonic() - began
    (run_dir,) = (results / "hanging").iterdir()
    trials = pd.read_parquet(run_dir / "trials.parquet")
    progress = pd.read_parquet(run_dir / "progress.parquet")
    (row,) = trials.to_dict("records")
    assert row["status"] == "censored" and row["censor_reason"] == "budget", row
    assert 15 <= row["elapsed_s"] <= 15 + WATCHDOG_GRACE_S + 5, row
    assert row["objective"] >= 15
    assert progress.wall_time_s.max() == row["elapsed_s"]
    assert took < 90, took  # the sweep did not wait for the hung step


@pytest.mark.ray
@pytest.mark.parallel  # its only bound is the 60 s budget, which the trial meets far inside
@pytest.mark.slow
def test_with_env_step_timeout_s_a_hung_step_is_recovered_inside_the_trial(tmp_path):
    """A 90 s hang in the training env's sampling, with ``env_step_timeout_s=2``: the hung env
    is re-made after 2 s, the trial reaches the target within its budget, and the restart is
    counted. (The hang is placed before the first evaluation: at a later step, a fast-learning
    trial can reach the target before it and nothing would be checked.)"""
    (tmp_path / "hanging_env.py").write_text(HANGING_ENV)
    path = tmp_path / "hanging_recovered.py"
    path.write_text(
        textwrap.dedent("""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="hanging_recovered", env="hanging_env:HangingInTrainingCabs-v0",
                      algorithms=["DQN"], search_space={"num_env_runners": choice([0])},
                      fixed={"env_step_timeout_s": 2},
                      target=Target(value=1500.0), budget=Budget(time_s=60),
                      search=Search(sampler="grid", num_samples=1, seeds=1, capping=None),
                      baseline=None)
        """)
    )
    results = tmp_path / "results"
    run_sweep(path, results)
    (run_dir,) = (results / "hanging_recovered").iterdir()
    (row,) = pd.read_parquet(run_dir / "trials.parquet").to_dict("records")
    assert row["status"] == "reached" and row["time_to_target_s"] < 60, row
    assert row["env_restarts"] >= 1, row


@pytest.mark.ray
@pytest.mark.slow  # one at a time: it checks wall-clock bounds
def test_the_reference_and_the_evaluation_hold_their_budget_while_a_step_hangs(tmp_path):
    """Every env's 500th step blocks for 90 s: the SB3 reference's training loop and the RLlib
    trial's evaluation protocol both block; each trial ends about WATCHDOG_GRACE_S after its
    15 s budget, censored, and the sweep does not wait for the hung steps."""
    import time

    from sweeps.engine.trainable import WATCHDOG_GRACE_S

    (tmp_path / "hanging_env.py").write_text(HANGING_ENV)
    path = tmp_path / "hanging_ref.py"
    path.write_text(
        textwrap.dedent("""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="hanging_ref", env="hanging_env:HangingEarlyCabs-v0",
                      algorithms=["PPO"], search_space={"num_env_runners": choice([0])},
                      target=Target(value=2900.0), budget=Budget(time_s=15),
                      search=Search(sampler="grid", num_samples=1, seeds=1, capping=None),
                      baseline=None, reference={"algorithm": "SB3-DQN"})
        """)
    )
    results = tmp_path / "results"
    began = time.monotonic()
    run_sweep(path, results)
    took = time.monotonic() - began
    (run_dir,) = (results / "hanging_ref").iterdir()
    trials = pd.read_parquet(run_dir / "trials.parquet")
    assert sorted(trials.algorithm) == ["PPO", "SB3-DQN"]
    for row in trials.to_dict("records"):
        assert row["status"] == "censored" and row["censor_reason"] == "budget", row
        assert 15 <= row["elapsed_s"] <= 15 + WATCHDOG_GRACE_S + 5, row
    assert took < 150, took  # neither trial waited out its 90 s hang


# An env runner's process that dies once: the env's 200th step calls os._exit in an env
# runner's process (never the trial's), the first time only (a marker file).
DYING_ENV = """\
import os

import gymnasium

import envs


class DiesOnce(gymnasium.Wrapper):
    def __init__(self, env, marker):
        super().__init__(env)
        self.marker, self.steps = marker, 0

    def step(self, action):
        self.steps += 1
        if (self.steps == 200 and not os.path.exists(self.marker)
                and "EnvRunner" in open("/proc/self/cmdline").read()):
            open(self.marker, "w").close()
            os._exit(1)
        return self.env.step(action)


def dying_cabs(config=None):
    config = dict(config or {})
    marker = config.pop("die_marker")
    return DiesOnce(envs.make_env("ContosoCabs-v0", config), marker)


gymnasium.register("DyingCabs-v0", entry_point=dying_cabs)
"""


@pytest.mark.ray
@pytest.mark.parallel  # its only bound is the budget, which the trial meets far inside
@pytest.mark.slow
def test_an_env_runner_that_dies_is_one_console_line_and_its_banner_goes_to_the_log(tmp_path):
    """An env runner's process exits mid-sample: RLlib restarts it, the trial reaches its
    target, its console line counts the restart, and Ray's "A worker died" banner is in the
    run's errors.log, not on the console."""
    (tmp_path / "dying_env.py").write_text(DYING_ENV)
    marker = tmp_path / "marker"
    path = tmp_path / "dying.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="dying", env="dying_env:DyingCabs-v0",
                      env_config={{"config": {{"die_marker": {str(marker)!r}}}}},
                      algorithms=["PPO"], search_space={{"num_env_runners": choice([1])}},
                      target=Target(value=1500.0), budget=Budget(time_s=120),
                      search=Search(sampler="grid", num_samples=1, seeds=1, capping=None),
                      baseline=None)
        """)
    )
    results = tmp_path / "results"
    proc = run_sweep(path, results)
    assert marker.exists()  # the env runner did die
    (run_dir,) = (results / "dying").iterdir()
    (row,) = pd.read_parquet(run_dir / "trials.parquet").to_dict("records")
    assert row["status"] == "reached" and row["env_runner_restarts"] == 1, row
    console = proc.stdout + proc.stderr
    assert "worker died" not in console, console
    assert [line for line in console.splitlines() if "env runner restarts" in line] == [
        next(line for line in console.splitlines() if line.lstrip().startswith("[  1]"))
    ]
    assert "1 env runner restarts" in console
    assert "A worker died or was killed" in (run_dir / "errors.log").read_text()

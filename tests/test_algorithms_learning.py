"""Learning checks on Contoso Cabs with the tuned defaults, on a real local Ray (2 CPUs).

Each of DQN, APEX, GORILA (one learner), IMPALA and SEED (1 env runner, seed 0) must lift the *evaluation* return — the
suite's evaluation protocol (:mod:`sweeps.engine.evaluation`): the greedy policy's mean return over 20
fixed-seed episodes after every training iteration, the metric sweeps compare — from the random
policy's (≈ −40 dollars for the default Cabs) to at least halfway to the exact optimum
(≈ 2966 dollars), i.e. ≥ ≈ 1463 dollars, within 75 s of training. Fixed seeds (the trial's
RLlib seed and the evaluation seeds) remove the evaluation's own noise; what is left is the
scheduling noise of Ray on 2 cores. Measured spread, 5 runs of this file in a row on a 2-core
machine (seconds of training, after the Algorithm was built, until the evaluation
return passed the bar): DQN 3.2–9.4 s (median 4.2; RLlib's DQN then, 2.1–3.2 s on the suite's
replay data path, 1.0–1.1 s with 1-step returns in 3 runs), APEX
2.0–5.1 s (median 4.1; 1.0–1.1 s with 1-step returns), GORILA 2.1 s in 4 runs alone (one
learner; the first iteration's evaluation already passed the bar), IMPALA
4.1–5.2 s (median 4.2) — at least 8x inside the 75 s budget; best evaluation returns at that
point 1,480–2,882. The whole file took 49–59 s per run. Every bound is at least 5x its
measured median, so the file runs beside another test (``parallel``); beside the tiny sweep
test the three took 1.1, 1.1 and 3.1 s to the bar (docs/benchmarks.md, "Learning checks").

Run under the machine's Ray lock: ``flock /tmp/ray_workload.lock python -m pytest ...``.
"""

from __future__ import annotations

import math
import time

import pytest

# One xdist group: on one worker, with one Ray for the module.
pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.parallel,
    pytest.mark.xdist_group("learning"),
]

CABS = "ContosoCabs-v0"
BUDGET_S = 75.0
FRACTION_OF_GAP = 0.5


@pytest.fixture(scope="module")
def ray_local(local_ray):
    yield


@pytest.fixture(scope="module")
def cabs_bar():
    from envs.contoso_cabs import optimal_return, random_return

    rand, opt = random_return({}), optimal_return({})
    return rand, opt, rand + FRACTION_OF_GAP * (opt - rand)


def _train(
    name: str,
    env: str,
    budget_s: float,
    stop_at: float = math.inf,
    stop_when=None,
    evaluate: bool = False,
    **overrides,
):
    """Train until the return reaches ``stop_at``, ``stop_when(metrics)`` holds or ``budget_s``
    passes; the metrics history. With ``evaluate``, each iteration also runs the evaluation
    protocol (20 episodes, seeds 10000..) and ``stop_at`` applies to its ``evaluation_return``."""
    from sweeps.engine.algorithms import build_config, extract_metrics
    from sweeps.engine.evaluation import GreedyEvaluator, rllib_greedy_policy

    algo = build_config({"algorithm": name, **overrides}, env).build_algo()
    evaluator = GreedyEvaluator(env, {}, episodes=20, seed=10_000) if evaluate else None
    policy = rllib_greedy_policy(algo, evaluator) if evaluate else None
    history = []
    try:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < budget_s:
            m = extract_metrics(name, algo.train())
            m["evaluation_return"] = evaluator.evaluate(policy()) if evaluate else math.nan
            m["wall_s"] = time.perf_counter() - t0
            history.append(m)
            value = m["evaluation_return"] if evaluate else m["episode_return_mean"]
            if value >= stop_at or (stop_when and stop_when(m)):
                break
    finally:
        algo.stop()
    return history


@pytest.mark.timeout(150)
@pytest.mark.parametrize("name", ["DQN", "APEX", "GORILA", "IMPALA", "SEED"])
def test_learns_well_above_random_on_cabs(ray_local, cabs_bar, name):
    rand, opt, bar = cabs_bar
    history = _train(name, CABS, BUDGET_S, stop_at=bar, evaluate=True, seed=0)
    best = max((r for m in history if math.isfinite(r := m["evaluation_return"])), default=math.nan)
    last = history[-1]
    print(
        f"{name}: best return {best:.0f} (random {rand:.0f}, optimum {opt:.0f}, bar {bar:.0f}) "
        f"after {last['wall_s']:.1f} s, {last['env_steps']} env steps, "
        f"{last['learner_updates']:.0f} learner updates"
    )
    assert best >= bar, history
    # The metrics the sweep runner records are consistent.
    steps = [m["env_steps"] for m in history]
    assert steps == sorted(steps) and steps[-1] > 0
    assert last["episodes"] > 0 and last["learner_updates"] > 0
    assert math.isfinite(last["episode_return_mean"])


@pytest.mark.timeout(90)
def test_seed_baseline_preset_trains(ray_local):
    from presets import SEED_BASELINE

    from sweeps.engine.algorithms import build_config, extract_metrics

    algo = build_config(SEED_BASELINE, CABS).build_algo()
    try:
        for _ in range(3):
            m = extract_metrics("RLLIB-DQN", algo.train())
    finally:
        algo.stop()
    assert m["env_steps"] > 1000 and m["learner_updates"] > 0
    assert math.isfinite(m["episode_return_mean"])


@pytest.mark.timeout(90)
def test_ppo_on_cartpole_in_three_lines(ray_local):
    """Seed 003's "PPO on CartPole in three lines": build, train, read the return.

    A random CartPole policy averages ~22. PPO must do better within 10 iterations: iterations
    last >= 1 s of wall-clock, so how many updates three of them hold depends on the machine's
    load (three gave 21-28 on a busy day: a check that failed by chance).
    """
    from sweeps.engine.algorithms import build_config

    algo = build_config({"algorithm": "PPO", "seed": 0}, "CartPole-v1").build_algo()
    returns = []
    try:
        while len(returns) < 10 and not (returns and returns[-1] > 30):
            returns.append(algo.train()["env_runners"]["episode_return_mean"])
    finally:
        algo.stop()
    assert all(math.isfinite(r) for r in returns) and returns[-1] > 30, returns


@pytest.mark.timeout(90)
def test_appo_trains_through_the_same_vocabulary(ray_local):
    history = _train(
        "APPO",
        CABS,
        30.0,
        num_env_runners=1,
        train_batch_size=256,
        lr=5e-4,
        stop_when=lambda m: m["learner_updates"] > 0 and m["episodes"] > 0,
    )
    assert history[-1]["env_steps"] > 0 and history[-1]["learner_updates"] > 0


@pytest.mark.timeout(90)
def test_impala_samples_in_its_first_iteration(ray_local):
    """RLlib's IMPALA and APPO start an ``EnvRunnerStateServer`` actor per Algorithm by
    default, and an env runner's first ``sample()`` waits for that actor's process to start:
    measured 0 env steps in each of the first three 1 s iterations (3 of 3 builds on this
    2-core machine), 1.5-2.6 k with the suite's config, which turns the server off (APPO's
    config: tests/test_algorithms_vocabulary.py). The first 2 s iteration must sample, from
    env runners that pull from no server."""
    from sweeps.engine.algorithms import build_config, extract_metrics

    name = "IMPALA"
    algo = build_config(
        {"algorithm": name, "num_env_runners": 1, "seed": 0, "min_time_s_per_iteration": 2.0}, CABS
    ).build_algo()
    try:
        servers = algo.env_runner_group.foreach_env_runner(
            lambda runner: getattr(runner, "_env_runner_state_server", None) is None,
            local_env_runner=False,
        )
        assert servers == [True]
        steps = extract_metrics(name, algo.train())["env_steps"]
        assert steps > 0, f"{name} sampled no env step in its first 2 s iteration"
    finally:
        algo.stop()


BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass\n"


@pytest.mark.timeout(90)
def test_env_runners_keep_sampling_beside_a_busy_process(ray_local):
    """The IMPALA stall of the full test run: Ray starts its workers at nice 15 by default, so
    a nice-0 process busy beside this test's learner (itself nice 0) left the env runner ~3 %
    of a core, and IMPALA got no env step for over a minute. With the project's Ray settings
    (``cluster.nodes.RAY_SYSTEM_CONFIG``) the env runner runs at this process's priority and
    keeps sampling beside a busy process. Measured: 0 env steps in 5 s at nice 15, 4-11 k
    env steps in 5 s at nice 0 (this bound: 1 k in 30 s)."""
    import os
    import subprocess
    import sys

    from sweeps.engine.algorithms import build_config, extract_metrics

    algo = build_config({"algorithm": "IMPALA", "seed": 0}, CABS).build_algo()
    busy = subprocess.Popen([sys.executable, "-c", BUSY.format(s=60)])
    try:
        nice = algo.env_runner_group.foreach_env_runner(
            lambda _: os.nice(0), local_env_runner=False
        )
        assert nice == [os.nice(0)], nice
        t0, steps = time.perf_counter(), 0
        while time.perf_counter() - t0 < 30 and steps < 1000:
            steps = extract_metrics("IMPALA", algo.train())["env_steps"]
        assert steps >= 1000, f"{steps} env steps in {time.perf_counter() - t0:.0f} s"
    finally:
        busy.kill()
        busy.wait()
        algo.stop()

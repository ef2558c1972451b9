"""env_config={"step_latency_ms": L} and {"step_cpu_ms": c} for every env of the suite
(envs.latency): each step waits L ms without using a CPU, or burns c ms of one core; the
evaluation protocol's envs do neither; bad values are refused."""

from __future__ import annotations

import time

import pytest

import envs
from sweeps.engine.evaluation import evaluation_env

EVERY_ENV = [
    ("CartPole-v1", {}),
    ("ContosoCabs-v0", {"num_cities": 3}),
    ("PongNoFrameskip-v4", {"frame_size": 42}),
]


@pytest.mark.parametrize("env_id, config", EVERY_ENV, ids=lambda x: str(x))
def test_every_env_waits_without_using_a_cpu(env_id, config):
    env = envs.make_env(env_id, {**config, "step_latency_ms": 20})
    env.reset(seed=0)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(10):
        env.step(env.action_space.sample())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert wall >= 10 * 0.020  # each step waited its 20 ms
    # ... asleep: the wait used no CPU (10 steps take <= 8 ms of CPU, Pong's; 50 ms allowed)
    assert cpu < wall - 10 * 0.020 + 0.05
    fast = evaluation_env(env_id, {**config, "step_latency_ms": 20})
    assert not isinstance(fast, envs.StepLatency)  # the protocol measures the policy only
    env.close()
    fast.close()


def test_zero_latency_is_the_plain_env_and_the_optimum_is_unchanged():
    assert not isinstance(envs.make_env("CartPole-v1", {"step_latency_ms": 0}), envs.StepLatency)
    plain = envs.oracle_return("ContosoCabs-v0", {"time_matrix_seed": 0})
    slow = envs.oracle_return("ContosoCabs-v0", {"time_matrix_seed": 0, "step_latency_ms": 2})
    assert plain == slow


@pytest.mark.parametrize("env_id, config", EVERY_ENV, ids=lambda x: str(x))
def test_every_env_burns_its_cpu_milliseconds_per_step(env_id, config):
    env = envs.make_env(env_id, {**config, "step_cpu_ms": 10})
    assert isinstance(env, envs.StepCpuCost)
    env.reset(seed=0)
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(10):
        env.step(env.action_space.sample())
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    # 10 steps x 10 ms of this thread's CPU (CPU time, so another process on the core does not
    # change it), plus the env's own work (Pong's 10 steps: ~5 ms)
    assert 0.100 <= cpu <= 0.100 + 0.05
    assert wall >= cpu * 0.9  # busy, not asleep
    fast = evaluation_env(env_id, {**config, "step_cpu_ms": 10})
    assert not isinstance(fast, envs.StepCpuCost)  # the protocol measures the policy only
    env.close()
    fast.close()


def test_step_costs_combine_and_leave_the_optimum_unchanged():
    env = envs.make_env("CartPole-v1", {"step_cpu_ms": 1, "step_latency_ms": 1})
    assert isinstance(env, envs.StepLatency) and isinstance(env.env, envs.StepCpuCost)
    assert envs.split_step_cost({"step_cpu_ms": 2, "x": 1}) == (envs.StepCost(cpu_ms=2.0), {"x": 1})
    assert not envs.split_step_cost({})[0]  # no cost: the plain env
    plain = envs.oracle_return("ContosoCabs-v0", {"time_matrix_seed": 0})
    assert plain == envs.oracle_return("ContosoCabs-v0", {"time_matrix_seed": 0, "step_cpu_ms": 2})


@pytest.mark.parametrize("key", ["step_latency_ms", "step_cpu_ms"])
@pytest.mark.parametrize("bad", [-1, float("inf"), float("nan"), "2", True, None])
def test_bad_step_cost_is_refused(key, bad):
    with pytest.raises(ValueError, match=f"{key}: must be a finite number"):
        envs.make_env("CartPole-v1", {key: bad})
    with pytest.raises(ValueError, match=key):
        envs.check_env_config("ContosoCabs-v0", {key: bad})

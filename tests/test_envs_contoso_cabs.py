"""Contoso Cabs: rules, config validation, requests, and the exact optimum."""

from __future__ import annotations

import itertools
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.contoso_cabs import (
    ContosoCabs,
    greedy_return,
    optimal_return,
    random_return,
    resolve_config,
    solve,
)

pytestmark = pytest.mark.timeout(120)

R, C = 9.0, 5.0


def expected_step(T, loc, hour, day, action, m, revenue=R, cost=C):
    """The rules, written out from the spec: (reward, (loc, hour, day), hours)."""
    p, q = divmod(action, m)
    if p == q:
        hours, reward, end = 1, -cost, loc
    else:
        t1 = 0 if p == loc else int(T[loc, p, hour, day])
        h1, d1 = (hour + t1) % 24, (day + (hour + t1) // 24) % 7
        t2 = int(T[p, q, h1, d1])
        hours, reward, end = t1 + t2, revenue * t2 - cost * (t1 + t2), q
    return reward, (end, (hour + hours) % 24, (day + (hour + hours) // 24) % 7), hours


# -- rules ------------------------------------------------------------------------------------


def test_spaces_and_observation_layout():
    env = ContosoCabs()
    assert env.observation_space.shape == (36,)
    assert env.observation_space.dtype == np.float32
    assert env.action_space.n == 25
    obs, info = env.reset(options={"location": 3, "hour": 17, "day": 6})
    assert obs.dtype == np.float32 and obs.shape == (36,)
    assert np.flatnonzero(obs).tolist() == [3, 5 + 17, 5 + 24 + 6]
    assert info == {"location": 3, "hour": 17, "day": 6, "elapsed_hours": 0}


def test_every_step_follows_the_rules():
    env = ContosoCabs()
    T = env.config.time_matrix
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=3)
    elapsed = 0
    for _ in range(3000):
        action = int(rng.integers(25))
        reward, (loc, hour, day), hours = expected_step(
            T, info["location"], info["hour"], info["day"], action, 5
        )
        obs, r, terminated, truncated, info = env.step(action)
        elapsed += hours
        assert r == reward
        assert (info["location"], info["hour"], info["day"]) == (loc, hour, day)
        assert info["elapsed_hours"] == elapsed
        assert np.flatnonzero(obs).tolist() == [loc, 5 + hour, 5 + 24 + day]
        assert terminated == (elapsed >= 720) and not truncated
        if terminated:
            obs, info = env.reset()
            elapsed = 0


def test_long_trip_carries_two_days():
    """23:00 + 23 h empty + 23 h trip = 69 h later: two days on (the seed added only one)."""
    T = np.full((2, 2, 24, 7), 23)
    env = ContosoCabs(time_matrix=T)
    env.reset(options={"location": 0, "hour": 23, "day": 6})
    _, reward, _, _, info = env.step(1 * 2 + 0)  # pick up at 1, drop at 0
    assert (info["hour"], info["day"], info["location"]) == (21, 1, 0)
    assert reward == R * 23 - C * 46


def test_trip_time_is_looked_up_at_arrival_at_pickup():
    T = np.full((2, 2, 24, 7), 5)
    T[0, 1, 10, 2] = 3  # empty leg 0 -> 1 at 10:00 on day 2 takes 3 h
    T[1, 0, 13, 2] = 11  # the paid trip 1 -> 0 starting at 13:00 takes 11 h
    env = ContosoCabs(time_matrix=T, revenue_per_hour=10, cost_per_hour=2)
    env.reset(options={"location": 0, "hour": 10, "day": 2})
    _, reward, _, _, info = env.step(2)  # (p, q) = (1, 0)
    assert reward == 10 * 11 - 2 * (3 + 11)
    assert (info["location"], info["hour"], info["day"], info["elapsed_hours"]) == (0, 0, 3, 14)


def test_episode_ends_after_the_month_and_pays_the_last_ride():
    env = ContosoCabs(episode_hours=30, time_matrix=np.full((2, 2, 24, 7), 7))
    _, info = env.reset(options={"location": 0, "hour": 0, "day": 0})
    rewards, terminated = [], False
    while not terminated:
        _, r, terminated, _, info = env.step(1 if info["location"] == 0 else 2)  # 0 <-> 1, 7 h
        rewards.append(r)
    assert info["elapsed_hours"] == 35 and len(rewards) == 5
    assert rewards == [R * 7 - C * 7] * 5


def test_time_matrix_is_drawn_from_its_seed_and_fixed_per_instance():
    cfg = resolve_config({"time_matrix_seed": 7, "num_cities": 4})
    expected = np.random.default_rng(7).integers(1, 24, size=(4, 4, 24, 7))
    np.testing.assert_array_equal(cfg.time_matrix, expected)
    assert not np.array_equal(resolve_config({"time_matrix_seed": 8}).time_matrix[:4, :4], expected)
    assert cfg.time_matrix.min() >= 1 and cfg.time_matrix.max() <= 23


def test_reset_seed_reproduces_and_start_states_cover_the_space():
    env = ContosoCabs()
    a = [env.reset(seed=11)[1] for _ in range(2)]
    assert a[0] == a[1]
    starts = {tuple(env.reset()[1][k] for k in ("location", "hour", "day")) for _ in range(20000)}
    assert len(starts) == 5 * 24 * 7  # uniform over 840 states: all seen in 20k draws


def test_passes_gymnasium_env_checker():
    check_env(ContosoCabs(), skip_render_check=True)
    check_env(ContosoCabs(requests=True, num_cities=3), skip_render_check=True)
    check_env(gym.make("ContosoCabs-v0").unwrapped, skip_render_check=True)


def test_gym_make_and_rllib_style_construction_agree():
    by_kwargs = gym.make("ContosoCabs-v0", num_cities=3, time_matrix_seed=4)
    by_dict = ContosoCabs({"num_cities": 3, "time_matrix_seed": 4})
    np.testing.assert_array_equal(
        by_kwargs.unwrapped.config.time_matrix, by_dict.config.time_matrix
    )
    assert by_kwargs.observation_space.shape == (3 + 31,)
    assert ContosoCabs({"num_cities": 3}, num_cities=4).config.num_cities == 4  # keywords win


def test_step_rejects_actions_outside_the_space():
    env = ContosoCabs()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(25)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(-1)


def test_reset_options_are_checked():
    env = ContosoCabs()
    with pytest.raises(ValueError, match="'day' missing"):
        env.reset(options={"location": 1, "hour": 2})
    with pytest.raises(ValueError, match="outside"):
        env.reset(options={"location": 5, "hour": 2, "day": 0})


# -- config validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"num_cities": 1}, "num_cities"),
        ({"num_cities": 2.5}, "num_cities"),
        ({"num_cities": True}, "num_cities"),
        ({"time_matrix": np.full((3, 3, 24, 6), 5)}, "time_matrix"),
        ({"time_matrix": np.full((3, 2, 24, 7), 5)}, "time_matrix"),
        ({"time_matrix": np.full((2, 2, 24, 7), 24)}, "time_matrix"),
        ({"time_matrix": np.full((2, 2, 24, 7), 0)}, "time_matrix"),
        ({"time_matrix": np.full((2, 2, 24, 7), 2.5)}, "time_matrix"),
        ({"time_matrix": [[1, 2], [3]]}, "time_matrix"),
        ({"time_matrix": np.full((2, 2, 24, 7), 5), "num_cities": 3}, "num_cities"),
        ({"revenue_per_hour": -1}, "revenue_per_hour"),
        ({"cost_per_hour": float("nan")}, "cost_per_hour"),
        ({"episode_hours": 0}, "episode_hours"),
        ({"time_matrix_seed": -1}, "time_matrix_seed"),
        ({"requests": "yes"}, "requests"),
        ({"num_citys": 5}, "num_citys"),
    ],
)
def test_bad_config_names_the_key(config, key):
    with pytest.raises(ValueError, match=f"'{key}'"):
        ContosoCabs(config)
    with pytest.raises(ValueError, match=f"'{key}'"):
        envs.check_env_config("ContosoCabs-v0", config)


def test_check_env_config_accepts_good_configs_and_ignores_other_envs():
    envs.check_env_config("ContosoCabs-v0", {"num_cities": 3, "requests": True})
    envs.check_env_config("ContosoCabs-v0", None)
    envs.check_env_config("CartPole-v1", {"anything": 1})


# -- requests ---------------------------------------------------------------------------------


def test_requests_mask_is_in_obs_and_info_and_no_ride_is_always_offered():
    env = ContosoCabs(requests=True)
    assert env.observation_space.shape == (36 + 25,)
    obs, info = env.reset(seed=5)
    for _ in range(500):
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (25,)
        np.testing.assert_array_equal(obs[36:], mask)
        assert all(mask[i * 5 + i] == 1 for i in range(5))
        assert mask.sum() - 5 <= 15
        obs, _, terminated, _, info = env.step(env.action_space.sample(mask=mask))
        if terminated:
            obs, info = env.reset()


def test_requests_follow_the_seed_poisson_rates():
    env = ContosoCabs(requests=True)
    env.reset(seed=0)
    for location, rate in enumerate((2, 12, 4, 7, 8)):
        counts = [
            env.reset(options={"location": location, "hour": 0, "day": 0})[1]["action_mask"].sum()
            - 5
            for _ in range(4000)
        ]
        k = np.arange(0, 60)
        pmf = np.exp(k * np.log(rate) - rate - np.cumsum(np.log(np.maximum(k, 1))))
        capped_mean = float((np.minimum(k, 15) * pmf).sum())  # E[min(Poisson(rate), 15)]
        assert abs(np.mean(counts) - capped_mean) < 4 * np.std(counts) / np.sqrt(4000) + 1e-9


def test_unoffered_ride_counts_as_no_ride():
    env = ContosoCabs(requests=True)
    obs, info = env.reset(seed=2, options={"location": 0, "hour": 4, "day": 1})
    for _ in range(200):  # find a decision with some ride not offered
        unoffered = np.flatnonzero(info["action_mask"] == 0)
        if len(unoffered):
            break
        obs, info = env.reset(options={"location": 0, "hour": 4, "day": 1})
    before = (info["location"], info["hour"], info["day"])
    _, reward, _, _, info = env.step(int(unoffered[0]))
    assert reward == -C
    assert (info["location"], info["hour"], info["day"]) == (before[0], 5, 1)


def test_requests_reproduce_under_reset_seed():
    env = ContosoCabs(requests=True)
    runs = []
    for _ in range(2):
        obs, info = env.reset(seed=9)
        trace = [obs]
        for a in range(30):
            obs, *_ = env.step(a % 25)
            trace.append(obs)
        runs.append(np.stack(trace))
    np.testing.assert_array_equal(runs[0], runs[1])


# -- exact optimum ----------------------------------------------------------------------------


def brute_force_values(T, episode_hours, revenue=R, cost=C):
    """Best return from every start state, by enumerating every action sequence."""
    m = T.shape[0]

    def best(elapsed, loc, hour, day):
        if elapsed >= episode_hours:
            return 0.0
        returns = []
        for a in range(m * m):
            r, (l2, h2, d2), hours = expected_step(T, loc, hour, day, a, m, revenue, cost)
            returns.append(r + best(elapsed + hours, l2, h2, d2))
        return max(returns)

    return {
        (loc, hour, day): best(0, loc, hour, day)
        for loc, hour, day in itertools.product(range(m), range(24), range(7))
    }


@pytest.mark.parametrize(("revenue", "cost"), [(4.0, 3.0), (9.0, 1.0)])
def test_oracle_equals_brute_force_on_a_tiny_instance(revenue, cost):
    T = np.random.default_rng(3).integers(1, 4, size=(2, 2, 24, 7))
    config = {
        "time_matrix": T,
        "episode_hours": 6,
        "revenue_per_hour": revenue,
        "cost_per_hour": cost,
    }
    brute = brute_force_values(T, 6, revenue, cost)
    solution = solve(config)
    for (loc, hour, day), value in brute.items():
        assert solution.values[0, loc, hour, day] == pytest.approx(value, abs=1e-9)
    assert optimal_return(config) == pytest.approx(np.mean(list(brute.values())), abs=1e-9)


def test_oracle_beats_greedy_beats_random_on_the_default_instance():
    opt, greedy, rand = optimal_return(), greedy_return(), random_return()
    assert opt > greedy > rand
    assert opt == pytest.approx(envs.oracle_return("ContosoCabs-v0", {"time_matrix_seed": 0}))


def test_policy_from_the_q_table_attains_the_oracle_in_simulation():
    config = {"time_matrix_seed": 0}
    solution = solve(config)
    env = ContosoCabs(config)
    returns = []
    for loc, hour, day in itertools.product(range(5), range(24), range(7)):
        _, info = env.reset(options={"location": loc, "hour": hour, "day": day})
        total, terminated = 0.0, False
        while not terminated:
            s = (info["elapsed_hours"], info["location"], info["hour"], info["day"])
            q = solution.q_values(*s)
            action = int(np.argmax(q))
            assert q[action] == pytest.approx(solution.values[s])
            _, reward, terminated, _, info = env.step(action)
            total += reward
        assert total == pytest.approx(solution.values[0, loc, hour, day], abs=1e-6)
        returns.append(total)
    assert np.mean(returns) == pytest.approx(solution.optimal_return, abs=1e-9)


def test_exact_random_return_matches_monte_carlo():
    config = {"num_cities": 3}
    env = ContosoCabs(config)
    env.action_space.seed(1)
    returns = []
    for episode in range(4000):
        env.reset(seed=episode)
        total, terminated = 0.0, False
        while not terminated:
            _, reward, terminated, _, _ = env.step(env.action_space.sample())
            total += reward
        returns.append(total)
    standard_error = np.std(returns) / np.sqrt(len(returns))
    assert abs(np.mean(returns) - random_return(config)) < 4 * standard_error
    assert random_return(config, episodes=50, seed=3) == random_return(config, episodes=50, seed=3)


def test_solve_is_fast_and_cached():
    """Bounds far above the measured times (solve ~50 ms, cached ~0.3 ms on a 2-core
    machine: 20x and 150x), so a test beside it (-n 2) cannot fail it by chance."""
    config = {"time_matrix_seed": 424242}
    start = time.perf_counter()
    value = optimal_return(config)
    assert time.perf_counter() - start < 1.0
    start = time.perf_counter()
    assert envs.oracle_return("ContosoCabs-v0", config) == value
    assert time.perf_counter() - start < 0.05


def test_oracle_is_none_without_one_and_exact_functions_refuse_requests():
    assert envs.oracle_return("ContosoCabs-v0", {"requests": True}) is None
    assert envs.oracle_return("PongNoFrameskip-v4", None) is None
    for f in (optimal_return, greedy_return, random_return, solve):
        with pytest.raises(ValueError, match="'requests'"):
            f({"requests": True})
    assert np.isfinite(random_return({"requests": True}, episodes=3))


def _greedy_policy_return_by_simulation():
    env = ContosoCabs()
    T = env.config.time_matrix
    total = 0.0
    for loc, hour, day in itertools.product(range(5), range(24), range(7)):
        _, info = env.reset(options={"location": loc, "hour": hour, "day": day})
        terminated = False
        while not terminated:
            rewards = [
                expected_step(T, info["location"], info["hour"], info["day"], a, 5)[0]
                for a in range(25)
            ]
            _, r, terminated, _, info = env.step(int(np.argmax(rewards)))
            total += r
    return total / 840


def test_greedy_return_matches_simulation_of_the_myopic_policy():
    assert greedy_return() == pytest.approx(_greedy_policy_return_by_simulation(), abs=1e-9)

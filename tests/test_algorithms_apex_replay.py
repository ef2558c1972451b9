"""Ape-X's replay (sweeps/engine/algorithms/apex_replay.py): n-step transitions and prioritized
sampling checked against direct computations."""

from __future__ import annotations

import numpy as np
import pytest

from sweeps.engine.algorithms.apex_replay import (
    TRANSITION_KEYS,
    PrioritizedReplay,
    n_step_td_errors,
    n_step_transitions,
)


def brute_force(obs, actions, rewards, terminated, n, gamma):
    rows = []
    t_len = len(actions)
    for t in range(t_len):
        k = min(n, t_len - t)
        ret = sum(gamma**i * rewards[t + i] for i in range(k))
        rows.append((obs[t], actions[t], ret, obs[t + k], terminated and t + k == t_len, k))
    return rows


@pytest.mark.parametrize(
    "t_len,n,terminated", [(8, 3, False), (8, 3, True), (2, 3, True), (1, 1, False), (5, 5, True)]
)
def test_n_step_transitions_match_the_definition(t_len, n, terminated):
    rng = np.random.default_rng(t_len * 10 + n)
    obs = rng.normal(size=(t_len + 1, 3)).astype(np.float32)
    actions = rng.integers(0, 4, t_len)
    rewards = rng.normal(size=t_len).astype(np.float32)
    got = n_step_transitions(obs, actions, rewards, terminated, n, 0.9)
    assert set(got) == set(TRANSITION_KEYS)
    for t, (o, a, r, o2, done, k) in enumerate(
        brute_force(obs, actions, rewards, terminated, n, 0.9)
    ):
        np.testing.assert_array_equal(got["obs"][t], o)
        assert got["actions"][t] == a
        assert got["rewards"][t] == pytest.approx(r, rel=1e-5)
        np.testing.assert_array_equal(got["new_obs"][t], o2)
        assert bool(got["terminateds"][t]) == done
        assert got["n_step"][t] == k


def test_n_step_transitions_refuse_mismatched_lengths():
    with pytest.raises(ValueError, match="T\\+1 observations"):
        n_step_transitions(np.zeros((3, 2)), np.zeros(3), np.zeros(3), False, 3, 0.99)
    with pytest.raises(ValueError, match="n >= 1"):
        n_step_transitions(np.zeros((4, 2)), np.zeros(3), np.zeros(3), False, 0, 0.99)


def transitions(values):
    m = len(values)
    return {
        "obs": np.asarray(values, np.float32)[:, None],
        "actions": np.arange(m),
        "rewards": np.zeros(m, np.float32),
        "new_obs": np.zeros((m, 1), np.float32),
        "terminateds": np.zeros(m, bool),
        "n_step": np.ones(m, np.float32),
    }


def test_sampling_follows_the_priorities_and_weights_correct_for_them():
    replay = PrioritizedReplay(8, alpha=0.5, beta=0.4, seed=0)
    replay.add(transitions(range(5)))
    td = np.array([0.0, 1.0, 3.0, 8.0, 15.0])
    replay.update_priorities(np.arange(5), td)
    p = (td + replay.eps) ** 0.5
    want = p / p.sum()
    counts = np.zeros(5)
    for _ in range(400):
        idx, w, data = replay.sample(64)
        counts += np.bincount(idx, minlength=5)
        np.testing.assert_array_equal(data["obs"][:, 0], idx)  # rows belong to their indices
        ref = (5 * want[idx]) ** -0.4
        np.testing.assert_allclose(w, ref / ref.max(), rtol=1e-5)
    freq = counts / counts.sum()
    # 25,600 stratified draws: each frequency within 1 % (absolute) of its probability
    np.testing.assert_allclose(freq, want, atol=0.01)
    assert counts[0] < 0.01 * counts.sum()  # |δ| = 0 is almost never replayed, but can be


def test_new_transitions_enter_with_the_largest_priority_and_the_ring_overwrites_the_oldest():
    replay = PrioritizedReplay(4, alpha=1.0, seed=1)
    replay.add(transitions([0, 1, 2]))
    replay.update_priorities(np.array([0, 1, 2]), np.array([2.0, 5.0, 1.0]))
    replay.add(transitions([3, 4]))  # 4 overwrites slot 0 (value 0)
    assert len(replay) == 4 and replay.added == 5
    np.testing.assert_allclose(replay.priorities(np.arange(4)), [5.0, 5.0, 1.0, 5.0], rtol=1e-5)
    assert replay.total_priority == pytest.approx(16.0, rel=1e-5)
    _, _, data = replay.sample(400)
    assert set(data["obs"][:, 0].astype(int)) <= {1, 2, 3, 4}


def test_actor_td_errors_are_the_n_step_bellman_residuals_and_set_initial_priorities():
    """Ape-X's initial priorities: δ = s·R + γ^n (1 − d) max_a Q(s', a) − Q(s, a), written out
    by hand for three transitions, then stored as (|δ| + ε)^α instead of the largest priority."""
    batch = {
        "obs": np.zeros((3, 1), np.float32),
        "actions": np.array([1, 0, 2]),
        "rewards": np.array([10.0, -4.0, 2.0]),
        "new_obs": np.zeros((3, 1), np.float32),
        "terminateds": np.array([False, True, False]),
        "n_step": np.array([3.0, 2.0, 1.0]),
    }
    q = np.array([[0.0, 1.0, 2.0], [0.5, 0.0, 0.0], [1.0, 1.0, 4.0]])
    q_next = np.array([[3.0, -1.0, 0.0], [9.0, 9.0, 9.0], [0.0, 2.0, 1.0]])
    td = n_step_td_errors(q, q_next, batch, gamma=0.9, reward_scale=0.1)
    want = [
        0.1 * 10 + 0.9**3 * 3.0 - 1.0,  # max Q(s') = 3, Q(s, 1) = 1
        0.1 * -4 + 0.0 - 0.5,  # terminated: no bootstrap
        0.1 * 2 + 0.9 * 2.0 - 4.0,
    ]
    np.testing.assert_allclose(td, want)
    replay = PrioritizedReplay(8, alpha=0.5, seed=0)
    replay.add(transitions([0]))  # no TD errors: the largest priority so far (1.0)
    replay.add(transitions([1, 2, 3]), td)
    np.testing.assert_allclose(
        replay.priorities(np.arange(4)), [1.0, *((np.abs(want) + replay.eps) ** 0.5)], rtol=1e-6
    )
    with pytest.raises(ValueError, match="2 TD errors for 3 transitions"):
        replay.add(transitions([4, 5, 6]), td[:2])


def test_duplicate_indices_and_a_large_add_keep_the_tree_consistent():
    replay = PrioritizedReplay(100, alpha=0.6, seed=2)
    replay.add(transitions(range(250)))  # only the newest 100 are kept
    assert len(replay) == 100 and replay.added == 250
    rng = np.random.default_rng(3)
    for _ in range(50):
        idx, _, _ = replay.sample(32)
        replay.update_priorities(idx, rng.exponential(size=32))
    leaves = replay.priorities(np.arange(100))
    assert replay.total_priority == pytest.approx(leaves.sum(), rel=1e-9)
    idx, w, _ = replay.sample(32)
    assert idx.min() >= 0 and idx.max() < 100 and 0 < w.min() <= w.max() == 1.0


def test_alpha_zero_is_uniform_replay():
    replay = PrioritizedReplay(10, alpha=0.0, beta=0.0, seed=4)
    replay.add(transitions(range(10)))
    replay.update_priorities(np.arange(10), np.arange(10) * 100.0)
    idx, w, _ = replay.sample(10_000)
    assert np.all(w == 1.0)
    np.testing.assert_allclose(np.bincount(idx, minlength=10) / 10_000, 0.1, atol=1e-9)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="capacity >= 1"):
        PrioritizedReplay(0)
    replay = PrioritizedReplay(4)
    with pytest.raises(ValueError, match="cannot sample"):
        replay.sample(2)
    with pytest.raises(ValueError, match="missing columns"):
        replay.add({"obs": np.zeros((1, 1))})
    replay.add(transitions([0, 1]))
    with pytest.raises(ValueError, match="not finite"):
        replay.update_priorities(np.array([0]), np.array([np.nan]))
    bad = transitions([0])
    bad["obs"] = np.zeros((1, 2), np.float32)
    with pytest.raises(ValueError, match="shape"):
        replay.add(bad)

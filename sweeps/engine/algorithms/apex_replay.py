"""Ape-X's replay: n-step transitions built by the actors, a prioritized replay of flat arrays.

Horgan et al. 2018 ("Distributed Prioritized Experience Replay", arXiv 1803.00933, section 3):
actors turn their experience into n-step transitions before it reaches replay, and the learner
samples prioritized minibatches (Schaul et al. 2016, "Prioritized Experience Replay", arXiv
1511.05952) from a buffer that holds transitions, not episodes. This module is that data path,
in numpy:

- :func:`n_step_transitions`: one episode chunk (a ``sample()`` call's piece of one episode)
  → its n-step transitions, in the actor;
- :class:`PrioritizedReplay`: a ring buffer of transitions with a sum tree over priorities;
  ``add``, ``sample`` and ``update_priorities`` are vectorised over the batch (one numpy
  operation per tree level), so a 64-transition minibatch costs tens of microseconds.

RLlib's ``PrioritizedEpisodeReplayBuffer`` stores episodes and builds a ``SingleAgentEpisode``
per sampled transition, then the learner connector pipeline turns them into a train batch:
~0.17 ms per sampled transition on the 2-core machine (docs/benchmarks.md, "Learner updates"),
i.e. ~11 ms per 64-transition update before any gradient is computed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PrioritizedReplay", "TRANSITION_KEYS", "n_step_td_errors", "n_step_transitions"]

#: Columns of a transition batch, by RLlib's names (``Columns``): observation, action, n-step
#: return, observation n steps later, whether the episode terminated within those n steps,
#: and n itself (shorter at a chunk's end).
TRANSITION_KEYS = ("obs", "actions", "rewards", "new_obs", "terminateds", "n_step")


def n_step_transitions(
    observations: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    terminated: bool,
    n: int,
    gamma: float,
) -> dict[str, np.ndarray]:
    """The n-step transitions of one episode chunk of T env steps.

    Transition t (0 ≤ t < T) bootstraps from the observation k = min(n, T − t) steps later:
    ``rewards[t] = Σ_{i<k} γ^i r_{t+i}``, ``new_obs[t] = o_{t+k}``, ``n_step[t] = k`` and
    ``terminateds[t]`` is true only when the episode terminated at the chunk's last step and
    t + k = T (a time-limit truncation or a chunk that continues in the next ``sample()`` call
    bootstraps). The last n − 1 transitions of a chunk use a shorter n instead of waiting for
    the next chunk; the target stays unbiased (``γ^k`` in RLlib's DQN loss).

    Args:
        observations: shape (T + 1, *obs_shape): o_0 .. o_T (the chunk's final observation
            included).
        actions: shape (T,).
        rewards: shape (T,), in the env's units.
        terminated: whether the episode terminated at the chunk's last step.
        n: n ≥ 1.
        gamma: discount in [0, 1].

    Returns:
        Arrays of length T keyed by :data:`TRANSITION_KEYS`; rewards float32, n_step float32.

    Raises:
        ValueError: mismatched lengths, n < 1, or γ outside [0, 1].
    """
    obs = np.asarray(observations)
    acts = np.asarray(actions)
    rews = np.asarray(rewards, dtype=np.float64)
    t_len = len(acts)
    if len(obs) != t_len + 1 or len(rews) != t_len:
        raise ValueError(
            f"n_step_transitions: need T+1 observations and T actions and rewards, "
            f"got {len(obs)}, {t_len}, {len(rews)}"
        )
    if n < 1 or not 0.0 <= gamma <= 1.0:
        raise ValueError(f"n_step_transitions: need n >= 1 and 0 <= gamma <= 1, got {n}, {gamma}")
    t = np.arange(t_len)
    k = np.minimum(n, t_len - t)
    ret = np.zeros(t_len)
    for i in range(min(n, t_len)):
        valid = i < k
        ret[valid] += gamma**i * rews[t[valid] + i]
    return {
        "obs": obs[:-1],
        "actions": acts,
        "rewards": ret.astype(np.float32),
        "new_obs": obs[t + k],
        "terminateds": bool(terminated) & (t + k == t_len),
        "n_step": k.astype(np.float32),
    }


def n_step_td_errors(
    q: np.ndarray,
    q_next: np.ndarray,
    transitions: dict[str, np.ndarray],
    gamma: float,
    reward_scale: float = 1.0,
) -> np.ndarray:
    """The n-step TD errors of a batch of transitions under one Q-network: what an Ape-X actor
    computes with its local copy of the network to give new transitions their initial priority
    (Horgan et al. 2018, section 3: "actors ... compute initial priorities").

    δ_i = s·R_i + γ^{n_i} (1 − d_i) max_a Q(s'_i, a) − Q(s_i, a_i), with R_i the n-step return
    in env units (``rewards``), s the learner's ``reward_scale``, n_i ``n_step`` and d_i
    ``terminateds``. One network for both terms, as the actors have no target network.

    Args:
        q: Q(s_i, ·), shape (m, A).
        q_next: Q(s'_i, ·), shape (m, A).
        transitions: the batch (:data:`TRANSITION_KEYS`), m rows.
        gamma: discount per env step.
        reward_scale: the learner's reward factor.

    Returns:
        δ, shape (m,).
    """
    q, q_next = np.asarray(q, dtype=np.float64), np.asarray(q_next, dtype=np.float64)
    actions = np.asarray(transitions["actions"]).astype(np.int64).reshape(-1)
    bootstrap = gamma ** np.asarray(transitions["n_step"], dtype=np.float64) * (
        1.0 - np.asarray(transitions["terminateds"], dtype=np.float64)
    )
    target = reward_scale * np.asarray(
        transitions["rewards"], dtype=np.float64
    ) + bootstrap * q_next.max(axis=-1)
    return target - q[np.arange(len(actions)), actions]


class PrioritizedReplay:
    """Proportional prioritized replay over n-step transitions (Schaul et al. 2016, section 3.3).

    P(i) = p_i / Σ_j p_j with p_i = (|δ_i| + ε)^α; new transitions enter with the TD errors
    they come with (Ape-X's actor-computed priorities) or else with the largest priority seen
    so far (so each is replayed at least once soon); sampling is stratified (one
    draw in each of ``batch_size`` equal slices of the total priority) and returns the
    importance-sampling weights w_i = (N · P(i))^−β, normalised by the batch's largest weight
    (as Dopamine's ``PrioritizedReplayBuffer`` does, instead of the buffer-wide maximum).
    α = 0 is uniform replay.

    Args:
        capacity: transitions kept (a ring buffer: the oldest is overwritten), ≥ 1.
        alpha: priority exponent α ≥ 0.
        beta: importance-sampling exponent β ≥ 0.
        eps: added to |δ| so that no transition has zero probability.
        seed: of the sampling generator.

    Raises:
        ValueError: capacity < 1, α < 0, β < 0 or ε ≤ 0.
    """

    def __init__(
        self,
        capacity: int,
        *,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        seed: int | None = None,
    ):
        if capacity < 1 or alpha < 0 or beta < 0 or eps <= 0:
            raise ValueError(
                f"PrioritizedReplay: need capacity >= 1, alpha >= 0, beta >= 0, "
                f"eps > 0; got {capacity}, {alpha}, {beta}, {eps}"
            )
        self.capacity = int(capacity)
        self.alpha, self.beta, self.eps = float(alpha), float(beta), float(eps)
        self._leaves = 1 << max(0, (self.capacity - 1).bit_length())  # power of two ≥ capacity
        self._tree = np.zeros(2 * self._leaves)  # node j's children: 2j, 2j+1; leaf i: j = L + i
        self._max_priority = 1.0
        self._data: dict[str, np.ndarray] | None = None
        self._next = 0
        self.size = 0
        self.added = 0  # transitions added, lifetime
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.size

    @property
    def total_priority(self) -> float:
        """Σ_i p_i^α over the stored transitions."""
        return float(self._tree[1])

    def priorities(self, indices: np.ndarray) -> np.ndarray:
        """p_i^α of the transitions at ``indices`` (shape (k,))."""
        return self._tree[self._leaves + np.asarray(indices)]

    def add(self, transitions: dict[str, np.ndarray], td_errors: np.ndarray | None = None) -> None:
        """Store a batch of transitions (arrays of equal length m keyed by
        :data:`TRANSITION_KEYS`), each with priority (|δ_i| + ε)^α from ``td_errors`` (shape
        (m,), e.g. :func:`n_step_td_errors`) or, without them, the largest priority so far.

        Raises:
            ValueError: missing keys, unequal lengths, shapes that differ from the first add,
                or TD errors of another length or not finite.
        """
        missing = [key for key in TRANSITION_KEYS if key not in transitions]
        if missing:
            raise ValueError(f"PrioritizedReplay.add: missing columns {missing}")
        m = len(transitions["actions"])
        if any(len(transitions[key]) != m for key in TRANSITION_KEYS):
            raise ValueError("PrioritizedReplay.add: columns of unequal length")
        if m == 0:
            return
        if td_errors is not None:
            td_errors = np.abs(np.asarray(td_errors, dtype=np.float64)).reshape(-1)
            if td_errors.shape != (m,) or not np.all(np.isfinite(td_errors)):
                raise ValueError(
                    f"PrioritizedReplay.add: {td_errors.shape[0]} TD errors for "
                    f"{m} transitions, or one not finite"
                )
        if self._data is None:
            self._data = {
                key: np.zeros(
                    (self.capacity, *np.shape(transitions[key])[1:]),
                    dtype=np.asarray(transitions[key]).dtype,
                )
                for key in TRANSITION_KEYS
            }
        for key in TRANSITION_KEYS:
            if np.shape(transitions[key])[1:] != self._data[key].shape[1:]:
                raise ValueError(
                    f"PrioritizedReplay.add: {key!r} has shape "
                    f"{np.shape(transitions[key])[1:]} per item, the buffer "
                    f"{self._data[key].shape[1:]}"
                )
        if m > self.capacity:  # only the newest `capacity` survive
            transitions = {key: np.asarray(v)[-self.capacity :] for key, v in transitions.items()}
            td_errors = td_errors[-self.capacity :] if td_errors is not None else None
            self.added += m - self.capacity
            m = self.capacity
        idx = (self._next + np.arange(m)) % self.capacity
        for key in TRANSITION_KEYS:
            self._data[key][idx] = transitions[key]
        self._next = int((self._next + m) % self.capacity)
        self.size = min(self.capacity, self.size + m)
        self.added += m
        if td_errors is None:
            self._set(idx, np.full(m, self._max_priority**self.alpha))
        else:
            p = td_errors + self.eps
            self._max_priority = max(self._max_priority, float(p.max()))
            self._set(idx, p**self.alpha)

    def sample(self, batch_size: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """A prioritized minibatch.

        Returns:
            (indices shape (batch_size,), importance weights shape (batch_size,) float32 in
            (0, 1], the transitions: arrays of length batch_size keyed by
            :data:`TRANSITION_KEYS`).

        Raises:
            ValueError: the buffer is empty or ``batch_size`` < 1.
        """
        if self.size == 0 or batch_size < 1:
            raise ValueError(
                f"PrioritizedReplay.sample: cannot sample {batch_size} from {self.size} transitions"
            )
        total = self._tree[1]
        bounds = (np.arange(batch_size) + self.rng.random(batch_size)) * (total / batch_size)
        indices = self._find(np.minimum(bounds, np.nextafter(total, 0)))
        probs = self._tree[self._leaves + indices] / total
        weights = (self.size * probs) ** (-self.beta)
        weights = (weights / weights.max()).astype(np.float32)
        return indices, weights, {key: v[indices] for key, v in self._data.items()}

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Set p_i = (|δ_i| + ε)^α for the transitions at ``indices`` (shape (k,)); where an
        index appears twice, the last δ wins.

        Raises:
            ValueError: shapes differ, or a δ is not finite.
        """
        indices = np.asarray(indices)
        td = np.abs(np.asarray(td_errors, dtype=np.float64)).reshape(-1)
        if indices.shape != td.shape:
            raise ValueError(f"update_priorities: {indices.shape} indices, {td.shape} TD errors")
        if not np.all(np.isfinite(td)):
            raise ValueError("update_priorities: a TD error is not finite")
        p = td + self.eps
        self._max_priority = max(self._max_priority, float(p.max(initial=0.0)))
        self._set(indices, p**self.alpha)

    # ------------------------------------------------------------------ sum tree
    def _set(self, indices: np.ndarray, values: np.ndarray) -> None:
        """Leaves ``indices`` ← ``values``, then every ancestor recomputed, level by level."""
        nodes = self._leaves + np.asarray(indices)
        self._tree[nodes] = values
        nodes = np.unique(nodes // 2)
        while nodes[0] >= 1:
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
            if nodes[0] == 1:
                break
            nodes = np.unique(nodes // 2)

    def _find(self, mass: np.ndarray) -> np.ndarray:
        """For each prefix sum in ``mass``, the leaf i with Σ_{j<i} p_j ≤ mass < Σ_{j≤i} p_j."""
        nodes = np.ones(len(mass), dtype=np.int64)
        mass = mass.copy()
        while nodes[0] < self._leaves:
            left = 2 * nodes
            go_right = mass >= self._tree[left]
            mass = np.where(go_right, mass - self._tree[left], mass)
            nodes = np.where(go_right, left + 1, left)
        # a leaf past the stored transitions has p = 0 and is reached only by rounding
        return np.minimum(nodes - self._leaves, self.size - 1)

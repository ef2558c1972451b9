"""Contoso Cabs: a cab driver choosing rides for one month, with an exact optimum.

The environment of the seed article (a driver in ``m`` cities; revenue per passenger hour R,
cost per driving hour C; ride times from a fixed random matrix; Poisson ride requests), with
its day-rollover bug fixed: a trip of 48 hours or more now advances the day by
``hour // 24`` instead of at most one.

Rules (m cities, time matrix ``T[src, dst, hour, day]`` in hours, integers in [1, 23]):

- State ``(location, hour, day)``; observation = float32 one-hot ``[location | hour | day]``
  of length ``m + 24 + 7``.
- Action ``i`` in ``Discrete(m * m)`` means the ride ``(p, q) = (i // m, i % m)``:

  - ``p == q``: no ride; the driver idles 1 hour where it is; reward ``-C``.
  - ``p == location``: the trip takes ``t = T[p, q, hour, day]``; reward ``R*t - C*t``.
  - otherwise the driver first drives to p (``t1 = T[location, p, hour, day]``), then the trip
    takes ``t2 = T[p, q, hour', day']`` at the arrival time; reward ``R*t2 - C*(t1 + t2)``.

- The episode (one month) terminates when the elapsed hours reach ``episode_hours`` (720).
  The last ride is paid in full even if it ends after the month.
- With ``requests=True`` only the rides requested at the driver's location are offered
  (``min(Poisson(lambda_location), 15)`` rides drawn without replacement; "no ride" is always
  offered); the observation gets the 0/1 offer mask appended, and an unoffered ride counts as
  "no ride".

Because the ``requests=False`` env is deterministic given its start state, its optimal expected
return is computed exactly by backward induction (:func:`solve`, :func:`optimal_return`), so a
training target such as "95 % of optimal" means something.
"""

from __future__ import annotations

import math
import numbers
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_CONFIG",
    "REQUEST_RATES",
    "CabsConfig",
    "ContosoCabs",
    "Solution",
    "greedy_policy",
    "greedy_return",
    "optimal_return",
    "random_return",
    "resolve_config",
    "solve",
]

HOURS_PER_DAY = 24
DAYS_PER_WEEK = 7
#: Mean ride requests per decision at cities 0-4 (the seed article's Poisson rates); city i
#: uses ``REQUEST_RATES[i % 5]``.
REQUEST_RATES = (2.0, 12.0, 4.0, 7.0, 8.0)
#: The seed caps the number of requests per decision at 15.
MAX_REQUESTS = 15
#: Bounds of a ride time in hours (the seed draws ``randint(1, 24)``).
MIN_TRIP_HOURS, MAX_TRIP_HOURS = 1, 23

#: Every config key the env accepts, with its default.
DEFAULT_CONFIG: dict[str, Any] = {
    "num_cities": 5,  # m; ignored in favour of the matrix's shape when time_matrix is given
    "time_matrix": None,  # array-like (m, m, 24, 7) of hours in [1, 23]; None = draw one
    "time_matrix_seed": 0,  # seed of numpy.random.default_rng that draws the matrix
    "revenue_per_hour": 9.0,  # R, dollars per passenger hour
    "cost_per_hour": 5.0,  # C, dollars per driving (or idle) hour
    "episode_hours": 720,  # one month
    "requests": False,  # True: Poisson ride requests restrict the offered rides
}
CONFIG_KEYS = frozenset(DEFAULT_CONFIG)


# ---------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CabsConfig:
    """A validated Contoso Cabs configuration (see :func:`resolve_config`).

    Attributes:
        num_cities: m, number of cities (≥ 2).
        time_matrix: int64 array (m, m, 24, 7), read-only: ``T[src, dst, hour, day]`` in hours.
        revenue_per_hour: R, dollars per passenger hour.
        cost_per_hour: C, dollars per hour driven or idled.
        episode_hours: hours in an episode (720 = one month).
        requests: whether Poisson ride requests restrict the offered rides.
    """

    num_cities: int
    time_matrix: np.ndarray
    revenue_per_hour: float
    cost_per_hour: float
    episode_hours: int
    requests: bool

    @property
    def key(self) -> tuple:
        """Hashable identity of the dynamics (for caches)."""
        return (
            self.num_cities,
            self.time_matrix.tobytes(),
            self.revenue_per_hour,
            self.cost_per_hour,
            self.episode_hours,
            self.requests,
        )


def _as_int(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"Contoso Cabs config {key!r}: expected an integer, got {value!r}")
    if not float(value).is_integer():
        raise ValueError(f"Contoso Cabs config {key!r}: expected an integer, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"Contoso Cabs config {key!r}: must be ≥ {minimum}, got {value!r}")
    return int(value)


def _as_rate(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"Contoso Cabs config {key!r}: expected a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            f"Contoso Cabs config {key!r}: must be finite and ≥ 0 dollars/hour, got {value!r}"
        )
    return float(value)


def resolve_config(config: Mapping[str, Any] | None = None) -> CabsConfig:
    """Validate a Contoso Cabs config dict and fill in defaults (see :data:`DEFAULT_CONFIG`).

    Args:
        config: the keys of :data:`DEFAULT_CONFIG`, any subset (RLlib's ``EnvContext`` works).
            ``time_matrix`` (array-like, shape (m, m, 24, 7), integer hours in [1, 23]) wins over
            ``time_matrix_seed``; otherwise the matrix is
            ``numpy.random.default_rng(time_matrix_seed).integers(1, 24, (m, m, 24, 7))``.

    Returns:
        The validated :class:`CabsConfig`.

    Raises:
        ValueError: naming the key, for an unknown key, a wrong type, ``num_cities < 2``, a
            matrix of the wrong shape or with hours outside [1, 23], a negative rate, or
            ``episode_hours < 1``.
    """
    config = {} if config is None else config
    if not isinstance(config, Mapping):
        raise ValueError(f"Contoso Cabs config: expected a dict, got {type(config).__name__}")
    unknown = sorted(set(config) - CONFIG_KEYS)
    if unknown:
        raise ValueError(
            f"Contoso Cabs config {unknown[0]!r}: unknown key (known: {', '.join(sorted(CONFIG_KEYS))})"
        )
    cfg = {**DEFAULT_CONFIG, **config}

    requests = cfg["requests"]
    if not isinstance(requests, (bool, np.bool_)):
        raise ValueError(f"Contoso Cabs config 'requests': expected True/False, got {requests!r}")
    revenue = _as_rate("revenue_per_hour", cfg["revenue_per_hour"])
    cost = _as_rate("cost_per_hour", cfg["cost_per_hour"])
    episode_hours = _as_int("episode_hours", cfg["episode_hours"], 1)

    if cfg["time_matrix"] is None:
        m = _as_int("num_cities", cfg["num_cities"], 2)
        seed = _as_int("time_matrix_seed", cfg["time_matrix_seed"], 0)
        shape = (m, m, HOURS_PER_DAY, DAYS_PER_WEEK)
        _check_fits(
            "num_cities", m, "its travel-time matrix (m² × 24 × 7 int64)", 8 * math.prod(shape)
        )
        matrix = np.random.default_rng(seed).integers(
            MIN_TRIP_HOURS, MAX_TRIP_HOURS + 1, size=shape
        )
    else:
        try:
            raw = np.asarray(cfg["time_matrix"])
        except (ValueError, TypeError) as e:  # ragged nested lists
            raise ValueError(f"Contoso Cabs config 'time_matrix': not an array ({e})") from None
        m = raw.shape[0] if raw.ndim == 4 else -1
        if raw.ndim != 4 or raw.shape != (m, m, HOURS_PER_DAY, DAYS_PER_WEEK) or m < 2:
            raise ValueError(
                "Contoso Cabs config 'time_matrix': expected shape (m, m, 24, 7) with m ≥ 2, "
                f"got {raw.shape}"
            )
        if "num_cities" in config and _as_int("num_cities", config["num_cities"], 2) != m:
            raise ValueError(
                f"Contoso Cabs config 'num_cities': {config['num_cities']} disagrees with "
                f"time_matrix's {m} cities"
            )
        if raw.dtype.kind not in "iuf" or (
            raw.dtype.kind == "f" and not np.all(raw == np.round(raw))
        ):
            raise ValueError("Contoso Cabs config 'time_matrix': hours must be integers")
        if raw.min() < MIN_TRIP_HOURS or raw.max() > MAX_TRIP_HOURS:
            raise ValueError(
                "Contoso Cabs config 'time_matrix': hours must lie in [1, 23], "
                f"got [{raw.min()}, {raw.max()}]"
            )
        matrix = raw.astype(np.int64)
    matrix.setflags(write=False)
    return CabsConfig(
        num_cities=m,
        time_matrix=matrix,
        revenue_per_hour=revenue,
        cost_per_hour=cost,
        episode_hours=episode_hours,
        requests=bool(requests),
    )


# ---------------------------------------------------------------------------------------------
# Dynamics tables, shared by the env's step and the exact solver
# ---------------------------------------------------------------------------------------------


def _state_index(location, hour, day):
    """Flat state index of (location, hour, day): ``(location * 24 + hour) * 7 + day``."""
    return (location * HOURS_PER_DAY + hour) * DAYS_PER_WEEK + day


@dataclass(frozen=True, eq=False)
class _Dynamics:
    """Deterministic transition tables over S = m*24*7 states and A = m*m actions.

    reward: float64 (S, A) dollars; duration: int64 (S, A) hours; next_state: int64 (S, A).
    """

    reward: np.ndarray
    duration: np.ndarray
    next_state: np.ndarray


def memory_bytes() -> int | None:
    """This machine's physical memory in bytes (``sysconf``), or None where unknown."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


class ConfigTooLarge(ValueError):
    """A Contoso Cabs config whose arrays would not fit in this machine's memory."""


def _check_fits(key: str, m: int, what: str, need: int) -> None:
    """Refuse, before allocating it, an array larger than this machine's memory.

    Raises:
        ConfigTooLarge: one line naming the config key, the size needed and the memory there
            is.
    """
    have = memory_bytes()
    if have is not None and need > have:
        raise ConfigTooLarge(
            f"Contoso Cabs config '{key}': {m} cities need ~{need / 2**30:,.1f} "
            f"GiB for {what}, more than this machine's {have / 2**30:.1f} GiB "
            "of memory"
        )


#: int64/float64 arrays of shape (m × 24 × 7, m²) the exact solve (:func:`_dynamics`) holds at
#: once, at most.
_SOLVE_ARRAYS = 10


_TRANSITION_TABLES: OrderedDict[tuple, list[list[tuple[float, int, int]]]] = OrderedDict()


def _transition_table(cfg: CabsConfig) -> list[list[tuple[float, int, int]]]:
    """``table[state][action] = (reward, next_state, hours)``, the list form of
    :func:`_dynamics` that ``step()`` reads. Built once per dynamics (``cfg.key``) and process
    and shared by its envs, which only read it: an env runner makes 8-16 envs, and each spent
    ~20 ms building its own copy (8 most recent dynamics kept)."""
    key = cfg.key
    table = _TRANSITION_TABLES.get(key)
    if table is None:
        dyn = _dynamics(cfg)
        table = [
            list(zip(r, n, d, strict=True))
            for r, n, d in zip(
                dyn.reward.tolist(), dyn.next_state.tolist(), dyn.duration.tolist(), strict=True
            )
        ]
        _TRANSITION_TABLES[key] = table
        while len(_TRANSITION_TABLES) > 8:
            _TRANSITION_TABLES.popitem(last=False)
    else:
        _TRANSITION_TABLES.move_to_end(key)
    return table


def _dynamics(cfg: CabsConfig) -> _Dynamics:
    m, T = cfg.num_cities, cfg.time_matrix
    _check_fits(
        "num_cities",
        m,
        "the exact optimum's dynamics (m³ × 24 × 7 per table)",
        _SOLVE_ARRAYS * 8 * m**3 * HOURS_PER_DAY * DAYS_PER_WEEK,
    )
    R, C = cfg.revenue_per_hour, cfg.cost_per_hour
    loc = np.arange(m)[:, None, None, None]
    hour = np.arange(HOURS_PER_DAY)[None, :, None, None]
    day = np.arange(DAYS_PER_WEEK)[None, None, :, None]
    action = np.arange(m * m)[None, None, None, :]
    p, q = action // m, action % m

    # Leg 1: drive empty to the pickup p (0 hours when already there).
    t1 = np.where(p == loc, 0, T[loc, p, hour, day])
    hour1 = (hour + t1) % HOURS_PER_DAY
    day1 = (day + (hour + t1) // HOURS_PER_DAY) % DAYS_PER_WEEK
    # Leg 2: the paid trip p -> q, its time looked up at the arrival time at p.
    t2 = T[p, q, hour1, day1]
    no_ride = p == q
    duration = np.where(no_ride, 1, t1 + t2)
    reward = np.where(no_ride, -C, R * t2 - C * (t1 + t2)).astype(np.float64)
    end_loc = np.where(no_ride, loc, q)
    end_hour = (hour + duration) % HOURS_PER_DAY
    end_day = (day + (hour + duration) // HOURS_PER_DAY) % DAYS_PER_WEEK  # the seed's bug, fixed
    next_state = _state_index(end_loc, end_hour, end_day)

    shape = (m * HOURS_PER_DAY * DAYS_PER_WEEK, m * m)
    return _Dynamics(
        reward=np.broadcast_to(reward, (m, HOURS_PER_DAY, DAYS_PER_WEEK, m * m)).reshape(shape),
        duration=np.broadcast_to(duration, (m, HOURS_PER_DAY, DAYS_PER_WEEK, m * m)).reshape(shape),
        next_state=np.broadcast_to(next_state, (m, HOURS_PER_DAY, DAYS_PER_WEEK, m * m)).reshape(
            shape
        ),
    )


# ---------------------------------------------------------------------------------------------
# The environment
# ---------------------------------------------------------------------------------------------


class ContosoCabs(gym.Env):
    """Contoso Cabs as a gymnasium env (module docstring: rules and rewards).

    Construct with a config dict (as RLlib passes ``env_config``), keyword args, or both
    (keywords win): ``ContosoCabs({"num_cities": 3})``, ``gym.make("ContosoCabs-v0",
    num_cities=3)``.

    Spaces (m cities):
        observation: ``Box(0, 1, (m + 31,), float32)``; with ``requests=True``
        ``Box(0, 1, (m + 31 + m*m,), float32)`` (one-hot state, then the offer mask).
        action: ``Discrete(m * m)``; ``i -> (pickup i // m, drop i % m)``.

    ``reset(options={"location": l, "hour": h, "day": d})`` starts from a given state
    (all three keys); otherwise the start state is uniform over (location, hour, day), drawn
    from ``self.np_random`` so ``reset(seed=...)`` reproduces an episode.

    ``info`` (reset and step): ``location``, ``hour``, ``day``, ``elapsed_hours`` (ints); with
    ``requests=True`` also ``action_mask`` (int8 (m*m,), 1 = offered).

    Raises:
        ValueError: bad config (see :func:`resolve_config`), an action outside
            ``Discrete(m*m)``, or bad reset options.
    """

    metadata = {"render_modes": []}

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any):
        self.config = resolve_config({**(config or {}), **kwargs})
        m = self.config.num_cities
        self._m = m
        self._num_actions = m * m
        self._episode_hours = self.config.episode_hours
        self._requests = self.config.requests
        num_states = m * HOURS_PER_DAY * DAYS_PER_WEEK
        self._num_states = num_states

        state_dim = m + HOURS_PER_DAY + DAYS_PER_WEEK
        obs_dim = state_dim + (self._num_actions if self._requests else 0)
        self.observation_space = spaces.Box(0.0, 1.0, (obs_dim,), np.float32)
        self.action_space = spaces.Discrete(self._num_actions)

        # Precomputed per-state tables: the hot path of step() is list lookups only.
        self._coords = [
            (
                s // (HOURS_PER_DAY * DAYS_PER_WEEK),
                (s // DAYS_PER_WEEK) % HOURS_PER_DAY,
                s % DAYS_PER_WEEK,
            )
            for s in range(num_states)
        ]
        onehot = np.zeros((num_states, state_dim), np.float32)
        for s, (loc, hour, day) in enumerate(self._coords):
            onehot[s, [loc, m + hour, m + HOURS_PER_DAY + day]] = 1.0
        self._onehot = onehot
        self._obs = list(onehot)  # row views; step() returns a copy
        self._transitions = _transition_table(self.config)
        # Requests: the m*(m-1) real rides and the "no ride" actions (p == q).
        actions = np.arange(self._num_actions)
        self._rides = actions[actions // m != actions % m]
        self._no_ride_mask = (actions // m == actions % m).astype(np.int8)
        self._rates = [REQUEST_RATES[i % len(REQUEST_RATES)] for i in range(m)]

        self._state = 0
        self._elapsed = 0
        self._mask: np.ndarray | None = None

    # -- requests ------------------------------------------------------------------------------

    def _draw_requests(self, location: int) -> np.ndarray:
        """Offer mask (int8 (m*m,)) for a decision at ``location`` (the seed's Poisson model)."""
        rng = self.np_random
        k = min(int(rng.poisson(self._rates[location])), MAX_REQUESTS, len(self._rides))
        mask = self._no_ride_mask.copy()
        mask[rng.choice(self._rides, size=k, replace=False)] = 1
        return mask

    def _observe(self, state: int, elapsed: int) -> tuple[np.ndarray, dict[str, Any]]:
        loc, hour, day = self._coords[state]
        info = {"location": loc, "hour": hour, "day": day, "elapsed_hours": elapsed}
        if not self._requests:
            return self._obs[state].copy(), info
        self._mask = self._draw_requests(loc)
        info["action_mask"] = self._mask.copy()
        obs = np.concatenate([self._onehot[state], self._mask.astype(np.float32)])
        return obs, info

    # -- gymnasium API -------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a month; see the class docstring for ``options``. Returns (obs, info)."""
        super().reset(seed=seed)
        if options and any(k in options for k in ("location", "hour", "day")):
            try:
                loc, hour, day = (int(options[k]) for k in ("location", "hour", "day"))
            except KeyError as e:
                raise ValueError(
                    f"ContosoCabs.reset options: {e.args[0]!r} missing "
                    "(give location, hour and day together)"
                ) from None
            if not (0 <= loc < self._m and 0 <= hour < HOURS_PER_DAY and 0 <= day < DAYS_PER_WEEK):
                raise ValueError(
                    f"ContosoCabs.reset options: state {(loc, hour, day)} outside "
                    f"locations 0..{self._m - 1}, hours 0..23, days 0..6"
                )
            self._state = _state_index(loc, hour, day)
        else:
            self._state = int(self.np_random.integers(self._num_states))
        self._elapsed = 0
        return self._observe(self._state, 0)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Take ride ``action``; returns (obs, reward in dollars, terminated, False, info)."""
        a = int(action)
        if not 0 <= a < self._num_actions:
            raise ValueError(
                f"ContosoCabs.step: action {action!r} outside Discrete({self._num_actions})"
            )
        state = self._state
        if self._requests and not self._mask[a]:
            a = self._coords[state][0] * (self._m + 1)  # an unoffered ride counts as "no ride"
        reward, state, hours = self._transitions[state][a]
        self._state = state
        self._elapsed = elapsed = self._elapsed + hours
        obs, info = self._observe(state, elapsed)
        return obs, reward, elapsed >= self._episode_hours, False, info


# ---------------------------------------------------------------------------------------------
# Exact solution by backward induction
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Solution:
    """Optimal values and policy of a deterministic (``requests=False``) Contoso Cabs instance.

    The state of the finite-horizon problem is (elapsed hours e, location, hour, day); values
    for e ≥ episode_hours are 0 (the episode has ended).

    Attributes:
        config: the instance solved.
        values: float64 (episode_hours, m, 24, 7): optimal expected return-to-go, dollars.
        policy: int64 (episode_hours, m, 24, 7): an optimal action (lowest index on ties).
        optimal_return: mean of ``values[0]`` over the uniform start-state distribution.
    """

    config: CabsConfig
    values: np.ndarray
    policy: np.ndarray
    optimal_return: float
    _dynamics: _Dynamics
    _padded_values: np.ndarray  # (episode_hours + max duration, S), zeros past the horizon

    def q_values(self, elapsed_hours: int, location: int, hour: int, day: int) -> np.ndarray:
        """Optimal action values, float64 (m*m,), dollars: ``r(s, a) + V(e + dur, s')``.

        Raises:
            ValueError: if elapsed_hours is outside [0, episode_hours).
        """
        if not 0 <= elapsed_hours < self.config.episode_hours:
            raise ValueError(
                f"Solution.q_values: elapsed_hours {elapsed_hours} outside "
                f"[0, {self.config.episode_hours})"
            )
        s = _state_index(location, hour, day)
        dyn = self._dynamics
        return (
            dyn.reward[s] + self._padded_values[elapsed_hours + dyn.duration[s], dyn.next_state[s]]
        )

    def action(self, elapsed_hours: int, location: int, hour: int, day: int) -> int:
        """An optimal action at the given state (``policy[e, location, hour, day]``)."""
        return int(self.policy[elapsed_hours, location, hour, day])


def _backward_induction(
    dyn: _Dynamics, horizon: int, policy: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Finite-horizon backward induction over (elapsed hours, state).

    ``V(e, s) = max_a [r(s, a) + V(e + d(s, a), s'(s, a))]`` for ``e < horizon``, ``V = 0``
    beyond (Bellman 1957; Puterman, *Markov Decision Processes*, 1994, §4.5). With ``policy``
    (float (S, A), action probabilities) the max becomes the policy's expectation (policy
    evaluation).

    Returns:
        (padded values float64 (horizon + max d, S), greedy actions int64 (horizon, S)).
    """
    num_states = dyn.reward.shape[0]
    padded = np.zeros((horizon + int(dyn.duration.max()), num_states))
    flat = padded.ravel()
    offsets = dyn.duration * num_states + dyn.next_state  # flat index of V(e + d, s') at e = 0
    actions = np.zeros((horizon, num_states), np.int64)
    for e in range(horizon - 1, -1, -1):
        q = dyn.reward + flat.take(offsets + e * num_states)
        if policy is None:
            actions[e] = q.argmax(axis=1)
            padded[e] = q[np.arange(num_states), actions[e]]
        else:
            padded[e] = (q * policy).sum(axis=1)
    return padded, actions


# Solutions hold ~10 MB each (m=5): keep a few; optimal returns (floats) are kept for good.
_SOLUTIONS: OrderedDict[tuple, Solution] = OrderedDict()
_SOLUTIONS_KEPT = 4
_OPTIMAL_RETURNS: dict[tuple, float] = {}


def _deterministic(config: Mapping[str, Any] | CabsConfig | None, what: str) -> CabsConfig:
    cfg = config if isinstance(config, CabsConfig) else resolve_config(config)
    if cfg.requests:
        raise ValueError(
            f"Contoso Cabs config 'requests': {what} is exact only for the deterministic env "
            "(requests=False)"
        )
    return cfg


def solve(config: Mapping[str, Any] | CabsConfig | None = None) -> Solution:
    """Solve a deterministic Contoso Cabs instance exactly (cached per config).

    Args:
        config: an env config dict (see :func:`resolve_config`) with ``requests`` False.

    Returns:
        The :class:`Solution` (values, policy, Q-values, optimal return in dollars).

    Raises:
        ValueError: for a bad config or ``requests=True``.
    """
    cfg = _deterministic(config, "solve")
    cached = _SOLUTIONS.get(cfg.key)
    if cached is not None:
        _SOLUTIONS.move_to_end(cfg.key)
        return cached
    dyn = _dynamics(cfg)
    padded, actions = _backward_induction(dyn, cfg.episode_hours)
    shape = (cfg.episode_hours, cfg.num_cities, HOURS_PER_DAY, DAYS_PER_WEEK)
    values = padded[: cfg.episode_hours].reshape(shape)
    policy = actions.reshape(shape)
    values.setflags(write=False)
    policy.setflags(write=False)
    solution = Solution(
        config=cfg,
        values=values,
        policy=policy,
        optimal_return=float(values[0].mean()),
        _dynamics=dyn,
        _padded_values=padded,
    )
    _SOLUTIONS[cfg.key] = solution
    if len(_SOLUTIONS) > _SOLUTIONS_KEPT:
        _SOLUTIONS.popitem(last=False)
    _OPTIMAL_RETURNS[cfg.key] = solution.optimal_return
    return solution


def optimal_return(config: Mapping[str, Any] | CabsConfig | None = None) -> float:
    """Expected optimal undiscounted episode return (dollars) over the uniform start state.

    Exact, by backward induction over (elapsed hours, location, hour, day); about 0.1 s for
    the default m=5, 720-hour month, then cached per config. See :func:`solve`.

    Raises:
        ValueError: for a bad config or ``requests=True``.
    """
    cfg = _deterministic(config, "optimal_return")
    cached = _OPTIMAL_RETURNS.get(cfg.key)
    return cached if cached is not None else solve(cfg).optimal_return


def greedy_policy(config: Mapping[str, Any] | CabsConfig | None = None) -> np.ndarray:
    """The myopic (greedy) policy: the ride with the largest immediate reward.

    Ignores where and when the ride ends; ties go to the lowest action index.

    Returns:
        int64 (m, 24, 7): the greedy action at each (location, hour, day).

    Raises:
        ValueError: for a bad config or ``requests=True``.
    """
    cfg = _deterministic(config, "greedy_policy")
    actions = _dynamics(cfg).reward.argmax(axis=1)
    return actions.reshape(cfg.num_cities, HOURS_PER_DAY, DAYS_PER_WEEK)


def greedy_return(config: Mapping[str, Any] | CabsConfig | None = None) -> float:
    """Expected episode return (dollars) of :func:`greedy_policy`, exactly.

    Evaluated by backward induction over the uniform start-state distribution.

    Raises:
        ValueError: for a bad config or ``requests=True``.
    """
    cfg = _deterministic(config, "greedy_return")
    dyn = _dynamics(cfg)
    policy = np.zeros_like(dyn.reward)
    policy[np.arange(policy.shape[0]), greedy_policy(cfg).ravel()] = 1.0
    padded, _ = _backward_induction(dyn, cfg.episode_hours, policy)
    return float(padded[0].mean())


def random_return(
    config: Mapping[str, Any] | None = None, episodes: int | None = None, seed: int = 0
) -> float:
    """Expected episode return (dollars) of the uniform random policy over ``Discrete(m*m)``.

    Args:
        config: env config dict.
        episodes: None → the exact expectation by backward induction (``requests=False``
            only); an int → the Monte Carlo mean over that many simulated episodes (any config;
            with ``requests=True`` an unoffered random ride counts as "no ride", as in the env).
        seed: seeds the Monte Carlo episodes (resets and actions).

    Raises:
        ValueError: for a bad config, ``episodes < 1``, or ``episodes=None`` with
            ``requests=True``.
    """
    if episodes is None:
        cfg = _deterministic(config, "random_return with episodes=None")
        dyn = _dynamics(cfg)
        policy = np.full(dyn.reward.shape, 1.0 / dyn.reward.shape[1])
        padded, _ = _backward_induction(dyn, cfg.episode_hours, policy)
        return float(padded[0].mean())
    if isinstance(episodes, bool) or not isinstance(episodes, numbers.Integral) or episodes < 1:
        raise ValueError(f"random_return: 'episodes' must be an integer ≥ 1, got {episodes!r}")
    env = ContosoCabs(config)
    env.action_space.seed(seed)
    total = 0.0
    for i in range(episodes):
        env.reset(seed=seed + i)
        terminated = False
        while not terminated:
            _, reward, terminated, _, _ = env.step(env.action_space.sample())
            total += reward
    return total / episodes

"""The registry: which algorithms a sweep can choose, and the one entry point that turns a flat
trial config into an RLlib ``AlgorithmConfig``.

Example:
    >>> from sweeps.engine.algorithms import build_config
    >>> config = build_config({"algorithm": "PPO", "num_env_runners": 1}, "CartPole-v1")
    >>> algo = config.build_algo()          # needs a running Ray (ray.init) # doctest: +SKIP
    >>> algo.train()["env_runners"]["episode_return_mean"]                    # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sweeps.engine.algorithms import apex, appo, dqn, gorila, impala, ppo, seed
from sweeps.engine.algorithms.learner_clock import UPDATE_CPU_KEY
from sweeps.engine.algorithms.rllib_any import GENERIC, OFFLINE, generic_spec
from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, apply_params, canonical_params
from sweeps.engine.rundir.schema import as_float

__all__ = [
    "ALGORITHMS",
    "REFUSED",
    "build_config",
    "extract_metrics",
    "known_params",
    "register_with_tune",
]

#: Every algorithm a sweep can name → its :class:`~sweeps.engine.algorithms.vocabulary.AlgorithmSpec`.
ALGORITHMS: dict[str, AlgorithmSpec] = {
    s.name: s
    for s in (
        dqn.SPEC,
        apex.SPEC,
        impala.SPEC,
        ppo.SPEC,
        appo.SPEC,
        seed.SPEC,
        gorila.SPEC,
        dqn.RLLIB_DQN_SPEC,
        *(generic_spec(n) for n in GENERIC),
    )
}

#: RLlib algorithms a sweep cannot name → why (:data:`sweeps.engine.algorithms.rllib_any.OFFLINE`).
REFUSED: dict[str, str] = dict(OFFLINE)


def _spec(algorithm: Any) -> AlgorithmSpec:
    spec = ALGORITHMS.get(algorithm) if isinstance(algorithm, str) else None
    if spec is None:
        if algorithm in REFUSED:
            raise ValueError(f"algorithm {algorithm!r} is {REFUSED[algorithm]}")
        raise ValueError(f"unknown algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})")
    return spec


def known_params(algorithm: str) -> frozenset[str]:
    """Keys a trial config of ``algorithm`` may hold: the shared vocabulary, the RLlib keys
    common to all algorithms and the algorithm's own keys (besides ``"algorithm"``).

    Raises:
        ValueError: for an unknown algorithm, naming the known ones.
    """
    return _spec(algorithm).known_params()


def _limit_torch_threads(algorithm, **kwargs) -> None:
    """RLlib ``on_algorithm_init`` callback: torch in the driver uses as many threads as the
    driver has CPUs (``num_cpus_for_main_process``, at least 1).

    Why: on a small machine torch's default (one thread per core) makes the learner's
    threads fight the env runners for cores: a 64-transition DQN update took 11 ms with 2
    threads and 2 ms with 1 on a loaded 2-core machine (docs/benchmarks.md).
    """
    import torch

    torch.set_num_threads(max(1, int(algorithm.config.num_cpus_for_main_process)))


def _register_envs() -> None:
    try:
        import envs
    except ImportError:  # pragma: no cover - envs is part of this project
        return
    register = getattr(envs, "register_rllib_envs", None)
    if register is not None:
        register()


def build_config(
    trial_config: Mapping[str, Any], env: str, env_config: Mapping[str, Any] | None = None
):
    """The RLlib ``AlgorithmConfig`` of one trial.

    Args:
        trial_config: flat dict with ``"algorithm"`` plus vocabulary keys (see
            :data:`sweeps.engine.algorithms.vocabulary.SHARED_PARAMS` and :func:`known_params`). Keys
            it does not set take the preset of the algorithm on ``env``, if any, else the
            algorithm's library defaults (``ALGORITHMS[name].defaults``; :mod:`sweeps.engine.presets`).
        env: gymnasium id or RLlib-registered env name, e.g. ``"ContosoCabs-v0"``.
        env_config: the env's config dict (RLlib ``env_config``).

    Returns:
        A new-API-stack ``AlgorithmConfig``; ``config.build_algo()`` builds the Algorithm and
        ``config.algo_class.default_resource_request(config)`` is its Tune resource request
        (driver + env runners + learners).

    Raises:
        ValueError: no or an unknown ``algorithm`` (naming the known ones), a vocabulary
            value of the wrong type or range, or both
            the old and the current name of one parameter (``num_workers`` is accepted as
            ``num_env_runners`` with a notice, :data:`~sweeps.engine.algorithms.vocabulary.DEPRECATED_NAMES`).
        UnknownParameterError: (a ValueError) a key the algorithm does not know.
    """
    if not isinstance(trial_config, Mapping):
        raise ValueError(f"trial config must be a dict, got {type(trial_config).__name__}")
    params = canonical_params(trial_config, "trial config")
    if "algorithm" not in params:
        raise ValueError(f"trial config has no 'algorithm' key (one of: {', '.join(ALGORITHMS)})")
    spec = _spec(params.pop("algorithm"))
    known = spec.known_params()
    for key in params:  # before merging defaults, so the error names the user's key
        if key not in known:
            from sweeps.engine.algorithms.vocabulary import UnknownParameterError

            raise UnknownParameterError(key, spec.name, known)

    _register_envs()
    config = spec.make_config()
    import envs
    from sweeps.engine.presets import preset_values

    preset = preset_values(spec.name, env)  # keyed by the env id as the sweep names it

    recover = params.get("recover_env_faults", spec.defaults.get("recover_env_faults", True))
    if recover:  # each sub-env re-made alone when it raises (sweeps.engine.env_faults)
        from sweeps.engine.env_faults import on_episode_end, register_recovering_env

        timeout = params.get("env_step_timeout_s")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ValueError(
                f"parameter 'env_step_timeout_s' for algorithm {spec.name} must "
                f"be a positive number of seconds or None, got {timeout!r}"
            )
        env = register_recovering_env(env, timeout)
        config.callbacks(on_episode_end=on_episode_end)
    elif envs.split_step_cost(env_config)[0]:  # RLlib's gymnasium.make would not take the keys
        env = envs.register_step_cost_env(env)
    elif ":" in env:  # a user's module: RLlib's fallback cannot call a factory
        env = envs.register_form_env(env)
    config.environment(env, env_config=dict(env_config or {}))
    config.framework("torch")
    config.api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
    # Iterations end by wall-clock (min_time_s_per_iteration), not after RLlib's default 1000
    # sampled env steps (DQN), so time-to-target has a resolution of ~1 s for every algorithm.
    config.reporting(min_sample_timesteps_per_iteration=0, min_train_timesteps_per_iteration=0)
    # No system-usage thread: Tune's UtilMonitor polls psutil every 0.7 s in the trial process,
    # for a "perf" result the suite never records, and Trainable.stop() joins it, i.e. waits
    # out its sleep: 0.02-0.70 s per trial between trials (benchmarks.md, "Time to answer").
    config.debugging(log_sys_usage=False)
    config.callbacks(on_algorithm_init=_limit_torch_threads)
    return apply_params(config, spec, {**spec.defaults, **preset, **params})


def _get(d: Any, *keys: str, default: Any = math.nan) -> Any:
    for k in keys:
        if not isinstance(d, Mapping) or k not in d:
            return default
        d = d[k]
    return d


def _count(x: Any) -> int:
    """A lifetime count; 0 where RLlib reports none (or not a number)."""
    v = as_float(x)
    return int(v) if math.isfinite(v) else 0


def _learner_updates(result: Mapping[str, Any]) -> float:
    """Lifetime gradient updates: the replay data path's count (DQN, APEX), else minibatch
    steps trained / minibatch size, per learner."""
    replay_updates = _get(result, "replay", "learner_updates_lifetime")
    if not (isinstance(replay_updates, float) and math.isnan(replay_updates)):
        return as_float(replay_updates)
    learners = result.get("learners")
    if not isinstance(learners, Mapping):
        return math.nan
    updates = 0.0
    found = False
    for module_id, stats in learners.items():
        if module_id == "__all_modules__" or not isinstance(stats, Mapping):
            continue
        steps = as_float(stats.get("num_module_steps_trained_lifetime"))
        size = as_float(stats.get("module_train_batch_size_mean"))
        if math.isfinite(steps) and math.isfinite(size) and size > 0:
            updates += steps / size
            found = True
    if not found:
        return math.nan
    num_learners = _get(result, "config", "num_learners", default=0)
    return updates / max(1, int(num_learners or 0))


def _noise_scale(result: Mapping[str, Any]) -> dict[str, float]:
    """The learner's gradient noise scale (:mod:`sweeps.engine.algorithms.noise_scale`) of the first
    module that logged one; NaN for each key otherwise."""
    out = {"grad_noise_scale": math.nan, "grad_norm_sq": math.nan, "grad_trace_cov": math.nan}
    learners = result.get("learners")
    if isinstance(learners, Mapping):
        for module_id, stats in learners.items():
            if (
                module_id != "__all_modules__"
                and isinstance(stats, Mapping)
                and ("grad_noise_scale" in stats)
            ):
                return {k: as_float(stats.get(k, math.nan)) for k in out}
    return out


def extract_metrics(algorithm: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """The project's per-iteration metrics from one ``Algorithm.train()`` result.

    Returns:
        ``env_steps`` (int, lifetime env steps sampled by the training env runners),
        ``episodes`` (int, lifetime training episodes), ``episode_return_mean`` (float, the
        training env runners' mean episode return, exploration included: RLlib's
        ``env_runners/episode_return_mean``; NaN before any episode ended; the greedy return
        of the evaluation protocol is measured apart, :mod:`sweeps.engine.evaluation`),
        ``learner_updates`` (float, lifetime gradient updates; NaN if unknown),
        ``grad_noise_scale`` (examples), ``grad_norm_sq`` and ``grad_trace_cov`` (the learner's
        smoothed |G|^2 and tr(Sigma), :mod:`sweeps.engine.algorithms.noise_scale`; NaN when not
        measured), ``replay_ratio`` (replayed / sampled transitions so far, DQN and APEX's
        ``replay`` results; NaN for algorithms without replay), ``learner_cpu_s`` (float,
        lifetime CPU seconds of the learner's gradient updates, on the updating thread's
        clock: :mod:`sweeps.engine.algorithms.learner_clock`; NaN before the first update),
        ``env_restarts`` (int, lifetime env faults the training env runners recovered from:
        their sub-envs' (``env_runners/num_env_faults``, :mod:`sweeps.engine.env_faults`) and
        RLlib's own re-makes (``env_runners/num_env_step_failures``), when a sweep turns its
        ``restart_failed_sub_environments`` on).

    Raises:
        ValueError: for an unknown algorithm.
    """
    _spec(algorithm)
    runners = result.get("env_runners", {}) or {}
    gorila = result.get("gorila") or {}
    env_steps = _get(result, "num_env_steps_sampled_lifetime", default=None)
    if env_steps is None:
        env_steps = runners.get("num_env_steps_sampled_lifetime", 0)
    return {
        "env_steps": int(as_float(env_steps) if math.isfinite(as_float(env_steps)) else 0),
        "episodes": int(as_float(runners.get("num_episodes_lifetime", 0)) or 0),
        "episode_return_mean": as_float(runners.get("episode_return_mean", math.nan)),
        "learner_updates": _learner_updates(result),
        **_noise_scale(result),
        "replay_ratio": as_float((result.get("replay") or {}).get("replay_ratio", math.nan)),
        # GORILA's learners are its own actors: their gradients' CPU, summed
        "learner_cpu_s": as_float(
            gorila["learner_cpu_s"]
            if gorila
            else _get(result, "learners", "__all_modules__", UPDATE_CPU_KEY)
        ),
        "gradient_staleness": as_float(gorila.get("staleness_mean", math.nan)),
        "dropped_gradients": _count(gorila.get("dropped_gradients", 0)),
        "bytes_per_update": as_float(gorila.get("bytes_per_update", math.nan)),
        "server_busy_s": as_float(gorila.get("server_busy_s", math.nan)),
        # RLlib's lifetime count of env steps that raised (each re-made the env runner's envs)
        "env_restarts": _count(runners.get("num_env_faults", 0))
        + _count(runners.get("num_env_step_failures", 0)),
    }


def register_with_tune() -> None:
    """Register ``"APEX"`` (:class:`~sweeps.engine.algorithms.apex_dqn.ApexDQN`) as a Tune trainable.

    The other names (``DQN``, ``IMPALA``, ``PPO``, ``APPO``) stay RLlib's own in Tune's registry;
    a trial builds its Algorithm from its config (``build_config(...).build_algo()``), so the
    sweeps' ``DQN`` is :class:`~sweeps.engine.algorithms.replay_dqn.ReplayDQN` whatever Tune's
    ``"DQN"`` names. Idempotent.
    """
    from ray import tune

    from sweeps.engine.algorithms.apex_dqn import ApexDQN

    tune.register_trainable("APEX", ApexDQN)

"""Environments: Contoso Cabs (with an exact optimum) and DeepMind-preprocessed Atari Pong.

``import envs`` registers the gymnasium id ``ContosoCabs-v0`` and ale-py's Atari ids; it is
cheap and does not import Ray. For RLlib, call :func:`register_rllib_envs` (in the driver,
after ``ray.init``): it registers every name of :data:`RLLIB_ENVS` with Tune's registry so env
runners on any node can build the env. Other gymnasium ids need no registration (RLlib falls
back to ``gymnasium.make``).

Example:
    >>> import envs
    >>> round(envs.oracle_return("ContosoCabs-v0", {"time_matrix_seed": 0}), 2)
    2966.36
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium

from envs.atari import PONG_IDS, check_atari_config, make_pong_noframeskip_v4, make_pong_v5
from envs.contoso_cabs import ContosoCabs, optimal_return, resolve_config
from envs.latency import (
    STEP_CPU_KEY,
    STEP_LATENCY_KEY,
    StepCost,
    StepCpuCost,
    StepLatency,
    split_step_cost,
    with_step_cost,
)

__all__ = [
    "CABS_ID",
    "RLLIB_ENVS",
    "STEP_CPU_KEY",
    "STEP_LATENCY_KEY",
    "StepCost",
    "StepCpuCost",
    "StepLatency",
    "split_step_cost",
    "step_cost_env_name",
    "env_id_of_step_cost_name",
    "make_env",
    "check_env_config",
    "oracle_return",
    "register_rllib_envs",
]

CABS_ID = "ContosoCabs-v0"

if CABS_ID not in gymnasium.registry:
    gymnasium.register(id=CABS_ID, entry_point="envs.contoso_cabs:ContosoCabs")


def _make_cabs(env_config: Mapping[str, Any] | None) -> gymnasium.Env:
    """RLlib creator for ``ContosoCabs-v0``: ``ContosoCabs(env_config)``."""
    return ContosoCabs(env_config)


#: RLlib env names → creators taking RLlib's ``env_config``. The Pong names are the gymnasium
#: ids and mean the DeepMind-preprocessed env (see :mod:`envs.atari`).
RLLIB_ENVS: dict[str, Callable[[dict], gymnasium.Env]] = {
    CABS_ID: _make_cabs,
    "PongNoFrameskip-v4": make_pong_noframeskip_v4,
    "ALE/Pong-v5": make_pong_v5,
}


def make_env(
    env_id: str, env_config: Mapping[str, Any] | None = None, with_latency: bool = True
) -> gymnasium.Env:
    """One env as the suite's env runners build it.

    Our creator for the names in :data:`RLLIB_ENVS` (Contoso Cabs, preprocessed Pong), the
    user's module for ``"module:EnvId"``/``"module:Factory"`` (:mod:`envs.forms`), else
    ``gymnasium.make(env_id, **env_config)``; wrapped in the step costs of :mod:`envs.latency`
    when ``env_config`` has ``step_latency_ms`` or ``step_cpu_ms`` and ``with_latency`` is true
    (the evaluation protocol builds its envs without them).

    Raises:
        ValueError: a bad ``step_latency_ms``/``step_cpu_ms``; :class:`envs.forms.EnvError` (a
            ValueError) for a user's module that cannot be imported or has no such env.
    """
    cost, rest = split_step_cost(env_config)
    creator = RLLIB_ENVS.get(env_id)
    if creator is not None:
        env = creator(rest)
    elif ":" in env_id:  # a user's module: "module:EnvId" or "module:Factory"
        from envs.forms import make_from_form

        env = make_from_form(env_id, rest)
    else:
        env = gymnasium.make(env_id, **rest)
    return with_step_cost(env, cost) if with_latency else env


def step_cost_env_name(env_id: str) -> str:
    """The RLlib env name under which :func:`register_step_cost_env` registers ``env_id`` with
    its step costs (RLlib's own fallback, ``gymnasium.make``, would not take the keys)."""
    return f"{env_id}+step_cost"


def env_id_of_step_cost_name(name: str) -> str:
    """The env id that :func:`step_cost_env_name` made ``name`` from (``name`` itself when it
    is not such a name)."""
    suffix = step_cost_env_name("")
    return name[: -len(suffix)] if name.endswith(suffix) else name


def _register_make_env(name: str, env_id: str) -> str:
    """Register :func:`make_env` of ``env_id`` with Tune's registry under ``name`` (idempotent;
    any process of a running Ray); returns ``name``."""
    from ray.tune.registry import register_env

    register_env(name, lambda cfg, _id=env_id: make_env(_id, cfg))
    return name


def register_form_env(env_id: str) -> str:
    """Register :func:`make_env` for a ``"module:..."`` env under its own name (RLlib's
    fallback, ``gymnasium.make``, cannot call a factory with ``env_config``); returns it."""
    return _register_make_env(env_id, env_id)


def register_step_cost_env(env_id: str) -> str:
    """Register :func:`make_env` for ``env_id`` under :func:`step_cost_env_name` (RLlib's own
    fallback, ``gymnasium.make``, would not take ``step_latency_ms``/``step_cpu_ms``); returns
    the name."""
    return _register_make_env(step_cost_env_name(env_id), env_id)


def register_rllib_envs() -> None:
    """Register every :data:`RLLIB_ENVS` name with ``ray.tune.registry.register_env``.

    Idempotent (re-registering replaces the creator with the same one). Call it in the driver
    after ``ray.init``; Tune ships the creators to env runners on every node.
    """
    from ray.tune.registry import register_env

    for name, creator in RLLIB_ENVS.items():
        register_env(name, creator)


def check_env_config(env_id: str, env_config: Mapping[str, Any] | None) -> None:
    """Validate ``env_config`` for ``env_id`` before any Ray starts.

    Checks ``step_latency_ms`` and ``step_cpu_ms`` (any env), Contoso Cabs configs fully
    (:func:`envs.contoso_cabs.resolve_config`) and the preprocessing keys of the RLlib Pong
    names (:func:`envs.atari.check_atari_config`); the rest of a gymnasium env's keys are
    checked by :func:`sweeps.engine.sweep_file.check_gym_env_config`.

    Raises:
        ValueError: naming the bad key.
    """
    _, env_config = split_step_cost(env_config)  # every env accepts the step-cost keys
    if env_id == CABS_ID:
        resolve_config(env_config)
    elif env_id in PONG_IDS:
        check_atari_config(env_id, env_config)


def oracle_return(env_id: str, env_config: Mapping[str, Any] | None) -> float | None:
    """The exact optimal expected episode return (dollars) of ``env_id``, if it has an oracle.

    Only ``ContosoCabs-v0`` with ``requests=False`` has one (backward induction,
    :func:`envs.contoso_cabs.optimal_return`; cached per config, ~0.1 s the first time).

    Returns:
        The optimum, or None for every other env or config.

    Raises:
        ValueError: for a bad Contoso Cabs config.
    """
    if env_id != CABS_ID:
        return None
    config = resolve_config(split_step_cost(env_config)[1])  # a step cost changes no return
    return None if config.requests else optimal_return(config)

"""The single-process reference: Stable-Baselines3 DQN, PPO or SAC, timed like every other trial.

In HPC, *absolute* speedup is measured against the best serial implementation, not against the
parallel code run on one worker (docs/design.md, *reference*). A sweep that declares
``reference={"algorithm": "SB3-DQN", ...}`` runs this well-kept single-process implementation
on the same env, target, evaluation protocol (:mod:`sweeps.engine.evaluation`), budget and seeds as
its RLlib trials: one Python process (the trial's own), no Ray actors, torch on the trial's one
CPU. Its trials are ordinary rows of ``trials.parquet`` with ``is_reference = True``.

Timing, as for RLlib trials (:mod:`sweeps.engine.trainable`): libraries are imported before the clock;
the clock starts right before the model is built; an *iteration* is at least
``min_time_s_per_iteration`` seconds of training (checked after every env step), and the
greedy evaluation at its end counts inside the timed region.

Parameters are Stable-Baselines3's own names (a user who knows SB3 recognises them); defaults
(:data:`REFERENCE_DEFAULTS`) are SB3's, and a preset per env id (:mod:`sweeps.engine.presets`:
Contoso Cabs' tuning, rl-baselines3-zoo's published settings) overrides them on its env.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "REFERENCE_ALGORITHMS",
    "REFERENCE_DEFAULTS",
    "VEC_ENVS",
    "check_configuration",
    "check_reference",
    "run_reference",
    "sampling_layout",
    "schedule_horizon",
]

#: Reference implementations a sweep can name → the SB3 class name.
REFERENCE_ALGORITHMS = {"SB3-DQN": "DQN", "SB3-PPO": "PPO", "SB3-SAC": "SAC"}

#: Parameters common to both references (not SB3 constructor arguments).
_OWN = {
    "seed": "RNG seed of the trial (SB3 seed=...)",
    "reward_scale": "factor on rewards seen by the learner only (evaluation stays in env units)",
    "total_timesteps": "SB3 learn(total_timesteps): the horizon of its schedules (exploration). "
    "Set in the sweep, training also ends there (censor_reason 'horizon'); "
    "unset, it is the sweep's env-step budget, else the reference's default, "
    "and training goes on past it, at the schedules' final values, until "
    "the budget or the target",
    "min_time_s_per_iteration": "minimum wall-clock seconds of training between evaluations",
    "hidden_sizes": "hidden layer widths of the MLP (SB3 policy_kwargs net_arch)",
    "max_env_restarts": "env faults the trial recovers from before it ends as an error "
    "(sweeps.engine.env_faults; default 1000)",
    "recover_env_faults": "re-make the env when its step or reset raises, its episode ending "
    "there (default True; sweeps.engine.env_faults)",
    "env_step_timeout_s": "seconds a step or reset may take before it counts as a fault "
    "(default None: no limit; sweeps.engine.env_faults)",
    "n_envs": "sub-envs stepped per env.step (SB3 make_vec_env's n_envs; default 1); "
    "a configuration's, not the reference's, which steps one env",
    "vec_env": "how the sub-envs step: 'dummy' (SB3 DummyVecEnv: in turn, in the trial's "
    "process; the default) or 'subproc' (SubprocVecEnv: each in its own process, at once)",
}

#: ``vec_env`` → how the suite records the layout (``gym_env_vectorize_mode``'s words).
VEC_ENVS = {"dummy": "sync", "subproc": "async"}

#: Defaults per reference (SB3's names): Stable-Baselines3's constructor defaults (2.x; its
#: ``MlpPolicy``'s 64x64 torso for DQN and PPO, 256x256 for SAC; tests/test_presets.py checks
#: them against SB3's signatures), rewards unscaled, and the suite's own two: iterations of at
#: least 1 s and ``total_timesteps``, the schedules' horizon where neither the sweep, nor its
#: env-step budget, nor a preset sets one (SB3 has no default: ``learn`` requires it; 100 k
#: is rl-baselines3-zoo's order for classic control). Past that horizon training goes on at
#: the schedules' final values until the budget or the target (:func:`schedule_horizon`).
#: Settings tuned for one env are presets (:mod:`sweeps.engine.presets`).
REFERENCE_DEFAULTS: dict[str, dict[str, Any]] = {
    "SB3-DQN": {
        "learning_rate": 1e-4,
        "batch_size": 32,
        "train_freq": 4,
        "gradient_steps": 1,
        "buffer_size": 1_000_000,
        "learning_starts": 100,
        "target_update_interval": 10_000,
        "exploration_fraction": 0.1,
        "exploration_initial_eps": 1.0,
        "exploration_final_eps": 0.05,
        "gamma": 0.99,
        "hidden_sizes": [64, 64],
        "reward_scale": 1.0,
        "total_timesteps": 100_000,
        "min_time_s_per_iteration": 1.0,
    },
    "SB3-PPO": {
        "learning_rate": 3e-4,
        "n_steps": 2048,
        "batch_size": 64,
        "n_epochs": 10,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.0,
        "hidden_sizes": [64, 64],
        "reward_scale": 1.0,
        "total_timesteps": 100_000,
        "min_time_s_per_iteration": 1.0,
    },
    "SB3-SAC": {
        "learning_rate": 3e-4,
        "batch_size": 256,
        "buffer_size": 1_000_000,
        "learning_starts": 100,
        "train_freq": 1,
        "gradient_steps": 1,
        "tau": 0.005,
        "gamma": 0.99,
        "hidden_sizes": [256, 256],
        "reward_scale": 1.0,
        "total_timesteps": 100_000,
        "min_time_s_per_iteration": 1.0,
    },
}

#: SB3 constructor arguments a sweep may set, per reference.
_SB3_ARGS = {
    "SB3-DQN": (
        "learning_rate",
        "batch_size",
        "train_freq",
        "gradient_steps",
        "buffer_size",
        "learning_starts",
        "target_update_interval",
        "exploration_fraction",
        "exploration_initial_eps",
        "exploration_final_eps",
        "gamma",
        "tau",
        "max_grad_norm",
    ),
    "SB3-PPO": (
        "learning_rate",
        "n_steps",
        "batch_size",
        "n_epochs",
        "gamma",
        "gae_lambda",
        "clip_range",
        "ent_coef",
        "vf_coef",
        "max_grad_norm",
    ),
    "SB3-SAC": (
        "learning_rate",
        "batch_size",
        "buffer_size",
        "learning_starts",
        "train_freq",
        "gradient_steps",
        "tau",
        "gamma",
        "ent_coef",
        "target_update_interval",
        "target_entropy",
    ),
}


def _defaults(algorithm: str, env: str | None) -> dict[str, Any]:
    """What an SB3 trial of ``algorithm`` on ``env`` takes where its config is silent: SB3's
    defaults (:data:`REFERENCE_DEFAULTS`) under the env's preset (:mod:`sweeps.engine.presets`)."""
    from sweeps.engine.presets import preset_values

    return {**REFERENCE_DEFAULTS[algorithm], **preset_values(algorithm, env)}


def recorded_params(config: Mapping[str, Any], env: str | None = None) -> dict[str, Any]:
    """The vocabulary columns a reference trial is recorded with: ``num_env_runners`` 0 (it samples
    in its own process), ``lr`` = SB3 ``learning_rate`` and ``train_batch_size`` = its
    minibatch (SB3 ``batch_size``; PPO: ``n_steps``, the on-policy batch), as the trial
    resolves them on ``env`` (its preset, :mod:`sweeps.engine.presets`).
    :func:`run_reference` ignores them."""
    algo = config["algorithm"]
    params = {**_defaults(algo, env), **config}
    return {
        "num_env_runners": 0,
        "num_envs_per_env_runner": int(params.get("n_envs", 1)),
        "lr": params["learning_rate"],
        "train_batch_size": params["n_steps" if algo == "SB3-PPO" else "batch_size"],
    }


def sampling_layout(config: Mapping[str, Any]) -> dict[str, Any]:
    """How an SB3 trial samples (docs/design.md, *sampling layout*), in the words
    :func:`sweeps.engine.trainable.sampling_layout` gives an RLlib trial's:
    ``{"vectorize_mode": "sync" | "async", "concurrent_envs": int, "env_processes": int}``.
    One env, or ``n_envs`` stepped in turn (``vec_env="dummy"``), has one env step waiting at
    a time; ``vec_env="subproc"`` starts ``n_envs`` processes that step at once."""
    n = int(config.get("n_envs", 1))
    mode = VEC_ENVS[str(config.get("vec_env", "dummy"))]
    return {
        "vectorize_mode": mode,
        "concurrent_envs": n if mode == "async" else 1,
        "env_processes": n if mode == "async" else 0,
    }


def known_params(algorithm: str) -> frozenset[str]:
    """Keys a reference trial config may hold (besides ``algorithm``)."""
    return frozenset(_SB3_ARGS[algorithm]) | frozenset(_OWN)


def check_reference(reference: Mapping[str, Any]) -> None:
    """Validate a sweep's ``reference`` dict.

    Raises:
        ValueError: one line naming the bad key: no or an unknown ``algorithm``, an unknown
            parameter, a numeric value that is not a positive finite number where one is
            needed, or a vectorized env (``n_envs``, ``vec_env``: a configuration's, not
            the reference's).
    """
    algo = reference.get("algorithm")
    if algo not in REFERENCE_ALGORITHMS:
        raise ValueError(
            f"algorithm: unknown reference {algo!r} (known: {', '.join(REFERENCE_ALGORITHMS)})"
        )
    for key in ("n_envs", "vec_env"):
        if key in reference:
            raise ValueError(
                f"{key}: the reference steps one env in its one process (docs/design.md, "
                f"*reference*); to measure {algo} with several envs, name it in the "
                "sweep's algorithms or baseline"
            )
    check_configuration(reference)


def check_configuration(config: Mapping[str, Any]) -> None:
    """Validate the parameters of one SB3 trial (the reference's, or a configuration's that
    names an SB3 algorithm in a sweep's ``algorithms`` or ``baseline``).

    Raises:
        ValueError: one line naming the bad key: an unknown ``algorithm`` or parameter, a
            numeric value that is not a positive finite number where one is needed, an
            ``n_envs`` that is not a positive integer or a ``vec_env`` other than
            ``"dummy"``/``"subproc"``.
    """
    algo = config.get("algorithm")
    if algo not in REFERENCE_ALGORITHMS:
        raise ValueError(
            f"algorithm: unknown SB3 algorithm {algo!r} (known: {', '.join(REFERENCE_ALGORITHMS)})"
        )
    if "n_envs" in config:
        n = config["n_envs"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n_envs: must be a positive integer, got {n!r}")
    if "vec_env" in config and config["vec_env"] not in VEC_ENVS:
        raise ValueError(
            f"vec_env: must be one of {', '.join(map(repr, VEC_ENVS))}, got {config['vec_env']!r}"
        )
    known = known_params(algo)
    for key, value in config.items():
        if key == "algorithm":
            continue
        if key not in known:
            raise ValueError(
                f"{key}: unknown parameter for {algo} (known: {', '.join(sorted(known))})"
            )
        if key in (
            "learning_rate",
            "batch_size",
            "buffer_size",
            "n_steps",
            "n_epochs",
            "total_timesteps",
            "min_time_s_per_iteration",
            "reward_scale",
            "train_freq",
            "target_update_interval",
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"{key}: must be a positive number, got {value!r}")


#: Env steps ``learn`` is given when nothing but the time budget or the target ends training.
_UNLIMITED_STEPS = 2**62


def schedule_horizon(
    config: Mapping[str, Any], budget_env_steps: int | None, env: str | None = None
) -> tuple[int, int, bool]:
    """The env steps a reference's schedules run over and the env steps it may train for.

    Args:
        config: the trial's reference config (``algorithm`` and what the sweep set).
        budget_env_steps: the sweep's env-step budget, or None.
        env: the env id (its preset may set the default horizon).

    Returns:
        ``(horizon, run_steps, ends_at_horizon)``: SB3's ``total_timesteps`` for its
        schedules (exploration); the env steps ``learn`` may take (the budget, the horizon a
        sweep set, whichever is less, or unlimited: the time budget or the target ends it);
        and whether the run ends at a horizon the sweep set below its budget (then recorded
        with ``censor_reason = "horizon"``, not as a budget). A horizon the sweep did not set
        is the env-step budget, else the preset's or the reference's default
        (:data:`REFERENCE_DEFAULTS`), which then never ends the run: SB3 would end it there,
        a limit no sweep declared.
    """
    default = int(_defaults(config["algorithm"], env)["total_timesteps"])
    budget = None if budget_env_steps is None else int(budget_env_steps)
    if config.get("total_timesteps") is not None:
        horizon = int(config["total_timesteps"])
        if budget is not None and budget <= horizon:
            return horizon, budget, False
        return horizon, horizon, True
    if budget is not None:
        return budget, budget, False
    return default, _UNLIMITED_STEPS, False


def _schedules_over(model, horizon: int) -> None:
    """Make SB3's schedules (DQN's exploration, any learning-rate schedule) run over
    ``horizon`` env steps, whatever ``learn`` is given, and hold their final values past it.

    SB3 computes progress as ``1 - num_timesteps / total_timesteps`` of ``learn``'s argument
    (``BaseAlgorithm._update_current_progress_remaining``); a run that only its time budget
    ends has no such total, so progress is taken against the horizon instead, floored at 0
    (SB3's linear schedules hold their end value there).
    """

    def update(num_timesteps: int, _total_timesteps: int) -> None:
        model._current_progress_remaining = max(0.0, 1.0 - float(num_timesteps) / horizon)

    model._update_current_progress_remaining = update


def _build_model(algo: str, params: dict[str, Any], env, seed: int):
    import stable_baselines3 as sb3
    from stable_baselines3.common.logger import Logger

    cls = getattr(sb3, REFERENCE_ALGORITHMS[algo])
    kwargs = {k: params[k] for k in _SB3_ARGS[algo] if k in params}
    model = cls(
        "MlpPolicy",
        env,
        seed=seed,
        device="cpu",
        verbose=0,
        policy_kwargs={"net_arch": list(params["hidden_sizes"])},
        **kwargs,
    )
    # No outputs: without a logger of its own, learn() makes an (empty) tempdir/SB3-<date>
    # folder per call (stable_baselines3.common.logger.configure), one per reference trial.
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def run_reference(
    config: Mapping[str, Any],
    *,
    env_id: str,
    env_config: Mapping[str, Any],
    evaluation: Mapping[str, Any],
    budget_env_steps: int | None,
    report: Callable[[dict[str, Any]], bool],
    started: Callable[[float], None] | None = None,
) -> None:
    """Train one SB3 trial (the reference, or an SB3 configuration of a sweep), evaluating
    and reporting at the end of every iteration.

    Args:
        config: ``algorithm`` (a key of :data:`REFERENCE_ALGORITHMS`), ``seed`` and SB3
            parameters; missing ones take the preset of ``env_id``, else
            :data:`REFERENCE_DEFAULTS` (:func:`sweeps.engine.search.resolve_params`). ``n_envs`` > 1 or
            ``vec_env="subproc"`` trains on a vectorized env (SB3's ``DummyVecEnv`` or
            ``SubprocVecEnv``), built inside the timed region (its processes are start-up);
            ``env_steps`` then count every sub-env's steps, and ``max_env_restarts`` bounds
            the faults of all sub-envs together, checked at every iteration's end.
        env_id, env_config: the sweep's env (built by :func:`envs.make_env`, with any step latency).
        evaluation: ``{"episodes", "seed"}`` of the sweep's evaluation protocol, and its
            cadence ``"every_s"``, ``"every_env_steps"`` (:class:`sweeps.engine.evaluation.Cadence`;
            absent or None: every iteration).
        budget_env_steps: env-step budget, or None. Training ends there at the latest, and
            where ``config`` sets no ``total_timesteps`` it is the schedules' horizon
            (:func:`schedule_horizon`).
        report: called once per iteration with ``wall_time_s`` (seconds since the clock
            started), ``env_steps``, ``episodes``, ``learner_updates`` (gradient steps),
            ``evaluation_return`` (the protocol's greedy mean return), ``eval_time_s``
            (cumulative seconds of evaluation), ``training_return`` (mean of the last 100
            exploring episodes, NaN before one ends), ``env_restarts`` (env faults recovered
            so far, training and evaluation envs), ``done`` (True when the env steps it may
            take are used up) and ``stop_reason`` (``"horizon"`` when they ended at a
            ``total_timesteps`` the sweep set below its budget, else ``""``); training stops
            when it returns True.
        started: called once with the trial clock's ``time.perf_counter()`` origin, when
            the timed region starts (the trial's budget watchdog counts from it).

    Raises:
        sweeps.engine.env_faults.EnvFaultLimit: more env faults than ``max_env_restarts``.
    """
    import gymnasium
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor

    import envs
    from sweeps.engine.env_faults import DEFAULT_MAX_ENV_RESTARTS, EnvFaultLimit, RecoveringEnv
    from sweeps.engine.evaluation import Cadence, trial_evaluator

    algo = config["algorithm"]
    params = {
        **_defaults(algo, env_id),
        **{
            k: v
            for k, v in config.items()
            if k not in ("algorithm", "num_env_runners", "num_envs_per_env_runner")
            and k not in ("train_batch_size", "lr")
        },
    }
    seed = int(params.pop("seed", 0))
    torch.set_num_threads(1)  # the reference gets one CPU, as its trial requests
    scale = float(params["reward_scale"])
    iteration_s = float(params["min_time_s_per_iteration"])
    horizon, total, ends_at_horizon = schedule_horizon(config, budget_env_steps, env_id)
    params.pop("total_timesteps", None)
    n_envs = int(params.pop("n_envs", 1))
    vec_env = str(params.pop("vec_env", "dummy"))
    vectorized = n_envs > 1 or vec_env == "subproc"
    evaluator = trial_evaluator(
        env_id, env_config, episodes=int(evaluation["episodes"]), seed=int(evaluation["seed"])
    )
    # an env whose step raises is re-made and its episode ends there, as RLlib's env runners
    # do (sweeps.engine.env_faults), so both sides of a comparison see the same simulator
    limit = int(params.pop("max_env_restarts", DEFAULT_MAX_ENV_RESTARTS))
    evaluator.recover = bool(params.pop("recover_env_faults", True))
    recover = evaluator.recover
    timeout = params.pop("env_step_timeout_s", None)
    evaluator.step_timeout_s = timeout

    def sub_env():
        # in a subprocess an env's own limit would end that process, not the trial: the
        # trial's limit is checked here, over the sum of every sub-env's faults
        inner = Monitor(
            RecoveringEnv(
                lambda: envs.make_env(env_id, env_config), None, recover, step_timeout_s=timeout
            )
        )
        if scale == 1.0:
            return inner
        return gymnasium.wrappers.TransformReward(inner, lambda r: scale * r)

    if vectorized:
        env = monitor = None
        train_env = None  # built inside the timed region: its processes are start-up
    else:
        env = RecoveringEnv(
            lambda: envs.make_env(env_id, env_config), limit, recover, step_timeout_s=timeout
        )
        monitor = train_env = Monitor(env)  # unscaled returns; step latency
        if scale != 1.0:
            train_env = gymnasium.wrappers.TransformReward(train_env, lambda r: scale * r)

    def restarts() -> int:
        if not vectorized:
            return env.restarts + evaluator.restarts
        done = sum(int(r) for r in train_env.get_attr("restarts")) + evaluator.restarts
        if done > limit:
            raise EnvFaultLimit(f"{done} env faults, more than max_env_restarts={limit}")
        return done

    episodes_done = [0]

    def greedy(obs):
        return model.policy.predict(obs, deterministic=True)[0]

    cadence = Cadence(evaluation.get("every_s"), evaluation.get("every_env_steps"))

    class Protocol(BaseCallback):
        """Ends an iteration every ``iteration_s`` seconds, or evaluates on the protocol's
        cadence: evaluate, report, maybe stop."""

        def __init__(self):
            super().__init__()
            self.last = 0.0
            self.stop = False

        def _on_step(self) -> bool:
            if vectorized:
                episodes_done[0] += int(sum(self.locals["dones"]))
            now = time.perf_counter() - start
            if self.num_timesteps < total and (
                not cadence.due(now, self.num_timesteps)
                if cadence.active
                else now - self.last < iteration_s
            ):
                return True
            self.end_iteration()
            return not self.stop

        def end_iteration(self, env_steps: int | None = None) -> None:
            steps = int(self.num_timesteps if env_steps is None else env_steps)
            value = evaluator.evaluate(greedy)
            wall = time.perf_counter() - start
            cadence.ended(wall, steps)
            self.last = wall
            episodes = model.ep_info_buffer or []
            self.stop = (
                bool(
                    report(
                        {
                            "wall_time_s": wall,
                            "env_steps": steps,
                            "episodes": (
                                episodes_done[0]
                                if vectorized
                                else len(monitor.get_episode_rewards())
                            ),
                            "learner_updates": float(getattr(model, "_n_updates", math.nan)),
                            "evaluation_return": value,
                            "eval_time_s": evaluator.total_time_s,
                            "driver_cpu_s": time.process_time() - cpu_start,
                            "env_restarts": restarts(),
                            "training_return": (
                                sum(e["r"] for e in episodes) / len(episodes)
                                if episodes
                                else math.nan
                            ),
                            "done": steps >= total,
                            "stop_reason": "horizon" if ends_at_horizon and steps >= total else "",
                        }
                    )
                )
                or steps >= total
            )

    start = time.perf_counter()  # the timed region starts before the model is built
    cpu_start = time.process_time()
    if started is not None:
        started(start)
    if vectorized:
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        if vec_env == "subproc":
            # forked, as gymnasium's AsyncVectorEnv forks an RLlib env runner's async sub-envs
            # (Linux's default), so both layouts start and share memory alike; SB3's default,
            # forkserver, would re-run the trial process's __main__ (Ray's worker) in each
            train_env = SubprocVecEnv([sub_env] * n_envs, start_method="fork")
        else:
            train_env = DummyVecEnv([sub_env] * n_envs)
    model = _build_model(algo, params, train_env, seed)
    _schedules_over(model, horizon)
    callback = Protocol()
    if cadence.active:  # the initial policy, as for RLlib trials (sweeps.engine.trainable)
        callback.end_iteration(env_steps=0)
        if callback.stop:
            train_env.close()
            return
    try:
        model.learn(total_timesteps=total, callback=callback)
        if not callback.stop:  # learn() ended between two iterations: close the last one
            callback.end_iteration()
    finally:
        train_env.close()

"""The small vocabulary a sweep file speaks, and how it maps onto an RLlib ``AlgorithmConfig``.

A trial config is a flat dict: ``{"algorithm": "DQN", "num_env_runners": 2, "lr": 1e-3, ...}``.
The *shared* keys below mean the same for every algorithm; each algorithm adds its own keys,
named as RLlib names them (``n_step``, ``vtrace_clip_rho_threshold``, ...) and passed to the
RLlib builder method that owns them (``training()``, ``env_runners()``, ...). A key that is
neither is an error (:class:`UnknownParameterError`), never silently ignored.

Only RLlib's new API stack (EnvRunners, Learners, RLModules, ConnectorV2) is used; a user who
knows RLlib recognises every knob in the resolved config (``AlgorithmConfig.to_dict()``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sweeps.engine.algorithms.learner_clock import clocked_learner_class
from sweeps.engine.algorithms.noise_scale import DEFAULT_EVERY as NOISE_EVERY

__all__ = [
    "SHARED_PARAMS",
    "COMMON_RLLIB_PARAMS",
    "AlgorithmSpec",
    "OwnParam",
    "UnknownParameterError",
    "DEPRECATED_NAMES",
    "REMOVED_PARAMS",
    "VECTORIZE_MODES",
    "apply_params",
    "canonical_params",
]


class UnknownParameterError(ValueError):
    """A trial config names a key that neither the shared vocabulary nor the algorithm knows.

    The message reads ``unknown parameter 'foo' for algorithm APEX (known: ...)``.
    """

    def __init__(self, key: str, algorithm: str, known: frozenset[str]):
        import difflib

        self.key, self.algorithm, self.known = key, algorithm, known
        if key in REMOVED_PARAMS:
            super().__init__(
                f"parameter {key!r} of algorithm {algorithm} was removed: {REMOVED_PARAMS[key]}"
            )
            return
        close = difflib.get_close_matches(str(key), sorted(known), n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        super().__init__(
            f"unknown parameter {key!r} for algorithm {algorithm} ({hint}known: "
            f"{', '.join(sorted(known))})"
        )


#: Parameters the suite once took and no longer does → why, and what to do instead.
REMOVED_PARAMS: dict[str, str] = {
    "num_replay_shards": "APEX's replay-shard layout (the paper's replay actors and a learner "
    "thread) ran fewer learner updates/s than replay and learner in the driver's thread at "
    'every actor count measured (docs/benchmarks.md, "APEX\'s learner as actors are added"); '
    "delete the key",
}


#: The shared vocabulary: key → (one-line meaning, RLlib equivalent).
SHARED_PARAMS: dict[str, str] = {
    "num_env_runners": "env runners sampling in parallel (RLlib num_env_runners); 0 = sample in the driver",
    "num_envs_per_env_runner": "vectorised envs per env runner (RLlib num_envs_per_env_runner)",
    "gym_env_vectorize_mode": "how an env runner steps its envs (RLlib gym_env_vectorize_mode): "
    "'sync' in turn in its own process (RLlib's default), 'async' each in a process of its own, "
    "all at once (for an env that waits: a remote simulator); its concurrent envs: "
    "num_envs_per_env_runner per env runner when async, 1 when sync",
    "rollout_fragment_length": "env steps per env (so × num_envs_per_env_runner per env runner) per sample call",
    "train_batch_size": "transitions per learner update, summed over learners (DQN/APEX: the replay minibatch; IMPALA/PPO: the on-policy batch)",
    "lr": "learning rate of the Adam optimiser",
    "gamma": "discount factor",
    "hidden_sizes": "hidden layer widths of the fully connected torso, e.g. [64, 64] (RLlib model_config fcnet_hiddens)",
    "num_learners": "learner actors (0 = the learner runs in the driver process)",
    "num_gpus_per_learner": "GPUs per learner (with num_learners=0: GPUs of the driver's learner)",
    "seed": "RNG seed of the trial (RLlib debugging(seed=...))",
}


#: The vectorize modes a sweep can choose (gymnasium's ``VectorizeMode`` values RLlib accepts,
#: less ``vector_entry_point``, which needs an env that ships its own vector version).
VECTORIZE_MODES = ("sync", "async")


#: RLlib's old names (its old API stack) → the current ones. Accepted in sweep files and trial
#: configs with a one-line notice on stderr; everything past :func:`canonical_params` (trial
#: configs, results, reports) uses the current names only.
DEPRECATED_NAMES: dict[str, str] = {
    "num_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
}

_NOTIFIED: set[str] = set()


def canonical_params(params: Mapping[str, Any], where: str = "config") -> dict[str, Any]:
    """``params`` with RLlib's old names (:data:`DEPRECATED_NAMES`) renamed to the current ones.

    Prints ``notice: <where>: 'num_workers' is RLlib's old name of 'num_env_runners'; ...``
    to stderr once per old name and process.

    Args:
        params: a flat parameter dict (trial config, search space, fixed values, ...).
        where: where ``params`` came from, for the notice and errors (e.g. ``"fixed"``).

    Returns:
        a new dict, keys in their original order.

    Raises:
        ValueError: when ``params`` gives both the old and the current name of one parameter.
    """
    out: dict[str, Any] = {}
    for key, value in params.items():
        new = DEPRECATED_NAMES.get(key) if isinstance(key, str) else None
        if new is None:
            out[key] = value
            continue
        if new in params:
            raise ValueError(
                f"{where}: gives both {key!r} and {new!r}; {key!r} is RLlib's old "
                f"name of {new!r}, give only {new!r}"
            )
        if key not in _NOTIFIED:
            _NOTIFIED.add(key)
            print(
                f"notice: {where}: {key!r} is RLlib's old name of {new!r}; it still works, "
                f"but use {new!r}",
                file=sys.stderr,
            )
        out[new] = value
    return out


class OwnParam(NamedTuple):
    """An algorithm-specific key: the ``AlgorithmConfig`` builder method that takes it (by its
    RLlib name) and its one-line meaning."""

    section: str  # builder method: "training", "env_runners", "reporting", "evaluation",
    # "learners", "fault_tolerance", "rl_module" (a model_config key), or "derived" (read by
    # the spec's translate or the trial)
    meaning: str


#: RLlib keys every algorithm accepts (passed through by their RLlib names).
COMMON_RLLIB_PARAMS: dict[str, OwnParam] = {
    "min_time_s_per_iteration": OwnParam(
        "reporting",
        "minimum wall-clock seconds per training iteration (resolution of time-to-target)",
    ),
    "metrics_num_episodes_for_smoothing": OwnParam(
        "reporting", "episodes in the moving window of episode_return_mean"
    ),
    "grad_clip": OwnParam("training", "gradient clipping threshold (global norm)"),
    "fcnet_activation": OwnParam(
        "rl_module", "activation of the fully connected torso: relu, tanh, ..."
    ),
    "reward_scale": OwnParam(
        "derived", "factor on rewards seen by the learner only (metrics stay in env units)"
    ),
    "grad_noise_scale_every": OwnParam(
        "derived",
        "learner updates between two measurements of the gradient noise scale "
        "(sweeps.engine.algorithms.noise_scale; default 20, 0 = off)",
    ),
    # env faults (sweeps.engine.env_faults), by RLlib's names (AlgorithmConfig.fault_tolerance)
    "recover_env_faults": OwnParam(
        "derived",
        "re-make a sub-env alone when its step or reset raises, its episode ending "
        "there as truncated, and count it (default True; sweeps.engine.env_faults)",
    ),
    "restart_failed_sub_environments": OwnParam(
        "fault_tolerance",
        "RLlib's own recovery: re-make all of an env runner's envs and start "
        "its sample call over when one raises (RLlib's default False; with recover_env_faults "
        "on, never reached)",
    ),
    "restart_failed_env_runners": OwnParam(
        "fault_tolerance", "restart an env runner whose process died (RLlib's default True)"
    ),
    "max_num_env_runner_restarts": OwnParam(
        "fault_tolerance", "env runner restarts RLlib allows per env runner (RLlib's default 1000)"
    ),
    "max_env_restarts": OwnParam(
        "derived",
        "env faults a trial recovers from before it ends as an error with "
        "error_kind 'env_faults' (default 1000; sweeps.engine.env_faults)",
    ),
    "env_step_timeout_s": OwnParam(
        "derived",
        "seconds an env's step or reset may take before it counts as a fault: the "
        "env is re-made and its episode ends truncated (default None: no limit; "
        "sweeps.engine.env_faults)",
    ),
    "num_cpus_per_learner": OwnParam(
        "learners",
        "CPUs Ray reserves per learner process (RLlib's name; with num_learners > 0 for "
        "RLlib's data-parallel learners, and each GORILA learner actor's)",
    ),
    "num_cpus_per_env_runner": OwnParam(
        "env_runners",
        "CPUs Ray reserves per env runner (RLlib's name; fractional allowed, "
        "e.g. 0.125: 16 env runners that wait on a slow env share 2 CPUs; an honest request, "
        "not oversubscription)",
    ),
}


@dataclass(frozen=True)
class AlgorithmSpec:
    """What a sweep can choose for one algorithm.

    Attributes:
        name: the sweep's name of the algorithm (``"DQN"``, ``"APEX"``, ...).
        summary: one line for listings.
        make_config: returns a fresh RLlib ``AlgorithmConfig`` of the algorithm.
        own_params: algorithm-specific keys by their RLlib names → :class:`OwnParam`.
        defaults: tuned defaults (shared and own keys) used where the trial config is silent.
            These are *not* RLlib's defaults: they are the fast settings measured on this
            project's machines (see docs/benchmarks.md, section Algorithms).
        translate: optional hook ``(params) -> params`` for own keys that are conveniences over
            nested RLlib settings (e.g. ``prioritized_replay`` → ``replay_buffer_config``);
            returns builder-method kwargs keyed ``"<section>.<rllib_name>"``.
        sequence_loss: the learner's loss reshapes the batch into time-major sequences of the
            rollout fragment length (IMPALA, APPO; V-trace), so a sub-batch must keep whole
            fragments (:mod:`sweeps.engine.algorithms.noise_scale` splits batches).
    """

    name: str
    summary: str
    make_config: Callable[[], Any]
    own_params: Mapping[str, OwnParam]
    defaults: Mapping[str, Any]
    translate: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    sequence_loss: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def known_params(self) -> frozenset[str]:
        """Shared vocabulary ∪ RLlib keys common to all ∪ this algorithm's own keys."""
        return (
            frozenset(SHARED_PARAMS) | frozenset(COMMON_RLLIB_PARAMS) | frozenset(self.own_params)
        )

    def param_section(self, key: str) -> OwnParam | None:
        return self.own_params.get(key) or COMMON_RLLIB_PARAMS.get(key)


def _int(key: str, value: Any, algorithm: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(
            f"parameter {key!r} for algorithm {algorithm} must be an integer, got {value!r}"
        )
    if int(value) < minimum:
        raise ValueError(
            f"parameter {key!r} for algorithm {algorithm} must be ≥ {minimum}, got {value!r}"
        )
    return int(value)


def _positive_float(key: str, value: Any, algorithm: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(
            f"parameter {key!r} for algorithm {algorithm} must be a positive number, got {value!r}"
        )
    return float(value)


def _refuse_epochs_over_learners(name: str, config: Any) -> None:
    """Refuse several passes over each batch with several learners in RLlib's IMPALA learner
    thread (IMPALA, APPO).

    With ``num_learners`` > 1 and ``num_epochs`` > 1, RLlib 2.60's IMPALA learners deadlock in
    their first iterations: one learner waits in the barrier of its metrics aggregation while
    another is inside a gradient all-reduce (seen with py-spy on both learner processes), so
    no update is ever reported and the trial ends censored with nothing learned. One pass with
    several learners, or several passes with at most one learner, both train.

    Raises:
        ValueError: both above 1.
    """
    learners, epochs = int(config.num_learners or 0), int(config.num_epochs or 1)
    if learners > 1 and epochs > 1:
        raise ValueError(
            f"{name} with num_learners={learners} and num_epochs={epochs}: RLlib's IMPALA "
            "learners deadlock with more than one pass over a batch when there are several "
            "(one waits in its aggregation barrier while another is in a gradient all-reduce); "
            "use num_epochs=1 with several learners, or num_learners <= 1"
        )


def apply_params(config: Any, spec: AlgorithmSpec, params: Mapping[str, Any]) -> Any:
    """Apply a complete, validated parameter dict (defaults already merged) to ``config``.

    Args:
        config: a fresh RLlib ``AlgorithmConfig`` of ``spec``'s algorithm.
        spec: the algorithm.
        params: shared and own keys (no ``"algorithm"``).

    Returns:
        ``config``, updated in place.

    Raises:
        UnknownParameterError: for a key neither shared nor the algorithm's.
        ValueError: for a shared key with a value of the wrong type or range.
    """
    known = spec.known_params()
    for key in params:
        if key not in known:
            raise UnknownParameterError(key, spec.name, known)
    p = dict(params)
    name = spec.name

    # ---- shared vocabulary → RLlib ----
    runner_kwargs: dict[str, Any] = {}
    if "num_env_runners" in p:
        runner_kwargs["num_env_runners"] = _int(
            "num_env_runners", p.pop("num_env_runners"), name, 0
        )
    if "num_envs_per_env_runner" in p:
        runner_kwargs["num_envs_per_env_runner"] = _int(
            "num_envs_per_env_runner", p.pop("num_envs_per_env_runner"), name, 1
        )
    if "gym_env_vectorize_mode" in p:
        mode = p.pop("gym_env_vectorize_mode")
        if mode not in VECTORIZE_MODES:
            raise ValueError(
                f"parameter 'gym_env_vectorize_mode' for algorithm {name} must be "
                f"one of {', '.join(map(repr, VECTORIZE_MODES))}, got {mode!r}"
            )
        runner_kwargs["gym_env_vectorize_mode"] = mode
    if "rollout_fragment_length" in p:
        v = p.pop("rollout_fragment_length")
        runner_kwargs["rollout_fragment_length"] = (
            v if v == "auto" else _int("rollout_fragment_length", v, name, 1)
        )
    if "num_cpus_per_env_runner" in p:
        runner_kwargs["num_cpus_per_env_runner"] = _positive_float(
            "num_cpus_per_env_runner", p.pop("num_cpus_per_env_runner"), name
        )
    learner_kwargs: dict[str, Any] = {}
    if "num_learners" in p:
        learner_kwargs["num_learners"] = _int("num_learners", p.pop("num_learners"), name, 0)
    if "num_gpus_per_learner" in p:
        v = p.pop("num_gpus_per_learner")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(
                f"parameter 'num_gpus_per_learner' for algorithm {name} must be ≥ 0, got {v!r}"
            )
        learner_kwargs["num_gpus_per_learner"] = v
    training_kwargs: dict[str, Any] = {}
    if "train_batch_size" in p:
        total = _int("train_batch_size", p.pop("train_batch_size"), name, 1)
        # RLlib splits the batch over data-parallel learners; Gorila's learners each take
        # a whole minibatch (its spec's ``minibatch_per_learner``)
        n = max(1, learner_kwargs.get("num_learners", config.num_learners) or 1)
        if spec.extra.get("minibatch_per_learner"):
            n = 1
        training_kwargs["train_batch_size_per_learner"] = max(1, math.ceil(total / n))
    if "lr" in p:
        training_kwargs["lr"] = _positive_float("lr", p.pop("lr"), name)
    if "gamma" in p:
        g = p.pop("gamma")
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not 0 <= g <= 1:
            raise ValueError(f"parameter 'gamma' for algorithm {name} must be in [0, 1], got {g!r}")
        training_kwargs["gamma"] = float(g)
    model_config: dict[str, Any] = {}
    if "hidden_sizes" in p:
        hs = p.pop("hidden_sizes")
        if (
            not isinstance(hs, (list, tuple))
            or not hs
            or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hs)
        ):
            raise ValueError(
                f"parameter 'hidden_sizes' for algorithm {name} must be a non-empty list of "
                f"positive ints, got {hs!r}"
            )
        model_config["fcnet_hiddens"] = list(hs)
    seed = p.pop("seed", None)
    if seed is not None:
        config.debugging(seed=_int("seed", seed, name, 0))

    # ---- algorithm-specific keys, by their RLlib names ----
    sections: dict[str, dict[str, Any]] = {
        "env_runners": runner_kwargs,
        "learners": learner_kwargs,
        "training": training_kwargs,
        "rl_module": model_config,
        "reporting": {},
        "evaluation": {},
        "fault_tolerance": {},
    }
    if spec.translate is not None:
        for dotted, value in spec.translate(p).items():
            section, key = dotted.split(".", 1)
            sections[section][key] = value
    scale = p.get("reward_scale", 1.0)
    if scale is not None and scale != 1.0:
        from sweeps.engine.algorithms.connectors import RewardScaleConnector

        learner_kwargs["learner_connector"] = RewardScaleConnector(
            _positive_float("reward_scale", scale, name)
        )
    every = p.pop("grad_noise_scale_every", None)
    every = NOISE_EVERY if every is None else _int("grad_noise_scale_every", every, name, 0)
    if every > 0:
        from sweeps.engine.algorithms.noise_scale import noise_learner_class

        base = config.learner_class  # the algorithm's own, or the one its config set
        if isinstance(base, type):
            learner_kwargs["learner_class"] = noise_learner_class(
                base, whole_fragments=spec.sequence_loss
            )
            learner_kwargs["learner_config_dict"] = {"grad_noise_scale_every": every}
    base = learner_kwargs.get("learner_class", config.learner_class)
    if isinstance(base, type):  # the learner's CPU per update, for plans on other machines
        learner_kwargs["learner_class"] = clocked_learner_class(base)
    for key, value in p.items():
        own = spec.param_section(key)
        if own.section != "derived":  # derived keys were consumed by spec.translate
            sections[own.section][key] = value

    config.env_runners(**sections["env_runners"])
    config.learners(**sections["learners"])
    config.training(**sections["training"])
    if spec.extra.get("learner_thread"):
        _refuse_epochs_over_learners(spec.name, config)
    config.reporting(**sections["reporting"])
    if sections["fault_tolerance"]:
        config.fault_tolerance(**sections["fault_tolerance"])
    if sections["evaluation"]:
        config.evaluation(**sections["evaluation"])
    if sections["rl_module"]:
        config.rl_module(model_config=sections["rl_module"])
    return config

"""Any RLlib algorithm by its RLlib name (``SAC``, ``DreamerV3``), its own keys by RLlib's names.

The suite's algorithms (DQN, APEX, IMPALA, PPO, APPO, RLLIB-DQN) have tuned defaults and
documented keys of their own (one module each). Every other online algorithm of RLlib's
registry (``ray.rllib.algorithms.registry.ALGORITHMS``) is offered as RLlib ships it: the
shared vocabulary (:data:`sweeps.engine.algorithms.vocabulary.SHARED_PARAMS`) plus every keyword of
its ``AlgorithmConfig.training()`` (its own class's and the base class's), so RLlib's own
config decides what is valid, and RLlib's defaults apply. Offline algorithms learn from a
recorded dataset, not by sampling an env, so time-to-target does not apply to them: they are
refused with that reason (:data:`OFFLINE`).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

from sweeps.engine.algorithms.vocabulary import SHARED_PARAMS, AlgorithmSpec, OwnParam

__all__ = ["GENERIC", "OFFLINE", "generic_spec"]

#: RLlib's online algorithms the suite has no module of its own for: name → config class.
GENERIC: dict[str, str] = {
    "SAC": "ray.rllib.algorithms.sac:SACConfig",
    "DreamerV3": "ray.rllib.algorithms.dreamerv3:DreamerV3Config",
}

#: RLlib's offline algorithms: refused, with this reason.
OFFLINE: dict[str, str] = {
    name: "an offline algorithm: it learns from a recorded dataset, not by sampling the env, "
    "so time-to-target and env runner scaling do not apply"
    for name in ("BC", "CQL", "IQL", "MARWIL")
}

#: What the suite sets for every generic algorithm: iterations of at least 1 s (the
#: resolution of time-to-target, as for the suite's own algorithms) and no gradient
#: noise-scale measurement (it wraps the algorithm's learner class, written for the suite's).
GENERIC_DEFAULTS: dict[str, Any] = {"min_time_s_per_iteration": 1.0, "grad_noise_scale_every": 0}

# keys of AlgorithmConfig.training() the shared vocabulary already covers, or that are not
# knobs (classes, callbacks)
_NOT_OWN = {
    "self",
    "kwargs",
    "learner_class",
    "learner_connector",
    "add_default_connectors_to_learner_pipeline",
    "train_batch_size",
    "train_batch_size_per_learner",
    "lr",
    "gamma",
}


def _config_class(name: str):
    module, _, attr = GENERIC[name].partition(":")
    return getattr(importlib.import_module(module), attr)


class _TrainingKeys(Mapping):
    """The keywords of ``<Config>.training()`` (and ``AlgorithmConfig.training()``), read from
    RLlib on first use so that importing the suite does not import RLlib."""

    def __init__(self, name: str):
        self.name = name
        self._keys: dict[str, OwnParam] | None = None

    def _load(self) -> dict[str, OwnParam]:
        if self._keys is None:
            from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

            keys: dict[str, OwnParam] = {}
            for cls in (_config_class(self.name), AlgorithmConfig):
                for key in inspect.signature(cls.training).parameters:
                    if key not in _NOT_OWN and key not in SHARED_PARAMS and key not in keys:
                        keys[key] = OwnParam(
                            "training", f"RLlib {cls.__name__}.training({key}=...)"
                        )
            self._keys = keys
        return self._keys

    def __getitem__(self, key: str) -> OwnParam:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


def generic_spec(name: str) -> AlgorithmSpec:
    """The :class:`~sweeps.engine.algorithms.vocabulary.AlgorithmSpec` of RLlib's algorithm ``name``
    (a key of :data:`GENERIC`)."""
    return AlgorithmSpec(
        name=name,
        summary=f"RLlib {name} with RLlib's defaults",
        make_config=lambda: _config_class(name)(),
        own_params=_TrainingKeys(name),
        defaults=GENERIC_DEFAULTS,
    )

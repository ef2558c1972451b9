"""What a sweep can choose: DQN, APEX (Ape-X DQN), GORILA (Gorila DQN), SEED (SEED RL), IMPALA,
PPO and APPO behind one vocabulary,
and RLlib's other online algorithms (SAC, DreamerV3) by their RLlib names (``rllib_any.py``).

One file per algorithm (``dqn.py``, ``apex.py`` + its implementation ``apex_dqn.py``,
``gorila.py`` + ``gorila_dqn.py``, ``seed.py`` + ``seed_rl.py``,
``impala.py``, ``ppo.py``, ``appo.py``) holds what a sweep may set for it and its tuned
defaults; ``vocabulary.py`` holds the shared keys; ``registry.py`` the entry points re-exported
here. Importing this package does not import RLlib.
"""

from sweeps.engine.algorithms.registry import (
    ALGORITHMS,
    REFUSED,
    build_config,
    extract_metrics,
    known_params,
    register_with_tune,
)
from sweeps.engine.algorithms.vocabulary import SHARED_PARAMS, UnknownParameterError

__all__ = [
    "ALGORITHMS",
    "REFUSED",
    "SHARED_PARAMS",
    "UnknownParameterError",
    "build_config",
    "extract_metrics",
    "known_params",
    "register_with_tune",
]

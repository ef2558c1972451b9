"""APEX = Ape-X DQN (Horgan et al. 2018, arXiv 1803.00933): what a sweep can set.

The algorithm itself (built by this project on RLlib's new API stack, which removed ApexDQN) is
in :mod:`sweeps.engine.algorithms.apex_dqn`; this module is light (no RLlib import) so that sweep
files validate without loading RLlib.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.apex_defaults import APEX_ALGO_DEFAULTS
from sweeps.engine.algorithms.dqn import DQN_PARAMS, RLLIB_DQN_DEFAULTS, replay_buffer_config
from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, OwnParam


def _make_config():
    from sweeps.engine.algorithms.apex_dqn import ApexDQNConfig

    return ApexDQNConfig()


APEX_PARAMS: dict[str, OwnParam] = {
    **{k: v for k, v in DQN_PARAMS.items() if k != "epsilon"},
    "epsilon": OwnParam("training", "base ε of the actors' ε_i = ε^(1 + α·i/(N−1)) (paper: 0.4)"),
    "epsilon_alpha": OwnParam("training", "α of ε_i (paper: 7)"),
    "weights_sync_period": OwnParam("training", "learner updates between weight broadcasts"),
    "updates_per_learner_call": OwnParam(
        "training", "prioritized minibatches trained on per call of the learner"
    ),
    "training_intensity": OwnParam(
        "training", "upper bound on replayed / sampled transitions (None = unbounded)"
    ),
    "min_replay_ratio": OwnParam(
        "training",
        "lower bound on replayed / sampled transitions: actors wait for the learner "
        "below it (None = unbounded)",
    ),
}

#: APEX's defaults: the Ape-X paper's algorithm settings (:data:`APEX_ALGO_DEFAULTS`: 3-step
#: returns, epsilon_i = 0.4^(1 + 7 i/(N-1)), prioritized replay with alpha 0.6 and beta 0.4)
#: and RLlib's DQN's for the rest (its learner, network, optimiser and sample call:
#: :data:`sweeps.engine.algorithms.dqn.RLLIB_DQN_DEFAULTS`); the Cabs preset
#: (:mod:`sweeps.engine.presets`) holds the sample shape, network, optimiser and 1-step returns
#: tuned there.
APEX_DEFAULTS: dict[str, Any] = {
    **{
        k: v
        for k, v in RLLIB_DQN_DEFAULTS.items()
        if k not in ("epsilon", "training_intensity")  # APEX's own meanings: the paper's
    },
    **APEX_ALGO_DEFAULTS,
}

SPEC = AlgorithmSpec(
    name="APEX",
    summary="Ape-X DQN (Horgan et al. 2018): async ε_i-greedy actors, prioritized replay, one learner",
    make_config=_make_config,
    own_params=APEX_PARAMS,
    defaults=APEX_DEFAULTS,
    translate=lambda p: replay_buffer_config(p, APEX_DEFAULTS),
)

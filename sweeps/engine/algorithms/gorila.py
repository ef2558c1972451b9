"""GORILA = Gorila DQN (Nair et al. 2015, arXiv 1507.04296): what a sweep can set.

The algorithm (DQN actors, a replay shard per learner, ``num_learners`` learners sending
gradients to a parameter server that applies them asynchronously and holds the target
network) is in :mod:`sweeps.engine.algorithms.gorila_dqn`; this module is light (no RLlib
import) so that sweep files validate without loading RLlib.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.dqn import DQN_DEFAULTS, REPLAY_DQN_PARAMS
from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, OwnParam

#: GORILA's keys: the suite's DQN's (its actors and loss are DQN's) and the paper's own.
GORILA_PARAMS: dict[str, OwnParam] = {
    **{k: v for k, v in REPLAY_DQN_PARAMS.items() if k != "updates_per_learner_call"},
    "parameter_sync_period": OwnParam(
        "training", "a learner's own updates between two pulls of the server's parameters"
    ),
    "max_gradient_staleness": OwnParam(
        "training",
        "gradients computed on parameters more than this many server versions old are "
        "dropped and counted (None: none dropped)",
    ),
    "target_update_period": OwnParam(
        "training", "applied updates between two target network copies at the server"
    ),
    "weights_sync_period": OwnParam(
        "training", "applied updates between two broadcasts of the server's weights to the actors"
    ),
}

#: GORILA's defaults: the suite's DQN's (RLlib's: :data:`DQN_DEFAULTS`; no replay-ratio bound, so
#: learners replay as fast as they compute, as in the paper), uniform replay per learner shard
#: (the paper's), one learner on half a CPU unless the sweep says more, and the parameter
#: server's periods; the Cabs preset (:mod:`sweeps.engine.presets`) holds the actors, network
#: and replay ratio tuned there.
GORILA_DEFAULTS: dict[str, Any] = {
    **{k: v for k, v in DQN_DEFAULTS.items() if k != "updates_per_learner_call"},
    "prioritized_replay": False,
    "num_learners": 1,
    "num_cpus_per_learner": 0.5,
    "parameter_sync_period": 4,
    "max_gradient_staleness": 64,
    "target_update_period": 125,
    "weights_sync_period": 10,
}


def _make_config():
    from sweeps.engine.algorithms.gorila_dqn import GorilaConfig

    return GorilaConfig()


def _translate(p: dict[str, Any]) -> dict[str, Any]:
    from sweeps.engine.algorithms.dqn import replay_buffer_config

    return replay_buffer_config(p, GORILA_DEFAULTS)


SPEC = AlgorithmSpec(
    name="GORILA",
    summary="Gorila DQN (Nair et al. 2015): actors, M learners with replay shards, an async "
    "parameter server",
    make_config=_make_config,
    own_params=GORILA_PARAMS,
    defaults=GORILA_DEFAULTS,
    translate=_translate,
    extra={"minibatch_per_learner": True},
)

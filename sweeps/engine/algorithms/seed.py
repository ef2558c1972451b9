"""SEED = SEED RL (Espeholt et al. 2020, arXiv 1910.06591): what a sweep can set.

The algorithm (light actors that only step envs, one inference server batching every actor's
observations, IMPALA's V-trace learner) is in :mod:`sweeps.engine.algorithms.seed_rl`, its
actors in :mod:`sweeps.engine.algorithms.seed_actor`; this module is light (no RLlib import)
so that sweep files validate without loading RLlib.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.impala import IMPALA_DEFAULTS, IMPALA_PARAMS
from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, OwnParam

#: SEED's keys: IMPALA's (the learner is IMPALA's) and the inference server's, by the paper's
#: names where RLlib has none.
SEED_PARAMS: dict[str, OwnParam] = {
    **{k: v for k, v in IMPALA_PARAMS.items() if k != "num_aggregator_actors_per_learner"},
    "inference_batch_size": OwnParam(
        "training",
        "observations the inference server batches per forward pass (None: half "
        "the concurrent envs)",
    ),
    "inference_timeout_ms": OwnParam(
        "training", "ms a partial inference batch waits for more observations (default 2)"
    ),
    "inference_num_cpus": OwnParam(
        "training", "CPUs Ray reserves for the inference server (default 0: the learner's)"
    ),
    "inference_num_gpus": OwnParam(
        "training", "GPUs for the inference server (default 0; > 0 runs the policy there)"
    ),
}

#: SEED's defaults: IMPALA's (its learner is IMPALA's: :data:`IMPALA_DEFAULTS`, RLlib's); the
#: actors are light, so each asks Ray for a quarter of a CPU (a Cabs actor used ~0.2 of one on
#: 2 cores; an env that waits uses less), and a 2-core machine holds the learner and up to 4.
SEED_DEFAULTS: dict[str, Any] = {
    **{k: v for k, v in IMPALA_DEFAULTS.items() if k != "num_aggregator_actors_per_learner"},
    "num_cpus_per_env_runner": 0.25,
}


def _make_config():
    from sweeps.engine.algorithms.seed_rl import SEEDConfig

    return SEEDConfig()


SPEC = AlgorithmSpec(
    name="SEED",
    summary="SEED RL (Espeholt et al. 2020): env-only actors, central batched inference, V-trace",
    make_config=_make_config,
    own_params=SEED_PARAMS,
    defaults=SEED_DEFAULTS,
    sequence_loss=True,
)

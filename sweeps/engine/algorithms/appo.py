"""APPO: asynchronous PPO on IMPALA's architecture (RLlib's APPO, V-trace + clipped surrogate)."""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.impala import IMPALA_DEFAULTS, IMPALA_PARAMS, without_state_server
from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, OwnParam

#: APPO keys: IMPALA's plus the PPO surrogate's, by their RLlib names (APPOConfig.training).
APPO_PARAMS: dict[str, OwnParam] = {
    **IMPALA_PARAMS,
    "clip_param": OwnParam("training", "PPO surrogate clip ε"),
    "use_kl_loss": OwnParam("training", "add the KL penalty"),
    "kl_coeff": OwnParam("training", "KL coefficient"),
    "kl_target": OwnParam("training", "KL target"),
    "target_network_update_freq": OwnParam(
        "training", "learner updates between target-network updates"
    ),
    "circular_buffer_num_batches": OwnParam(
        "training", "train batches held in the learner's circular buffer"
    ),
    "circular_buffer_iterations_per_batch": OwnParam("training", "times each batch is trained on"),
}

#: APPO's defaults: RLlib's ``APPOConfig`` shares IMPALA's defaults for these keys
#: (:data:`IMPALA_DEFAULTS`); its surrogate's own settings are RLlib's.
APPO_DEFAULTS: dict[str, Any] = dict(IMPALA_DEFAULTS)


def _make_config():
    from ray.rllib.algorithms.appo import APPOConfig

    return without_state_server(APPOConfig())


SPEC = AlgorithmSpec(
    name="APPO",
    summary="RLlib APPO: IMPALA's asynchronous architecture with PPO's clipped surrogate",
    make_config=_make_config,
    own_params=APPO_PARAMS,
    defaults=APPO_DEFAULTS,
    sequence_loss=True,
    extra={"learner_thread": True},  # RLlib's IMPALA learner thread (apply_params)
)

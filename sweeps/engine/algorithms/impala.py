"""IMPALA (Espeholt et al. 2018, arXiv 1802.01561): RLlib's IMPALA with V-trace.

Env runners sample asynchronously; the learner corrects the policy lag of their samples with
V-trace. The defaults below are RLlib's; the settings tuned for wall-clock speed on Contoso
Cabs are its preset there (:mod:`sweeps.engine.presets`); the seed article's Atari Pong
settings are in the sweep file ``sweeps/pong_impala.py``.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, OwnParam

#: IMPALA keys a sweep may set, by their RLlib names (IMPALAConfig.training).
IMPALA_PARAMS: dict[str, OwnParam] = {
    "num_epochs": OwnParam("training", "passes over each train batch"),
    "minibatch_size": OwnParam("training", "SGD minibatch (None = the whole train batch)"),
    "vtrace_clip_rho_threshold": OwnParam(
        "training", "V-trace ρ̄ (importance-weight clip of the value target)"
    ),
    "vtrace_clip_pg_rho_threshold": OwnParam(
        "training", "V-trace clip of the policy-gradient weight"
    ),
    "vf_loss_coeff": OwnParam("training", "value-loss coefficient"),
    "entropy_coeff": OwnParam("training", "entropy-bonus coefficient"),
    "broadcast_interval": OwnParam(
        "training", "training steps between weight broadcasts to env runners"
    ),
    "learner_queue_size": OwnParam("training", "train batches queued per learner"),
    "num_aggregator_actors_per_learner": OwnParam(
        "learners", "aggregator actors building train batches for each learner"
    ),
}

#: IMPALA's defaults: RLlib's ``IMPALAConfig`` as shipped (``ray.rllib.algorithms.impala``,
#: with ``DefaultModelConfig``'s 256x256 tanh torso), plus what the suite sets for every
#: algorithm: one env runner (RLlib: 2), the learner in the trial's process (RLlib: one learner
#: actor; no extra process on a small machine) and iterations of at least 1 s (RLlib: 10 s).
#: The Cabs preset (:mod:`sweeps.engine.presets`) holds the sample shape and learner settings
#: tuned there; tests/test_presets.py checks these against RLlib's own config.
IMPALA_DEFAULTS: dict[str, Any] = {
    "num_env_runners": 1,
    "num_envs_per_env_runner": 1,
    "rollout_fragment_length": 50,
    "train_batch_size": 500,
    "lr": 5e-4,
    "gamma": 0.99,
    "hidden_sizes": [256, 256],
    "fcnet_activation": "tanh",
    "num_learners": 0,
    "num_epochs": 1,
    "minibatch_size": None,
    "entropy_coeff": 0.01,
    "vf_loss_coeff": 0.5,
    "reward_scale": 1.0,
    "min_time_s_per_iteration": 1.0,
}


def without_state_server(config):
    """``config`` with RLlib's pull-based weight sync turned off (IMPALA and APPO).

    RLlib's IMPALA and APPO default to ``use_env_runner_state_server=True``: an
    ``EnvRunnerStateServer`` actor, started per Algorithm, from which every env runner pulls
    the latest weights at the top of each ``sample()``. Starting that actor is a new worker
    process (~2.5 s on a 2-core machine, longer under load), and an env runner's first
    ``sample()`` blocks on it: no env step for the first ~3 s of every IMPALA trial, inside its
    time-to-target (``python benchmarks/bench_startup.py --algorithms IMPALA
    --rllib-state-server`` shows it). The Algorithm's broadcast of its weights every
    ``broadcast_interval`` training steps (RLlib's sync before the server existed) has no
    start-up cost and is what the suite's IMPALA and APPO use.
    """
    return config.env_runners(use_env_runner_state_server=False)


def _make_config():
    from ray.rllib.algorithms.impala import IMPALAConfig

    return without_state_server(IMPALAConfig())


SPEC = AlgorithmSpec(
    name="IMPALA",
    summary="RLlib IMPALA: asynchronous env runners, V-trace off-policy correction",
    make_config=_make_config,
    own_params=IMPALA_PARAMS,
    defaults=IMPALA_DEFAULTS,
    sequence_loss=True,
    extra={"learner_thread": True},  # RLlib's IMPALA learner thread (apply_params)
)

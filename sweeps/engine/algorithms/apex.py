"""APEX = Ape-X DQN (Horgan et al. 2018, arXiv 1803.00933): what a sweep can set.

The algorithm itself (built by this project on RLlib's new API stack, which removed ApexDQN) is
in :mod:`sweeps.engine.algorithms.apex_dqn`; this module is light (no RLlib import) so that sweep
files validate without loading RLlib.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.apex_defaults import APEX_ALGO_DEFAULTS
from sweeps.engine.algorithms.dqn import DQN_PARAMS, replay_buffer_config
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

#: A sweep's APEX trial: the sample shape, network and optimiser tuned on Contoso Cabs
#: (docs/benchmarks.md), :data:`APEX_ALGO_DEFAULTS`, and 1-step returns.
APEX_DEFAULTS: dict[str, Any] = {
    "num_env_runners": 1,
    # RLlib's env runner pays per vector step: 16 envs x 4 steps per sample call samples faster
    # than 8 x 8 at the same replay ratio (docs/benchmarks.md, "APEX's sample call")
    "num_envs_per_env_runner": 16,
    "rollout_fragment_length": 4,
    "train_batch_size": 64,
    "lr": 1e-3,
    "gamma": 0.99,
    "hidden_sizes": [64, 64],
    "fcnet_activation": "relu",
    "num_learners": 0,
    **APEX_ALGO_DEFAULTS,
    # 1-step returns, not the paper's 3: with few env runners the only actors explore at a
    # large ε, and uncorrected n-step returns follow that exploring policy; 1 step reached the
    # Cabs target sooner with 0 and 1 env runners (docs/benchmarks.md, "Learning settings:
    # 1-step returns"). With many env runners most actors' ε is small and the paper's 3 may
    # pay: a sweep can set n_step.
    "n_step": 1,
    "target_network_update_freq": 1000,
    "num_steps_sampled_before_learning_starts": 1000,
    "td_error_loss_fn": "huber",
    "reward_scale": 0.01,
    "min_time_s_per_iteration": 1.0,
}

SPEC = AlgorithmSpec(
    name="APEX",
    summary="Ape-X DQN (Horgan et al. 2018): async ε_i-greedy actors, prioritized replay, one learner",
    make_config=_make_config,
    own_params=APEX_PARAMS,
    defaults=APEX_DEFAULTS,
    translate=lambda p: replay_buffer_config(p, APEX_DEFAULTS),
)

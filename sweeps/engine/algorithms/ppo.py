"""PPO (Schulman et al. 2017, arXiv 1707.06347): RLlib's PPO through the shared vocabulary.

Seed 003's "PPO on CartPole in three lines" is::

    from sweeps.engine.algorithms import build_config
    algo = build_config({"algorithm": "PPO"}, "CartPole-v1").build_algo()
    print(algo.train()["env_runners"]["episode_return_mean"])
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, OwnParam

#: PPO keys a sweep may set, by their RLlib names (PPOConfig.training).
PPO_PARAMS: dict[str, OwnParam] = {
    "num_epochs": OwnParam("training", "SGD passes over each train batch"),
    "minibatch_size": OwnParam("training", "SGD minibatch"),
    "clip_param": OwnParam("training", "PPO surrogate clip ε"),
    "vf_clip_param": OwnParam("training", "value-function clip"),
    "vf_loss_coeff": OwnParam("training", "value-loss coefficient"),
    "entropy_coeff": OwnParam("training", "entropy-bonus coefficient"),
    "lambda_": OwnParam("training", "GAE λ"),
    "use_kl_loss": OwnParam("training", "add the adaptive KL penalty"),
    "kl_coeff": OwnParam("training", "initial KL coefficient"),
    "kl_target": OwnParam("training", "KL target"),
}

#: Defaults: RLlib's PPO settings except faster sampling (8 vectorised envs per env runner),
#: a 2000-step batch with 10 epochs (RLlib: 4000 and 30), GAE λ 0.95, rewards × 0.01 for the
#: learner, no value-loss clipping and ~1 s iterations.
PPO_DEFAULTS: dict[str, Any] = {
    "num_env_runners": 1,
    "num_envs_per_env_runner": 8,
    "rollout_fragment_length": "auto",
    "train_batch_size": 2000,
    "minibatch_size": 128,
    "num_epochs": 10,
    "lr": 3e-4,
    "gamma": 0.99,
    "lambda_": 0.95,
    "vf_clip_param": 1e6,  # no value-loss clipping: RLlib's 10 zeroes the value gradient when returns are large
    "hidden_sizes": [64, 64],
    "num_learners": 0,
    "reward_scale": 0.01,
    "min_time_s_per_iteration": 1.0,
}


def _make_config():
    from ray.rllib.algorithms.ppo import PPOConfig

    return PPOConfig()


SPEC = AlgorithmSpec(
    name="PPO",
    summary="RLlib PPO (clipped surrogate, GAE); synchronous sampling",
    make_config=_make_config,
    own_params=PPO_PARAMS,
    defaults=PPO_DEFAULTS,
)

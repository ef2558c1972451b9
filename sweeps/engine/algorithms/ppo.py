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

#: PPO's defaults: RLlib's ``PPOConfig`` as shipped (``ray.rllib.algorithms.ppo``, with
#: ``DefaultModelConfig``'s 256x256 tanh torso), plus what the suite sets for every algorithm:
#: one env runner (RLlib's PPO: 2), the learner in the trial's process and iterations of at
#: least 1 s. The Cabs preset (:mod:`sweeps.engine.presets`) holds the settings tuned there;
#: tests/test_presets.py checks these against RLlib's own config.
PPO_DEFAULTS: dict[str, Any] = {
    "num_env_runners": 1,
    "num_envs_per_env_runner": 1,
    "rollout_fragment_length": "auto",
    "train_batch_size": 4000,
    "minibatch_size": 128,
    "num_epochs": 30,
    "lr": 5e-5,
    "gamma": 0.99,
    "lambda_": 1.0,
    "clip_param": 0.3,
    "vf_clip_param": 10.0,
    "vf_loss_coeff": 1.0,
    "entropy_coeff": 0.0,
    "use_kl_loss": True,
    "kl_coeff": 0.2,
    "kl_target": 0.01,
    "hidden_sizes": [256, 256],
    "fcnet_activation": "tanh",
    "num_learners": 0,
    "reward_scale": 1.0,
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

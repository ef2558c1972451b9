"""Batch-size study: does the gradient noise scale predict how PPO's batch size trades
optimisation steps for env steps? (docs/batch_size.md; analysis/batch_size.py)

PPO on CartPole-v1 with one gradient step per train batch (``num_epochs=1``, the whole batch
as the minibatch), so every update consumes a fresh batch of B env steps exactly once and
env steps = updates x B, the setting of McCandlish et al. (arXiv 1812.06162). B in {128, 256,
512, 1024}, 3 seeds each, target: training return 150 (the exploring policy's moving mean; the
study compares one algorithm with itself), 60 s budget. The learner measures the simple noise
scale B_simple every update (``grad_noise_scale_every=1``).

``python -m sweeps.run sweeps/cartpole_batch_size.py`` (about 7 minutes), then
``python -m analysis.batch_size RESULTS_DIR`` for the predicted-versus-measured check.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cartpole_batch_size",
    env="CartPole-v1",
    algorithms=["PPO"],
    search_space={"train_batch_size": choice([128, 256, 512, 1024])},
    fixed={
        "num_env_runners": 1,
        "num_envs_per_env_runner": 8,
        "num_epochs": 1,
        "minibatch_size": None,
        "lr": 0.002,
        "grad_noise_scale_every": 1,
        "min_time_s_per_iteration": 0.5,
        # the settings its published run used (then the suite's PPO defaults), not the rl-zoo
        # preset CartPole-v1 now takes (sweeps.engine.presets)
        "rollout_fragment_length": "auto",
        "lambda_": 0.95,
        "gamma": 0.99,
        "clip_param": 0.3,
        "use_kl_loss": True,
        "vf_loss_coeff": 1.0,
        "vf_clip_param": 1e6,
        "hidden_sizes": [64, 64],
        "reward_scale": 0.01,
    },
    target=Target(metric="training", value=150.0),
    budget=Budget(time_s=60),
    search=Search(sampler="grid", num_samples=4, seeds=3, max_concurrent=1, capping=None),
    baseline=None,  # the study compares batch sizes with each other, not with a baseline
)

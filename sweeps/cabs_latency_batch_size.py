"""Batch-size study on a sampling-bound problem: does the gradient noise scale predict how
PPO's batch size trades optimisation steps for env steps on Contoso Cabs whose env steps each
wait 2 ms? (docs/batch_size.md, second study; analysis/batch_size.py)

The CartPole study (``sweeps/cartpole_batch_size.py``) checks the model where env steps are
almost free; here each env step costs wall-clock (``step_latency_ms``: :mod:`envs.latency`),
so the env steps a larger batch spends show in the time-to-target, as they do with a slow
simulator. PPO with one gradient step per train batch (``num_epochs=1``, the whole batch as
the minibatch): every update consumes a fresh batch of B env steps once, env steps = updates x
B, the setting of McCandlish et al. (arXiv 1812.06162). B in {128, 256, 512, 1024}; 4 env
runners x 8 envs (each runner samples at most 8 x 1 / 2 ms / 8 = 500 env steps/s: 2,000 in
all), 1/16 CPU each; 3 seeds; target: training return 0.9 x the exact optimum (the exploring
policy's moving mean; the study compares one algorithm with itself); 120 s budget. The learner
measures the simple noise scale B_simple every update (``grad_noise_scale_every=1``).

``python -m sweeps.run sweeps/cabs_latency_batch_size.py`` (about 12 minutes on 2 cores), then
``python -m analysis.batch_size RESULTS_DIR --pilot 256`` for the predicted-versus-measured
check.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_latency_batch_size",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 2},
    algorithms=["PPO"],
    search_space={"train_batch_size": choice([128, 256, 512, 1024])},
    fixed={
        "num_env_runners": 4,
        "num_cpus_per_env_runner": 0.0625,
        "num_envs_per_env_runner": 8,
        "num_epochs": 1,
        "minibatch_size": None,
        "lr": 0.002,
        "grad_noise_scale_every": 1,
        "min_time_s_per_iteration": 0.5,
    },
    target=Target(metric="training", fraction_of_optimal=0.9),
    budget=Budget(time_s=120),
    search=Search(sampler="grid", num_samples=4, seeds=3, max_concurrent=1, capping=None),
    baseline=None,  # the study compares batch sizes with each other, not with a baseline
)

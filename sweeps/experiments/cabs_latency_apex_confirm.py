"""APEX on the latency study's settings with ``min_replay_ratio=8`` at 4, 8 and 16 env runners,
on seeds no choice was made on (3-7).

``min_replay_ratio=8`` was kept over 16 on seeds 0-2 (``cabs_latency_apex_ratio.py``: at 16 env
runners 3/3 seeds reached the target with 8, 0/3 with 16). Question, on fresh seeds: does APEX
reach the target in every seed at 8 and 16 env runners, and is its time-to-target at 8 no
worse than at 4? ``python -m sweeps.run sweeps/experiments/cabs_latency_apex_confirm.py``;
3 N x 5 seeds = 15 trials, at most 100 s each.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_latency_apex_confirm",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["APEX"],
    search_space={"num_env_runners": choice([4, 8, 16])},
    fixed={
        "num_cpus_per_env_runner": 0.0625,
        "num_envs_per_env_runner": 8,
        "train_batch_size": 64,
        "lr": 0.00124,
        "min_replay_ratio": 8.0,
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=100),
    search=Search(
        sampler="grid", num_samples=3, seeds=5, first_seed=3, max_concurrent=1, capping=None
    ),
    baseline=None,
)

"""APEX alone on the latency study's settings (``sweeps/cabs_latency_scaling.py``: Contoso
Cabs whose env steps each wait 4 ms, 8 envs and 1/16 CPU per env runner, learning rate 0.00124,
64-transition minibatches, 100 s per trial, 3 seeds, capping off) at 1, 2, 4, 8 and 16 env
runners, with a lower bound on the replay ratio, ``min_replay_ratio=8``: with 16 actors
sampling freely on 2 cores APEX's learner kept a sixth of its one-actor pace and replayed each
transition ~2 times; the bound held the ratio at 8 and half the pace (docs/benchmarks.md,
"APEX's learner as actors are added").

Question: with the bound, does APEX reach the target in every seed at 8 and 16 env runners,
and is its time-to-target at 8 no worse than at 4? No reference (the latency study has it) and
no confirmation stage: a grid over N, not a choice. ``python -m sweeps.run
sweeps/experiments/cabs_latency_apex.py``; (4 N + baseline) x 3 seeds = 15 trials.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_latency_apex",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["APEX"],
    search_space={"num_env_runners": choice([2, 4, 8, 16])},
    fixed={
        "num_cpus_per_env_runner": 0.0625,
        "num_envs_per_env_runner": 8,
        "train_batch_size": 64,
        "lr": 0.00124,
        "min_replay_ratio": 8.0,
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=100),
    search=Search(sampler="grid", num_samples=4, seeds=3, max_concurrent=1, capping=None),
    baseline={
        "algorithm": "APEX",
        "num_env_runners": 1,
        "train_batch_size": 64,
        "lr": 0.00124,
        "min_replay_ratio": 8.0,
    },
)

"""Break-even study, one cell beyond it: IMPALA with 16 env runners against the single-process
reference at 120 ms per env step, on 5 seeds none of the study's runs used.

The break-even study (``sweeps/cabs_break_even.py``, docs/break_even.md) fits its model at
4 ms per env step on seeds 0-2 and puts IMPALA with 16 env runners' break-even at ~42 ms; at
60 ms its predicted absolute speedup is only ~1.2x, too close to 1 for 3 seeds to separate.
This run measures the cost where the model predicts ~1.6x (the reference ~3.5 minutes,
16 env runners ~2.3 minutes), on fresh seeds 3-7, to see whether an absolute speedup above 1
with an interval above 1 exists on 2 cores. The same settings as the study (8 envs and 1/16
CPU per env runner, 512-step train batches, lr 0.001); IMPALA at 16 env runners is its own
baseline (not run twice); the budget of 300 s covers the reference's slowest predicted seed.
(1 + reference) x 5 seeds: 32 minutes on the 2-core machine (run ``20261126-140710``:
1.09x [1.04, 1.40], docs/break_even.md).
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_break_even_120ms",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 120},
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([16])},
    per_algorithm={"IMPALA": {"train_batch_size": choice([512]), "lr": choice([0.001])}},
    fixed={"num_cpus_per_env_runner": 0.0625, "num_envs_per_env_runner": 8},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=300),
    search=Search(
        sampler="grid", num_samples=1, seeds=5, first_seed=3, max_concurrent=1, capping=None
    ),
    baseline={"algorithm": "IMPALA", "num_env_runners": 16, "train_batch_size": 512, "lr": 0.001},
    reference={"algorithm": "SB3-DQN"},
)

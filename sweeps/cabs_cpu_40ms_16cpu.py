"""CPU-bound Contoso Cabs at 40 ms per env step on a 16-core node: IMPALA with 15 env runners
against the single-process reference.

The companion of ``sweeps/cabs_cpu_scaling_16cpu.py`` (same env, IMPALA settings, target and
budget) at twice the step cost (``step_cpu_ms=40``: :mod:`envs.latency`), to bracket the step
cost above which 15 env runners beat one process. IMPALA runs only at N = 15, its own
baseline (the grid's one configuration is the baseline, so it is not run twice); a trial asks
for 16 CPUs. (Baseline + reference) x 2 seeds, at most 120 s each: about 5 minutes on a
16-core node. Measured: docs/device_16cpu.md.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_cpu_40ms_16cpu",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_cpu_ms": 40},
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([15])},
    per_algorithm={"IMPALA": {"train_batch_size": choice([512]), "lr": choice([0.001])}},
    fixed={"num_envs_per_env_runner": 1},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=120),
    search=Search(sampler="grid", num_samples=1, seeds=2, max_concurrent=1, capping=None),
    baseline={"algorithm": "IMPALA", "num_env_runners": 15, "train_batch_size": 512, "lr": 0.001},
    reference={"algorithm": "SB3-DQN"},
)

"""A probe of the latency-bound regime on 2 cores: APEX on Contoso Cabs whose env steps each
wait 5 ms (``step_latency_ms``, :mod:`envs.latency`), at 1, 4 and 16 env runners of 1/16 CPU
each (every trial asks for at most 2 CPUs: honest on a 2-core machine), one seed, 60 s each.

It measures what a latency-bound scaling study must be sized for (docs/benchmarks.md, "Latency
probe"): steady env steps/s per N, actor start-up per N (16 env runners take most of a minute
to start on 2 cores) and the trial's peak memory (``peak_rss_mib``). About 3.5 minutes:
``python -m sweeps.run sweeps/experiments/cabs_latency_probe.py``. Capping is off: every N runs its budget.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_latency_probe",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 5},
    algorithms=["APEX"],
    search_space={"num_env_runners": choice([1, 4, 16])},
    fixed={
        "num_cpus_per_env_runner": 0.0625,
        "num_envs_per_env_runner": 1,
        "lr": 0.00124,
        "train_batch_size": 64,
    },
    target=Target(fraction_of_optimal=0.95),
    budget=Budget(time_s=60),
    search=Search(sampler="grid", num_samples=3, seeds=1, capping=None),
    baseline={"algorithm": "APEX", "num_env_runners": 1},
)

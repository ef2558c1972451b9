"""A probe for sizing the plan-fit studies: IMPALA and APPO at 1 and 4 env runners on the
latency study's settings (Contoso Cabs, each env step waiting 4 ms; 8 envs and 1/16 CPU per
env runner), one seed (50, outside every study's seeds), 90 s each.

It measures what the fit studies (``sweeps/cabs_fit_latency.py``, ``sweeps/cabs_fit_cpu.py``)
must be sized for: each algorithm's time-to-target at the ends of its fit range, and, from
``progress.parquet``, when a lower target would have been reached. The CPU-bound variant::

    python -m sweeps.run sweeps/experiments/cabs_fit_probe.py
    python -m sweeps.run sweeps/experiments/cabs_fit_probe.py --env-config step_latency_ms=0 --env-config step_cpu_ms=1

About 4 minutes each on the 2-core machine. Capping is off.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_fit_probe",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["IMPALA", "APPO"],
    search_space={"num_env_runners": choice([1, 4])},
    per_algorithm={
        "IMPALA": {"train_batch_size": choice([512]), "lr": choice([0.001])},
        "APPO": {"train_batch_size": choice([512]), "lr": choice([0.001])},
    },
    fixed={"num_cpus_per_env_runner": 0.0625, "num_envs_per_env_runner": 8},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=90),
    search=Search(
        sampler="grid", num_samples=4, seeds=1, first_seed=50, max_concurrent=1, capping=None
    ),
)

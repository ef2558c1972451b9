"""Latency-bound scaling study: Ape-X DQN (APEX) and IMPALA on Contoso Cabs whose env steps
each wait 3 ms, at 1, 2, 4, 8 and 16 env runners, 3 seeds each, against the DQN baseline
(1 env runner) and the single-process Stable-Baselines3 DQN reference (same latency).

Question: when experience collection dominates (a slow simulator, modelled by
``step_latency_ms``: :mod:`envs.latency`), how far do env runners pay on one 2-core machine, and
can the capacity plan predict N = 8 and 16 from N <= 4 (the plan check,
``python -m analysis.plan RUN --holdout 8,16``; the report's section 5)?

Sizing (docs/latency_scaling.md has the probes): at 3 ms one env runner samples at most
333 env steps/s (~225 measured), and every algorithm here needs ~10 k env steps, so N = 1
takes ~50 s; 16 env runners sample ~1,300-1,900 env steps/s but take ~46-50 s to start on
2 cores. Every env runner asks for 1/16 CPU and runs 4 envs (so a trial asks for at most
2 CPUs: none is oversubscribed; waiting env runners leave their CPU to others). Evaluation
episodes run without the latency. Capping is off: a scaling curve needs every N to run its
budget. (2 algorithms x 5 N + baseline + reference) x 3 seeds = 36 trials of at most 75 s:
about 28 minutes on the 2-core machine (docs/latency_scaling.md gives the measured time).
"""

from sweeps.spec import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_latency_scaling",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 3},
    algorithms=["APEX", "IMPALA"],
    search_space={"num_workers": choice([1, 2, 4, 8, 16])},
    per_algorithm={
        "APEX": {"train_batch_size": choice([64]), "lr": choice([0.00124])},
        "IMPALA": {"train_batch_size": choice([512]), "lr": choice([0.001])},
    },
    fixed={"num_cpus_per_env_runner": 0.0625, "num_envs_per_worker": 4},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=75),
    search=Search(sampler="grid", num_samples=10, seeds=3, max_concurrent=1, capping=None),
    baseline={"algorithm": "DQN", "num_workers": 1},
    reference={"algorithm": "SB3-DQN"},
)

"""Latency-bound scaling study: Ape-X DQN (APEX) and IMPALA on Contoso Cabs whose env steps
each wait 4 ms, at 1, 2, 4, 8 and 16 env runners, 3 seeds each, against the single-process
Stable-Baselines3 DQN reference (same latency).

Question: when experience collection dominates (a slow simulator, modelled by
``step_latency_ms``: :mod:`envs.latency`), how far do env runners pay on one 2-core machine, and
can the capacity plan predict N = 8 and 16 from N <= 4 (the plan check,
``python -m analysis.plan holdout RUN 8,16``; the report's section 5)?

Sizing (docs/latency_scaling.md has the probes): every env runner runs 8 envs, each step
waiting 4 ms in turn, so one runner samples at most 250 env steps/s; APEX and IMPALA need
~10 k env steps here, so N = 1 takes about a minute. 16 env runners ask for 1/16 CPU each (a
trial asks for at most 2 CPUs: none is oversubscribed; a waiting env runner leaves its CPU to
others) and sample until the 2 CPUs run out, but take ~45 s to start on 2 cores. Evaluation
episodes run without the latency. Capping is off: a scaling curve needs every N to run its
budget. The baseline is IMPALA with 1 env runner (its curve's own first point, and the
algorithm that reliably reaches the target at N = 1 within the budget here; a DQN baseline
would add three more one-runner trials, the slowest kind, and push the study past 30 minutes;
the reference is the DQN comparison). (2 x 5 N - 1 + baseline + reference) x 3 seeds = 33
trials of at most 100 s: under 30 minutes on the 2-core machine (docs/latency_scaling.md gives
the measured time).
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_latency_scaling",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["APEX", "IMPALA"],
    search_space={"num_env_runners": choice([1, 2, 4, 8, 16])},
    per_algorithm={
        "APEX": {"train_batch_size": choice([64]), "lr": choice([0.00124])},
        # IMPALA at 1 env runner is the baseline below (not sampled twice)
        "IMPALA": {
            "num_env_runners": choice([2, 4, 8, 16]),
            "train_batch_size": choice([512]),
            "lr": choice([0.001]),
        },
    },
    fixed={"num_cpus_per_env_runner": 0.0625, "num_envs_per_env_runner": 8},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=100),
    search=Search(sampler="grid", num_samples=9, seeds=3, max_concurrent=1, capping=None),
    baseline={"algorithm": "IMPALA", "num_env_runners": 1, "train_batch_size": 512, "lr": 0.001},
    reference={"algorithm": "SB3-DQN"},
)

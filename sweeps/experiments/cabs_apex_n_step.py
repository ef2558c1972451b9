"""APEX's n-step length on Contoso Cabs, on seeds no default was tuned on, beside the reference.

``cabs_apex_tune`` (seeds 0-4) found APEX with 0 env runners reaching the Cabs target at its
first evaluation in 20 of 50 trials with 1-step returns, against 3 of 20 with the Ape-X
paper's 3 (docs/benchmarks.md, "Learning settings: 1-step returns"). This sweep checks that
on seeds 20-24: n-step 1 and 3, 0 and 1 env runners, the single-process reference (SB3 DQN)
alongside.
25 trials of at most 45 s; about 2-3 minutes on a 2-core laptop.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_apex_n_step",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX"],
    search_space={"num_env_runners": choice([0, 1]), "n_step": choice([1, 3])},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=45),
    search=Search(
        sampler="grid", num_samples=4, seeds=5, first_seed=20, max_concurrent=1, capping=None
    ),
    baseline=None,
    reference={"algorithm": "SB3-DQN"},
)

"""Confirm the answer of ``cabs_scaling`` with 5 seeds: the fastest suite configuration (the
DQN baseline, 1 env runner) against the single-process reference (Stable-Baselines3 DQN).

The cabs_scaling study (docs/cabs_scaling.md) found, over 3 seeds, that no configuration beats
the single-process reference on a 2-core machine; this sweep reruns just those two with 5
seeds each, on the same evaluation protocol, so both medians have tighter intervals and an
olympic mean. 10 trials of at most 45 s; expected 2-3 minutes on a 2-core laptop.
"""

from sweeps.spec import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_best",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["DQN"],
    search_space={"num_env_runners": choice([1])},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=45),
    search=Search(sampler="grid", num_samples=1, seeds=5, max_concurrent=1),
    baseline={"algorithm": "DQN", "num_env_runners": 1},
    reference={"algorithm": "SB3-DQN"},
)

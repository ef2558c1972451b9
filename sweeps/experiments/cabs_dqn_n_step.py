"""The DQN baseline's n-step length on Contoso Cabs, on seeds no default was tuned on.

APEX reached the Cabs target sooner with 1-step returns than with 3 (``cabs_apex_n_step``);
the sweeps' DQN baseline samples with ε decaying from 1.0 to 0.02 over its first 10 k env
steps, so its early n-step returns follow an exploring policy too. This sweep measures
whether 1-step returns speed the baseline as well (a slow baseline would inflate every
relative speedup): 1 env runner (the baseline's configuration), n-step 1 and 3, seeds 20-24.
10 trials of at most 45 s; about 2 minutes on a 2-core laptop.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_dqn_n_step",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["DQN"],
    search_space={"num_env_runners": choice([1]), "n_step": choice([1, 3])},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=45),
    search=Search(
        sampler="grid", num_samples=2, seeds=5, first_seed=20, max_concurrent=1, capping=None
    ),
    baseline=None,
    reference=None,
)

"""Tune APEX's learning settings for sample efficiency on Contoso Cabs, with 0 env runners.

The single-process reference (SB3 DQN) reaches 95 % of the Cabs optimum in ~2 k env steps;
APEX with 0 env runners, the fastest suite configuration, needed ~4-5 k with the Ape-X paper's
settings (docs/cabs_scaling.md, "Confirmation with 5 seeds"). Its sampling and learner rates
were tuned before (docs/benchmarks.md); this sweep searches the settings that decide how much
it learns per env step: learning rate, n-step length (at most the 4-step sample fragment),
warm-up, target-network period and the actor's ε. TPE (Optuna) over 24 configurations, tuning
seeds 0-4, time-to-target as the objective; ``cabs_apex_n_step`` and ``cabs_best`` then check
the choice on seeds 20-24, which no default was tuned on (docs/benchmarks.md, "Learning
settings: 1-step returns"). 120 trials of at most 15 s; about 8 minutes on a 2-core laptop.
"""

from sweeps import Budget, Search, Sweep, Target, choice, loguniform

SWEEP = Sweep(
    name="cabs_apex_tune",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX"],
    search_space={
        "num_env_runners": choice([0]),
        "lr": loguniform(3e-4, 3e-3),
        "n_step": choice([1, 2, 3]),
        "num_steps_sampled_before_learning_starts": choice([250, 500, 1000]),
        "target_network_update_freq": choice([250, 500, 1000, 2000]),
        "epsilon": choice([0.1, 0.2, 0.4]),
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=15),
    search=Search(sampler="tpe", num_samples=24, seeds=5, max_concurrent=1, capping=None),
    baseline=None,
    reference=None,
)

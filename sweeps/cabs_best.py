"""Confirm the answer of ``cabs_scaling`` on 10 fresh seeds: the fastest Ape-X DQN layout and
the DQN baseline against the single-process reference (Stable-Baselines3 DQN).

The cabs_scaling study (docs/cabs_scaling.md) finds that no configuration beats the single-
process reference on a 2-core machine; its env runners cost a process start-up each. This sweep
asks the sharpest form of the question: Ape-X DQN with 0 env runners (the driver samples: one
process, no actor start-up, the suite's data path) and with 1, the DQN baseline (1 env runner)
and the reference. Two stages (docs/design.md, *stage*): the search runs each on 3 seeds (0-2);
the confirmation reruns the search's 2 fastest configurations (both APEX layouts), the baseline
and the reference on 10 seeds the search never used (1000-1009), and every number of the answer
comes from those. Evaluations after each 0.1 s of training, from the initial policy on. 52
trials of at most 45 s; about 7 minutes on a 2-core laptop.
"""

from sweeps import Budget, Confirm, Evaluation, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_best",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX"],
    search_space={"num_env_runners": choice([0, 1])},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=45),
    evaluation=Evaluation(every_s=0.1),
    search=Search(
        sampler="grid",
        num_samples=2,
        seeds=3,
        max_concurrent=1,
        capping=None,
        confirm=Confirm(top_k=2, seeds=10),
    ),
    baseline={"algorithm": "DQN", "num_env_runners": 1},
    reference={"algorithm": "SB3-DQN"},
)

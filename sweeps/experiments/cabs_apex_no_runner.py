"""APEX with 0 env runners (the fastest suite configuration on the latency-free Cabs) alone,
seeds 20-24, no baseline or reference: 5 trials of at most 20 s, about 1 minute on a 2-core
laptop. For comparing two revisions of the algorithm code back to back on the configuration
``cabs_best`` confirms (docs/cabs_scaling.md): run it from each checkout's root in turn
(``cd OTHER_CHECKOUT && python -m sweeps.run sweeps/experiments/cabs_apex_no_runner.py --results DIR``),
alternating.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_apex_no_runner",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX"],
    search_space={"num_env_runners": choice([0])},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=20),
    search=Search(
        sampler="grid", num_samples=1, seeds=5, first_seed=20, max_concurrent=1, capping=None
    ),
    baseline=None,
    reference=None,
)

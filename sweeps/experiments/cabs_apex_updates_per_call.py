"""How many minibatches APEX's learner should train on per call (``updates_per_learner_call``),
judged by time-to-target on Contoso Cabs, with 0 env runners (the driver samples and learns in
turn) and 1 env runner (an actor samples while the learner trains).

More minibatches per call raise the replay ratio (replayed / sampled transitions) and amortise
a learner call's fixed cost; with 0 env runners they also take wall-clock from sampling. The
default (8) was chosen from seeds 0-4 and checked on seeds 10-14 by
``cabs_best`` (docs/benchmarks.md, "Learner updates"). 30 trials of at most 20 s, no baseline
or reference; about 4 minutes on a 2-core laptop.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_apex_updates_per_call",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX"],
    search_space={
        "num_env_runners": choice([0, 1]),
        "updates_per_learner_call": choice([4, 8, 16]),
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=20),
    search=Search(sampler="grid", num_samples=6, seeds=5, max_concurrent=1, capping=None),
    baseline=None,
    reference=None,
)

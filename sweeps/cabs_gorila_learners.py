"""Learner-bound study: do more learners help when the learner is the bottleneck?

Gorila DQN (``GORILA``: actors, one replay shard per learner, ``num_learners`` learners, an
asynchronous parameter server; docs/design.md, "Gorila") with 1 and 2 learners against Ape-X
(``APEX``, the baseline: one learner in the driver). The learner is made the bottleneck as the
transfer page's learner-bound run does: a 256 x 256 network and a replay ratio of 16 replayed
per sampled transition, on latency-free Contoso Cabs, so an env step costs far less than the
updates it owes. Reservations, not limits: each Gorila learner asks Ray for 1/8 CPU and the
env runner for 1/4, so every learner count fits on 2 cores and all processes share them (as
the break-even studies' env runners share theirs); the processes, not Ray, compete for the
cores.

Two runs, 5 seeds per cell, each on its own seeds: the fit (seeds 180-184) and a held-out run
with 4 learners (seeds 190-194), which ``analysis.plan`` predicts from the fit::

    python -m sweeps.run sweeps/cabs_gorila_learners.py
    python -m sweeps.run sweeps/cabs_gorila_learners_held_out.py

Budget 120 s per trial, capping off.
"""

from sweeps import Budget, Search, Sweep, Target, choice

_LEARNER_BOUND = {
    "num_env_runners": 1,
    "hidden_sizes": [256, 256],
    "training_intensity": 16.0,
    "num_cpus_per_env_runner": 0.25,
}

SWEEP = Sweep(
    name="cabs_gorila_learners",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["GORILA"],
    per_algorithm={"GORILA": {"num_learners": choice([1, 2])}},
    per_algorithm_fixed={"GORILA": {**_LEARNER_BOUND, "num_cpus_per_learner": 0.125}},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=120),
    search=Search(
        sampler="grid", num_samples=2, seeds=5, first_seed=180, max_concurrent=1, capping=None
    ),
    baseline={"algorithm": "APEX", **_LEARNER_BOUND},
    reference=None,
)

"""Learner-bound study, RLlib's side: do RLlib's synchronous data-parallel learners help?

RLlib's PPO (``PPO``) with ``num_learners`` learner actors of 1 and 2 against the same PPO
with its learner in the driver (``num_learners=0``, the baseline). With M learners RLlib
splits each train batch into M shards, one per learner, and all-reduces the gradients of
every minibatch (torch DDP over gloo on CPUs) before each learner applies the same update:
synchronous, unlike Gorila's asynchronous parameter server (``cabs_gorila_learners.py``).

The learner is made the bottleneck: a 512 x 512 network (Gorila's 256 x 256 left PPO's
learners too small a share of its loop for a second one to change its pace), on
latency-free Contoso Cabs, with the Cabs preset's 10 epochs of 128-step minibatches over each
2000-step batch (~156 gradient steps per batch), so an iteration's learning costs far more
than its sampling. Reservations, not limits: each learner asks Ray for 1/8 CPU and the env
runner for 1/4, so every learner count fits on 2 cores and all processes share them.

Two runs, 5 seeds per cell, each on its own seeds: the fit (seeds 220-224) and a held-out run
with 4 learners (seeds 230-234)::

    python -m sweeps.run sweeps/cabs_rllib_learners.py
    python -m sweeps.run sweeps/cabs_rllib_learners_held_out.py

Budget 120 s per trial, capping off.
"""

from sweeps import Budget, Search, Sweep, Target, choice

_LEARNER_BOUND = {
    "num_env_runners": 1,
    "hidden_sizes": [512, 512],
    "num_cpus_per_env_runner": 0.25,
}

SWEEP = Sweep(
    name="cabs_rllib_learners",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["PPO"],
    per_algorithm={"PPO": {"num_learners": choice([1, 2])}},
    per_algorithm_fixed={"PPO": {**_LEARNER_BOUND, "num_cpus_per_learner": 0.125}},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=120),
    search=Search(
        sampler="grid", num_samples=2, seeds=5, first_seed=220, max_concurrent=1, capping=None
    ),
    baseline={"algorithm": "PPO", **_LEARNER_BOUND, "num_learners": 0},
    reference=None,
)

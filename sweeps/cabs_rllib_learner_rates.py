"""RLlib's synchronous learners' pace at 1 and 2 learners, the fit of their prediction
(``analysis.transfer.sync_learner_scaling``; docs/learners.md).

The learner-bound PPO settings of ``cabs_rllib_learners.py`` (one env runner, a 512 x 512
network, 10 epochs over each 2000-step batch, every process sharing the 2 cores), with the
exact optimal return as the target (the suite refuses a target above it), which these trials
do not reach in their 30 s budget: each runs its budget, is censored, and its env steps and
learner updates per second are read over its iterations rather than the few before a lower
target. Three seeds per learner count (240-242); the held-out run
(``cabs_rllib_learner_rates_held_out.py``, 4 learners, seeds 250-252) checks the prediction
made from these two counts alone::

    python -m sweeps.run sweeps/cabs_rllib_learner_rates.py
    python -m sweeps.run sweeps/cabs_rllib_learner_rates_held_out.py
"""

from sweeps import Budget, Target, choice
from sweeps.cabs_rllib_learners import SWEEP as _STUDY

SWEEP = _STUDY.model_copy(
    update={
        "name": "cabs_rllib_learner_rates",
        "per_algorithm": {"PPO": {"num_learners": choice([1, 2])}},
        "target": Target(metric="evaluation", fraction_of_optimal=1.0),
        "budget": Budget(time_s=30),
        "search": _STUDY.search.model_copy(update={"seeds": 3, "first_seed": 240}),
        "baseline": None,
    }
)

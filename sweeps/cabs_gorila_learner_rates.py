"""Gorila's applied learner updates per second at 1 and 2 learners, the fit of the learner
prediction (``analysis.transfer.learner_scaling``; docs/learners.md).

The learner-bound settings of ``cabs_gorila_learners.py`` (one env runner, a 256 x 256
network, a replay ratio of 16, every process sharing the 2 cores), with the exact optimal
return as the target (the suite refuses a target above it), which these trials do not reach
in their 30 s budget: each runs its budget, is censored, and its rate and the parameter
server's busy share are read over its iterations rather than the few before a lower target. Three seeds per learner count (200-202); the held-out run
(``cabs_gorila_learner_rates_held_out.py``, 4 learners, seeds 210-212) checks the prediction
made from the one-learner trials alone::

    python -m sweeps.run sweeps/cabs_gorila_learner_rates.py
    python -m sweeps.run sweeps/cabs_gorila_learner_rates_held_out.py
"""

from sweeps import Budget, Target, choice
from sweeps.cabs_gorila_learners import SWEEP as _STUDY

SWEEP = _STUDY.model_copy(
    update={
        "name": "cabs_gorila_learner_rates",
        "per_algorithm": {"GORILA": {"num_learners": choice([1, 2])}},
        "target": Target(metric="evaluation", fraction_of_optimal=1.0),
        "budget": Budget(time_s=30),
        "search": _STUDY.search.model_copy(update={"seeds": 3, "first_seed": 200}),
        "baseline": None,
    }
)

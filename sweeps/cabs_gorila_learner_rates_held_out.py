"""The learner prediction's held-out run (``cabs_gorila_learner_rates.py``): Gorila with 4
learners on seeds 210-212, which the fit's run (200-202) never used::

    python -m sweeps.run sweeps/cabs_gorila_learner_rates_held_out.py
"""

from sweeps import choice
from sweeps.cabs_gorila_learner_rates import SWEEP as _FIT

SWEEP = _FIT.model_copy(
    update={
        "name": "cabs_gorila_learner_rates_held_out",
        "per_algorithm": {"GORILA": {"num_learners": choice([4])}},
        "search": _FIT.search.model_copy(update={"num_samples": 1, "first_seed": 210}),
    }
)

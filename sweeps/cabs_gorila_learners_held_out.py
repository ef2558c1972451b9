"""The learner-bound study's held-out run (``cabs_gorila_learners.py``): Gorila with 4
learners, on seeds 190-194 that the fit's run (180-184) never used, beside the same APEX
baseline. ``analysis.plan`` predicts this cell from the fit's learner counts::

    python -m sweeps.run sweeps/cabs_gorila_learners_held_out.py
"""

from sweeps import choice
from sweeps.cabs_gorila_learners import SWEEP as _FIT

SWEEP = _FIT.model_copy(
    update={
        "name": "cabs_gorila_learners_held_out",
        "per_algorithm": {"GORILA": {"num_learners": choice([4])}},
        "search": _FIT.search.model_copy(update={"first_seed": 190}),
    }
)

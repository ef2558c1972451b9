"""The RLlib learners study's held-out run (``cabs_rllib_learners.py``): PPO with 4
synchronous learners, on seeds 230-234 that the fit's run (220-224) never used, beside the
same baseline (PPO's learner in the driver)::

    python -m sweeps.run sweeps/cabs_rllib_learners_held_out.py
"""

from sweeps import choice
from sweeps.cabs_rllib_learners import SWEEP as _FIT

SWEEP = _FIT.model_copy(
    update={
        "name": "cabs_rllib_learners_held_out",
        "per_algorithm": {"PPO": {"num_learners": choice([4])}},
        "search": _FIT.search.model_copy(update={"first_seed": 230}),
    }
)

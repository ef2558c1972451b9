"""The held-out run of ``cabs_rllib_learner_rates.py``: PPO with 4 synchronous learners on
seeds 250-252, which the fit (1 and 2 learners, seeds 240-242) never used::

    python -m sweeps.run sweeps/cabs_rllib_learner_rates_held_out.py
"""

from sweeps import choice
from sweeps.cabs_rllib_learner_rates import SWEEP as _FIT

SWEEP = _FIT.model_copy(
    update={
        "name": "cabs_rllib_learner_rates_held_out",
        "per_algorithm": {"PPO": {"num_learners": choice([4])}},
        "search": _FIT.search.model_copy(update={"first_seed": 250}),
    }
)

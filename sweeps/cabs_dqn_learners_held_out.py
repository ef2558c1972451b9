"""The held-out run of ``cabs_dqn_learners.py``: the suite's DQN with 4 synchronous learners on
seeds 270-274, which the fit (1 and 2 learners, seeds 260-264) never used, beside the same
APEX baseline::

    python -m sweeps.run sweeps/cabs_dqn_learners_held_out.py
"""

from sweeps import choice
from sweeps.cabs_dqn_learners import SWEEP as _FIT

SWEEP = _FIT.model_copy(
    update={
        "name": "cabs_dqn_learners_held_out",
        "per_algorithm": {"DQN": {"num_learners": choice([4])}},
        "search": _FIT.search.model_copy(update={"first_seed": 270}),
    }
)

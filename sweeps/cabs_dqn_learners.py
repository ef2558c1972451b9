"""Learner-bound study, the suite's DQN on RLlib's synchronous learners: Gorila's settings
(``cabs_gorila_learners.py``: one env runner, a 256 x 256 network, a replay ratio of 16 on
latency-free Contoso Cabs) with DQN's ``num_learners`` learner actors of 1 and 2, each training
on its slice of every prioritized minibatch in lock step (docs/design.md, "Gorila"), against
the same APEX baseline (one learner in the driver). Each learner asks Ray for 1/8 CPU and the
env runner for 1/4: every process shares the 2 cores.

Two runs, 5 seeds per cell, each on its own seeds: the fit (seeds 260-264) and a held-out run
with 4 learners (seeds 270-274)::

    python -m sweeps.run sweeps/cabs_dqn_learners.py
    python -m sweeps.run sweeps/cabs_dqn_learners_held_out.py

Budget 120 s per trial, capping off.
"""

from sweeps import choice
from sweeps.cabs_gorila_learners import _LEARNER_BOUND
from sweeps.cabs_gorila_learners import SWEEP as _GORILA

SWEEP = _GORILA.model_copy(
    update={
        "name": "cabs_dqn_learners",
        "algorithms": ["DQN"],
        "per_algorithm": {"DQN": {"num_learners": choice([1, 2])}},
        "per_algorithm_fixed": {"DQN": {**_LEARNER_BOUND, "num_cpus_per_learner": 0.125}},
        "search": _GORILA.search.model_copy(update={"first_seed": 260}),
    }
)

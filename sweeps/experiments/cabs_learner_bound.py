"""The transfer roofline's learner ceiling where it should bind: IMPALA with a learner made
heavy on purpose.

With the suite's IMPALA settings the learner's gradient updates take ~0.1 ms of a core per env
step and their ceiling (``v / l``, :mod:`analysis.transfer`) lies far above any rate measured
(docs/transfer.md). Here the learner does ~250 times that work per env step (a 1024-wide
network, 128 passes over each train batch of 512) while the env runners' inference grows far
less, so on two cores the learner's one thread should cap the sampling rate below the cores'
ceiling. The sweep measures the rate only: the target (95 % of optimal) is out of reach, every
trial runs its 90 s budget and is censored.

``benchmarks/bench_learner_ceiling.py`` runs it pinned to one core (seeds 20-21) and
``cabs_learner_bound_2cores.py`` on both cores (seeds 22-23), predicts the second from the
first's parts and prints the error; about 7 minutes for the two (docs/transfer.md)::

    flock /tmp/ray_workload.lock python benchmarks/bench_learner_ceiling.py
"""

from sweeps import Budget, choice
from sweeps.cabs_transfer import SWEEP as _TRANSFER

SWEEP = _TRANSFER.model_copy(
    update={
        "name": "cabs_learner_bound",
        "search_space": {"num_env_runners": choice([2])},
        "fixed": {**_TRANSFER.fixed, "hidden_sizes": [1024, 1024], "num_epochs": 128},
        "budget": Budget(time_s=90),
        "search": _TRANSFER.search.model_copy(
            update={"num_samples": 2, "seeds": 2, "first_seed": 20}
        ),
        "baseline": None,
        "reference": None,
    }
)

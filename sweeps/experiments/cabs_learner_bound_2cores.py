"""The learner-bound check's target: ``cabs_learner_bound.py`` on both cores of the 2-core
machine, on fresh seeds 22-23 that the one-core run (seeds 20-21) never used; nothing here
enters the prediction (``benchmarks/bench_learner_ceiling.py``, docs/transfer.md)."""

from sweeps.experiments.cabs_learner_bound import SWEEP as _ONE_CORE

SWEEP = _ONE_CORE.model_copy(
    update={
        "name": "cabs_learner_bound_2cores",
        "search": _ONE_CORE.search.model_copy(update={"first_seed": 22}),
    }
)

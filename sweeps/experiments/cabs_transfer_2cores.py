"""Transfer study, the check: ``sweeps/cabs_transfer.py`` on both cores of the 2-core
machine, on fresh seeds 3-5 that the one-core run (seeds 0-2) never used.

The one-core run's parts predict this run (``python -m analysis.plan ONE_CORE_RUN --transfer
--cores 2 --check THIS_RUN``); nothing here enters the prediction. Same settings otherwise;
5.5 minutes on the 2-core machine (docs/transfer.md).
"""

from sweeps.cabs_transfer import SWEEP as _ONE_CORE

SWEEP = _ONE_CORE.model_copy(
    update={
        "name": "cabs_transfer_2cores",
        "search": _ONE_CORE.search.model_copy(update={"first_seed": 3}),
    }
)

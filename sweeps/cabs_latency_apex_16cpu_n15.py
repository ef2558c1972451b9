"""APEX at 15 env runners on the latency study's env for one 16-core GPU node, with the 2-core
study's 100 s budget: ``sweeps/cabs_latency_apex_16cpu.py``'s settings (one CPU per env runner,
the learner on the GPU), N = 15 only and no baseline, 2 seeds.

Question: does APEX with 15 actors reach the target in every seed within the budget the 2-core
study gives each trial (the 60 s grid reached it in 1 of 2)? ``python -m sweeps.run
sweeps/cabs_latency_apex_16cpu_n15.py`` (needs 16 CPUs and a GPU); 2 trials. Measured:
docs/device_16cpu.md.
"""

from sweeps import Budget, choice
from sweeps.cabs_latency_apex_16cpu import SWEEP as _GRID

SWEEP = _GRID.model_copy(
    update={
        "name": "cabs_latency_apex_16cpu_n15",
        "search_space": {"num_env_runners": choice([15])},
        "budget": Budget(time_s=100),
        "search": _GRID.search.model_copy(update={"num_samples": 1}),
        "baseline": None,
    }
)

"""A short Pong IMPALA run that fits a 2-core laptop: the Atari path end to end.

The how-to's IMPALA settings (``sweeps/pong_impala.py``) with 1 env runner, for 4 minutes or
until the mean training return reaches -19 (a random policy scores about -20.5; Pong's range
is -21..21; -20 is reached by one lucky first episode), one seed. On 2 CPUs the run is
usually censored at its budget: the CPU learner (1000-step batches, a CNN, 2 passes) shares
the cores with the env runner. A newcomer sees env steps/s, a learning curve and a report:
``python -m sweeps.run sweeps/pong_quick.py``. Measured throughput: docs/benchmarks.md.
"""

from sweeps import Budget, Search, Sweep, Target, choice
from sweeps import pong_impala as _pong

SWEEP = Sweep(
    name="pong_quick",
    env="PongNoFrameskip-v4",
    env_config=_pong.PONG_ENV_CONFIG,
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([1])},
    fixed={**_pong.PONG_IMPALA, "min_time_s_per_iteration": 5},
    target=Target(metric="training", value=-19.0),
    budget=Budget(time_s=240),
    search=Search(sampler="grid", num_samples=1, seeds=1, max_concurrent=1),
    baseline={"algorithm": "IMPALA", "num_env_runners": 1},
)

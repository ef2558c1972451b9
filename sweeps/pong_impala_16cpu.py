"""A shortened Pong IMPALA run for one 16-core GPU node: 15 env runners and a GPU learner.

The how-to's IMPALA settings (``sweeps/pong_impala.py``, :data:`PONG_IMPALA`) with 15 env
runners (one CPU each) and the learner on the node's GPU in the driver process (RLlib's local
learner: ``num_learners=0``, ``num_gpus_per_learner=1``), so the trial asks for exactly
16 CPUs and 1 GPU. The budget is 8 minutes, not the how-to's hour: the run measures
throughput (env steps/s with 15 runners and a GPU learner) and the start of the learning
curve, and is expected to be censored below the how-to's target of 18. Measured on a 16-core
H100 machine: docs/device_16cpu.md (data under docs/data/pong_impala_16cpu/).
"""

from sweeps import Budget, Search, Sweep, Target, choice
from sweeps import pong_impala as _pong

SWEEP = Sweep(
    name="pong_impala_16cpu",
    env="PongNoFrameskip-v4",
    env_config=_pong.PONG_ENV_CONFIG,
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([15])},
    fixed={**_pong.PONG_IMPALA, "num_learners": 0, "num_gpus_per_learner": 1},
    target=Target(metric="training", value=18.0),
    budget=Budget(time_s=480),
    search=Search(sampler="grid", num_samples=1, seeds=1, max_concurrent=1),
    baseline={"algorithm": "IMPALA", "num_env_runners": 15},
)

"""APEX on the latency study's env for one 16-core GPU node: 8 and 15 env runners against one,
the learner on the GPU.

The settings of ``sweeps/experiments/cabs_latency_apex.py`` (Contoso Cabs whose env steps each
wait 4 ms, 8 envs per env runner, learning rate 0.00124, 64-transition minibatches,
``min_replay_ratio=8``, capping off), with three changes for the node: each env runner asks
for one CPU (N + 1 <= 16: nothing oversubscribed), the learner runs on the node's GPU in the
trial's driver process (``num_learners=0``, ``num_gpus_per_learner=1``), and the budget is
60 s per trial and 2 seeds, so that the grid fits one 10-minute device command.

Question: on a node with a core per actor and a GPU learner, does APEX's learner keep its pace
from 1 to 15 actors, and does it reach the target at 8 and 15? ``python -m sweeps.run
sweeps/cabs_latency_apex_16cpu.py`` (needs 16 CPUs and a GPU); (2 N + baseline) x 2 seeds = 6
trials. Measured: docs/device_16cpu.md.
"""

from sweeps import Budget, Search, Sweep, Target, choice

_APEX = {
    "num_envs_per_env_runner": 8,
    "num_cpus_per_env_runner": 1,
    "train_batch_size": 64,
    "lr": 0.00124,
    "min_replay_ratio": 8.0,
    "num_learners": 0,
    "num_gpus_per_learner": 1,
}

SWEEP = Sweep(
    name="cabs_latency_apex_16cpu",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["APEX"],
    search_space={"num_env_runners": choice([15, 8])},
    fixed=_APEX,
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=60),
    search=Search(sampler="grid", num_samples=2, seeds=2, max_concurrent=1, capping=None),
    baseline={"algorithm": "APEX", "num_env_runners": 1, **_APEX},
)

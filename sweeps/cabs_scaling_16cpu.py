"""Contoso Cabs, latency-free, across 1 to 15 env runners: the scaling curve a 16-core node gives.

The default study (``sweeps/cabs_scaling.py``) sizes itself for 2 cores, where only N = 1 and
N = 2 env runners can be measured. This file measures APEX (Ape-X DQN) and IMPALA at
N in {1, 2, 4, 8, 15} env runners, each with its best learning rate and batch from the default
study (docs/cabs_scaling.md), 3 seeds each, against the DQN baseline (1 env runner) and the
single-process Stable-Baselines3 DQN reference, with the same evaluation protocol and target
(95 % of the exact optimum). A trial asks for N + 1 CPUs, so N = 15 fills a 16-CPU node and
every trial's CPU request is honest (``max_concurrent=1``: one trial at a time).

Measured on a 16-core GPU machine: docs/device_16cpu.md (data under docs/data/).
On a 2-core laptop, ``--dry-run`` shows that the N >= 2 points do not fit.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_scaling_16cpu",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX", "IMPALA"],
    search_space={"num_env_runners": choice([1, 2, 4, 8, 15])},
    per_algorithm={
        "APEX": {"train_batch_size": choice([64]), "lr": choice([0.00124])},
        "IMPALA": {"train_batch_size": choice([1000]), "lr": choice([0.000331])},
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=30),
    search=Search(sampler="grid", num_samples=10, seeds=3, max_concurrent=1),
    baseline={"algorithm": "DQN", "num_env_runners": 1},
    reference={"algorithm": "SB3-DQN"},
)

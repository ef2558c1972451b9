"""Transfer study: predict a 2-core machine from parts measured on one core.

IMPALA with 1, 2 and 4 env runners and the single-process Stable-Baselines3 DQN reference on
Contoso Cabs whose env steps each burn ``step_cpu_ms=2`` milliseconds of a core (a CPU-bound
simulator: :mod:`envs.latency`), one env per env runner and 1/4 CPU each, so every trial asks
for at most 2 of the embedded Ray's CPUs whatever the cores under it. 3 seeds (0-2).

Run it pinned to one core; the roofline (:mod:`analysis.transfer`) reads each
configuration's CPU seconds per env step, start-up and env steps to the target from that run
and predicts another machine from its core count alone; the check is the same study on both
cores, on fresh seeds (``sweeps/experiments/cabs_transfer_2cores.py``)::

    taskset -c 0 python -m sweeps.run sweeps/cabs_transfer.py
    python -m sweeps.run sweeps/experiments/cabs_transfer_2cores.py
    python -m analysis.plan transfer ONE_CORE_RUN --cores 2 --check TWO_CORE_RUN

Sizing: on one core IMPALA samples ~120-180 env steps/s and needs ~9 k env steps, hence the
150 s budget; (3 + reference) x 3 seeds: 11.5 minutes pinned to one core and 5.5 minutes on
both cores of the 2-core machine, 17 minutes for the two, within the study's 40-minute budget
(docs/transfer.md).
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_transfer",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_cpu_ms": 2},
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([1, 2, 4])},
    per_algorithm={"IMPALA": {"train_batch_size": choice([512]), "lr": choice([0.001])}},
    fixed={"num_envs_per_env_runner": 1, "num_cpus_per_env_runner": 0.25},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=150),
    search=Search(sampler="grid", num_samples=3, seeds=3, max_concurrent=1, capping=None),
    baseline={"algorithm": "IMPALA", "num_env_runners": 1, "train_batch_size": 512, "lr": 0.001},
    reference={"algorithm": "SB3-DQN"},
)

"""Contoso Cabs scaling study: Ape-X DQN (APEX) and IMPALA at 1, 2, 4 and 8 env runners,
IMPALA at two train batch sizes, against a single-process Stable-Baselines3 DQN reference.

Question: on this machine, how does each algorithm's wall-clock time to 95 % of the exact
optimal monthly profit (``envs.oracle_return``) move with env runners, which configuration is
fastest, and does any beat a plain single-process DQN (the *reference*: absolute speedup,
docs/design.md)? The speedup against the baseline, APEX with 1 env runner, is Ape-X's own
scaling; the reference is the DQN comparison.

Every trial, the reference included, is judged on one metric: the greedy policy's mean return
over 20 fixed-seed evaluation episodes (the evaluation protocol, :mod:`sweeps.engine.evaluation`),
of the initial policy, then after each 0.1 s of training, timed inside its time-to-target.

Two stages (docs/design.md, *stage*). The search measures every *cell* once on seed 0: each
algorithm at each env runner count, IMPALA at each train batch size, at the tuned defaults
(the baseline stands for APEX with 1 env runner), then one configuration TPE samples (learning
rate, batch size, env runners); 12 configurations + baseline + reference = 14 trials. The
confirmation reruns the search's fastest configuration of every cell
(``Confirm(per_env_runners=True)``, the default when the search varies ``num_env_runners``;
``per_params=["train_batch_size"]`` for the batch-size check), the baseline and the reference
on 3 seeds the search never used (1000-1002): at most 42 trials, never capped. Every number of
the report comes from the confirmation. Every env runner asks for 1/8 CPU (8 env runners and
the driver fit 2 cores; an env runner that waits leaves its CPU to the others), as in the
latency study. Every trial has at most 45 s; docs/cabs_scaling.md gives the measured wall time.
To scale on a cluster, change only the ``num_env_runners`` choices, ``num_cpus_per_env_runner``
and the budget (e.g. ``choice([1, 2, 4, 8, 16, 32])`` with 1 CPU each).
"""

from sweeps import (
    Budget,
    Confirm,
    Evaluation,
    Search,
    Sweep,
    Target,
    choice,
    loguniform,
)

SWEEP = Sweep(
    name="cabs_scaling",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX", "IMPALA"],
    search_space={
        "num_env_runners": choice([1, 2, 4, 8]),
        "lr": loguniform(3e-4, 3e-3),
    },
    per_algorithm={
        "APEX": {"train_batch_size": choice([64])},
        "IMPALA": {"train_batch_size": choice([512, 1024])},
    },
    fixed={"num_cpus_per_env_runner": 0.125},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=45),
    evaluation=Evaluation(every_s=0.1),
    search=Search(
        sampler="tpe",
        num_samples=12,
        seeds=1,
        max_concurrent=1,
        confirm=Confirm(top_k=1, seeds=3, per_params=["train_batch_size"]),
    ),
    baseline={"algorithm": "APEX", "num_env_runners": 1},
    reference={"algorithm": "SB3-DQN"},
)

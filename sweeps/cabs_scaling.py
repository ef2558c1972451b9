"""Contoso Cabs scaling study: DQN vs Ape-X DQN vs IMPALA, across env runners and batch sizes,
against a single-process Stable-Baselines3 DQN reference.

Question: on this machine, which algorithm and how many env runners reach 95 % of the exact
optimal monthly profit (``envs.oracle_return``) fastest in wall-clock, how does that compare
with the seed article's DQN baseline (1 env runner) — and does any of them beat a plain
single-process DQN (the *reference*: absolute speedup, docs/design.md)?

Every trial, the reference included, is judged on one metric: the greedy policy's mean return
over 20 fixed-seed evaluation episodes (the evaluation protocol, :mod:`sweeps.engine.evaluation`), of
the initial policy, then after each 0.1 s of training, timed inside its time-to-target: the
reference reaches the target in about a second, so a TTT is known to ~0.1 s, not to a ~1 s
training iteration.

Two stages (docs/design.md, *stage*): the search, (6 sampled configs + baseline + reference) ×
3 seeds = 24 trials (fewer when adaptive capping has capped two seeds of a configuration: its
third is not run), then the confirmation, the search's 2 fastest configurations, the baseline
and the reference on 5 seeds the search never used (1000-1004): 20 more trials, never capped.
Every trial has at most 45 s; the answer, the speedups and the plan come from the confirmation
alone. Sized for a 2-core laptop (docs/cabs_scaling.md gives the measured wall time). Trials with 2 env
runners ask for 3 CPUs; on a 2-CPU node they run oversubscribed and are flagged as such in
every table. To scale on a cluster, change only ``search.num_samples``, the ``num_env_runners``
choices and the budget (e.g. ``choice([1, 2, 4, 8, 16])``, ``num_samples=24``).
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
    algorithms=["DQN", "APEX", "IMPALA"],
    search_space={
        "num_env_runners": choice([1, 2]),
        "lr": loguniform(3e-4, 3e-3),
    },
    per_algorithm={
        "DQN": {"train_batch_size": choice([64, 128])},
        "APEX": {"train_batch_size": choice([64, 128])},
        "IMPALA": {"train_batch_size": choice([500, 1000])},
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=45),
    evaluation=Evaluation(every_s=0.1),
    search=Search(sampler="tpe", num_samples=6, seeds=3, max_concurrent=1,
                  confirm=Confirm(top_k=2, seeds=5)),
    baseline={"algorithm": "DQN", "num_env_runners": 1},
    reference={"algorithm": "SB3-DQN"},
    allow_oversubscription=True,
)

"""Break-even study: from which env cost do 8 or 16 env runners beat one process on 2 cores?

IMPALA with 8 and 16 env runners and the single-process Stable-Baselines3 DQN reference on
Contoso Cabs whose env steps each wait ``step_latency_ms`` (a slow simulator that uses no CPU:
:mod:`envs.latency`), with the latency study's IMPALA settings (docs/latency_scaling.md: 8 envs
and 1/16 CPU per env runner, 512-step train batches, lr 0.001), 3 seeds each.

The study is three runs of this file, one per env cost, each with the reference at its cost::

    python -m sweeps.run sweeps/cabs_break_even.py                                # 4 ms (fit)
    python -m sweeps.run sweeps/cabs_break_even.py --env-config step_latency_ms=30  # held out
    python -m sweeps.run sweeps/cabs_break_even.py --env-config step_latency_ms=60  # held out

The first run's measured parts (start-up, env steps to the target, overhead per env step)
predict each configuration's time-to-target at any env cost and the cost above which it beats
the reference (:mod:`analysis.break_even`); the other two are the held-out cells that check it::

    python -m analysis.plan break-even FIT_RUN --held-out RUN_30MS,RUN_60MS

Sizing: on the latency study's run, the break-even was predicted at ~47 ms per env step for 8
and 16 env runners, so 30 ms lies below it and 60 ms above; at 60 ms the reference needs
~110 s, hence the 180 s budget (the costs were chosen from that older run, before any of
this study's runs). Capping is off (every cell runs to its target or budget). The
baseline is IMPALA with 8 env runners (not sampled twice). (2 + reference) x 3 seeds per run:
measured 4.9, 11.6 and 17.9 minutes on the 2-core machine, 34 minutes for the three, within
the study's 40-minute budget (docs/break_even.md).
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_break_even",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([16])},
    per_algorithm={"IMPALA": {"train_batch_size": choice([512]), "lr": choice([0.001])}},
    fixed={"num_cpus_per_env_runner": 0.0625, "num_envs_per_env_runner": 8},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=180),
    search=Search(sampler="grid", num_samples=1, seeds=3, max_concurrent=1, capping=None),
    baseline={"algorithm": "IMPALA", "num_env_runners": 8, "train_batch_size": 512, "lr": 0.001},
    reference={"algorithm": "SB3-DQN"},
)

"""Break-even study with the sampling layout: from which env cost do envs stepped at once beat one process?

The break-even study (``cabs_break_even.py``) searched how many env runners sample, each
stepping its 8 envs in turn; its best configuration broke even at ~42 ms per env step, and its
speedup was bounded at 2.3x however slow the env. This study re-runs it with the layouts that
step many envs at once (docs/design.md, *sampling layout*), each carrying 64 concurrent envs:

- IMPALA with 2 env runners of 32 async envs (the baseline: 6.9x the reference at 120 ms on
  two earlier held-out runs, ``sweeps/experiments/cabs_async_120ms.py`` and
  ``cabs_seed_120ms.py``);
- SEED with 16 env-only actors of 4 async envs each, one batched inference server;
- the single-process SB3-DQN reference, one env stepped serially, as in every study.

The learner settings are the break-even study's (512-step train batches, lr 0.001). Every env
step waits ``step_latency_ms`` (no CPU: a remote simulator, :mod:`envs.latency`). Four runs of
this file, each on its own seeds, 5 per cell; the 4 ms run is the fit, the others are held
out and share no seed with it::

    python -m sweeps.run sweeps/cabs_break_even_layout.py                         # 4 ms, seeds 100-104
    python -m sweeps.run sweeps/cabs_break_even_layout.py --env-config step_latency_ms=30 --first-seed 110
    python -m sweeps.run sweeps/cabs_break_even_layout.py --env-config step_latency_ms=60 --first-seed 120
    python -m sweeps.run sweeps/cabs_break_even_layout.py --env-config step_latency_ms=120 --first-seed 130
    python -m analysis.plan break-even FIT_RUN --held-out RUN_30MS,RUN_60MS,RUN_120MS

Sizing: the reference needs ~3.5 min at 120 ms (the earlier 120 ms runs), hence the 300 s
budget; the two 64-env layouts reached the target in ~30 s there. Capping is off (every cell
runs to its target or budget). 1/16 CPU per env runner, so SEED's 16 actors take one core and
the learner the other.
"""

from sweeps import Budget, Search, Sweep, Target, choice

#: IMPALA's layout of the async runs at 120 ms: 2 env runners x 32 async envs.
_IMPALA_ASYNC = {
    "num_env_runners": 2,
    "num_envs_per_env_runner": 32,
    "gym_env_vectorize_mode": "async",
    "num_cpus_per_env_runner": 0.0625,
}

SWEEP = Sweep(
    name="cabs_break_even_layout",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["SEED"],
    search_space={"num_env_runners": choice([16])},
    per_algorithm={"SEED": {"train_batch_size": choice([512]), "lr": choice([0.001])}},
    fixed={
        "num_cpus_per_env_runner": 0.0625,
        "num_envs_per_env_runner": 4,
        "gym_env_vectorize_mode": "async",
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=300),
    search=Search(
        sampler="grid", num_samples=1, seeds=5, first_seed=100, max_concurrent=1, capping=None
    ),
    baseline={"algorithm": "IMPALA", **_IMPALA_ASYNC, "train_batch_size": 512, "lr": 0.001},
    reference={"algorithm": "SB3-DQN"},
)

"""Break-even study, the other layouts: envs stepped in turn on fresh seeds, APEX with async
envs, and Stable-Baselines3 with its env vectorized in subprocesses.

``cabs_break_even_layout.py`` measured IMPALA and SEED with 64 async envs against the
single-process reference. This study, run the same way on seeds of its own, measures the
layouts it left out (docs/design.md, *sampling layout*):

- IMPALA with 16 env runners of 8 envs stepped in turn (RLlib's default; the baseline): the
  first study's (``cabs_break_even.py``) best configuration, whose held-out cells there
  shared their fit's seeds;
- APEX with 2 env runners of 32 async envs, the layout IMPALA beat one process with;
- SB3-DQN with 64 sub-envs in SB3's ``SubprocVecEnv`` (``n_envs=64, vec_env="subproc"``), what
  a user with a slow simulator tries before Ray, measured as a configuration; one gradient
  step per 4 env steps as SB3-DQN's defaults take (``train_freq`` 4 calls of one env), here
  16 per call of 64 envs;
- the SB3-DQN reference, one env stepped serially, as in every study.

IMPALA keeps the first study's learner settings (512-step train batches, lr 0.001); APEX its
tuned defaults. Every env step waits ``step_latency_ms`` (no CPU: a remote simulator,
:mod:`envs.latency`). Four runs, 5 seeds per cell, each run on its own seeds, none shared with
``cabs_break_even_layout.py``'s; the 4 ms run is the fit, the others are held out::

    python -m sweeps.run sweeps/cabs_break_even_more_layouts.py                         # 4 ms, seeds 140-144
    python -m sweeps.run sweeps/cabs_break_even_more_layouts.py --env-config step_latency_ms=30 --first-seed 150
    python -m sweeps.run sweeps/cabs_break_even_more_layouts.py --env-config step_latency_ms=60 --first-seed 160
    python -m sweeps.run sweeps/cabs_break_even_more_layouts.py --env-config step_latency_ms=120 --first-seed 170
    python -m analysis.plan break-even FIT_RUN --held-out RUN_30MS,RUN_60MS,RUN_120MS

Sizing: the reference needs ~3.5 min at 120 ms (``cabs_break_even_layout.py``'s runs), and
IMPALA with 16 sync env runners about as long, hence the 300 s budget. Capping is off. 1/16
CPU per env runner, as in the other break-even studies.
"""

from sweeps import Budget, Search, Sweep, Target, choice

#: The first study's best layout and learner settings: 16 env runners x 8 envs in turn.
_IMPALA_SYNC = {
    "num_env_runners": 16,
    "num_envs_per_env_runner": 8,
    "num_cpus_per_env_runner": 0.0625,
    "train_batch_size": 512,
    "lr": 0.001,
}

SWEEP = Sweep(
    name="cabs_break_even_more_layouts",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_latency_ms": 4},
    algorithms=["APEX", "SB3-DQN"],
    per_algorithm={
        "APEX": {"num_env_runners": choice([2])},
        "SB3-DQN": {"n_envs": choice([64])},
    },
    per_algorithm_fixed={
        "APEX": {
            "num_envs_per_env_runner": 32,
            "gym_env_vectorize_mode": "async",
            "num_cpus_per_env_runner": 0.0625,
        },
        "SB3-DQN": {"vec_env": "subproc", "train_freq": 1, "gradient_steps": 16},
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=300),
    search=Search(
        sampler="grid", num_samples=2, seeds=5, first_seed=140, max_concurrent=1, capping=None
    ),
    baseline={"algorithm": "IMPALA", **_IMPALA_SYNC},
    reference={"algorithm": "SB3-DQN"},
)

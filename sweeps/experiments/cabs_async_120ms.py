"""The break-even study's 120 ms cell again, with an async sampling layout: does stepping many
envs at once, each in a light process, beat one process where env runners stepping their envs
in turn could not?

At 120 ms per env step (a slow simulator) the break-even study's best configuration, IMPALA
with 16 env runners of 8 envs stepped in turn (``sync``, RLlib's default: 16 concurrent envs),
was 1.09x [1.04, 1.40] the single-process reference (``cabs_break_even_120ms.py``). Here it
is the baseline, run again beside IMPALA with 2 env runners of 32 envs each stepped at once
(``async``: 64 concurrent envs, each sub-env a forked process of tens of MiB rather than a
full RLlib and torch process), and the SB3-DQN reference, on seeds 30-32, which no other run
of the suite used. The same IMPALA settings as the study (512-step train batches, lr 0.001).
"""

from sweeps import choice
from sweeps.experiments.cabs_break_even_120ms import SWEEP as _SYNC

SWEEP = _SYNC.model_copy(
    update={
        "name": "cabs_async_120ms",
        "search_space": {"num_env_runners": choice([2])},
        "fixed": {
            "num_cpus_per_env_runner": 0.0625,
            "num_envs_per_env_runner": 32,
            "gym_env_vectorize_mode": "async",
        },
        "search": _SYNC.search.model_copy(update={"seeds": 3, "first_seed": 30}),
        "baseline": {
            "algorithm": "IMPALA",
            "num_env_runners": 16,
            "num_envs_per_env_runner": 8,
            "gym_env_vectorize_mode": "sync",
            "train_batch_size": 512,
            "lr": 0.001,
        },
    }
)

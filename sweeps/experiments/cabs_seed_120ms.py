"""The break-even study's 120 ms cell with SEED RL: env-only actors and one batched inference
server, against IMPALA with the same sampling layout and the single-process reference.

At 120 ms per env step, IMPALA with 2 env runners of 32 async envs (64 concurrent envs) was
6.93x [6.11, 7.25] the SB3-DQN reference (``cabs_async_120ms.py``, seeds 30-32). Here SEED
carries the same 64 concurrent envs (2 actors x 32 async envs, the same learner settings:
512-step train batches, lr 0.001), IMPALA's layout is the baseline, run again beside it, and
the reference too, on seeds 40-42, which no other run of the suite used.
"""

from sweeps import choice
from sweeps.experiments.cabs_break_even_120ms import SWEEP as _SYNC

_LAYOUT = {
    "num_env_runners": 2,
    "num_envs_per_env_runner": 32,
    "gym_env_vectorize_mode": "async",
    "num_cpus_per_env_runner": 0.25,
}

SWEEP = _SYNC.model_copy(
    update={
        "name": "cabs_seed_120ms",
        "algorithms": ["SEED"],
        "search_space": {"num_env_runners": choice([2])},
        "per_algorithm": {"SEED": {"train_batch_size": choice([512]), "lr": choice([0.001])}},
        "fixed": {k: v for k, v in _LAYOUT.items() if k != "num_env_runners"},
        "search": _SYNC.search.model_copy(update={"seeds": 3, "first_seed": 40}),
        "baseline": {"algorithm": "IMPALA", **_LAYOUT, "train_batch_size": 512, "lr": 0.001},
    }
)

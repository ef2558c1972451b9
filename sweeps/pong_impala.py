"""Seed 001's IMPALA study on Atari Pong (PongNoFrameskip-v4, DeepMind preprocessing, 42x42).

Needs a big machine or cluster: each trial asks for num_workers + 1 CPUs (and 1 GPU learner
when a GPU exists). Seed 001 reached episode return mean 18 within its 3600 s budget on Azure
ML (a GPU head node and CPU worker nodes; num_workers = all CPUs − 1); expect a few hours for
the whole sweep on e.g. 4 × Standard_D16s_v5. On a laptop, ``--dry-run`` shows what it would
run and that it does not fit.
"""

from sweeps.spec import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="pong_impala",
    env="PongNoFrameskip-v4",
    env_config={"frame_size": 42, "framestack": 4},
    algorithms=["IMPALA"],
    search_space={"num_workers": choice([15, 31, 63])},
    fixed={
        "rollout_fragment_length": 50,
        "train_batch_size": 1000,
        "num_epochs": 2,
    },
    target=Target(metric="episode_return_mean", value=18.0),
    budget=Budget(time_s=3600),
    search=Search(sampler="grid", num_samples=3, seeds=1, max_concurrent=1),
    baseline={"algorithm": "IMPALA", "num_workers": 15},
)

"""Seed 001's IMPALA study on Atari Pong, as the Azure ML how-to runs it.

IMPALA on ``PongNoFrameskip-v4`` with DeepMind preprocessing at 42x42 and 4 stacked frames
(``envs.atari``), rollout fragments of 50 env steps, a train batch of 1000; a trial stops at a
mean training return of 18 or after 3600 s. All the study's settings are in :data:`PONG_IMPALA`
below (``sweeps/pong_quick.py`` reuses them for a short run on a laptop).

Needs a big machine or cluster: each trial asks for num_env_runners + 1 CPUs. The how-to ran it
on Azure ML (a GPU head node and CPU worker nodes; num_env_runners = all CPUs − 1); expect a few
hours for the whole sweep on e.g. 4 × Standard_D16s_v5. On a GPU cluster, add
``"num_learners": 1, "num_gpus_per_learner": 1`` to ``fixed`` for a GPU learner. On a laptop,
``--dry-run`` shows what it would run and that it does not fit; docs/cluster.md has the plan
for the how-to's one-hour budget.

Target metric: the *training* return (RLlib's ``env_runners/episode_return_mean``), the
how-to's stopping rule. The evaluation protocol would play 20 greedy Pong games (thousands of
CNN forward passes each) after every iteration, which on Pong costs more than the training it
measures.
"""

from sweeps import Budget, Search, Sweep, Target, choice

#: The how-to's IMPALA settings (RLlib names; see sweeps/engine/algorithms/impala.py for meanings).
PONG_IMPALA = {
    "num_envs_per_env_runner": 1,
    "rollout_fragment_length": 50,
    "train_batch_size": 1000,
    "num_epochs": 2,
    "minibatch_size": None,  # each pass is one update on the whole train batch
    "lr": 5e-4,
    "gamma": 0.99,
    "reward_scale": 1.0,  # Pong's rewards are already ±1 (also the library default)
    "min_time_s_per_iteration": 10,
}
PONG_ENV_CONFIG = {"frame_size": 42, "framestack": 4}

SWEEP = Sweep(
    name="pong_impala",
    env="PongNoFrameskip-v4",
    env_config=PONG_ENV_CONFIG,
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([15, 31, 63])},
    fixed=PONG_IMPALA,
    target=Target(metric="training", value=18.0),
    budget=Budget(time_s=3600),
    search=Search(sampler="grid", num_samples=3, seeds=1, max_concurrent=1),
    baseline={"algorithm": "IMPALA", "num_env_runners": 15},
)

"""The suite's DQN (flat n-step prioritized replay, several minibatches per learner call,
sampling overlapped with learning; :mod:`sweeps.engine.algorithms.replay_dqn`) against RLlib's DQN as
shipped (``RLLIB-DQN``: its episode replay buffer and training step), by time-to-target on
Contoso Cabs with 0 and 1 env runners, beside the single-process reference.

Both run their tuned defaults, on RLlib's same DQN learner, RLModule and env runners; only the
data path between env runners and learner differs. 25 trials of at most 30 s; about 4-6
minutes on a 2-core laptop. docs/benchmarks.md, "Learner updates", has the numbers.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_dqn_data_path",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["DQN", "RLLIB-DQN"],
    search_space={"num_env_runners": choice([0, 1])},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=30),
    search=Search(sampler="grid", num_samples=4, seeds=5, max_concurrent=1, capping=None),
    baseline={"algorithm": "RLLIB-DQN", "num_env_runners": 1},
    reference={"algorithm": "SB3-DQN"},
)

"""How much the suite's DQN (the baseline) should replay per sampled env step
(``training_intensity``: replayed / sampled transitions) and how long its sample round is
(``rollout_fragment_length`` × 16 envs), judged by time-to-target on Contoso Cabs with 1 env
runner.

Each DQN training step collects one round from the env runner into replay and runs as many
learner updates as ``training_intensity`` allows while the env runner samples the next round;
a higher value trades sampled env steps per second for updates per env step. The defaults
(8.0, 4) were chosen from seeds 0-4 here (docs/benchmarks.md, "Learner updates"). 30 trials of
at most 30 s, no baseline or reference; about 6-9 minutes on a 2-core laptop.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_dqn_training_intensity",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["DQN"],
    search_space={
        "num_env_runners": choice([1]),
        "training_intensity": choice([4.0, 8.0, 16.0]),
        "rollout_fragment_length": choice([4, 8]),
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=30),
    search=Search(sampler="grid", num_samples=6, seeds=5, max_concurrent=1, capping=None),
    baseline=None,
    reference=None,
)

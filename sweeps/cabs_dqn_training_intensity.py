"""How much RLlib's DQN (the suite's baseline) should replay per sampled env step
(``training_intensity``: replayed / sampled transitions), judged by time-to-target on Contoso
Cabs with 1 env runner.

Each of RLlib's DQN training steps samples the env runner, adds the episodes to replay, then
runs as many learner updates as ``training_intensity`` allows; a higher value trades sampled
env steps per second for updates per env step. The default (2.0) was chosen from seeds 0-4
here and checked on seeds 10-14 by ``cabs_best`` (docs/benchmarks.md, "Algorithms"). 20 trials
of at most 30 s, no baseline or reference; about 5 minutes on a 2-core laptop.
"""

from sweeps.spec import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_dqn_training_intensity",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["DQN"],
    search_space={"num_env_runners": choice([1]),
                  "training_intensity": choice([0.5, 1.0, 2.0, 4.0])},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=30),
    search=Search(sampler="grid", num_samples=4, seeds=5, max_concurrent=1, capping=None),
    baseline=None,
    reference=None,
)

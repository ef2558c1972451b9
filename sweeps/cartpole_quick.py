"""A ~2-minute sanity sweep: PPO on CartPole-v1, sampling in the driver (the baseline) vs 1 env
runner, 2 seeds each.

Use it to check an installation or a cluster end to end before a real study:
``python -m sweeps.run sweeps/cartpole_quick.py``.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cartpole_quick",
    env="CartPole-v1",
    algorithms=["PPO"],
    search_space={"num_env_runners": choice([0, 1])},
    fixed={"train_batch_size": 1000},
    target=Target(value=150.0),
    budget=Budget(time_s=25),
    search=Search(sampler="grid", num_samples=1, seeds=2, max_concurrent=1),
    baseline={"algorithm": "PPO", "num_env_runners": 0},
)

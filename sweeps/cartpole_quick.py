"""A ~2-minute sanity sweep: PPO on CartPole-v1, sampling in the driver vs 1 env runner.

Use it to check an installation or a cluster end to end before a real study:
``python -m sweeps.run sweeps/cartpole_quick.py``.
"""

from sweeps.spec import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cartpole_quick",
    env="CartPole-v1",
    algorithms=["PPO"],
    search_space={"num_workers": choice([0, 1])},
    fixed={"train_batch_size": 1000},
    target=Target(value=150.0),
    budget=Budget(time_s=30),
    search=Search(sampler="grid", num_samples=2, seeds=1, max_concurrent=1),
    baseline={"algorithm": "PPO", "num_workers": 0},
)

"""The presets' check on CartPole-v1: the suite's DQN, RLlib's PPO and Stable-Baselines3's DQN
as the reference, with no parameter set by hand: each takes rl-baselines3-zoo's published
CartPole-v1 settings (the ``rl-zoo`` preset, :mod:`sweeps.engine.presets`), DQN's and PPO's
translated to RLlib's names.

Target: 475, gymnasium's ``reward_threshold`` for CartPole-v1 ("solved"); rl-zoo publishes
500 ± 0 for both DQN (after 50 k env steps) and PPO (100 k) in its benchmark.md. Every trial
is judged by the suite's evaluation protocol (20 greedy episodes on fixed seeds). Budget: 300 s
per trial, well past rl-zoo's horizons on a 2-core machine. Results: docs/presets.md.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cartpole_presets",
    env="CartPole-v1",
    algorithms=["DQN", "PPO"],
    search_space={"num_env_runners": choice([1])},
    target=Target(value=475.0),
    budget=Budget(time_s=300),
    search=Search(sampler="grid", num_samples=2, seeds=3, max_concurrent=1, capping=None),
    baseline=None,  # each algorithm against the reference, not against one another
    reference={"algorithm": "SB3-DQN"},
)

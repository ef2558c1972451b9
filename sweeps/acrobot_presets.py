"""The presets' check on Acrobot-v1: the suite's DQN, RLlib's PPO and Stable-Baselines3's DQN
as the reference, with no parameter set by hand: each takes rl-baselines3-zoo's published
Acrobot-v1 settings (the ``rl-zoo`` preset, :mod:`sweeps.engine.presets`), DQN's and PPO's
translated to RLlib's names.

Target: -100, gymnasium's ``reward_threshold`` for Acrobot-v1; rl-zoo publishes -76.6 ± 11.8
for DQN (after 100 k env steps) and -73.5 ± 18.2 for PPO (1 M) in its benchmark.md. Every
trial is judged by the suite's evaluation protocol (20 greedy episodes on fixed seeds).
Budget: 420 s per trial on a 2-core machine. Results: docs/presets.md.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="acrobot_presets",
    env="Acrobot-v1",
    algorithms=["DQN", "PPO"],
    search_space={"num_env_runners": choice([1])},
    target=Target(value=-100.0),
    budget=Budget(time_s=420),
    search=Search(sampler="grid", num_samples=2, seeds=3, max_concurrent=1, capping=None),
    baseline=None,  # each algorithm against the reference, not against one another
    reference={"algorithm": "SB3-DQN"},
)

"""A continuous-action study: RLlib's SAC (RLlib's defaults) on Pendulum-v1, in the driver and
with 1 env runner, against Stable-Baselines3's SAC as the single-process reference (absolute
speedup). On a 2-core machine SB3's SAC reaches the target in ~40 s (~3.5 k env steps, one
update per step, ~95 updates/s) while RLlib's SAC makes ~10 updates/s once learning starts and
is censored at the budget (docs/your_workload.md, "Measured"): the answer for this env on this
machine is "one process".

Pendulum has no exact optimum: the target is a return most good policies pass (an episode of
a random policy returns about -1,200; a swung-up, balanced pendulum about -150), see
docs/your_workload.md, "Choosing a target". A few minutes on a laptop:
``python -m sweeps.run sweeps/pendulum_sac.py``.
"""

from sweeps import Budget, Evaluation, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="pendulum_sac",
    env="Pendulum-v1",
    algorithms=["SAC"],
    search_space={"num_env_runners": choice([0, 1])},
    target=Target(value=-400.0),
    budget=Budget(time_s=90),
    evaluation=Evaluation(episodes=5),
    search=Search(sampler="grid", num_samples=2, seeds=1, max_concurrent=1),
    baseline={"algorithm": "SAC", "num_env_runners": 0},
    # the replay capacity its published run used (SB3's default is 1 M)
    reference={"algorithm": "SB3-SAC", "buffer_size": 100_000},
)

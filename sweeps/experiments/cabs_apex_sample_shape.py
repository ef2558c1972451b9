"""The shape of APEX's sample call: envs per env runner × ``rollout_fragment_length``, judged
by time-to-target on Contoso Cabs with 0 env runners (the driver samples and learns in turn)
and 1 env runner (an actor samples while the learner trains).

RLlib's env runner pays a fixed cost per *vector* step (its env-to-module and module-to-env
connector pipelines and one forward pass), whatever the number of envs; a sample call of
16 envs × 4 steps and one of 8 × 8 both deliver 64 env steps, and so the same replay ratio, but
the first makes half as many vector steps. 8 × 4 and 16 × 8 halve or double the env steps per
call. The default (16 × 4, which replaced 8 × 8) was chosen from seeds 0-4 and checked on
seeds 20-24 by ``cabs_best`` (docs/benchmarks.md, "APEX's sample call"). 45 trials of at most
20 s; about 6 minutes on a 2-core laptop.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_apex_sample_shape",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX"],
    search_space={
        "num_env_runners": choice([0, 1]),
        "num_envs_per_env_runner": choice([8, 16]),
        "rollout_fragment_length": choice([4, 8]),
    },
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=20),
    search=Search(sampler="grid", num_samples=8, seeds=5, max_concurrent=1, capping=None),
    baseline=None,
    reference={"algorithm": "SB3-DQN"},
)

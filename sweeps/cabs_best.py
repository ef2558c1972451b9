"""Confirm the best Contoso Cabs configuration of ``cabs_scaling`` with 5 seeds.

The cabs_scaling study (docs/cabs_scaling.md) found APEX with 1 env runner, batch 128 and
lr ≈ 1.3e-3 fastest to 95 % of the optimal return, over 2 seeds. This sweep reruns exactly that
configuration with 5 seeds, so its median time-to-target has a confidence interval (and an
olympic mean). About 2 minutes on a 2-core laptop (127 s measured).
"""

from sweeps.spec import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_best",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0},
    algorithms=["APEX"],
    search_space={"num_workers": choice([1])},
    fixed={"train_batch_size": 128, "lr": 0.00133},
    target=Target(fraction_of_optimal=0.95),
    budget=Budget(time_s=60),
    search=Search(sampler="grid", num_samples=1, seeds=5, max_concurrent=1),
    baseline=None,
)

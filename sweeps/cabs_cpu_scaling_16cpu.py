"""CPU-bound Contoso Cabs on a 16-core node: does IMPALA with 4, 8 or 15 env runners beat one
process when every env step burns 20 ms of a core?

Every env step burns ``step_cpu_ms=20`` milliseconds of one core (busy work timed by the
thread's CPU clock: :mod:`envs.latency`), as a CPU-bound simulator does; the evaluation
protocol plays its episodes without it. The single-process Stable-Baselines3 DQN reference
needs ~2 k env steps to the target here, so its time grows with the step cost;
IMPALA needs more env steps (~10 k on the latency-bound study) but spreads them over N
cores, so it should win once the step cost is large enough: this file measures whether 20 ms
is. IMPALA uses the latency-bound study's learning rate and batch (docs/latency_scaling.md)
with one env per env runner (a CPU-bound env gains nothing from stepping several in turn,
and a fragment then takes ~1 s instead of 8). A trial asks for N + 1 CPUs, so N = 15
fills a 16-CPU node; one trial at a time. The baseline is IMPALA with 4 env runners.

Sizing: (8 and 15 env runners + the 4-runner baseline + the reference) x 2 seeds, at most
120 s each: 7.3 minutes on the 16-core node docs/device_16cpu.md describes. On a 2-core
machine, ``--dry-run`` shows
that the N >= 2 points do not fit. Measured: docs/device_16cpu.md.
"""

from sweeps import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(
    name="cabs_cpu_scaling_16cpu",
    env="ContosoCabs-v0",
    env_config={"num_cities": 5, "time_matrix_seed": 0, "step_cpu_ms": 20},
    algorithms=["IMPALA"],
    search_space={"num_env_runners": choice([8, 15])},
    per_algorithm={"IMPALA": {"train_batch_size": choice([512]), "lr": choice([0.001])}},
    fixed={"num_envs_per_env_runner": 1},
    target=Target(metric="evaluation", fraction_of_optimal=0.95),
    budget=Budget(time_s=120),
    search=Search(sampler="grid", num_samples=2, seeds=2, max_concurrent=1, capping=None),
    baseline={"algorithm": "IMPALA", "num_env_runners": 4, "train_batch_size": 512, "lr": 0.001},
    reference={"algorithm": "SB3-DQN"},
)

"""Plan-fit study, CPU-bound envs: IMPALA and APPO on Contoso Cabs whose env steps each burn
1 ms of a core (``step_cpu_ms``: a simulator that computes, :mod:`envs.latency`), at 1-5 env
runners (the fit range) and 6 and 8 (held out), 5 seeds each (10-14, a seed stream no other
study used), with the suite's DQN and the single-process Stable-Baselines3 DQN reference at the
same cost.

Question: on 2 cores the CPUs run out within a few env runners (the measured plateau starts at
about 4); fitted on N <= 5, does each of the plan's models (USL and Amdahl on throughput, the pipeline start-up + env steps /
throughput, USL on 1/TTT) predict the contention at N = 6 and 8, within the interval it
gives? Leave-one-N-out cross-validation on the fit range picks the model the plan uses::

    python -m sweeps.run sweeps/cabs_fit_cpu.py
    python -m analysis.plan holdout RUN 6,8

Settings are the waiting-env study's (``sweeps/cabs_fit_latency.py``: 8 envs per env runner,
512-step train batches, lr 0.001), with 1/8 CPU per env runner so that 8 env runners and the
learner ask for the machine's 2 CPUs. 1 ms of CPU per step (against the env runner's own
~1.5 ms per env step) keeps (2 x 7 configurations + DQN + reference) x 5 seeds = 80 trials
within the study's 40-minute budget on the 2-core machine: measured 27 minutes
(docs/cpu_scaling.md). Capping is off. The baseline is IMPALA with 1 env runner (not sampled
twice).
"""

from sweeps.cabs_fit_latency import SWEEP as _WAITING

SWEEP = _WAITING.model_copy(
    update={
        "name": "cabs_fit_cpu",
        "env_config": {"num_cities": 5, "time_matrix_seed": 0, "step_cpu_ms": 1},
        "fixed": {**_WAITING.fixed, "num_cpus_per_env_runner": 0.125},
    }
)

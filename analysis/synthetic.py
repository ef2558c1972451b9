"""Synthetic results directories, following docs/results.md exactly (for tests and demos).

Every trial is simulated from known ground truth, so the analysis can be checked against it:

- throughput (env steps/s) of an algorithm with ``N`` env runners follows the Universal
  Scalability Law ``X(N) = gamma N / (1 + alpha (N-1) + beta N (N-1))`` with the parameters in
  :data:`TRUE_SCALING` (N = 0 samples in the driver at ``X(1)``), times per-iteration noise;
- the episode return follows a logistic curve in env steps that crosses the target after
  roughly ``1.35 x`` :data:`STEPS_HALF` env steps (more with more env runners: staler samples),
  with seed-to-seed variation;
- each trial pays a start-up time of ``3 + 0.7 N`` seconds before its first iteration;
- a censored trial's curve plateaus below the target, so it runs until its wall-clock budget.

Example::

    from analysis.synthetic import write_synthetic_results
    path = write_synthetic_results("/tmp/demo", seeds=5, env_runners=(1, 2, 4, 8), censor=0.2)
    # then: python -m analysis.report /tmp/demo
"""

from __future__ import annotations

import math
import platform
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from sweeps.engine import rundir
from sweeps.engine.rundir.schema import (
    PROGRESS_COLUMNS,
    TRIAL_COLUMNS,
    censored_objective,
    config_id,
    write_parquet,
)

__all__ = ["STEPS_HALF", "TRUE_SCALING", "write_synthetic_results"]

TRUE_SCALING: dict[str, tuple[float, float, float]] = {
    "DQN": (400.0, 0.10, 0.005),
    "APEX": (500.0, 0.08, 0.003),
    "IMPALA": (600.0, 0.05, 0.002),
    "PPO": (700.0, 0.04, 0.004),
    "APPO": (650.0, 0.05, 0.003),
}
"""Ground-truth USL (gamma env steps/s, alpha, beta) of each algorithm's throughput."""

STEPS_HALF: dict[str, float] = {
    "DQN": 8000.0,
    "APEX": 12000.0,
    "IMPALA": 20000.0,
    "PPO": 24000.0,
    "APPO": 22000.0,
}
"""Env steps at which the logistic learning curve is half-way (single env runner)."""

_LR_FACTOR = (1.0, 1.3, 0.85, 1.6)  # sample-efficiency multiplier of the 1st, 2nd, ... lr
_LRS = (1e-3, 3e-4, 2e-3, 1e-4)
_OPTIMAL_RETURN = 250.0
_TARGET_FRACTION = 0.8
_EPISODE_LEN = 100


def _throughput(alg: str, n: int) -> float:
    gamma, alpha, beta = TRUE_SCALING.get(alg, TRUE_SCALING["PPO"])
    n = max(n, 1)
    return gamma * n / (1.0 + alpha * (n - 1) + beta * n * (n - 1))


def write_synthetic_results(
    path: str | Path,
    *,
    seeds: int = 3,
    env_runners: tuple[int, ...] = (1, 2, 4),
    censor: float = 0.0,
    rng_seed: int = 0,
    algorithms: tuple[str, ...] = ("DQN", "IMPALA"),
    baseline: tuple[str, int] = ("DQN", 1),
    n_lr: int = 1,
    budget_s: float = 120.0,
    errors: int = 0,
    no_episode_errors: int = 0,
    machine_cpus: int = 8,
    with_optuna: bool = True,
    with_progress: bool = True,
    name: str = "synthetic_scaling",
    slowdown: float = 1.0,
) -> Path:
    """Write a complete synthetic results directory.

    Args:
        path: directory to create (parents too); existing result files in it are replaced.
        seeds: seeds per configuration.
        env_runners: env runner counts (the sweep's ``num_env_runners`` choices).
        censor: fraction (0-1) of each configuration's seeds whose learning curve plateaus
            below the target, so they are censored at the budget (rounded to whole seeds).
        rng_seed: seed of everything random here.
        algorithms: algorithms swept (keys of :data:`TRUE_SCALING`).
        baseline: ``(algorithm, num_env_runners)``; its first-lr configuration is the baseline
            (added to the grid if missing).
        n_lr: learning rates per (algorithm, env_runners): more configurations per N.
        budget_s: wall-clock budget per trial (seconds).
        errors: trials (chosen at random) that end with ``status == "error"`` half-way.
        no_episode_errors: trials that crash before finishing any episode (NaN returns).
        machine_cpus: CPUs of the simulated node; trials asking for more are oversubscribed.
        with_optuna: write ``optuna.db`` (a study named ``name`` with one trial per trial).
        with_progress: write ``progress.parquet``.
        name: sweep name (``spec.json`` ``name`` and the Optuna study name).
        slowdown: every trial's start-up and time per env step multiplied by this (a run
            of slower code or hardware: time-to-target about ``slowdown`` times longer).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: unknown algorithm, empty ``env_runners``, ``seeds < 1`` or ``censor``
            outside [0, 1].
    """
    unknown = [a for a in algorithms if a not in TRUE_SCALING]
    if unknown:
        raise ValueError(f"algorithms {unknown}: not one of {sorted(TRUE_SCALING)}")
    if not slowdown > 0:
        raise ValueError(f"slowdown {slowdown}: need > 0")
    if not env_runners or seeds < 1 or not 0.0 <= censor <= 1.0 or not 1 <= n_lr <= len(_LRS):
        raise ValueError(
            f"need env_runners non-empty, seeds >= 1, 0 <= censor <= 1 and "
            f"1 <= n_lr <= {len(_LRS)}; got env_runners={env_runners}, seeds={seeds}, "
            f"censor={censor}, n_lr={n_lr}"
        )
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(rng_seed)
    target = _TARGET_FRACTION * _OPTIMAL_RETURN
    start = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)

    grid = [(a, n, k) for a in algorithms for n in env_runners for k in range(n_lr)]
    if (baseline[0], baseline[1], 0) not in grid:
        grid.insert(0, (baseline[0], baseline[1], 0))
    trial_rows, progress_rows, specs = [], [], []
    for alg, n, k in grid:
        params = {
            "num_env_runners": n,
            "lr": _LRS[k],
            "train_batch_size": 256 if alg in ("DQN", "APEX") else 500,
            "rollout_fragment_length": 50,
            "num_envs_per_env_runner": 1,
            "param_gamma": 0.99,
        }
        cid = config_id(alg, params)
        n_cens = int(round(censor * seeds))
        cens_seeds = set(rng.choice(seeds, size=n_cens, replace=False).tolist())
        for s in range(seeds):
            specs.append((alg, n, k, params, cid, s, s in cens_seeds))
    order = rng.permutation(len(specs))
    err_idx = set(order[:errors].tolist())
    noep_idx = set(order[errors : errors + no_episode_errors].tolist())

    for i, (alg, n, k, params, cid, s, censored) in enumerate(specs):
        tid = f"{cid}-s{s}"
        x_true = _throughput(alg, n) / slowdown
        steps_half = (
            STEPS_HALF[alg]
            * _LR_FACTOR[k]
            * (1.0 + 0.05 * max(n - 1, 0))
            * float(rng.lognormal(0.0, 0.15))
        )
        width = 0.25 * steps_half
        is_error = i in err_idx or i in noep_idx
        # Censored and failing trials plateau below the target (a failing trial stops early).
        r_max = 0.64 * _OPTIMAL_RETURN if censored or is_error else 0.96 * _OPTIMAL_RETURN
        startup = (3.0 + 0.7 * n) * slowdown
        steps_per_iter = 1000 * max(n, 1)
        max_iter = 1 if i in noep_idx else (10_000 if not is_error else None)
        t, steps, it, reached_at = startup, 0, 0, None
        best, last = -math.inf, math.nan
        rows = []
        while True:
            it += 1
            x = x_true * float(rng.lognormal(0.0, 0.05))
            dt = steps_per_iter / x
            t += dt
            steps += steps_per_iter
            if i in noep_idx:
                ret = math.nan
                episodes = 0
            else:
                episodes = steps // _EPISODE_LEN
                mean = r_max / (1.0 + math.exp(-(steps - steps_half) / width))
                ret = mean + float(rng.normal(0.0, 0.02 * _OPTIMAL_RETURN))
            rows.append(
                {
                    "trial_id": tid,
                    "iteration": it,
                    "wall_time_s": t,
                    "env_steps": steps,
                    "episodes": episodes,
                    "episode_return_mean": ret,
                    "learner_updates": float(it * 4),
                    "env_steps_per_s": steps_per_iter / dt,
                    "target_metric_value": math.nan,
                }
            )
            if math.isfinite(ret):
                best = max(best, ret)
                last = ret
                if ret >= target:
                    reached_at = (t, steps, dt if it > 1 else t)  # the gap since the last one
                    break
            if t >= budget_s:
                break
            if max_iter is not None and it >= max_iter:
                break
            if is_error and max_iter is None and t >= 0.5 * min(budget_s, 40.0):
                break
        if is_error:
            reached_at = None
        elapsed = t
        status = "error" if is_error else ("reached" if reached_at else "censored")
        cpus = 1.0 + n
        trial_rows.append(
            {
                "trial_id": tid,
                "config_id": cid,
                "is_baseline": bool(alg == baseline[0] and n == baseline[1] and k == 0),
                "algorithm": alg,
                "num_env_runners": n,
                "num_envs_per_env_runner": params["num_envs_per_env_runner"],
                "train_batch_size": params["train_batch_size"],
                "rollout_fragment_length": params["rollout_fragment_length"],
                "lr": params["lr"],
                "seed": s,
                "param_gamma": params["param_gamma"],
                "status": status,
                "time_to_target_s": reached_at[0] if reached_at else math.nan,
                "steps_to_target": float(reached_at[1]) if reached_at else math.nan,
                "ttt_resolution_s": reached_at[2] if reached_at else math.nan,
                "budget_s": budget_s,
                "budget_env_steps": math.nan,
                "elapsed_s": elapsed,
                "total_env_steps": steps,
                "target_metric": "episode_return_mean",
                "target_value": target,
                "final_return": last,
                "best_return": best if math.isfinite(best) else math.nan,
                "env_steps_per_s": steps / elapsed,
                "learner_updates": float(it * 4),
                "num_cpus": cpus,
                "num_gpus": 0.0,
                "oversubscribed": bool(cpus > machine_cpus),
                "node_count": 1,
                "node_ip": "10.0.0.4",
                "error": (
                    "RayTaskError(ValueError): synthetic failure"
                    if i in err_idx
                    else "RayActorError: env runner died before the first episode"
                    if i in noep_idx
                    else ""
                ),
                "objective": (
                    reached_at[0]
                    if reached_at
                    else math.nan
                    if is_error
                    else censored_objective(budget_s, best, target)
                ),
            }
        )
        progress_rows.extend(rows)

    trials = pd.DataFrame(trial_rows)
    write_parquet(trials, path / rundir.TRIALS, TRIAL_COLUMNS)
    prog_file = path / rundir.PROGRESS
    if with_progress:
        write_parquet(pd.DataFrame(progress_rows), prog_file, PROGRESS_COLUMNS)
    elif prog_file.exists():
        prog_file.unlink()

    spec = {
        "name": name,
        "env": "ContosoCabs-v0",
        "env_config": {"time_matrix_seed": 0},
        "algorithms": list(algorithms),
        "search_space": {
            "num_env_runners": {"kind": "choice", "values": list(env_runners)},
            "lr": {"kind": "choice", "values": list(_LRS[:n_lr])},
        },
        "per_algorithm": {},
        "fixed": {"gamma": 0.99},
        "per_algorithm_fixed": {},
        "target": {
            "metric": "episode_return_mean",
            "value": target,
            "fraction_of_optimal": _TARGET_FRACTION,
            "optimal_return": _OPTIMAL_RETURN,
        },
        "budget": {"time_s": budget_s, "env_steps": None},
        "search": {
            "sampler": "grid",
            "num_samples": len(grid),
            "seeds": seeds,
            "max_concurrent": 1,
            "sampler_seed": rng_seed,
        },
        "baseline": {"algorithm": baseline[0], "num_env_runners": baseline[1]},
        "results_dir": str(path.parent),
        "allow_oversubscription": True,
    }
    rundir.write_json(path / rundir.SPEC, spec)

    import optuna
    import pyarrow
    import scipy

    env = {
        "versions": {
            "python": platform.python_version(),
            "ray": "2.60.0 (not used: synthetic)",
            "torch": "n/a (synthetic)",
            "gymnasium": "n/a (synthetic)",
            "optuna": optuna.__version__,
            "pandas": pd.__version__,
            "pyarrow": pyarrow.__version__,
            "scipy": scipy.__version__,
            "rl-scaling": "0.1.0",
        },
        "cpu_model": "synthetic CPU",
        "cpu_count": machine_cpus,
        "memory_gib": 32.0,
        "nodes": [{"node_ip": "10.0.0.4", "num_cpus": machine_cpus, "num_gpus": 0}],
        "git_revision": "synthetic",
        "started_at": start.isoformat().replace("+00:00", "Z"),
        "finished_at": (start + timedelta(seconds=float(trials["elapsed_s"].sum())))
        .isoformat()
        .replace("+00:00", "Z"),
        "ray_address": "local",
        "synthetic": True,
        "command": f"analysis.synthetic.write_synthetic_results(seeds={seeds}, "
        f"env_runners={tuple(env_runners)}, censor={censor}, rng_seed={rng_seed})",
    }
    rundir.write_json(path / rundir.ENVIRONMENT, env)

    db = path / rundir.OPTUNA_DB
    if db.exists():
        db.unlink()
    if with_optuna:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(
            storage=f"sqlite:///{db}", study_name=name, direction="minimize"
        )
        dists = {
            "algorithm": optuna.distributions.CategoricalDistribution(list(algorithms)),
            "num_env_runners": optuna.distributions.CategoricalDistribution(list(env_runners)),
            "lr": optuna.distributions.FloatDistribution(1e-4, 3e-3, log=True),
        }
        for _, t in trials.iterrows():
            if t["algorithm"] not in algorithms or t["num_env_runners"] not in env_runners:
                continue  # the baseline added outside the search space
            failed = t["status"] == "error"
            study.add_trial(
                optuna.trial.create_trial(
                    params={
                        "algorithm": t["algorithm"],
                        "num_env_runners": int(t["num_env_runners"]),
                        "lr": float(t["lr"]),
                    },
                    distributions=dists,
                    value=None if failed else float(t["objective"]),
                    state=optuna.trial.TrialState.FAIL
                    if failed
                    else optuna.trial.TrialState.COMPLETE,
                    user_attrs={"trial_id": t["trial_id"], "seed": int(t["seed"])},
                )
            )
    return path

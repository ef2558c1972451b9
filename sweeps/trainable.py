"""One trial = one RLlib Algorithm on one env, timed from before it is built.

The Tune function trainable :func:`run_trial` starts its clock (``time.perf_counter``) right
before ``build_algo()``, so the Algorithm's start-up (env runner actors, learner, replay
buffer) counts, as in MLPerf's timed region; importing RLlib/torch into the trial's process
and resolving its config happen before the clock starts. It then calls
``Algorithm.train()`` until the target metric is ≥ the target (time-to-target = wall-clock at
the end of that iteration) or the per-trial budget (seconds, env steps) is spent (censored).
Every iteration is reported to Tune with the progress columns of docs/results.md.
"""

from __future__ import annotations

import math
import time
from typing import Any

from sweeps.search import META_KEYS, censored_objective
from sweeps.spec import EPISODE_RETURN


def lookup_metric(result: dict[str, Any], key: str) -> float:
    """Value of an RLlib result key like ``env_runners/episode_return_mean`` (NaN if absent)."""
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, dict) or part not in node:
            return math.nan
        node = node[part]
    try:
        return float(node)
    except (TypeError, ValueError):
        return math.nan


def algorithm_params(config: dict[str, Any]) -> dict[str, Any]:
    """The trial's vocabulary params (``algorithm``, ``num_workers``, ..., ``seed``)."""
    params = {k: v for k, v in config.items() if k not in META_KEYS}
    params["seed"] = config.get("seed", 0)
    return params


def trial_algorithm_config(config: dict[str, Any], setup: dict[str, Any]):
    """The RLlib ``AlgorithmConfig`` of one trial, its CPU request scaled down to the node when
    the sweep allows oversubscription.

    Returns:
        (algorithm_config, info): info = ``{"num_cpus", "num_gpus", "oversubscribed",
        "requested_cpus"}`` (CPUs of the whole trial: driver + env runners + learners).
    """
    from sweeps.algorithms import build_config

    params = algorithm_params(config)
    algo_config = build_config(params, setup["env"], dict(setup["env_config"]))
    if setup.get("quiet", True):
        algo_config.debugging(log_level="ERROR")  # RLlib's level in the trial and its env runners
    cpus, gpus = request_totals(algo_config)
    info = {"requested_cpus": cpus, "num_cpus": cpus, "num_gpus": gpus, "oversubscribed": False}
    node_cpus = setup.get("max_node_cpus")
    if node_cpus and cpus > node_cpus and setup.get("allow_oversubscription"):
        runners = algo_config.num_env_runners
        others = cpus - runners * algo_config.num_cpus_per_env_runner
        if runners > 0 and others < node_cpus:
            per_runner = (node_cpus - others) / runners
            algo_config.env_runners(num_cpus_per_env_runner=per_runner)
            info.update(num_cpus=node_cpus, oversubscribed=True)
    return algo_config, info


def request_totals(algo_config) -> tuple[float, float]:
    """(CPUs, GPUs) summed over the trial's placement-group bundles (RLlib's own request)."""
    pgf = algo_config.algo_class.default_resource_request(algo_config)
    bundles = pgf.bundles
    return (sum(b.get("CPU", 0) for b in bundles), sum(b.get("GPU", 0) for b in bundles))


def resources_for(setup: dict[str, Any]):
    """Tune ``with_resources`` callable: the trial's placement group from its own config."""

    def _resources(config: dict[str, Any]):
        algo_config, _ = trial_algorithm_config(config, setup)
        return algo_config.algo_class.default_resource_request(algo_config)

    return _resources


def preload_libraries() -> None:
    """Import what a trial's process needs before its timed region starts.

    torch and RLlib's Algorithm (~1.5 s in a fresh process), and ``scipy.signal``, which RLlib's
    prioritized episode replay buffer imports lazily at its first ``sample()`` (its n-step
    discounting uses ``scipy.signal.lfilter``): ~0.5-1 s that would otherwise land inside the
    first training iteration of every DQN/APEX trial. ``benchmarks/bench_overhead.py`` calls
    this in its bare RLlib loop too, so both sides of that comparison start their clocks with
    the same libraries loaded.
    """
    import scipy.signal  # noqa: F401
    import torch  # noqa: F401
    from ray.rllib.algorithms.algorithm import Algorithm  # noqa: F401


def reuse_prestarted_workers() -> None:
    """Let trial actors and their env runners start in Ray's already-running worker processes.

    Tune gives every trainable actor ``runtime_env={"env_vars": {"PL_DISABLE_FORK": "1"}}``
    (``ray/tune/execution/class_cache.py``, a PyTorch Lightning workaround, ray#28197), and the
    actors a trial creates (RLlib's env runners) inherit it. A worker process Ray started for
    the job's default runtime env cannot host an actor with another one, so every trial
    actor got a freshly spawned Python process, and so did its env runners (measured with
    plain Ray actors: 1.62 s instead of 0.49 s to a first call; docs/benchmarks.md). With the
    variable dropped the trial actor takes a prestarted process; its env runners may still
    need new ones, because Ray keeps idle workers only up to the CPUs no placement group
    reserves. We use no Lightning, so the variable is dropped; the environment
    variables Tune copies from the driver (cloud credentials, Ray Train settings) still go.
    Call it in the driver before the first trial starts.
    """
    from ray.tune.execution import class_cache

    getattr(class_cache, "DEFAULT_ENV_VARS", {}).pop("PL_DISABLE_FORK", None)


def run_trial(config: dict[str, Any], setup: dict[str, Any]) -> None:
    """Tune function trainable: train until the target or the budget, reporting each iteration.

    ``setup`` (bound with ``tune.with_parameters``): ``env``, ``env_config``, ``target``
    (``{"metric", "value"}``), ``budget`` (``{"time_s", "env_steps"}``),
    ``max_node_cpus``, ``allow_oversubscription``.
    """
    if setup.get("quiet", True):
        import logging

        logging.getLogger("ray.rllib").setLevel(logging.ERROR)
    import ray
    from ray import tune

    from sweeps.algorithms import extract_metrics

    algo_name = config["algorithm"]
    target_metric, target = setup["target"]["metric"], float(setup["target"]["value"])
    budget_s = setup["budget"].get("time_s")
    budget_steps = setup["budget"].get("env_steps")
    # Libraries are imported (RLlib, torch, scipy.signal: ~2.5 s in a fresh trial process) and
    # the config is resolved before the clock starts, as MLPerf's timed region excludes
    # framework start-up; building the Algorithm (its env runner actors, learner, replay
    # buffer) is timed.
    preload_libraries()
    algo_config, info = trial_algorithm_config(config, setup)
    start = time.perf_counter()  # the trial's timed region starts before the Algorithm is built
    algo = algo_config.build_algo()
    node_ip = ray.util.get_node_ip_address()
    best = -math.inf
    last_steps, last_wall = 0, time.perf_counter() - start
    try:
        while True:
            result = algo.train()
            wall = time.perf_counter() - start
            m = extract_metrics(algo_name, result)
            value = (m["episode_return_mean"] if target_metric == EPISODE_RETURN
                     else lookup_metric(result, target_metric))
            if math.isfinite(value):
                best = max(best, value)
            steps = int(m["env_steps"])
            reached = math.isfinite(value) and value >= target
            out_of_budget = (budget_s is not None and wall >= budget_s) or (
                budget_steps is not None and steps >= budget_steps)
            done = reached or out_of_budget
            if reached:
                objective = wall
            else:
                objective = censored_objective(budget_s or wall, best, target)
            tune.report({
                "wall_time_s": wall,
                "env_steps": steps,
                "episodes": int(m["episodes"]),
                "episode_return_mean": float(m["episode_return_mean"]),
                "target_metric_value": value,
                "learner_updates": float(m.get("learner_updates", math.nan)),
                "env_steps_per_s_iter": (steps - last_steps) / max(wall - last_wall, 1e-9),
                "best_return": best if math.isfinite(best) else math.nan,
                "reached": bool(reached),
                "done": bool(done),
                "objective": objective,
                "node_ip": node_ip,
                "num_cpus": info["num_cpus"],
                "num_gpus": info["num_gpus"],
                "oversubscribed": info["oversubscribed"],
            })
            last_steps, last_wall = steps, wall
            if done:
                break
    finally:
        algo.stop()

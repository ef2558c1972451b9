"""Algorithm speed on Contoso Cabs: env steps/s, learner updates/s and time-to-target.

For each algorithm (default DQN, APEX, IMPALA) with 1 and 2 env runners, one trial of the
algorithm's Cabs preset over its library defaults (``sweeps.engine.search.defaults_for``,
plus any ``--set key=value``) trains on ``ContosoCabs-v0`` until its episode return mean (as
``sweeps.engine.algorithms.extract_metrics`` defines it: greedy evaluation episodes for APEX) reaches
``--fraction`` (0.9) × the exact optimum (``envs.oracle_return``), or until the budget (600 s).
Time-to-target (TTT) is the project's: wall-clock from before the Algorithm is built to the
end of the first iteration at or above the target. Also measured: RLlib's *default* DQN
config (``DQNConfig()``, 1 env runner) for comparison of env steps/s.

With 2 env runners on a 2-CPU machine the trial asks for 3 CPUs; the env runners are given
``(cpus − 1) / N`` CPUs each and the row is flagged ``oversubscribed``.

Start Ray only when nothing else trains (timings), e.g.::

    flock /tmp/ray_workload.lock python benchmarks/bench_algorithms.py
    flock /tmp/ray_workload.lock python benchmarks/bench_algorithms.py --algorithms APEX --workers 2

Rows are merged into ``benchmarks/results/bench_algorithms.json`` (one row per algorithm ×
env runners × label; a re-run replaces its rows) with the machine, versions, git revision and
load average; the numbers are copied into docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from sweeps.engine.cli import EXIT_BAD_INPUT

DEFAULT_OUT = Path(__file__).parent / "results" / "bench_algorithms.json"
ENV = "ContosoCabs-v0"


def _parse_set(items: list[str]) -> dict[str, Any]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"--set {item!r}: expected key=value")
        key, raw = item.split("=", 1)
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def machine_info() -> dict[str, Any]:
    """Where the numbers were taken: CPU, versions, git revision, time (each row keeps its
    own revision and time; ``analysis.benchmarks.environment`` is the whole result's)."""
    from analysis.benchmarks import environment

    env = environment()
    return {
        "cpu_model": env["cpu_model"],
        "cpu_count": env["cpu_count"],
        "versions": env["versions"],
        "git_revision": env["git_revision"],
        "timestamp": env["measured_at"],
    }


def run_trial(
    name: str,
    workers: int,
    overrides: dict[str, Any],
    label: str,
    target: float,
    budget_s: float,
    cpus: int,
) -> dict[str, Any]:
    """One trial until ``target`` or ``budget_s``; throughput, TTT and the resolved params."""
    from sweeps.engine.algorithms import build_config, extract_metrics
    from sweeps.engine.search import defaults_for

    params = {"algorithm": name, "num_env_runners": workers, **overrides}
    config = build_config(params, ENV)
    oversubscribed = workers > 0 and 1 + workers > cpus
    if oversubscribed:
        config.env_runners(num_cpus_per_env_runner=(cpus - 1) / workers)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()  # TTT's clock starts before the Algorithm is built
    algo = config.build_algo()
    built = time.perf_counter() - start
    history: list[dict[str, Any]] = []
    ttt = steps_to_target = math.nan
    try:
        while True:
            m = extract_metrics(name, algo.train())
            m["wall_s"] = time.perf_counter() - start
            history.append(m)
            if m["episode_return_mean"] >= target:
                ttt, steps_to_target = m["wall_s"], m["env_steps"]
                break
            if m["wall_s"] >= budget_s:
                break
    finally:
        algo.stop()
    last = history[-1]
    train_s = last["wall_s"] - built
    best = max(
        (h["episode_return_mean"] for h in history if math.isfinite(h["episode_return_mean"])),
        default=math.nan,
    )
    return {
        "algorithm": name,
        "num_env_runners": workers,
        "label": label,
        "status": "reached" if math.isfinite(ttt) else "censored",
        "time_to_target_s": ttt,
        "steps_to_target": steps_to_target,
        "target_value": target,
        "budget_s": budget_s,
        "build_s": built,
        "elapsed_s": last["wall_s"],
        "env_steps": last["env_steps"],
        "learner_updates": last["learner_updates"],
        "env_steps_per_s": last["env_steps"] / train_s if train_s > 0 else math.nan,
        "learner_updates_per_s": last["learner_updates"] / train_s if train_s > 0 else math.nan,
        "final_return": last["episode_return_mean"],
        "best_return": best,
        "oversubscribed": oversubscribed,
        "load_avg_1min_before": load_before,
        "load_avg_1min_after": os.getloadavg()[0],
        "params": {**defaults_for(name, ENV), **params},
        "curve": [
            [round(h["wall_s"], 2), h["env_steps"], h["episode_return_mean"]] for h in history
        ],
    }


def run_rllib_default_dqn(iterations: int) -> dict[str, Any]:
    """RLlib's own DQN defaults on Cabs (1 env runner): env steps/s of iterations after the
    first (learning starts after 1000 env steps, which the first iteration samples)."""
    from ray.rllib.algorithms.dqn import DQNConfig

    import envs

    envs.register_rllib_envs()
    algo = (
        DQNConfig()
        .environment(ENV)
        .env_runners(num_env_runners=1)
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
    ).build_algo()
    try:
        algo.train()
        t0 = time.perf_counter()
        s0 = algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"))
        for _ in range(iterations):
            r = algo.train()
        dt = time.perf_counter() - t0
        steps = r["env_runners"]["num_env_steps_sampled_lifetime"] - s0
        timers = {
            k: float(v) for k, v in r.get("timers", {}).items() if isinstance(v, (int, float))
        }
    finally:
        algo.stop()
    return {
        "algorithm": "DQN",
        "num_env_runners": 1,
        "label": "rllib_default",
        "env_steps_per_s": steps / dt,
        "seconds": dt,
        "env_steps": steps,
        "params": {
            "rollout_fragment_length": "auto (= n_step = 1)",
            "min_sample_timesteps_per_iteration": 1000,
            "train_batch_size": 32,
            "num_envs_per_env_runner": 1,
        },
        "timers_s": timers,
    }


def _fmt(x: Any, digits: int = 0) -> str:
    if isinstance(x, float):
        return "—" if math.isnan(x) else f"{x:,.{digits}f}"
    return str(x)


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per row (algorithm, env
    runners, label), env steps/s and, where it reached the target, time-to-target in seconds
    (one trial each)."""
    from analysis.benchmarks import sample

    out_samples = []
    for r in out["rows"]:
        case = f"{r['algorithm']} N={r['num_env_runners']} {r['label']}"
        out_samples.append(sample(case, "env steps/s", "1/s", r["env_steps_per_s"], "higher"))
        ttt = r.get("time_to_target_s")
        if ttt is not None and ttt == ttt:
            out_samples.append(sample(case, "time-to-target", "s", ttt, "lower"))
    return out_samples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algorithms", nargs="+", default=["DQN", "APEX", "IMPALA"])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--fraction", type=float, default=0.9, help="target = fraction × optimum")
    ap.add_argument("--budget-s", type=float, default=600.0)
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="override a vocabulary key for every trial",
    )
    ap.add_argument(
        "--label", default="tuned", help="row label (rows with the same key are replaced)"
    )
    ap.add_argument(
        "--rllib-default-dqn",
        type=int,
        default=0,
        metavar="ITERATIONS",
        help="also time RLlib's default DQN for this many 1000-step iterations",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    try:
        from sweeps.engine.algorithms import ALGORITHMS, known_params

        for name in args.algorithms:
            if name not in ALGORITHMS:
                raise ValueError(f"unknown algorithm {name!r} (known: {', '.join(ALGORITHMS)})")
        overrides = _parse_set(args.set)
        for name in args.algorithms:
            bad = set(overrides) - known_params(name)
            if bad:
                raise ValueError(f"--set {sorted(bad)} not known for {name}")
        if not 0 < args.fraction <= 1:
            raise ValueError(f"--fraction must be in (0, 1], got {args.fraction}")
    except ValueError as e:
        print(f"bench_algorithms: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    import ray

    import envs

    optimum = envs.oracle_return(ENV, {})
    target = args.fraction * optimum
    cpus = os.cpu_count() or 1
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    rows = []
    info = machine_info()
    try:
        if args.rllib_default_dqn:
            rows.append(run_rllib_default_dqn(args.rllib_default_dqn))
            print(f"RLlib default DQN: {rows[-1]['env_steps_per_s']:.1f} env steps/s", flush=True)
        for name in args.algorithms:
            for workers in args.workers:
                row = run_trial(name, workers, overrides, args.label, target, args.budget_s, cpus)
                rows.append(row)
                print(
                    f"{name:6s} N={workers} {row['status']:8s} TTT={_fmt(row['time_to_target_s'], 1)} s "
                    f"steps={row['env_steps']} env steps/s={_fmt(row['env_steps_per_s'])} "
                    f"updates/s={_fmt(row['learner_updates_per_s'], 1)} "
                    f"best={_fmt(row['best_return'])}",
                    flush=True,
                )
    finally:
        ray.shutdown()

    old = json.loads(args.out.read_text()) if args.out.exists() else {"rows": []}
    for r in rows:
        r["measured_at"], r["git_revision"] = info["timestamp"], info["git_revision"]
    keys = {(r["algorithm"], r["num_env_runners"], r["label"]) for r in rows}
    kept = [
        r
        for r in old.get("rows", [])
        if (r["algorithm"], r["num_env_runners"], r["label"]) not in keys
    ]
    out = {
        "benchmark": "bench_algorithms",
        "env": ENV,
        "optimal_return": optimum,
        "target_fraction": args.fraction,
        "machine": info,
        "rows": sorted(
            kept + rows, key=lambda r: (r["label"], r["algorithm"], r["num_env_runners"])
        ),
    }
    from analysis.benchmarks import save

    save(args.out, out, samples(out), benchmark="bench_algorithms", label=args.label)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

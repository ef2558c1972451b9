"""Suite overhead: does measuring through ``sweeps.run`` slow the training it measures?

Runs the same algorithm config for the same env-step budget once through ``sweeps.run`` (a
one-trial sweep: Tune trial actor, Optuna searcher, results recorder) and once as a bare RLlib
loop (``build_config(...).build_algo()`` then ``train()`` in this process), interleaved, in one
process run, ``--reps`` times. Both clocks start right before ``build_algo()`` (libraries
imported, config resolved) and stop at the end of the iteration that crossed the env-step
budget; throughput = env steps / that time.

Target (issue "Cabs scaling study"): overhead ratio = bare throughput / sweep throughput ≤ 1.03.
Also reports the sweep's start-up: command start → first trial's first iteration.

    python benchmarks/bench_overhead.py [--algorithm DQN] [--env-steps 30000] [--reps 3]

Prints a table and saves ``benchmarks/results/bench_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = "ContosoCabs-v0"


def bare_run(params: dict, env_steps: int) -> dict:
    """One bare RLlib loop on a fresh embedded Ray (2 CPUs); returns steps, seconds, steps/s."""
    import ray

    from sweeps.algorithms import build_config, extract_metrics

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        config = build_config(params, ENV, {})
        start = time.perf_counter()  # as sweeps.trainable: right before build_algo()
        algo = config.build_algo()
        try:
            while True:
                steps = extract_metrics(params["algorithm"], algo.train())["env_steps"]
                if steps >= env_steps:
                    break
            elapsed = time.perf_counter() - start
        finally:
            algo.stop()
    finally:
        ray.shutdown()
    return {"env_steps": int(steps), "seconds": elapsed, "env_steps_per_s": steps / elapsed}


def sweep_run(params: dict, env_steps: int, workdir: Path, rep: int) -> dict:
    """The same config as a one-trial sweep through ``sweeps.run.main``; numbers from its
    trials.parquet (``total_env_steps / elapsed_s``) and environment.json (start-up)."""
    import pandas as pd

    from sweeps import run

    fixed = {k: v for k, v in params.items() if k != "algorithm"}
    path = workdir / f"overhead_{rep}.py"
    path.write_text(textwrap.dedent(f"""\
        from sweeps.spec import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="overhead", env="{ENV}", algorithms=["{params['algorithm']}"],
                      fixed={fixed!r}, target=Target(fraction_of_optimal=1.5),
                      budget=Budget(env_steps={env_steps}),
                      search=Search(sampler="random", num_samples=1, seeds=1), baseline=None)
        """))
    results = workdir / f"results_{rep}"
    t0 = time.perf_counter()
    code = run.main([str(path), "--results", str(results), "--no-report"])
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"bench_overhead: sweeps.run exited {code}")
    run_dir = next((results / "overhead").iterdir())
    row = pd.read_parquet(run_dir / "trials.parquet").iloc[0]
    env_info = json.loads((run_dir / "environment.json").read_text())
    return {"env_steps": int(row.total_env_steps), "seconds": float(row.elapsed_s),
            "env_steps_per_s": float(row.env_steps_per_s), "command_wall_s": wall,
            "startup_to_first_iteration_s": env_info.get("startup_to_first_iteration_s")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithm", default="DQN")
    p.add_argument("--env-steps", type=int, default=30_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=str(HERE / "results" / "bench_overhead.json"))
    args = p.parse_args(argv)

    params = {"algorithm": args.algorithm, "num_workers": 1, "seed": 0}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):  # interleaved: sweep, bare, sweep, bare, ...
            s = sweep_run(params, args.env_steps, Path(tmp), rep)
            b = bare_run(params, args.env_steps)
            rows.append({"rep": rep, "sweep": s, "bare": b,
                         "ratio": b["env_steps_per_s"] / s["env_steps_per_s"]})
            print(f"rep {rep}: sweep {s['env_steps_per_s']:.0f} env steps/s "
                  f"({s['env_steps']} in {s['seconds']:.1f} s), bare {b['env_steps_per_s']:.0f} "
                  f"env steps/s ({b['env_steps']} in {b['seconds']:.1f} s), ratio {rows[-1]['ratio']:.3f}",
                  flush=True)
    ratios = [r["ratio"] for r in rows]
    startups = [r["sweep"]["startup_to_first_iteration_s"] for r in rows
                if r["sweep"]["startup_to_first_iteration_s"] is not None]
    summary = {
        "algorithm": args.algorithm, "env": ENV, "env_steps_budget": args.env_steps,
        "reps": args.reps, "overhead_ratio_median": statistics.median(ratios),
        "overhead_ratio_per_rep": ratios, "target_ratio": 1.03,
        "startup_to_first_iteration_s_median": statistics.median(startups) if startups else None,
        "sweep_command_wall_s_median": statistics.median(r["sweep"]["command_wall_s"] for r in rows),
    }
    print("\n| measure | value |\n|---|---|")
    print(f"| overhead ratio (bare / sweep throughput), median of {args.reps} | "
          f"{summary['overhead_ratio_median']:.3f} (target ≤ 1.03) |")
    print(f"| per repetition | {', '.join(f'{r:.3f}' for r in ratios)} |")
    print(f"| sweep start-up: command start → first iteration (median) | "
          f"{summary['startup_to_first_iteration_s_median']:.1f} s |")
    print(f"| whole one-trial sweep command (median) | {summary['sweep_command_wall_s_median']:.1f} s |")
    from sweeps.record import environment_info

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = environment_info(["benchmarks/bench_overhead.py"], "local", [])
    out.write_text(json.dumps({"summary": summary, "rows": rows, "environment": env},
                              indent=2, default=str) + "\n")
    print(f"\nsaved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

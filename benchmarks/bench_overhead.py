"""Suite overhead: does measuring through ``sweeps.run`` slow the training it measures?

Runs the same algorithm config for the same env-step budget once through ``sweeps.run`` (a
one-trial sweep: Tune trial actor, Optuna searcher, results recorder) and once as a bare RLlib
loop (``build_config(...).build_algo()`` then ``train()`` in a plain script), interleaved, in
one benchmark run, ``--reps`` times; the order alternates (sweep first in even repetitions,
bare first in odd ones) so a drift of the shared machine does not favour one side. Each side
is a fresh Python process (``python -m sweeps.run ...`` and ``python bench_overhead.py
--bare-child ...``), so neither inherits modules imported by the other.

Both clocks start right before ``build_algo()`` with the same libraries already imported
(``sweeps.engine.trainable.preload_libraries``) after the process reset a trial gets
(``sweeps.engine.trainable.begin_trial_in_process``: garbage collected, the survivors frozen), and
stop at the end of the iteration that crossed the env-step budget; throughput = env steps /
that time (the timed region of a trial, see docs/results.md). Also reported, to show where a
difference comes from: the time to the end of the first iteration (building the Algorithm:
env runner actors, learner, replay buffer) and the steady-state throughput after it.

Target (issue "Cabs scaling study"): overhead ratio = bare throughput / sweep throughput
≤ 1.03 (median over repetitions). Also reports the sweep's start-up: command start (process
creation) → first trial's first iteration.

    python benchmarks/bench_overhead.py [--algorithm DQN] [--env-steps 30000] [--reps 5]

Prints a table and saves ``benchmarks/results/bench_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# this checkout's packages, even where the environment has another checkout installed editable
sys.path.insert(0, str(ROOT))
ENV = "ContosoCabs-v0"


def timing(iterations: list[tuple[float, int]]) -> dict:
    """Throughputs of one timed region from its iterations ``[(wall_s, env_steps), ...]``
    (cumulative, seconds since the clock started): whole region, first iteration's end, and
    steady state (after the first iteration)."""
    (w0, s0), (w1, s1) = iterations[0], iterations[-1]
    return {
        "env_steps": int(s1),
        "seconds": w1,
        "env_steps_per_s": s1 / w1,
        "first_iteration_s": w0,
        "iterations": len(iterations),
        "steady_env_steps_per_s": (s1 - s0) / (w1 - w0) if w1 > w0 else float("nan"),
    }


def bare_child(params: dict, env_steps: int) -> dict:
    """The bare RLlib loop (run in its own process): a fresh embedded Ray with 2 CPUs, the
    config built, clock, ``build_algo()``, ``train()`` until the env-step budget."""
    import ray
    import torch

    from sweeps.engine.algorithms import build_config, extract_metrics
    from sweeps.engine.trainable import begin_trial_in_process, preload_libraries

    preload_libraries()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        config = build_config(params, ENV, {})
        begin_trial_in_process()  # as a trial: garbage collected, the survivors frozen
        start = time.perf_counter()  # as sweeps.engine.trainable: right before build_algo()
        algo = config.build_algo()
        iterations = []
        try:
            while True:
                steps = extract_metrics(params["algorithm"], algo.train())["env_steps"]
                iterations.append((time.perf_counter() - start, int(steps)))
                if steps >= env_steps:
                    break
        finally:
            algo.stop()
    finally:
        ray.shutdown()
    return {**timing(iterations), "torch_threads": torch.get_num_threads()}


def bare_run(params: dict, env_steps: int) -> dict:
    """Run :func:`bare_child` in a fresh Python process; its result dict."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--bare-child",
        "--algorithm",
        params["algorithm"],
        "--env-steps",
        str(env_steps),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(
            f"bench_overhead: bare loop exited {proc.returncode}: "
            f"{proc.stderr.strip().splitlines()[-1:]}"
        )
    return json.loads(lines[-1])


def sweep_run(params: dict, env_steps: int, workdir: Path, rep: int) -> dict:
    """The same config as a one-trial sweep, ``python -m sweeps.run`` in a fresh process;
    numbers from its progress.parquet (the trial's own clock) and environment.json."""
    import pandas as pd

    fixed = {k: v for k, v in params.items() if k != "algorithm"}
    path = workdir / f"overhead_{rep}.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice
        SWEEP = Sweep(name="overhead", env="{ENV}", algorithms=["{params["algorithm"]}"],
                      fixed={fixed!r}, target=Target(metric="env_runners/episode_len_mean", value=1e9),
                      budget=Budget(env_steps={env_steps}),
                      search=Search(sampler="random", num_samples=1, seeds=1), baseline=None)
        """)
    )
    results = workdir / f"results_{rep}"
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sweeps.run",
                str(path),
                "--results",
                str(results),
                "--no-report",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
        )
        driver_cpu = []  # (epoch s, CPU-seconds of the sweeps.run process, Tune's driver loop)
        while proc.poll() is None:
            cpu = process_cpu_s(proc.pid)
            if cpu is not None:
                driver_cpu.append((time.time(), cpu))
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        err.seek(0)
        stderr = err.read()
    if proc.returncode != 0:
        raise SystemExit(
            f"bench_overhead: sweeps.run exited {proc.returncode}: "
            f"{stderr.strip().splitlines()[-1:]}"
        )
    from sweeps.engine import rundir

    run_dir = next((results / "overhead").iterdir())
    progress = pd.read_parquet(run_dir / rundir.PROGRESS).sort_values("wall_time_s")
    env_info = json.loads((run_dir / rundir.ENVIRONMENT).read_text())
    iterations = list(
        zip(progress.wall_time_s.astype(float), progress.env_steps.astype(int), strict=True)
    )
    # The steady state's window in epoch seconds, from Tune's per-iteration result.json:
    # its length from time_total_s (exact), its end at the last result's timestamp (whole
    # seconds, so the window is placed to within 1 s).
    (result,) = (run_dir / "tune").glob("*/result.json")
    rows = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
    end = float(rows[-1]["timestamp"])
    start = end - (rows[-1]["time_total_s"] - rows[0]["time_total_s"])
    steady_cpu = cpu_between(driver_cpu, start, end)
    return {
        **timing(iterations),
        "command_wall_s": wall,
        "startup_to_first_iteration_s": env_info.get("startup_to_first_iteration_s"),
        "driver_cpu_s": driver_cpu[-1][1] if driver_cpu else None,
        "driver_cpu_steady_s": steady_cpu,
        "driver_cores_steady": steady_cpu / (end - start) if end > start else float("nan"),
    }


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU-seconds a live process has used (Linux ``/proc/<pid>/stat``, fields
    14-15 in clock ticks); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_between(samples: list[tuple[float, float]], start: float, end: float) -> float:
    """CPU-seconds used between two epoch times, from ``[(epoch s, cumulative CPU-s), ...]``
    sampled every ~0.2 s (linear interpolation between samples)."""
    import numpy as np

    t, c = np.array(samples).T
    return float(np.interp(end, t, c) - np.interp(start, t, c))


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per repetition, the bare
    loop's env steps/s over the sweep's (the suite's overhead, lower is better), each side's
    env steps/s, and the sweep driver's cores in the steady state."""
    from analysis.benchmarks import sample

    rows = out["rows"]
    return [
        sample("bare / sweep", "throughput ratio", "x", [r["ratio"] for r in rows], "lower"),
        sample(
            "sweep", "env steps/s", "1/s", [r["sweep"]["env_steps_per_s"] for r in rows], "higher"
        ),
        sample(
            "bare RLlib loop",
            "env steps/s",
            "1/s",
            [r["bare"]["env_steps_per_s"] for r in rows],
            "higher",
        ),
        sample(
            "sweep driver, steady state",
            "cores used",
            "cores",
            [
                r["sweep"]["driver_cores_steady"]
                for r in rows
                if "driver_cores_steady" in r["sweep"]
            ],
            "lower",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithm", default="DQN")
    p.add_argument("--env-steps", type=int, default=30_000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=str(HERE / "results" / "bench_overhead.json"))
    p.add_argument("--bare-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    params = {"algorithm": args.algorithm, "num_env_runners": 1, "seed": 0}
    if args.bare_child:
        print(json.dumps(bare_child(params, args.env_steps)), flush=True)
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            if rep % 2 == 0:
                s = sweep_run(params, args.env_steps, Path(tmp), rep)
                b = bare_run(params, args.env_steps)
            else:
                b = bare_run(params, args.env_steps)
                s = sweep_run(params, args.env_steps, Path(tmp), rep)
            rows.append(
                {
                    "rep": rep,
                    "order": "sweep,bare" if rep % 2 == 0 else "bare,sweep",
                    "sweep": s,
                    "bare": b,
                    "ratio": b["env_steps_per_s"] / s["env_steps_per_s"],
                    "steady_ratio": b["steady_env_steps_per_s"] / s["steady_env_steps_per_s"],
                }
            )
            print(
                f"rep {rep}: sweep {s['env_steps_per_s']:.0f} env steps/s ({s['env_steps']} in "
                f"{s['seconds']:.1f} s, 1st iteration {s['first_iteration_s']:.1f} s), bare "
                f"{b['env_steps_per_s']:.0f} env steps/s ({b['env_steps']} in {b['seconds']:.1f} s, "
                f"1st iteration {b['first_iteration_s']:.1f} s), ratio {rows[-1]['ratio']:.3f}",
                flush=True,
            )
    med = statistics.median
    ratios = [r["ratio"] for r in rows]
    startups = [
        r["sweep"]["startup_to_first_iteration_s"]
        for r in rows
        if r["sweep"]["startup_to_first_iteration_s"] is not None
    ]
    summary = {
        "algorithm": args.algorithm,
        "env": ENV,
        "env_steps_budget": args.env_steps,
        "reps": args.reps,
        "overhead_ratio_median": med(ratios),
        "overhead_ratio_per_rep": ratios,
        "target_ratio": 1.03,
        "steady_state_ratio_median": med(r["steady_ratio"] for r in rows),
        "first_iteration_s_median": {
            k: med(r[k]["first_iteration_s"] for r in rows) for k in ("sweep", "bare")
        },
        "startup_to_first_iteration_s_median": med(startups) if startups else None,
        "sweep_command_wall_s_median": med(r["sweep"]["command_wall_s"] for r in rows),
        "driver_cores_steady_median": med(r["sweep"]["driver_cores_steady"] for r in rows),
        "driver_cpu_s_median": med(r["sweep"]["driver_cpu_s"] for r in rows),
    }
    print("\n| measure | value |\n|---|---|")
    print(
        f"| overhead ratio (bare / sweep throughput), median of {args.reps} | "
        f"{summary['overhead_ratio_median']:.3f} (target ≤ 1.03) |"
    )
    print(f"| per repetition | {', '.join(f'{r:.3f}' for r in ratios)} |")
    print(
        f"| steady state after the 1st iteration: ratio (median) | "
        f"{summary['steady_state_ratio_median']:.3f} |"
    )
    fi = summary["first_iteration_s_median"]
    print(
        f"| end of the 1st iteration (build + 1 iteration), median | sweep {fi['sweep']:.1f} s, "
        f"bare {fi['bare']:.1f} s |"
    )
    if startups:
        print(
            f"| sweep start-up: command start → first iteration (median) | "
            f"{summary['startup_to_first_iteration_s_median']:.1f} s |"
        )
    print(
        f"| whole one-trial sweep command (median) | {summary['sweep_command_wall_s_median']:.1f} s |"
    )
    per_rep = ", ".join(f"{r['sweep']['driver_cores_steady']:.3f}" for r in rows)
    print(
        f"| the sweep's driver (Tune's loop) during the steady state, median | "
        f"{summary['driver_cores_steady_median']:.3f} cores (per repetition {per_rep}) |"
    )
    print(
        f"| the sweep's driver, whole command, median | {summary['driver_cpu_s_median']:.1f} CPU-s |"
    )
    from analysis.benchmarks import save

    out = Path(args.out)
    detail = json.loads(json.dumps({"summary": summary, "rows": rows}, default=str))
    save(out, detail, samples(detail), benchmark="bench_overhead", label=out.stem)
    print(f"\nsaved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

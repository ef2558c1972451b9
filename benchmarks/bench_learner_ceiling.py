"""The transfer roofline's learner ceiling, checked where it should bind: one core predicts two.

``analysis.transfer`` predicts another machine's sampling rate as the lowest of three ceilings:
the cores, the env runners, and the learner, ``v / l``, where ``l`` is the CPU the learner's
gradient updates take per env step on their own thread's clock (``learner_cpu_s``,
:mod:`sweeps.engine.algorithms.learner_clock`). With the suite's IMPALA settings on Contoso
Cabs the learner's updates take ~0.1 ms per env step and that ceiling never binds
(docs/transfer.md), so this benchmark makes the learner heavy on purpose and checks the
ceiling's number, not only that it exists:

1. ``sweeps/experiments/cabs_learner_bound.py`` (IMPALA, 2 env runners, a 1024-wide network
   and 128 passes over each train batch; 2 seeds, 90 s each, the rate only) runs pinned to one
   core (``taskset -c 0``), then ``cabs_learner_bound_2cores.py`` (the same on fresh seeds) on
   both cores, each through ``python -m sweeps.run`` as a user would run it;
2. from the one-core run: the steady sampling rate ``R0`` and so ``w = 1 / R0`` (one core
   saturated), the driver's CPU per env step ``d`` and the learner's updates' ``l``
   (:func:`analysis.transfer.driver_cpu_per_step`, :func:`~analysis.transfer.learner_cpu_per_step`);
3. the roofline (:func:`analysis.transfer.roofline_rate`) predicts the two-core rate, with and
   without the learner ceiling, and names the ceiling that binds; the two-core run's steady
   rate (and its own ``l``, to see whether the learner's cost per env step transfers) is the
   check.

    flock /tmp/ray_workload.lock python benchmarks/bench_learner_ceiling.py
    python benchmarks/bench_learner_ceiling.py --runs ONE_CORE_RUN TWO_CORE_RUN   # no runs

Prints a table and saves ``benchmarks/results/bench_learner_ceiling.json``.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # this checkout's packages, whatever is installed
SWEEPS = (
    "sweeps/experiments/cabs_learner_bound.py",
    "sweeps/experiments/cabs_learner_bound_2cores.py",
)


def run_sweep(sweep: str, results: Path, pin: bool) -> Path:
    """``python -m sweeps.run sweep`` (pinned to core 0 when ``pin``) into ``results``; the
    new run's directory.

    Raises:
        SystemExit: the sweep failed or wrote no run.
    """
    name = Path(sweep).stem
    before = set((results / name).glob("*")) if (results / name).exists() else set()
    cmd = (["taskset", "-c", "0"] if pin else []) + [
        sys.executable,
        "-m",
        "sweeps.run",
        sweep,
        "--results",
        str(results),
        "--no-report",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, check=False)
    new = sorted(set((results / name).glob("*")) - before)
    if proc.returncode != 0 or not new:
        raise SystemExit(f"bench_learner_ceiling: {' '.join(cmd)} failed (exit {proc.returncode})")
    return new[-1]


def parts(run: Path) -> dict:
    """The run's one configuration: its cores, env runners, env CPU per step (seconds), median
    steady rate (env steps/s) and ``w``, ``d``, ``l`` (core-seconds per env step)."""
    import numpy as np

    from analysis.load import load_results
    from analysis.parts import trial_components
    from analysis.study import analyse
    from analysis.transfer import (
        driver_cpu_per_step,
        env_costs_ms,
        learner_cpu_per_step,
        source_cores,
    )

    study = analyse(load_results(run))
    tm = study.tm[study.tm["status"] != "error"]
    (cid,), (n,) = tm["config_id"].unique(), tm["num_env_runners"].unique()
    rates = trial_components(tm, study.res.progress)["rate"].to_numpy(float)
    cores = source_cores(study)
    rate = float(np.nanmedian(rates))
    return {
        "run": str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else str(run),
        "cores": cores,
        "num_env_runners": int(n),
        "seeds": sorted(int(s) for s in tm["seed"]),
        "env_cpu_s": env_costs_ms(study)[0] / 1000.0,
        "rates": [float(r) for r in rates],
        "rate": rate,
        "w": min(cores, int(n) + 1) / rate,
        "d": driver_cpu_per_step(study, cid),
        "l": learner_cpu_per_step(study, cid),
    }


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): env steps/s of each trial
    pinned to one core and on two, and the roofline's prediction error for two cores (per
    cent, absolute) with and without the learner ceiling."""
    from analysis.benchmarks import sample

    s = out["summary"]
    return [
        sample("one core", "env steps/s", "1/s", out["one_core"]["rates"], "higher"),
        sample("two cores", "env steps/s", "1/s", out["two_cores"]["rates"], "higher"),
        sample("with the learner ceiling", "prediction error", "%", 100 * abs(s["error"]), "lower"),
        sample(
            "without it", "prediction error", "%", 100 * abs(s["error_without_learner"]), "lower"
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--runs",
        nargs=2,
        type=Path,
        metavar=("ONE_CORE_RUN", "TWO_CORE_RUN"),
        help="analyse these runs instead of running the two sweeps",
    )
    ap.add_argument("--results", type=Path, default=ROOT / "results")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_learner_ceiling.json")
    args = ap.parse_args(argv)
    if args.runs:
        one_dir, two_dir = (p.resolve() for p in args.runs)
    else:
        one_dir = run_sweep(SWEEPS[0], args.results, pin=True)
        two_dir = run_sweep(SWEEPS[1], args.results, pin=False)

    from analysis.transfer import Machine, roofline_rate

    one, two = parts(one_dir), parts(two_dir)
    target = Machine(two["cores"])
    n, c0 = one["num_env_runners"], one["env_cpu_s"]
    rate, ceiling = roofline_rate(
        one["w"], n, False, c0, 0.0, target, driver_s=one["d"], learner_s=one["l"]
    )
    without, without_ceiling = roofline_rate(one["w"], n, False, c0, 0.0, target, driver_s=one["d"])
    summary = {
        "predicted_rate": rate,
        "ceiling": ceiling,
        "learner_ceiling": target.core_speed / one["l"] if one["l"] > 0 else math.inf,
        "predicted_without_learner": without,
        "ceiling_without_learner": without_ceiling,
        "measured_rate": two["rate"],
        "error": rate / two["rate"] - 1.0,
        "error_without_learner": without / two["rate"] - 1.0,
        "l_ratio": two["l"] / one["l"],
        # the learner thread's busy share of a core: CPU per env step x env steps/s
        "learner_busy_one_core": one["l"] * one["rate"],
        "learner_busy_two_cores": two["l"] * two["rate"],
    }
    ms = {k: 1000 * one[k] for k in ("w", "d", "l")}
    print(
        f"one core ({one['run']}, seeds {one['seeds']}): {one['rate']:.1f} env steps/s "
        f"(trials {', '.join(f'{r:.1f}' for r in one['rates'])}); per env step w "
        f"{ms['w']:.1f} ms, d {ms['d']:.1f} ms, l {ms['l']:.1f} ms"
    )
    print(
        f"two cores ({two['run']}, seeds {two['seeds']}): {two['rate']:.1f} env steps/s "
        f"(trials {', '.join(f'{r:.1f}' for r in two['rates'])}); l {1000 * two['l']:.1f} ms "
        f"({summary['l_ratio']:.2f}x the one-core l)"
    )
    print(
        f"the learner's thread busy {summary['learner_busy_one_core']:.0%} of a core on one "
        f"core, {summary['learner_busy_two_cores']:.0%} on two"
    )
    print()
    print("| prediction for 2 cores | env steps/s | binding ceiling | measured | error |")
    print("| --- | ---: | --- | ---: | ---: |")
    print(
        f"| roofline with the learner ceiling | {rate:.1f} | {ceiling} | {two['rate']:.1f} | "
        f"{summary['error']:+.0%} |"
    )
    print(
        f"| roofline without it | {without:.1f} | {without_ceiling} | {two['rate']:.1f} | "
        f"{summary['error_without_learner']:+.0%} |"
    )
    from analysis.benchmarks import save

    detail = {"summary": summary, "one_core": one, "two_cores": two}
    save(args.out, detail, samples(detail), benchmark="bench_learner_ceiling", label=args.out.stem)
    print(f"saved {args.out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

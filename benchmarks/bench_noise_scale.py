"""What measuring the gradient noise scale costs the learner (sweeps/engine/algorithms/noise_scale.py).

For each algorithm (default APEX, whose learner runs as fast as it can, and IMPALA), one env
runner on Contoso Cabs with the suite's tuned defaults trains for ``--seconds`` per repetition,
alternately with the measurement off (``grad_noise_scale_every=0``) and on (every
each ``--every`` learner updates, e.g. ``10,20``), ``--reps`` times each. Reported: learner
updates/s and env steps/s (after the first iteration) per repetition, the median of each and
the ratio on/off with its range over the pairs. A ratio of 0.97 costs 3 %.

    flock /tmp/ray_workload.lock python benchmarks/bench_noise_scale.py --reps 3

Writes ``benchmarks/results/bench_noise_scale.json`` (machine, versions, git revision, load
average and every repetition); the numbers are copied into docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

DEFAULT_OUT = Path(__file__).parent / "results" / "bench_noise_scale.json"
ENV = "ContosoCabs-v0"
ENV_CONFIG = {"num_cities": 5, "time_matrix_seed": 0}


def updates_per_s(algorithm: str, every: int, seconds: float, seed: int) -> dict[str, float]:
    """Train one trial for ``seconds`` (after its first iteration) and return its learner
    updates/s and the last noise scale."""
    from sweeps.engine.algorithms import build_config, extract_metrics

    config = build_config(
        {
            "algorithm": algorithm,
            "num_env_runners": 1,
            "seed": seed,
            "grad_noise_scale_every": every,
        },
        ENV,
        env_config=ENV_CONFIG,
    )
    algo = config.build_algo()
    try:
        m0 = extract_metrics(algorithm, algo.train())
        t0 = time.perf_counter()
        m = m0
        while time.perf_counter() - t0 < seconds:
            m = extract_metrics(algorithm, algo.train())
        dt = time.perf_counter() - t0
    finally:
        algo.stop()
    u0 = m0["learner_updates"] if m0["learner_updates"] == m0["learner_updates"] else 0.0
    return {
        "every": every,
        "seed": seed,
        "seconds": dt,
        "learner_updates_per_s": (m["learner_updates"] - u0) / dt,
        "env_steps_per_s": (m["env_steps"] - m0["env_steps"]) / dt,
        "grad_noise_scale": m["grad_noise_scale"],
    }


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per algorithm and period
    (``every=0``: not measured), learner updates/s, one value per repetition."""
    from analysis.benchmarks import sample

    cases: dict[tuple[str, int], list[float]] = {}
    for r in out["rows"]:
        cases.setdefault((r["algorithm"], r["every"]), []).append(r["learner_updates_per_s"])
    return [
        sample(
            f"{alg} {'off' if not every else f'every={every}'}",
            "learner updates/s",
            "1/s",
            xs,
            "higher",
        )
        for (alg, every), xs in cases.items()
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithms", default="APEX,IMPALA")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument(
        "--every",
        default="10",
        help="comma-separated measurement intervals to compare with off, e.g. 10,20",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    try:
        everies = [int(x) for x in str(args.every).split(",")]
    except ValueError:
        p.error(f"--every {args.every!r}: expected integers like 10,20")
    if args.reps < 1 or args.seconds <= 0 or min(everies) < 1:
        p.error("--reps >= 1, --seconds > 0 and --every >= 1")

    import ray

    import envs

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    envs.register_rllib_envs()
    rows = []
    try:
        for alg in args.algorithms.split(","):
            for rep in range(args.reps):
                for every in (0, *everies):  # alternate: drift hits all alike
                    r = {
                        "algorithm": alg,
                        "rep": rep,
                        **updates_per_s(alg, every, args.seconds, rep),
                    }
                    rows.append(r)
                    print(
                        f"{alg:<7} rep {rep} every={every:<3} "
                        f"{r['learner_updates_per_s']:8.1f} learner updates/s  "
                        f"{r['env_steps_per_s']:7.0f} env steps/s  "
                        f"B_simple {r['grad_noise_scale']:.4g}",
                        flush=True,
                    )
    finally:
        ray.shutdown()
    summary = {}
    for alg in args.algorithms.split(","):
        mine = [r for r in rows if r["algorithm"] == alg]
        for key in ("learner_updates_per_s", "env_steps_per_s"):
            off = [r[key] for r in mine if not r["every"]]
            for every in everies:
                on = [r[key] for r in mine if r["every"] == every]
                ratios = [b / a for a, b in zip(off, on, strict=True) if a > 0]
                if not ratios:
                    continue
                s = {
                    "off_median": statistics.median(off),
                    "on_median": statistics.median(on),
                    "ratio_median": statistics.median(ratios),
                    "ratio_min": min(ratios),
                    "ratio_max": max(ratios),
                }
                summary[f"{alg} {key} every={every}"] = s
                print(
                    f"{alg} {key}, every {every}: {s['off_median']:.1f} -> "
                    f"{s['on_median']:.1f}; on/off ratio {s['ratio_median']:.3f} "
                    f"[{s['ratio_min']:.3f}-{s['ratio_max']:.3f}] over {len(ratios)} pairs"
                )
    from analysis.benchmarks import save

    detail = {
        "loadavg": os.getloadavg(),
        "every": everies,
        "seconds": args.seconds,
        "summary": summary,
        "rows": rows,
    }
    save(args.out, detail, samples(detail), benchmark="bench_noise_scale", label=args.out.stem)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

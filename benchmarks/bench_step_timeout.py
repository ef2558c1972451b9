"""What ``env_step_timeout_s`` costs per env step: a :class:`~sweeps.engine.env_faults.RecoveringEnv`
stepping CartPole in the caller's thread (no timeout) against through its helper thread
(a timeout set), microseconds per env step, median and range over ``--reps`` passes of
``--steps`` steps each, alternating.

    python benchmarks/bench_step_timeout.py [--steps 20000] [--reps 5]

Prints the table and saves ``benchmarks/results/bench_step_timeout.json``. No Ray.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def per_step_us(timeout_s: float | None, steps: int) -> float:
    import gymnasium

    from sweeps.engine.env_faults import RecoveringEnv

    env = RecoveringEnv(lambda: gymnasium.make("CartPole-v1"), step_timeout_s=timeout_s)
    env.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()
    return (time.perf_counter() - t0) / steps * 1e6


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): microseconds per env step
    without and with the timeout, and the difference of each pass's pair."""
    from analysis.benchmarks import sample

    plain, timed = out["no timeout"]["runs_us"], out["env_step_timeout_s=5"]["runs_us"]
    return [
        sample("no timeout", "time per env step", "us", plain, "lower"),
        sample("env_step_timeout_s=5", "time per env step", "us", timed, "lower"),
        sample(
            "added by the timeout",
            "time per env step",
            "us",
            [t - n for t, n in zip(timed, plain, strict=True)],
            "lower",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=str(HERE / "results" / "bench_step_timeout.json"))
    args = p.parse_args(argv)
    runs: dict[str, list[float]] = {"no timeout": [], "env_step_timeout_s=5": []}
    for _ in range(args.reps):
        runs["no timeout"].append(per_step_us(None, args.steps))
        runs["env_step_timeout_s=5"].append(per_step_us(5.0, args.steps))
    summary = {
        k: {"median_us": statistics.median(v), "min_us": min(v), "max_us": max(v), "runs_us": v}
        for k, v in runs.items()
    }
    extra = [t - n for t, n in zip(runs["env_step_timeout_s=5"], runs["no timeout"], strict=True)]
    summary["added_per_step_us"] = {
        "median_us": statistics.median(extra),
        "min_us": min(extra),
        "max_us": max(extra),
    }
    for k, v in summary.items():
        print(f"{k:<24}{v['median_us']:>9.1f} us/step  [{v['min_us']:.1f}, {v['max_us']:.1f}]")
    from analysis.benchmarks import save

    out = Path(args.out)
    save(out, summary, samples(summary), benchmark="bench_step_timeout", label=out.stem)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

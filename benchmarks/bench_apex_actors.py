"""APEX's learner as actors are added: learner updates per second, env steps sampled per second
and the replay ratio at N env runners.

The env is the latency-bound study's (docs/latency_scaling.md): Contoso Cabs whose every env
step waits 4 ms, 8 envs and 1/16 CPU per env runner, 64-transition minibatches. Each point
builds APEX (the suite's config, :func:`sweeps.engine.algorithms.build_config`) on one private
Ray of ``--num-cpus`` CPUs (default 2) with the project's Ray settings
(:data:`cluster.nodes.RAY_SYSTEM_CONFIG`: the actors at the driver's priority, as in a sweep),
the learner in the driver (on ``--learner-gpus`` GPUs if given), trains until learning starts,
then ``--seconds`` more, and reads the ``replay`` results RLlib reports. Replay and learner
run in the driver's thread (layout ``driver``, the only one the suite carries; the saved
results of earlier runs also hold ``shard``, the paper's layout of a replay actor and a
learner thread, which lost at every N and was removed).

    python benchmarks/bench_apex_actors.py [--env-runners 1,2,4,8,16] [--reps 2] [--seconds 5]
        [--min-replay-ratio R] [--num-cpus 2] [--learner-gpus 0] [--out FILE]

Prints one line per point and a table (medians and ranges over ``--reps``; the values of N
alternate within each rep, so machine noise spreads over all of them) and saves
``benchmarks/results/bench_apex_actors.json``. A Ray workload: run it alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's packages

from sweeps.engine.cli import EXIT_BAD_INPUT  # noqa: E402

LAYOUTS = ("driver",)


def measure(
    num_env_runners: int,
    seconds: float,
    min_replay_ratio: float | None = None,
    learner_gpus: float = 0,
) -> dict:
    """One point: APEX with ``num_env_runners`` actors on the latency-bound Cabs (and
    ``min_replay_ratio``, the lower bound on replayed / sampled transitions, if given; with
    ``learner_gpus`` > 0 the learner on that many GPUs in the driver, ``num_learners=0``).

    Returns:
        ``learner_updates_per_s`` (over ``seconds`` once learning started),
        ``env_steps_per_s`` (same window), ``replay_ratio`` (replayed / sampled transitions,
        lifetime, at the end), ``build_s`` (seconds of ``build_algo()``).
    """
    from sweeps.engine.algorithms import build_config

    config = build_config(
        {
            "algorithm": "APEX",
            "num_env_runners": num_env_runners,
            "num_envs_per_env_runner": 8,
            "num_cpus_per_env_runner": 0.0625,
            "num_steps_sampled_before_learning_starts": 256,
            "seed": 0,
            "min_replay_ratio": min_replay_ratio,
            "num_learners": 0,
            "num_gpus_per_learner": learner_gpus,
        },
        "ContosoCabs-v0",
        {"step_latency_ms": 4},
    )
    t = time.perf_counter()
    algo = config.build_algo()
    build_s = time.perf_counter() - t
    try:
        result = algo.train()
        while result["replay"]["learner_updates_lifetime"] == 0:
            result = algo.train()
        u0 = result["replay"]["learner_updates_lifetime"]
        s0 = result["env_runners"]["num_env_steps_sampled_lifetime"]
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            result = algo.train()
        dt = time.perf_counter() - t0
        return {
            "learner_device": str(algo.learner_group._learner.device),
            "learner_updates_per_s": (result["replay"]["learner_updates_lifetime"] - u0) / dt,
            "env_steps_per_s": (result["env_runners"]["num_env_steps_sampled_lifetime"] - s0) / dt,
            "replay_ratio": result["replay"]["replay_ratio"],
            "build_s": build_s,
        }
    finally:
        algo.stop()


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per layout and env runner
    count (``layout/N``), learner updates/s and env steps/s, one value per repetition."""
    from analysis.benchmarks import sample

    return [
        sample(key, measure, "1/s", [r[col] for r in runs], "higher")
        for key, runs in out["points"].items()
        for col, measure in (
            ("learner_updates_per_s", "learner updates/s"),
            ("env_steps_per_s", "env steps/s"),
        )
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env-runners", default="1,2,4,8,16", help="N values, comma-separated")
    p.add_argument("--layouts", default="driver", help="driver (the only layout)")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--seconds", type=float, default=5.0, help="measured window per point (s)")
    p.add_argument(
        "--min-replay-ratio",
        type=float,
        default=None,
        help="APEX's lower bound on replayed / sampled transitions (default: none)",
    )
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the private Ray (default 2)")
    p.add_argument(
        "--learner-gpus",
        type=float,
        default=0,
        help="GPUs of the learner (in the driver; default 0: on the CPU)",
    )
    p.add_argument(
        "--out", help="JSON to write (default benchmarks/results/bench_apex_actors.json)"
    )
    args = p.parse_args(argv)
    ns = [int(n) for n in args.env_runners.split(",")]
    layouts = [name.strip() for name in args.layouts.split(",")]
    if any(name not in LAYOUTS for name in layouts) or any(n < 1 for n in ns):
        print(f"bench_apex_actors: layouts are {sorted(LAYOUTS)}, N >= 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.num_cpus < 1 or args.learner_gpus < 0:
        print("bench_apex_actors: --num-cpus must be >= 1 and --learner-gpus >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT

    import ray

    from cluster.nodes import RAY_SYSTEM_CONFIG

    ray.init(
        address="local",
        num_cpus=args.num_cpus,
        num_gpus=1 if args.learner_gpus > 0 else 0,
        include_dashboard=False,
        log_to_driver=False,
        _system_config=dict(RAY_SYSTEM_CONFIG),
    )
    points: dict[str, list[dict]] = {}
    try:
        for rep in range(args.reps):
            for layout in layouts if rep % 2 == 0 else layouts[::-1]:
                for n in ns:
                    m = measure(n, args.seconds, args.min_replay_ratio, args.learner_gpus)
                    points.setdefault(f"{layout}/{n}", []).append(m)
                    print(
                        f"rep {rep} {layout:6} N={n:2}: {m['learner_updates_per_s']:6.0f} "
                        f"updates/s, {m['env_steps_per_s']:6.0f} env steps/s, replay ratio "
                        f"{m['replay_ratio']:5.1f}, built in {m['build_s']:.1f} s, learner on "
                        f"{m['learner_device']}",
                        flush=True,
                    )
    finally:
        ray.shutdown()

    def med(key: str, runs: list[dict]) -> str:
        values = [r[key] for r in runs]
        return f"{statistics.median(values):.0f} [{min(values):.0f}-{max(values):.0f}]"

    print("\n| layout | N | learner updates/s | env steps/s | replay ratio |")
    print("|---|---:|---|---|---|")
    for key, runs in points.items():
        layout, n = key.split("/")
        ratio = statistics.median(r["replay_ratio"] for r in runs)
        print(
            f"| {layout} | {n} | {med('learner_updates_per_s', runs)} | "
            f"{med('env_steps_per_s', runs)} | {ratio:.1f} |"
        )
    out = Path(args.out or HERE / "results" / "bench_apex_actors.json")
    from analysis.benchmarks import environment, save

    detail = {
        "ray_cpus": args.num_cpus,
        "learner_gpus": args.learner_gpus,
        "min_replay_ratio": args.min_replay_ratio,
        "points": points,
    }
    env = environment(["bench_apex_actors.py", *(argv or sys.argv[1:])])
    save(out, detail, samples(detail), benchmark="bench_apex_actors", label=out.stem, env=env)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Gorila's learners as they are added, beside Ape-X's one: applied learner updates per second
at the parameter server, gradients dropped as stale, staleness, bytes through the server per
update, and env steps sampled per second, at M learners.

The setting makes the learner the bottleneck (the question Gorila asks): Contoso Cabs with no
step cost, ``--env-runners`` env runners (default 1) of 16 envs, a ``--hidden`` network
(default 256,256) and no bound on the replay ratio (``training_intensity=None``: every
learner trains as fast as it can, as in the paper). Each point builds GORILA with
``num_learners=M`` (each learner ``--cpus-per-learner`` CPUs, default 1) or APEX (its one
learner in the driver) on one private Ray of ``--num-cpus`` CPUs with the project's Ray
settings, trains until learning starts, then ``--seconds`` more.

    python benchmarks/bench_gorila_learners.py [--learners 1,2,4] [--apex] [--reps 2]
        [--seconds 10] [--num-cpus 2] [--env-runners 1] [--hidden 256,256]
        [--cpus-per-learner 1] [--out FILE]

``--merge A.json B.json ... --out FILE`` instead joins saved passes (of one machine) into one
file whose points hold every pass's measurements, for a docs page's table
(``analysis.pages``' ``gorila_learners`` region).

Prints one line per point and a table (medians and ranges over ``--reps``; the values of M
alternate within each rep) and saves ``benchmarks/results/bench_gorila_learners.json``. A Ray
workload: run it alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's packages

from sweeps.engine.cli import EXIT_BAD_INPUT  # noqa: E402


def _config(algorithm: str, learners: int, args) -> dict:
    cfg = {
        "algorithm": algorithm,
        "num_env_runners": args.env_runners,
        "num_envs_per_env_runner": 16,
        "num_cpus_per_env_runner": 1,
        "hidden_sizes": [int(h) for h in args.hidden.split(",")],
        "training_intensity": None,
        "num_steps_sampled_before_learning_starts": 1000,
        "seed": 0,
    }
    if algorithm == "GORILA":
        cfg.update(num_learners=learners, num_cpus_per_learner=args.cpus_per_learner)
    return cfg


def measure(algorithm: str, learners: int, args) -> dict:
    """One point: ``algorithm`` (GORILA with ``learners`` learners, or APEX) on latency-free
    Cabs.

    Returns:
        ``learner_updates_per_s`` (applied, over ``--seconds`` once learning started),
        ``env_steps_per_s`` (same window), ``replay_ratio`` (replayed / sampled transitions,
        lifetime, at the end), ``build_s`` (seconds of ``build_algo()``) and, for GORILA, its
        ``gorila`` results at the end (dropped gradients, staleness, bytes per update).
    """
    from sweeps.engine.algorithms import build_config

    config = build_config(_config(algorithm, learners, args), "ContosoCabs-v0", {})
    t = time.perf_counter()
    algo = config.build_algo()
    build_s = time.perf_counter() - t
    try:
        result = algo.train()
        while result["replay"]["learner_updates_lifetime"] == 0:
            result = algo.train()
        u0 = result["replay"]["learner_updates_lifetime"]
        s0 = result["env_runners"]["num_env_steps_sampled_lifetime"]
        busy0 = result.get("gorila", {}).get("server_busy_s", 0.0)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            result = algo.train()
        dt = time.perf_counter() - t0
        out = {
            "learner_updates_per_s": (result["replay"]["learner_updates_lifetime"] - u0) / dt,
            "env_steps_per_s": (result["env_runners"]["num_env_steps_sampled_lifetime"] - s0) / dt,
            "replay_ratio": result["replay"]["replay_ratio"],
            "build_s": build_s,
        }
        if "gorila" in result:
            out["gorila"] = dict(result["gorila"])
            # the share of the window the parameter server spent applying gradients
            out["server_busy"] = (result["gorila"]["server_busy_s"] - busy0) / dt
        return out
    finally:
        algo.stop()


def _without_out(command: str) -> str:
    """The command as a reader reruns it: its ``--out`` (a path of the machine it ran on)
    left out."""
    words = command.split()
    keep = [w for i, w in enumerate(words) if w != "--out" and (i == 0 or words[i - 1] != "--out")]
    return " ".join(keep)


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per ``ALGORITHM/learners``,
    applied learner updates/s and env steps/s, one value per pass."""
    from analysis.benchmarks import sample

    return [
        sample(key, measure, "1/s", [r[col] for r in runs], "higher")
        for key, runs in out["points"].items()
        for col, measure in (
            ("learner_updates_per_s", "applied learner updates/s"),
            ("env_steps_per_s", "env steps/s"),
        )
    ]


def merge(paths: list[str], out: Path) -> int:
    """Join saved passes into ``out``: every point's measurements from every pass, each pass's
    command and time. Exit 2 when a file cannot be read."""
    from analysis.benchmarks import save

    merged: dict = {"commands": [], "measured_at": [], "points": {}}
    env: dict = {}
    for path in paths:
        try:
            bench = json.loads(Path(path).read_text())
            pass_env = bench["environment"]
        except (OSError, ValueError, KeyError) as e:
            print(f"bench_gorila_learners: cannot read {path}: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        merged["commands"].append(_without_out(pass_env["command"]))
        merged["measured_at"].append(pass_env["measured_at"])
        env = env or dict(pass_env)
        settings = {k: v for k, v in bench["settings"].items() if k != "learners"}
        merged.setdefault("settings", settings)
        for key, runs in bench["points"].items():
            merged["points"].setdefault(key, []).extend(runs)
    env["command"] = "python benchmarks/bench_gorila_learners.py --merge " + " ".join(paths)
    save(out, merged, samples(merged), benchmark="bench_gorila_learners", label=out.stem, env=env)
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", default="1,2,4", help="M values, comma-separated")
    p.add_argument("--apex", action="store_true", help="also measure APEX's one learner")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--seconds", type=float, default=10.0, help="measured window per point (s)")
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the private Ray")
    p.add_argument("--env-runners", type=int, default=1)
    p.add_argument("--hidden", default="256,256", help="hidden layer sizes, comma-separated")
    p.add_argument("--cpus-per-learner", type=float, default=1.0)
    p.add_argument(
        "--out", help="JSON to write (default benchmarks/results/bench_gorila_learners.json)"
    )
    p.add_argument("--merge", nargs="+", metavar="JSON", help="join saved passes into --out")
    args = p.parse_args(argv)
    if args.merge:
        if not args.out:
            print("bench_gorila_learners: --merge needs --out", file=sys.stderr)
            return EXIT_BAD_INPUT
        return merge(args.merge, Path(args.out))
    try:
        ms = [int(m) for m in args.learners.split(",")]
        [int(h) for h in args.hidden.split(",")]
    except ValueError:
        print(
            "bench_gorila_learners: --learners and --hidden are comma-separated ints",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if any(m < 1 for m in ms) or args.num_cpus < 1 or args.cpus_per_learner <= 0:
        print(
            "bench_gorila_learners: M >= 1, --num-cpus >= 1, --cpus-per-learner > 0",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT

    import ray

    from cluster.nodes import RAY_SYSTEM_CONFIG

    ray.init(
        address="local",
        num_cpus=args.num_cpus,
        num_gpus=0,
        include_dashboard=False,
        log_to_driver=False,
        _system_config=dict(RAY_SYSTEM_CONFIG),
    )
    kinds = [("GORILA", m) for m in ms] + ([("APEX", 1)] if args.apex else [])
    points: dict[str, list[dict]] = {}
    try:
        for rep in range(args.reps):
            for algorithm, m in kinds if rep % 2 == 0 else kinds[::-1]:
                r = measure(algorithm, m, args)
                points.setdefault(f"{algorithm}/{m}", []).append(r)
                g = r.get("gorila", {})
                print(
                    f"rep {rep} {algorithm:6} M={m:2}: {r['learner_updates_per_s']:7.1f} "
                    f"updates/s, {r['env_steps_per_s']:6.0f} env steps/s, replay ratio "
                    f"{r['replay_ratio']:5.1f}, built in {r['build_s']:.1f} s"
                    + (
                        f", dropped {g['dropped_gradients']}, staleness "
                        f"{g['staleness_mean']:.1f} (max {g['staleness_max']}), "
                        f"{g['bytes_per_update'] / 1024:.0f} KiB per update, server busy "
                        f"{r['server_busy']:.0%}"
                        if g
                        else ""
                    ),
                    flush=True,
                )
    finally:
        ray.shutdown()

    def med(key: str, runs: list[dict]) -> str:
        values = [r[key] for r in runs]
        return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"

    print(
        "\n| algorithm | learners | learner updates/s | env steps/s | staleness (mean) | dropped |"
    )
    print("|---|---:|---|---|---:|---:|")
    for key, runs in points.items():
        algorithm, m = key.split("/")
        stale = [r["gorila"]["staleness_mean"] for r in runs if "gorila" in r]
        dropped = [r["gorila"]["dropped_gradients"] for r in runs if "gorila" in r]
        print(
            f"| {algorithm} | {m} | {med('learner_updates_per_s', runs)} | "
            f"{med('env_steps_per_s', runs)} | "
            f"{statistics.median(stale):.1f} | {statistics.median(dropped):.0f} |"
            if stale
            else f"| {algorithm} | {m} | {med('learner_updates_per_s', runs)} | "
            f"{med('env_steps_per_s', runs)} | – | – |"
        )
    out = Path(args.out or HERE / "results" / "bench_gorila_learners.json")
    from analysis.benchmarks import environment, save

    detail = {"settings": {k: v for k, v in vars(args).items() if k != "out"}, "points": points}
    env = environment(["bench_gorila_learners.py", *(argv or sys.argv[1:])])
    save(out, detail, samples(detail), benchmark="bench_gorila_learners", label=out.stem, env=env)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Learner updates per second of DQN, APEX and RLlib's DQN as shipped (RLLIB-DQN) on Contoso
Cabs (issue 12, item 4).

Each repetition is a fresh Python process on a fresh local Ray (2 CPUs): the suite's tuned
defaults (``sweeps.engine.algorithms.build_config``) with 1 env runner train for ``--seconds`` after
their first two iterations (replay warm-up). Reported per algorithm, as the median and range over
``--reps``: learner updates/s (gradient steps of ``train_batch_size`` transitions), env steps
sampled/s, the lifetime replay ratio (replayed / sampled transitions), and RLlib's per-call
timers of the last iteration (replay sampling, learner update) in milliseconds.

    flock /tmp/ray_workload.lock python benchmarks/bench_learner.py --reps 3
    flock /tmp/ray_workload.lock python benchmarks/bench_learner.py \\
        --algorithms DQN,RLLIB-DQN,APEX --reps 3 --seconds 8 --label dqn_data_path
    flock /tmp/ray_workload.lock python benchmarks/bench_learner.py --algorithms APEX \\
        --set updates_per_learner_call=1 --label k1

``--profile`` runs the measured iterations under cProfile and reports the shares of their time by
package: the suite's own modules (``sweeps/...``, ``envs/...``) against RLlib, torch and the rest.

``--set KEY=VALUE`` (repeatable; VALUE parsed as JSON when it can be) overrides a vocabulary key
of every algorithm run. The ``sweeps`` package is imported from the current directory first (Ray
puts the driver's working directory on its workers' path too), so the same script measures
another checkout when run from its root: ``cd OLD_CHECKOUT && python
NEW_CHECKOUT/benchmarks/bench_learner.py --label before``.
Writes ``benchmarks/results/bench_learner[_LABEL].json`` (machine, versions, git revision of the
measured checkout, every repetition). A Ray workload: run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the checkout being measured (see the docstring)

HERE = Path(__file__).resolve().parent
ENV = "ContosoCabs-v0"
ENV_CONFIG = {"num_cities": 5, "time_matrix_seed": 0}
TIMERS = (
    "env_runner_sampling_timer",
    "replay_buffer_add_data_timer",
    "replay_buffer_sampling_timer",
    "learner_update_timer",
)


def _package(filename: str) -> str:
    """Where a profiled function lives: the suite's own code (``sweeps/...``, ``envs/...``), a
    library by name (rllib, ray, torch, numpy, gymnasium, tree, ...), else ``stdlib+builtins``
    (the standard library and every C built-in, torch's kernels included)."""
    path = filename.replace("\\", "/")
    if "site-packages/" not in path:
        for own in ("/sweeps/", "/envs/"):
            if own in path:
                return own.strip("/") + "/" + path.split(own, 1)[1]
        return "stdlib+builtins" if path.startswith(("/", "<")) or path == "~" else path
    lib = path.split("site-packages/", 1)[1].split("/", 1)[0]
    return "rllib" if path.split("site-packages/", 1)[1].startswith("ray/rllib/") else lib


def profile_shares(profile, top: int = 12) -> dict[str, float]:
    """Fractions of a cProfile's own time (tottime) by :func:`_package`, largest first (the
    ``top`` largest; the suite's own modules always kept). cProfile's per-call overhead inflates
    code made of many small Python calls, so these are shares of a profiled run, not timings."""
    import pstats

    stats = pstats.Stats(profile).stats
    totals: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.items():
        key = _package(filename)
        totals[key] = totals.get(key, 0.0) + tottime
    whole = sum(totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    keep = [kv for i, kv in enumerate(ranked) if i < top or kv[0].startswith(("sweeps/", "envs/"))]
    return {k: v / whole for k, v in keep}


def child(
    algorithm: str, overrides: dict, seconds: float, seed: int, profile: bool = False
) -> dict:
    """One measurement in this (fresh) process; ``profile``: under cProfile (slower), with the
    shares of its time by package (:func:`profile_shares`) in ``profile_shares``."""
    import ray

    from sweeps.engine.algorithms import build_config, extract_metrics
    from sweeps.engine.trainable import preload_libraries

    preload_libraries()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        config = build_config(
            {"algorithm": algorithm, "num_env_runners": 1, "seed": seed, **overrides},
            ENV,
            env_config=ENV_CONFIG,
        )
        config.debugging(log_level="ERROR")
        algo = config.build_algo()
        try:
            algo.train()
            m0 = extract_metrics(algorithm, algo.train())
            profiler = None
            if profile:
                import cProfile

                profiler = cProfile.Profile()
                profiler.enable()
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                result = algo.train()
            dt = time.perf_counter() - t0
            if profiler is not None:
                profiler.disable()
            m = extract_metrics(algorithm, result)
        finally:
            algo.stop()
    finally:
        ray.shutdown()
    timers = result.get("timers", {})
    batch = config.total_train_batch_size
    return {
        "seconds": dt,
        "learner_updates_per_s": (m["learner_updates"] - m0["learner_updates"]) / dt,
        "env_steps_per_s": (m["env_steps"] - m0["env_steps"]) / dt,
        "replay_ratio": m["learner_updates"] * batch / max(m["env_steps"], 1),
        **{f"{name}_ms": 1000 * float(timers.get(name, float("nan"))) for name in TIMERS},
        **({"profile_shares": profile_shares(profiler)} if profiler is not None else {}),
    }


def _git_revision(root: Path) -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            text=True,
            capture_output=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _parse_set(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"bench_learner: --set {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per algorithm, learner
    updates/s and env steps/s, one value per seed's process."""
    from analysis.benchmarks import sample

    return [
        sample(algo, measure, unit, [r[key] for r in rs], "higher")
        for algo, rs in out["runs"].items()
        for key, measure, unit in (
            ("learner_updates_per_s", "learner updates/s", "1/s"),
            ("env_steps_per_s", "env steps/s", "1/s"),
        )
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithms", default="DQN,APEX")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--label", default="")
    p.add_argument(
        "--profile",
        action="store_true",
        help="run the measured iterations under cProfile and report where the time "
        "goes by package (the suite's own code, RLlib, torch, ...)",
    )
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    overrides = _parse_set(args.set)
    if args.child:
        algorithm, seed = args.child.split(":")
        print(json.dumps(child(algorithm, overrides, args.seconds, int(seed), args.profile)))
        return 0
    import sweeps

    measured_root = Path(sweeps.__file__).resolve().parent.parent
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    runs: dict[str, list[dict]] = {a: [] for a in algorithms}
    for rep in range(args.reps):
        for a in algorithms if rep % 2 == 0 else list(reversed(algorithms)):
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                f"{a}:{rep}",
                "--seconds",
                str(args.seconds),
                *sum((["--set", s] for s in args.set), []),
                *(["--profile"] if args.profile else []),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"bench_learner: {a} failed: {proc.stderr[-2000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            runs[a].append(row)
            print(
                f"{a:<9} rep {rep}: {row['learner_updates_per_s']:7.1f} learner updates/s  "
                f"{row['env_steps_per_s']:7.1f} env steps/s  replay ratio "
                f"{row['replay_ratio']:.2f}",
                flush=True,
            )
    keys = [k for k in next(iter(runs.values()))[0] if k != "profile_shares"]
    summary = {
        a: {
            k: {
                "median": statistics.median(r[k] for r in rs),
                "min": min(r[k] for r in rs),
                "max": max(r[k] for r in rs),
            }
            for k in keys
        }
        for a, rs in runs.items()
    }
    for a in algorithms:
        s = summary[a]
        print(
            f"{a}: learner updates/s {s['learner_updates_per_s']['median']:.1f} "
            f"[{s['learner_updates_per_s']['min']:.1f}-{s['learner_updates_per_s']['max']:.1f}], "
            f"env steps/s {s['env_steps_per_s']['median']:.0f}, replay ratio "
            f"{s['replay_ratio']['median']:.2f}, per call: replay sample "
            f"{s['replay_buffer_sampling_timer_ms']['median']:.1f} ms, learner update "
            f"{s['learner_update_timer_ms']['median']:.1f} ms"
        )
        if args.profile:
            shares = {
                k: statistics.median(r["profile_shares"].get(k, 0.0) for r in runs[a])
                for k in {k for r in runs[a] for k in r["profile_shares"]}
            }
            summary[a]["profile_shares"] = dict(sorted(shares.items(), key=lambda kv: -kv[1]))
            print(
                "  where the profiled time goes (median share): "
                + ", ".join(f"{k} {100 * v:.1f} %" for k, v in summary[a]["profile_shares"].items())
            )
    name = f"bench_learner_{args.label}.json" if args.label else "bench_learner.json"
    out = HERE / "results" / name
    from analysis.benchmarks import environment, save

    env = environment(["bench_learner.py", *(argv or sys.argv[1:])])
    # the revision measured: another checkout's when run from it (module docstring)
    env["git_revision"] = _git_revision(measured_root)
    detail = {"load_avg": os.getloadavg(), "overrides": overrides, "runs": runs, "summary": summary}
    save(out, detail, samples(detail), benchmark="bench_learner", label=args.label, env=env)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

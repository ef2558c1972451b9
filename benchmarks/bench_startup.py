"""Trial start-up: where the seconds between a trial's clock start and its first finished
iteration go.

A trial's timed region starts right before ``build_algo()`` (:mod:`sweeps.engine.trainable`), so the
Algorithm's start-up counts in every time-to-target. This benchmark builds one trial's
Algorithm (the suite's own config, :func:`sweeps.engine.algorithms.build_config`) in a fresh process
on a fresh local Ray (2 CPUs), libraries imported first as in a trial
(:func:`sweeps.engine.trainable.preload_libraries`), and times, by wrapping RLlib's own methods:

- ``env runners``: ``EnvRunnerGroup.__init__`` (the env runner actors: process start, their
  imports of RLlib and torch, env and connector construction), and, for scale, an empty Ray
  actor's start-up and first call in the same Ray (``bare actor``: what any actor costs);
- ``learner``: ``AlgorithmConfig.build_learner_group`` (the learner and its RLModule);
- ``replay buffer``: ``Algorithm._create_local_replay_buffer_if_necessary``;
- ``weight sync``: ``EnvRunnerGroup.sync_weights`` calls during the build;
- ``other``: the rest of ``build_algo()``;
- ``first iteration``: the first ``train()`` call (sampling, replay warm-up, updates; at least
  the config's ``min_time_s_per_iteration``);
- ``first env step``: seconds from the end of ``build_algo()`` to the end of the first
  ``train()`` whose result counts an env step (iterations of 0.25 s; 30 s at most);
- ``warm build_algo``: the build of a warm trial (:mod:`sweeps.engine.warm`): the same
  config's Algorithm built again on the env runner processes the previous build parked;
- ``env runner CPU``: CPU-seconds (user + system, ``os.times``) each env runner process has
  spent when the cold build ends: its start, imports and construction; the median over the
  env runners of a build. ``CPU floor`` is their sum over this machine's cores
  (``os.cpu_count()``): the least wall-clock a cold start of them can take here, however it
  is scheduled.

``--env-runners N`` builds every algorithm with N env runners (default 1); Ray's logical CPUs
are raised to the request (N + 1), so N above the cores measures an oversubscribed start-up,
as a user asking for it gets.

``--rllib-state-server`` builds IMPALA and APPO with RLlib's default pull-based weight sync
(``use_env_runner_state_server=True``, :func:`sweeps.engine.algorithms.impala.without_state_server`
says why the suite turns it off).

    python benchmarks/bench_startup.py [--algorithms DQN,APEX,IMPALA] [--reps 3] [--rllib-state-server]

Prints a table (medians and ranges over ``--reps`` fresh processes) and saves
``benchmarks/results/bench_startup.json``. A Ray workload: run it alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# this checkout's packages, even where the environment has another checkout installed editable
sys.path.insert(0, str(ROOT))
ENV = "ContosoCabs-v0"
PARTS = (
    "bare actor",
    "env runners",
    "learner",
    "replay buffer",
    "weight sync",
    "other",
    "build_algo",
    "first iteration",
    "first env step",
    "warm build_algo",
    "env runner CPU",
    "CPU floor",
)


def _process_cpu_s(_runner) -> float:
    """CPU-seconds (user + system) the calling process has spent since it started."""
    import os

    t = os.times()
    return t.user + t.system


def child(algorithm: str, state_server: bool = False, env_runners: int = 1) -> dict:
    """One measurement, in this (fresh) process."""
    import ray

    from sweeps.engine.algorithms import build_config, extract_metrics
    from sweeps.engine.trainable import preload_libraries

    preload_libraries()
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    from ray.rllib.env.env_runner_group import EnvRunnerGroup

    spent: dict[str, float] = dict.fromkeys(PARTS, 0.0)

    def timed(cls, name: str, part: str) -> None:
        original = getattr(cls, name)

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - t0

        setattr(cls, name, wrapper)

    ray.init(
        address="local",
        num_cpus=max(2, env_runners + 1),
        include_dashboard=False,
        log_to_driver=False,
    )
    try:

        @ray.remote(num_cpus=0)
        class Empty:
            def ping(self) -> int:
                return 1

        t0 = time.perf_counter()
        actor = Empty.remote()
        ray.get(actor.ping.remote())
        spent["bare actor"] = time.perf_counter() - t0
        ray.kill(actor)
        config = build_config(
            {"algorithm": algorithm, "num_env_runners": env_runners, "seed": 0}, ENV
        )
        config.debugging(log_level="ERROR")
        if state_server and hasattr(config, "use_env_runner_state_server"):
            config.env_runners(use_env_runner_state_server=True)
        timed(EnvRunnerGroup, "__init__", "env runners")
        timed(EnvRunnerGroup, "sync_weights", "weight sync")
        timed(AlgorithmConfig, "build_learner_group", "learner")
        if hasattr(Algorithm, "_create_local_replay_buffer_if_necessary"):
            timed(Algorithm, "_create_local_replay_buffer_if_necessary", "replay buffer")
        t0 = time.perf_counter()
        algo = config.build_algo()
        spent["build_algo"] = time.perf_counter() - t0
        cpu = algo.env_runner_group.foreach_env_runner(_process_cpu_s, local_env_runner=False)
        if cpu:
            import os

            spent["env runner CPU"] = statistics.median(cpu)
            spent["CPU floor"] = sum(cpu) / (os.cpu_count() or 1)
        build_sync = spent["weight sync"]
        t0 = time.perf_counter()
        algo.train()
        spent["first iteration"] = time.perf_counter() - t0
        spent["weight sync"] = build_sync  # the build's syncs only
        spent["other"] = spent["build_algo"] - sum(
            spent[p] for p in ("env runners", "learner", "replay buffer", "weight sync")
        )
        algo.stop()
        parts = dict(spent)  # the second build below is timed by the same wrappers
        config = config.copy(copy_frozen=False).reporting(min_time_s_per_iteration=0.25)
        algo = config.build_algo()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 30:
            if extract_metrics(algorithm, algo.train())["env_steps"] > 0:
                break
        first_step = time.perf_counter() - t0
        from sweeps.engine import warm

        warm.park_or_stop(algo, config, startup_s=spent["build_algo"])
        t0 = time.perf_counter()
        algo, start, _ = warm.build(config)
        warm_build = time.perf_counter() - t0
        if start != "warm":
            raise RuntimeError(f"the third build was {start}, not warm")
        algo.stop()
        spent.update(parts, **{"first env step": first_step, "warm build_algo": warm_build})
    finally:
        ray.shutdown()
    return spent


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per algorithm, the seconds
    of a cold ``build_algo()``, of its env runners' part, to the first env step after it, and
    of a warm build on parked env runners, one value per fresh process."""
    from analysis.benchmarks import sample

    n = out.get("env_runners", 1)
    where = "" if n == 1 else f", {n} env runners"
    parts = {
        "build_algo": "cold build_algo()",
        "env runners": "cold build: env runners",
        "first env step": "first env step after the build",
        "warm build_algo": "warm build_algo()",
        "env runner CPU": "env runner start CPU, median per process",
        "CPU floor": "start CPU of all env runners / cores",
    }
    unit = {"env runner CPU": "CPU-s"}
    return [
        sample(
            f"{algo}{where}",
            measure,
            unit.get(part, "s"),
            [r[part] for r in rs if part in r],
            "lower",
        )
        for algo, rs in out["runs"].items()
        for part, measure in parts.items()
        if any(part in r for r in rs)
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithms", default="DQN,APEX,IMPALA")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument(
        "--rllib-state-server",
        action="store_true",
        help="IMPALA/APPO with RLlib's default EnvRunnerStateServer",
    )
    p.add_argument("--env-runners", type=int, default=1, help="env runners per Algorithm")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument(
        "--out",
        help="JSON to write (default benchmarks/results/bench_startup.json, "
        "bench_startup_state_server.json with --rllib-state-server)",
    )
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.rllib_state_server, args.env_runners)))
        return 0
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    runs: dict[str, list[dict]] = {a: [] for a in algorithms}
    for rep in range(args.reps):
        for a in algorithms if rep % 2 == 0 else reversed(algorithms):
            proc = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--child",
                    a,
                    "--env-runners",
                    str(args.env_runners),
                    *(["--rllib-state-server"] if args.rllib_state_server else []),
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise SystemExit(f"bench_startup: {a} failed: {proc.stderr[-2000:]}")
            runs[a].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    summary = {
        a: {
            part: {
                "median_s": statistics.median(r[part] for r in rs),
                "min_s": min(r[part] for r in rs),
                "max_s": max(r[part] for r in rs),
            }
            for part in PARTS
        }
        for a, rs in runs.items()
    }
    print(f"{'part (s)':<18}" + "".join(f"{a:>22}" for a in algorithms))
    for part in PARTS:
        print(
            f"{part:<18}"
            + "".join(
                f"{summary[a][part]['median_s']:>8.2f} [{summary[a][part]['min_s']:.2f}-"
                f"{summary[a][part]['max_s']:.2f}]"
                for a in algorithms
            )
        )
    suffix = "" if args.env_runners == 1 else f"_{args.env_runners}_env_runners"
    out = Path(
        args.out
        or HERE
        / "results"
        / (
            f"bench_startup_state_server{suffix}.json"
            if args.rllib_state_server
            else f"bench_startup{suffix}.json"
        )
    )
    from analysis.benchmarks import save

    detail = {"env_runners": args.env_runners, "runs": runs, "summary": summary}
    save(out, detail, samples(detail), benchmark="bench_startup", label=out.stem)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

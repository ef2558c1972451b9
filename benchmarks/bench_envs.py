"""Environment throughput: env steps per second of wall-clock, plus Contoso Cabs reference numbers.

Measures, through the gymnasium API with uniformly random actions (drawn before the timed loop):

- Contoso Cabs, single env, unwrapped (``ContosoCabs()``) - target ≥ 250,000 env steps/s;
- Contoso Cabs through ``gymnasium.make`` (with its checker/order wrappers);
- Contoso Cabs through ``gymnasium.make_vec`` (8 envs, sync; 8 env steps per vector step);
- Contoso Cabs with ``requests=True``;
- Pong: raw ``PongNoFrameskip-v4`` frames/s and the RLlib-preprocessed env (4 frames a step).

and, for the default Cabs config (m=5, seed 0), the exact optimal / greedy / random returns,
the solver's wall-clock, and mean episode lengths in env steps (the team sizes training
budgets with them).

Run it while nothing else loads the CPUs (it starts no Ray, but a training run beside it
halves the numbers)::

    python benchmarks/bench_envs.py

Prints a table and writes ``benchmarks/results/bench_envs.json`` (machine, versions, git
revision and every number).
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import gymnasium as gym
import numpy as np

import envs
from envs.contoso_cabs import ContosoCabs, greedy_policy, greedy_return, random_return, solve
from sweeps.engine.cli import EXIT_BAD_INPUT

CABS_TARGET_STEPS_PER_S = 250_000
DEFAULT_OUT = Path(__file__).parent / "results" / "bench_envs.json"


# -- throughput -----------------------------------------------------------------------------


def _time_env(env: gym.Env, steps: int, seed: int) -> float:
    """Seconds for ``steps`` env steps of ``env`` (single env) with random actions."""
    actions = np.random.default_rng(seed).integers(env.action_space.n, size=steps).tolist()
    env.reset(seed=seed)
    step, reset = env.step, env.reset
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = step(action)
        if terminated or truncated:
            reset()
    return time.perf_counter() - start


def _time_vector_env(env: gym.vector.VectorEnv, vector_steps: int, seed: int) -> float:
    """Seconds for ``vector_steps`` steps of a vector env (autoreset) with random actions."""
    n = env.single_action_space.n
    actions = np.random.default_rng(seed).integers(n, size=(vector_steps, env.num_envs))
    env.reset(seed=seed)
    start = time.perf_counter()
    for action in actions:
        env.step(action)
    return time.perf_counter() - start


def measure(name: str, timed, env_steps: int, repeats: int) -> dict:
    """Run ``timed(repeat_index) -> seconds`` ``repeats`` times; env steps/s, median and best."""
    seconds = [timed(i) for i in range(repeats)]
    rates = [env_steps / s for s in seconds]
    return {
        "name": name,
        "env_steps": env_steps,
        "repeats": repeats,
        "env_steps_per_s_median": statistics.median(rates),
        "env_steps_per_s_best": max(rates),
        "seconds": seconds,
    }


def throughput(cabs_steps: int, pong_steps: int, repeats: int, pong: bool) -> list[dict]:
    """All throughput measurements (see the module docstring)."""
    results = []
    env = ContosoCabs()
    results.append(
        measure(
            "cabs single (unwrapped)", lambda i: _time_env(env, cabs_steps, i), cabs_steps, repeats
        )
    )
    made = gym.make("ContosoCabs-v0")
    results.append(
        measure(
            "cabs single (gym.make)", lambda i: _time_env(made, cabs_steps, i), cabs_steps, repeats
        )
    )
    vec = gym.make_vec("ContosoCabs-v0", num_envs=8, vectorization_mode="sync")
    vector_steps = cabs_steps // 8
    results.append(
        measure(
            "cabs make_vec x8 (sync)",
            lambda i: _time_vector_env(vec, vector_steps, i),
            vector_steps * 8,
            repeats,
        )
    )
    vec.close()
    requests = ContosoCabs(requests=True)
    steps = cabs_steps // 10
    results.append(
        measure(
            "cabs single, requests=True", lambda i: _time_env(requests, steps, i), steps, repeats
        )
    )
    if pong:
        raw = gym.make("PongNoFrameskip-v4")
        results.append(
            measure(
                "pong raw frames (NoFrameskip-v4)",
                lambda i: _time_env(raw, pong_steps, i),
                pong_steps,
                repeats,
            )
        )
        raw.close()
        wrapped = envs.RLLIB_ENVS["PongNoFrameskip-v4"]({"frame_size": 42})
        steps = pong_steps // 4
        results.append(
            measure(
                "pong preprocessed 42x42x4 (4 frames/step)",
                lambda i: _time_env(wrapped, steps, i),
                steps,
                repeats,
            )
        )
        wrapped.close()
    return results


# -- Contoso Cabs reference numbers -----------------------------------------------------------


def _policy_episode_lengths(policy, config) -> list[int]:
    """Episode lengths (env steps) of a deterministic policy from all m*24*7 start states."""
    env = ContosoCabs(config)
    lengths = []
    m = env.config.num_cities
    for loc, hour, day in itertools.product(range(m), range(24), range(7)):
        _, info = env.reset(options={"location": loc, "hour": hour, "day": day})
        steps, terminated = 0, False
        while not terminated:
            _, _, terminated, _, info = env.step(policy(info))
            steps += 1
        lengths.append(steps)
    return lengths


def cabs_reference(config: dict, random_episodes: int) -> dict:
    """Exact returns, solver time and mean episode lengths for one Cabs config."""
    start = time.perf_counter()
    solution = solve(config)
    solve_s = time.perf_counter() - start
    optimal = _policy_episode_lengths(
        lambda i: solution.action(i["elapsed_hours"], i["location"], i["hour"], i["day"]), config
    )
    myopic = greedy_policy(config)
    greedy = _policy_episode_lengths(
        lambda i: int(myopic[i["location"], i["hour"], i["day"]]), config
    )
    env = ContosoCabs(config)
    env.action_space.seed(0)
    random_lengths = []
    for episode in range(random_episodes):
        env.reset(seed=episode)
        steps, terminated = 0, False
        while not terminated:
            _, _, terminated, _, _ = env.step(env.action_space.sample())
            steps += 1
        random_lengths.append(steps)
    return {
        "config": config,
        "num_cities": solution.config.num_cities,
        "solve_s": solve_s,
        "optimal_return": solution.optimal_return,
        "greedy_return": greedy_return(config),
        "random_return": random_return(config),
        "mean_episode_steps": {
            "optimal": float(np.mean(optimal)),
            "greedy": float(np.mean(greedy)),
            "random": float(np.mean(random_lengths)),
        },
        "random_episodes": random_episodes,
    }


# -- record -----------------------------------------------------------------------------------


_PACKAGES = ("gymnasium", "numpy", "ale-py", "opencv-python-headless", "ray")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict:
    """Where and on what the benchmark ran (asv-style machine tag)."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        revision = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        revision = None
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in _PACKAGES},
        "git_revision": revision,
        "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _print_table(results: list[dict], reference: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Env throughput (env steps per second of wall-clock, random actions)")
    for column in ("benchmark", "median", "best", "env steps", "repeats"):
        table.add_column(column, justify="left" if column == "benchmark" else "right")
    for r in results:
        table.add_row(
            r["name"],
            f"{r['env_steps_per_s_median']:,.0f}",
            f"{r['env_steps_per_s_best']:,.0f}",
            f"{r['env_steps']:,}",
            str(r["repeats"]),
        )
    console = Console()
    console.print(table)
    single = results[0]["env_steps_per_s_median"]
    verdict = "met" if single >= CABS_TARGET_STEPS_PER_S else "NOT met"
    console.print(f"Cabs single-env target {CABS_TARGET_STEPS_PER_S:,} steps/s: {verdict}")
    lengths = reference["mean_episode_steps"]
    console.print(
        f"Cabs {reference['config']}: optimal return {reference['optimal_return']:.2f} $, "
        f"greedy {reference['greedy_return']:.2f} $, random {reference['random_return']:.2f} $ "
        f"(exact; solved in {reference['solve_s']:.3f} s); mean episode steps: optimal "
        f"{lengths['optimal']:.1f}, greedy {lengths['greedy']:.1f}, random {lengths['random']:.1f}"
    )


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): env steps/s of each
    measurement, one value per repeat."""
    from analysis.benchmarks import sample

    return [
        sample(
            r["name"], "env steps/s", "1/s", [r["env_steps"] / s for s in r["seconds"]], "higher"
        )
        for r in out["results"]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cabs-steps",
        type=int,
        default=500_000,
        help="env steps per Cabs single-env measurement (default 500,000)",
    )
    parser.add_argument(
        "--pong-steps",
        type=int,
        default=20_000,
        help="raw frames per Pong measurement (default 20,000)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="repeats per measurement")
    parser.add_argument("--no-pong", action="store_true", help="skip the Pong measurements")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the Cabs single-env target is missed"
    )
    args = parser.parse_args(argv)
    for name, minimum in (("cabs_steps", 80), ("pong_steps", 8), ("repeats", 1)):
        if getattr(args, name) < minimum:
            flag = "--" + name.replace("_", "-")
            parser.error(f"{flag}: must be ≥ {minimum}, got {getattr(args, name)}")

    results = throughput(args.cabs_steps, args.pong_steps, args.repeats, pong=not args.no_pong)
    reference = cabs_reference({"time_matrix_seed": 0}, random_episodes=2000)
    record = {
        "benchmark": "bench_envs",
        "machine": machine(),
        "target_cabs_single_env_steps_per_s": CABS_TARGET_STEPS_PER_S,
        "results": results,
        "cabs_default": reference,
    }
    from analysis.benchmarks import save

    try:
        save(args.out, record, samples(record), benchmark="bench_envs", label=args.out.stem)
    except OSError as e:
        print(f"bench_envs: cannot write {args.out}: {e.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _print_table(results, reference)
    print(f"wrote {args.out}")
    met = results[0]["env_steps_per_s_median"] >= CABS_TARGET_STEPS_PER_S
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())

"""Sampling throughput of a sampling layout: env runners x envs per env runner x vectorize mode.

How fast can a layout sample an env whose step costs CPU (``--step-cpu-ms``, a CPU-bound
simulator) or waits (``--step-latency-ms``, a remote one)? For each layout this script builds
the suite's own config of the algorithm (:func:`sweeps.engine.algorithms.build_config`) in a
fresh process on a fresh local Ray, and measures:

- ``build_s``: ``build_algo()`` (start-up of the driver, the env runners and the learner);
- ``first_step_s``: seconds from the start of ``build_algo()`` to the end of the first
  ``train()`` whose result counts an env step;
- ``env_steps_per_s``: env steps sampled per second over ``--seconds`` of ``train()`` calls
  after the first env step (RLlib's ``num_env_steps_sampled_lifetime``), and
  ``env_steps_per_s_ideal``: the env's own bound on this machine, ``cores / step cost``
  (CPU-bound) or ``concurrent envs / step latency`` (waiting), whichever is lower;
- ``peak_memory_mib``: the machine's peak used memory above what it used before Ray started,
  sampled every 0.25 s (so it counts the env runners, the learner, the driver and every async
  sub-env process);
- ``cpu_busy``: the machine's mean CPU utilisation (0-1) over the sampling window.

Ray's logical CPUs are set to at least the layout's request (env runners + driver), so a
layout with more env runners than cores is oversubscribed, as a user who asks for it would be;
``cores`` records the physical ones.

    python benchmarks/bench_sampling_layout.py --layouts IMPALA:1x1:sync,IMPALA:1x8:async \\
        --step-cpu-ms 10 --seconds 10

A ``SEED`` layout's env runners are SEED's actors (:mod:`sweeps.engine.algorithms.seed_rl`);
``--inference-gpus`` puts its inference server on a GPU.

A layout is ``ALGORITHM:RUNNERSxENVS:MODE``. Prints one line per layout as it finishes and
writes ``--out`` (default ``benchmarks/results/bench_sampling_layout.json``) after each one, so
an interrupted run keeps what it measured. A Ray workload: run it alone.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# this checkout's packages, even where the environment has another checkout installed editable
sys.path.insert(0, str(ROOT))
LAYOUT = re.compile(
    r"^(?P<algo>[A-Za-z0-9_]+):(?P<runners>\d+)x(?P<envs>\d+):(?P<mode>sync|async)$"
)


def parse_layout(text: str) -> dict:
    """``"IMPALA:4x16:async"`` -> ``{"algorithm": "IMPALA", "num_env_runners": 4, ...}``.

    Raises:
        SystemExit: (one line) the text is not ``ALGORITHM:RUNNERSxENVS:MODE``.
    """
    m = LAYOUT.match(text.strip())
    if not m:
        raise SystemExit(
            f"bench_sampling_layout: layout {text!r} is not ALGORITHM:RUNNERSxENVS:"
            "MODE (e.g. IMPALA:4x16:async)"
        )
    return {
        "algorithm": m["algo"].upper(),
        "num_env_runners": int(m["runners"]),
        "num_envs_per_env_runner": int(m["envs"]),
        "gym_env_vectorize_mode": m["mode"],
    }


class _PeakMemory(threading.Thread):
    """Peak of the machine's used memory (MiB) above ``baseline``, sampled every 0.25 s."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        import psutil

        self._psutil = psutil
        self.baseline = psutil.virtual_memory().used / 2**20
        self.peak = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.25):
            used = self._psutil.virtual_memory().used / 2**20
            self.peak = max(self.peak, used - self.baseline)

    def stop(self) -> float:
        self._done.set()
        self.join()
        return self.peak


def child(
    layout: dict,
    env: str,
    env_config: dict,
    seconds: float,
    gpus: float,
    inference_gpus: float = 0.0,
) -> dict:
    """One layout, measured in this (fresh) process."""
    import psutil
    import ray

    from sweeps.engine.algorithms import build_config, extract_metrics
    from sweeps.engine.trainable import preload_libraries, sampling_layout

    preload_libraries()
    memory = _PeakMemory()
    memory.start()
    trial = dict(layout, seed=0)
    if gpus:
        trial["num_gpus_per_learner"] = gpus
    if inference_gpus and layout["algorithm"] == "SEED":
        trial["inference_num_gpus"] = inference_gpus
    config = build_config(trial, env, env_config)
    config.debugging(log_level="ERROR")
    config = config.reporting(min_time_s_per_iteration=0.5)
    bundles = config.algo_class.default_resource_request(config).bundles
    cpus = sum(b.get("CPU", 0) for b in bundles)
    cores = psutil.cpu_count()
    ray.init(
        address="local",
        num_cpus=max(cores, int(cpus + 0.999)),
        num_gpus=1 if gpus or inference_gpus else 0,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        t0 = time.perf_counter()
        algo = config.build_algo()
        build_s = time.perf_counter() - t0
        first = 0
        while time.perf_counter() - t0 < build_s + 120:
            first = extract_metrics(layout["algorithm"], algo.train())["env_steps"]
            if first > 0:
                break
        first_step_s = time.perf_counter() - t0
        psutil.cpu_percent()  # starts the window of the next call
        t1 = time.perf_counter()
        steps = first
        iterations = 0
        while time.perf_counter() - t1 < seconds:
            steps = extract_metrics(layout["algorithm"], algo.train())["env_steps"]
            iterations += 1
        window = time.perf_counter() - t1
        cpu_busy = psutil.cpu_percent() / 100
        algo.stop()
    finally:
        ray.shutdown()
        peak = memory.stop()
    shape = sampling_layout(config)
    return {
        "build_s": build_s,
        "first_step_s": first_step_s,
        "env_steps_per_s": (steps - first) / window,
        "window_s": window,
        "iterations": iterations,
        "peak_memory_mib": peak,
        "cpu_busy": cpu_busy,
        "cores": cores,
        "ray_logical_cpus": max(cores, int(cpus + 0.999)),
        "requested_cpus": cpus,
        **shape,
    }


def ideal_rate(result: dict, step_cpu_ms: float, step_latency_ms: float) -> float | None:
    """The env's own bound on env steps/s for this layout, or None with no step cost."""
    bounds = []
    if step_cpu_ms:
        bounds.append(result["cores"] * 1000.0 / step_cpu_ms)
    if step_latency_ms:
        bounds.append(result["concurrent_envs"] * 1000.0 / step_latency_ms)
    return min(bounds) if bounds else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--layouts",
        default="IMPALA:1x1:sync,IMPALA:2x1:sync,IMPALA:1x8:sync,IMPALA:1x8:async,IMPALA:2x8:async",
    )
    p.add_argument("--env", default="ContosoCabs-v0")
    p.add_argument(
        "--step-cpu-ms",
        type=float,
        default=10.0,
        help="CPU each env step burns (ms of one core; default 10)",
    )
    p.add_argument(
        "--step-latency-ms",
        type=float,
        default=0.0,
        help="time each env step waits without CPU (ms; default 0)",
    )
    p.add_argument(
        "--seconds",
        type=float,
        default=10.0,
        help="sampling window after the first env step (s; default 10)",
    )
    p.add_argument(
        "--gpus-per-learner",
        type=float,
        default=0.0,
        help="GPUs of the learner (default 0: the learner on CPU)",
    )
    p.add_argument(
        "--inference-gpus",
        type=float,
        default=0.0,
        help="GPUs of SEED's inference server (default 0: on CPU)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=240.0,
        help="seconds one layout may take before it is recorded as timed out",
    )
    p.add_argument("--out", default=str(HERE / "results" / "bench_sampling_layout.json"))
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    env_config = {
        k: v
        for k, v in (("step_cpu_ms", args.step_cpu_ms), ("step_latency_ms", args.step_latency_ms))
        if v
    }
    if args.child:
        print(
            json.dumps(
                child(
                    parse_layout(args.child),
                    args.env,
                    env_config,
                    args.seconds,
                    args.gpus_per_learner,
                    args.inference_gpus,
                )
            )
        )
        return 0
    layouts = [s for s in args.layouts.split(",") if s.strip()]
    for s in layouts:
        parse_layout(s)
    try:
        revision = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True, capture_output=True
        ).stdout.strip()
    except OSError:
        revision = ""
    command = (
        f"python benchmarks/bench_sampling_layout.py --layouts {','.join(layouts)} "
        f"--env {args.env} --step-cpu-ms {args.step_cpu_ms:g} "
        f"--step-latency-ms {args.step_latency_ms:g} --seconds {args.seconds:g} "
        f"--gpus-per-learner {args.gpus_per_learner:g}"
        + (f" --inference-gpus {args.inference_gpus:g}" if args.inference_gpus else "")
    )
    record = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "git_revision": revision,
        "env": args.env,
        "env_config": env_config,
        "machine": machine(),
        "results": {},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"{'layout':<22}{'build s':>8}{'1st step s':>11}{'steps/s':>9}{'ideal':>7}"
        f"{'cpu busy':>9}{'mem MiB':>9}"
    )
    for s in layouts:
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--child",
                    s,
                    "--env",
                    args.env,
                    "--step-cpu-ms",
                    str(args.step_cpu_ms),
                    "--step-latency-ms",
                    str(args.step_latency_ms),
                    "--seconds",
                    str(args.seconds),
                    "--gpus-per-learner",
                    str(args.gpus_per_learner),
                    "--inference-gpus",
                    str(args.inference_gpus),
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
        except subprocess.TimeoutExpired:
            record["results"][s] = {"error": f"timed out after {args.timeout:g} s"}
            print(f"{s:<22} timed out after {args.timeout:g} s", flush=True)
            _write(out, record)
            continue
        if proc.returncode != 0:
            record["results"][s] = {"error": proc.stderr[-1500:]}
            print(f"{s:<22} failed: {proc.stderr.strip().splitlines()[-1:]}", flush=True)
        else:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            r["env_steps_per_s_ideal"] = ideal_rate(r, args.step_cpu_ms, args.step_latency_ms)
            record["results"][s] = r
            ideal = r["env_steps_per_s_ideal"]
            print(
                f"{s:<22}{r['build_s']:>8.1f}{r['first_step_s']:>11.1f}"
                f"{r['env_steps_per_s']:>9.0f}{(f'{ideal:.0f}' if ideal else '-'):>7}"
                f"{r['cpu_busy']:>9.2f}{r['peak_memory_mib']:>9.0f}",
                flush=True,
            )
        _write(out, record)
    print(f"wrote {out}")
    return 0


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per layout that ran, env
    steps/s, seconds to its first env step and peak memory in MiB (one measurement each)."""
    from analysis.benchmarks import sample

    return [
        sample(layout, measure, unit, r[key], better)
        for layout, r in out["results"].items()
        if "error" not in r
        for key, measure, unit, better in (
            ("env_steps_per_s", "env steps/s", "1/s", "higher"),
            ("first_step_s", "start-up to the first env step", "s", "lower"),
            ("peak_memory_mib", "peak memory", "MiB", "lower"),
        )
    ]


def _write(out: Path, record: dict) -> None:
    """Save the record so far: in the benchmarks' format once a layout has run (so a long
    pass cut short keeps what it measured), as it is before that."""
    from analysis.benchmarks import environment, save

    got = samples(record)
    if got:
        env = {**environment(), "command": record["command"]}
        save(out, record, got, benchmark="bench_sampling_layout", label=out.stem, env=env)
    else:
        out.write_text(json.dumps(record, indent=2) + "\n")


def machine() -> dict:
    """Cores, memory, CPU model and GPU of the machine, and the versions that ran."""
    import platform

    import psutil

    info = {
        "cores": psutil.cpu_count(),
        "memory_gib": psutil.virtual_memory().total / 2**30,
        "python": platform.python_version(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    try:
        info["gpu"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        info["gpu"] = ""
    for mod in ("ray", "torch", "gymnasium"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            pass
    return info


if __name__ == "__main__":
    raise SystemExit(main())

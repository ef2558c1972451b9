"""Memory of an async sub-env's process: what the dry-run counts per env process of an async
sampling layout (``sweeps.engine.placement.ENV_PROCESS_MIB``).

An env runner with ``gym_env_vectorize_mode="async"`` starts one process per sub-env, forked
from the env runner (gymnasium's ``AsyncVectorEnv``; Linux forks by default). This script
imports what an env runner has imported (torch, RLlib), opens ``--envs`` async sub-envs of each
env, steps them ``--steps`` times, and measures each child's memory with psutil: RSS (counts
every page it shares with the env runner), USS (its own pages only) and PSS (its own pages plus
its share of the shared ones: the figure that adds up across processes). No Ray is started.

    python benchmarks/bench_async_env_memory.py            # ~20 s; benchmarks/results/bench_async_env_memory.json
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(env_id: str, num_envs: int, steps: int) -> dict[str, float]:
    """Median RSS, USS and PSS (MiB) over the ``num_envs`` sub-env processes of ``env_id``."""
    import gymnasium as gym
    import psutil

    me = psutil.Process()
    vec = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="async")
    try:
        vec.reset(seed=0)
        for _ in range(steps):
            vec.step(vec.action_space.sample())
        info = [c.memory_full_info() for c in me.children()]
    finally:
        vec.close()
    mib = 2.0**20
    return {
        f"{k}_mib": statistics.median(getattr(m, k) / mib for m in info)
        for k in ("rss", "uss", "pss")
    } | {"processes": len(info)}


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per env, the median PSS and
    USS of one async sub-env process, MiB."""
    from analysis.benchmarks import sample

    return [
        sample(env_id, f"{kind.upper()} per sub-env process", "MiB", r[f"{kind}_mib"], "lower")
        for env_id, r in out["results"].items()
        for kind in ("pss", "uss")
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", type=int, default=8, help="async sub-envs per env (default 8)")
    p.add_argument("--steps", type=int, default=500, help="vector steps before measuring")
    p.add_argument("--out", default=str(HERE / "results" / "bench_async_env_memory.json"))
    args = p.parse_args(argv)

    import psutil
    import ray.rllib  # noqa: F401 - the env runner's imports, which a forked child shares
    import torch  # noqa: F401

    import envs  # noqa: F401 - registers ContosoCabs-v0

    parent = psutil.Process().memory_full_info()
    results = {
        env_id: measure(env_id, args.envs, args.steps)
        for env_id in ("CartPole-v1", "ContosoCabs-v0")
    }
    print(f"parent (an env runner's imports): RSS {parent.rss / 2**20:.0f} MiB")
    print(f"{'env':<16}{'RSS':>8}{'USS':>8}{'PSS':>8}  MiB per sub-env process (median)")
    for env_id, r in results.items():
        print(f"{env_id:<16}{r['rss_mib']:>8.0f}{r['uss_mib']:>8.1f}{r['pss_mib']:>8.1f}")
    from analysis.benchmarks import save

    out = Path(args.out)
    detail = {"parent_rss_mib": parent.rss / 2**20, "results": results}
    save(out, detail, samples(detail), benchmark="bench_async_env_memory", label=out.stem)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

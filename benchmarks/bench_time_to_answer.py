"""Time to answer with adaptive capping on and off: does capping give the same recommendation
in less wall-clock?

Runs one sweep file (default: the README's ``sweeps/cabs_scaling.py``) through ``python -m
sweeps.run`` with its capping as written ("on") and with ``capping=None`` ("off"), ``--reps``
times each, in ABBA order (on, off, off, on, ...) so a drift of the shared machine does not
favour one side. Each run is a fresh process with its own results directory. Per run it
records the command's wall-clock (process start to exit, the report left out), the trials'
summed elapsed time, how many trials were capped, and the recommendation the analysis gives
(:func:`analysis.study.analyse`): the fastest configuration (algorithm, env runners) by median
time-to-target, the reference verdict and the capacity plan's cheapest run.

``--modes on,cold`` compares warm trials (the default, :mod:`sweeps.engine.warm`) with every
trial cold (``--cold``), capping on in both.

Issue "Time-to-answer", item 7: the same recommendation in <= 50 % of the wall time before
the issue's work. ``--before DIR`` adds a third mode, "before": the same sweep file run by
another checkout (e.g. ``git worktree add DIR 7f1eb6e``, the revision the issue measured, with
its own ``DIR/.venv``), so the comparison is back to back on one machine rather than against
a number measured on another day; ``--modes before,on`` runs only those two.

    python benchmarks/bench_time_to_answer.py [--sweep sweeps/cabs_scaling.py] [--reps 2]
        [--before DIR] [--modes on,off]

Prints a table and saves ``benchmarks/results/bench_time_to_answer.json``. Run it alone (it is
a Ray workload; under ``flock /tmp/ray_workload.lock`` on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# this checkout's packages, even where the environment has another checkout installed editable
sys.path.insert(0, str(ROOT))


def uncapped_sweep_file(sweep_file: Path, folder: Path) -> Path:
    """A sweep file that is ``sweep_file`` with ``search.capping = None``."""
    path = folder / f"{sweep_file.stem}_uncapped.py"
    path.write_text(
        textwrap.dedent(f"""\
        from sweeps.engine.sweep_file import load_sweep

        _S = load_sweep({str(sweep_file)!r})
        SWEEP = _S.model_copy(update={{"search": _S.search.model_copy(update={{"capping": None}})}})
        """)
    )
    return path


def recommendation(run_dir: Path) -> dict:
    """What the analysis recommends from one run (see the module docstring)."""
    import math

    from analysis.load import load_results
    from analysis.study import analyse, reference_verdict

    study = analyse(load_results(run_dir))
    s = study.summary[~study.summary["is_reference"]]
    s = s.assign(_t=s["ttt_s"].astype(float).fillna(math.inf)).sort_values("_t")
    top = s.iloc[0] if len(s) else None
    tm = study.tm
    cheapest = study.plan.cheapest if study.plan is not None else None
    return {
        "fastest": (
            None
            if top is None or not math.isfinite(top["_t"])
            else f"{top['algorithm']} N={int(top['num_env_runners'])}"
        ),
        "fastest_ttt_s": None if top is None else float(top["_t"]),
        "verdict": reference_verdict(study.summary, study.speed),
        "cheapest": (
            None
            if cheapest is None
            else f"{cheapest['algorithm']} N={int(cheapest['num_env_runners'])}"
        ),
        "trials": int(len(tm)),
        "capped": int((tm.get("censor_reason", "") == "capped").sum()),
        "trial_time_s": float(tm["elapsed_s"].sum()),
    }


def run_once(
    sweep_file: Path,
    results: Path,
    mode: str,
    checkout: Path = ROOT,
    python: str = sys.executable,
    extra: tuple[str, ...] = (),
) -> dict:
    """One ``sweeps.run`` of ``sweep_file`` into ``results`` by ``checkout``'s code (run with
    ``python``); its wall-clock (seconds) and what this checkout's analysis recommends."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            python,
            "-m",
            "sweeps.run",
            str(sweep_file),
            "--results",
            str(results),
            "--no-report",
            *extra,
        ],
        cwd=checkout,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"bench_time_to_answer: {mode} run failed (exit {proc.returncode}): "
            f"{proc.stderr.strip().splitlines()[-1:]}"
        )
    (run_dir,) = [p for p in results.glob("*/*") if p.is_dir()]
    return {"mode": mode, "wall_s": wall, **recommendation(run_dir)}


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per mode, the sweep
    command's wall-clock in seconds and the fastest configuration's time-to-target, one value
    per run."""
    from analysis.benchmarks import sample

    modes = list(dict.fromkeys(r["mode"] for r in out["runs"]))
    return [
        sample(mode, measure, "s", [r[key] for r in out["runs"] if r["mode"] == mode], "lower")
        for mode in modes
        for key, measure in (
            ("wall_s", "sweep wall-clock"),
            ("fastest_ttt_s", "fastest time-to-target"),
        )
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", default="sweeps/cabs_scaling.py", help="sweep file")
    p.add_argument("--reps", type=int, default=2, help="runs per mode (default 2)")
    p.add_argument(
        "--before",
        default=None,
        help="checkout of the revision to compare with (its own .venv); adds mode 'before'",
    )
    p.add_argument(
        "--modes",
        default=None,
        help="comma-separated, from on, off, cold, before (default: on,off, and "
        "before with --before); cold: capping on, every trial cold (--cold)",
    )
    p.add_argument("--out", default=str(HERE / "results" / "bench_time_to_answer.json"))
    args = p.parse_args(argv)
    sweep_file = (ROOT / args.sweep).resolve()
    modes = (
        args.modes.split(",") if args.modes else ["on", "off"] + (["before"] if args.before else [])
    )
    if (
        not set(modes) <= {"on", "off", "cold", "before"}
        or len(set(modes)) != len(modes)
        or len(modes) < 2
    ):
        p.error(f"--modes {args.modes!r}: two or more distinct modes of on, off, cold, before")
    before = Path(args.before).resolve() if args.before else None
    if "before" in modes and (before is None or not (before / ".venv/bin/python").exists()):
        p.error("mode 'before' needs --before DIR: a checkout with its own DIR/.venv")
    before_rev = (
        subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=before, capture_output=True, text=True
        ).stdout.strip()
        if before
        else None
    )
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench_tta_") as tmp:
        tmp = Path(tmp)
        uncapped = uncapped_sweep_file(sweep_file, tmp)
        # ABBA over the modes: on, off, off, on, ... (A B C C B A with three)
        order = [m for i in range(args.reps) for m in (modes if i % 2 == 0 else modes[::-1])]
        for i, mode in enumerate(order):
            if mode == "before":
                r = run_once(
                    Path(args.sweep),
                    tmp / f"run{i}",
                    mode,
                    checkout=before,
                    python=str(before / ".venv/bin/python"),
                )
            elif mode == "cold":
                r = run_once(sweep_file, tmp / f"run{i}", mode, extra=("--cold",))
            else:
                r = run_once(sweep_file if mode == "on" else uncapped, tmp / f"run{i}", mode)
            runs.append(r)
            print(
                f"{mode:>6}: {r['wall_s']:6.1f} s, {r['trials']} trials ({r['capped']} "
                f"capped, {r['trial_time_s']:.0f} s in trials); fastest {r['fastest']} "
                f"({r['fastest_ttt_s']:.1f} s), cheapest {r['cheapest']}",
                flush=True,
            )
    walls = {m: [r["wall_s"] for r in runs if r["mode"] == m] for m in modes}
    summary = {f"median_wall_{m}_s": statistics.median(w) for m, w in walls.items()}
    for a, b in (("on", "off"), ("on", "before"), ("on", "cold")):
        if a not in walls or b not in walls:
            continue
        ratio = summary[f"median_wall_{a}_s"] / summary[f"median_wall_{b}_s"]
        low, high = min(walls[a]) / max(walls[b]), max(walls[a]) / min(walls[b])
        summary[f"ratio_{a}_{b}"], summary[f"ratio_{a}_{b}_range"] = ratio, [low, high]
        print(
            f"median wall-clock: {a} {summary[f'median_wall_{a}_s']:.1f} s, {b} "
            f"{summary[f'median_wall_{b}_s']:.1f} s, ratio {ratio:.3f} [{low:.3f}-{high:.3f}]"
        )
    summary["same_fastest"] = len({r["fastest"] for r in runs}) == 1
    summary["same_cheapest"] = len({r["cheapest"] for r in runs}) == 1
    print(
        f"same fastest configuration in every run: {summary['same_fastest']}; same cheapest: "
        f"{summary['same_cheapest']}"
    )
    command = f"python benchmarks/bench_time_to_answer.py --sweep {args.sweep} --reps {args.reps}"
    if args.modes:
        command += f" --modes {args.modes}"
    if before is not None:
        command += " --before DIR"
    from analysis.benchmarks import environment, save

    out = Path(args.out)
    detail = json.loads(
        json.dumps({"before_revision": before_rev, "runs": runs, "summary": summary}, default=str)
    )
    env = {**environment(), "command": command}
    save(out, detail, samples(detail), benchmark="bench_time_to_answer", label=out.stem, env=env)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What a newcomer waits for: the README's two set-up commands on a fresh clone, timed.

``--command main`` runs the README's main command (the line after ``<!-- main-command -->``:
install, then the default study, ``python -m sweeps.run sweeps/cabs_scaling.py``);
``--command ci`` runs ``.ci/run`` (install, then the README's test command, as CI does). Each
repetition clones this checkout's ``HEAD`` into a new temporary folder (``git clone``: what is
committed, nothing else), runs the command there with ``bash`` and records its wall-clock
from start to exit, in seconds; for ``main`` also the sweep's own wall-clock (the run's
``environment.json``, ``started_at`` to ``finished_at``), its trial count and the report's
sections left without data (``class="missing"`` boxes); for ``ci`` the two pytest parts'
seconds and test counts as pytest printed them, and the share of the machine's CPU time that
was busy over the whole command and over each part (``psutil.cpu_times`` every 2 s; idle,
I/O wait and time stolen by the hypervisor are not busy): a part near 100 % is bound by the
cores, and more tests at a time would not finish it sooner. A command that fails is an
error: exit 1 with the tests that failed and its last lines, the whole output in
``$TMPDIR/bench_fresh_clone_<command>.log``, nothing saved.

    flock /tmp/ray_workload.lock python benchmarks/bench_fresh_clone.py --command main \
        [--keep-report report.html]   # the report, to look at in a browser
    flock /tmp/ray_workload.lock python benchmarks/bench_fresh_clone.py --command ci

Saves ``benchmarks/results/bench_fresh_clone_<command>.json`` (:mod:`analysis.benchmarks`'
format; the revision is the clone's). A Ray workload: run it alone.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

#: The README marker of each command (``.ci/run`` reads the test command the same way).
MARKERS = {"main": "<!-- main-command -->", "ci": "<!-- test-command -->"}


def readme_command(name: str, readme: Path) -> str:
    """The README's command after its marker (the first line of the fenced block after it).

    Raises:
        ValueError: the marker or its command is missing.
    """
    lines = readme.read_text().splitlines()
    try:
        i = lines.index(MARKERS[name])
    except ValueError:
        raise ValueError(f"{readme}: no {MARKERS[name]} marker") from None
    for line in lines[i + 1 :]:
        if line.strip() and not line.startswith("```"):
            return line.strip()
    raise ValueError(f"{readme}: no command after {MARKERS[name]}")


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def cpu_ticks() -> tuple[float, float]:
    """``(busy, total)`` CPU seconds of the whole machine since boot, every core summed
    (``psutil.cpu_times``): busy is all but idle, I/O wait and steal."""
    import psutil

    t = psutil.cpu_times()
    total = sum(t)
    return total - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "steal", 0.0), total


def busy_percent(ticks: list[tuple[float, float, float]], start: float, end: float) -> float:
    """The busy share (%) of the machine's CPU time between ``start`` and ``end`` (seconds
    since the command started), from ``ticks`` = ``[(t, busy, total), ...]`` sorted by ``t``
    (:func:`cpu_ticks` readings): the readings nearest each end. NaN with fewer than two
    readings between them."""
    inside = [k for k in ticks if start - 1e-9 <= k[0] <= end + 1e-9]
    if len(inside) < 2 or inside[-1][2] <= inside[0][2]:
        return float("nan")
    (_, b0, t0), (_, b1, t1) = inside[0], inside[-1]
    return 100.0 * (b1 - b0) / (t1 - t0)


def run_once(name: str, workdir: Path) -> dict:
    """Clone ``HEAD`` into ``workdir/clone`` and run the command there; the measurements
    (module docstring). Raises ``RuntimeError`` with the failed tests and the output's tail
    when it fails (the whole output written to ``$TMPDIR/bench_fresh_clone_<name>.log``)."""
    clone = workdir / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
    ).stdout.strip()
    command = readme_command("main", clone / "README.md") if name == "main" else "bash .ci/run"
    output = workdir / "output.log"
    t0 = time.perf_counter()
    ticks = [(0.0, *cpu_ticks())]
    with output.open("w") as sink:
        proc = subprocess.Popen(
            ["bash", "-c", command], cwd=clone, stdout=sink, stderr=subprocess.STDOUT, text=True
        )
        while proc.poll() is None:
            time.sleep(2.0)
            ticks.append((time.perf_counter() - t0, *cpu_ticks()))
    wall = time.perf_counter() - t0
    out = output.read_text()
    if proc.returncode != 0:
        # pip's warnings can fill the output's tail: name the failed tests, keep the whole log
        log = Path(tempfile.gettempdir()) / f"bench_fresh_clone_{name}.log"
        log.write_text(out)
        failed = "\n".join(re.findall(r"^(?:FAILED|ERROR) .*$", out, re.M))
        raise RuntimeError(
            f"{command!r} exited {proc.returncode} (whole output: {log}):\n"
            + (failed + "\n" if failed else "")
            + out[-2000:]
        )
    r: dict = {"revision": revision, "wall_s": wall}
    if name == "main":
        import pandas as pd

        from sweeps.engine import rundir

        run = sorted((clone / "results").glob(f"*/*/{rundir.ENVIRONMENT}"))[-1].parent
        env = json.loads((run / rundir.ENVIRONMENT).read_text())
        r["sweep_s"] = _seconds(env["finished_at"]) - _seconds(env["started_at"])
        r["trials"] = len(pd.read_parquet(run / rundir.TRIALS))
        report = run / rundir.REPORT
        r["missing_sections"] = (
            report.read_text().count('class="missing"') if report.exists() else None
        )
        if report.exists():
            r["report"] = report  # main() copies it out with --keep-report, never saved
    else:
        parts = re.findall(r"(\d+) passed(?:, [^\n]*?)? in ([\d.]+)s", out)
        r["parts"] = [{"passed": int(n), "seconds": float(s)} for n, s in parts]
        # the parts ran back to back at the command's end: each ends where the next begins
        # (within pytest's own start-up of a few seconds)
        r["cpu_busy_pct"] = busy_percent(ticks, 0.0, wall)
        end = wall
        for part in reversed(r["parts"]):
            part["cpu_busy_pct"] = busy_percent(ticks, end - part["seconds"], end)
            end -= part["seconds"]
    return r


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): the command's wall-clock
    with install, and for ``main`` the sweep's, for ``ci`` each pytest part's, in seconds,
    one value per repetition."""
    from analysis.benchmarks import sample

    runs, name = out["runs"], out["command_name"]
    got = [sample(name, "wall-clock with install", "s", [r["wall_s"] for r in runs], "lower")]
    if name == "main":
        got.append(sample(name, "sweep wall-clock", "s", [r["sweep_s"] for r in runs], "lower"))
    else:
        busy = [r["cpu_busy_pct"] for r in runs if "cpu_busy_pct" in r]
        if busy:
            got.append(sample(name, "CPU busy", "%", busy, "higher"))
        for i, what in enumerate(("two at a time", "one at a time")):
            vals = [r["parts"][i]["seconds"] for r in runs if len(r["parts"]) > i]
            if vals:
                got.append(sample(f"ci: {what}", "pytest wall-clock", "s", vals, "lower"))
            busy = [
                r["parts"][i]["cpu_busy_pct"]
                for r in runs
                if len(r["parts"]) > i and "cpu_busy_pct" in r["parts"][i]
            ]
            if busy:
                got.append(sample(f"ci: {what}", "CPU busy", "%", busy, "higher"))
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--command", choices=sorted(MARKERS), required=True)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--out", type=Path)
    p.add_argument(
        "--keep-report",
        type=Path,
        help="for main: copy the last repetition's report.html here (the clone is deleted)",
    )
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error(f"--reps: must be >= 1, got {args.reps}")
    out = args.out or HERE / "results" / f"bench_fresh_clone_{args.command}.json"
    runs = []
    for i in range(args.reps):
        with tempfile.TemporaryDirectory(prefix="bench_fresh_clone_") as tmp:
            try:
                r = run_once(args.command, Path(tmp))
            except RuntimeError as e:
                print(f"bench_fresh_clone: {e}", file=sys.stderr)
                return 1
            report = r.pop("report", None)
            if args.keep_report is not None and report is not None:
                import shutil

                args.keep_report.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(report, args.keep_report)
        runs.append(r)
        print(f"{args.command} #{i + 1} at {r['revision']}: " + json.dumps(r), flush=True)
    from analysis.benchmarks import environment, save

    env = environment()
    env["git_revision"] = runs[-1]["revision"]  # the clone's, not this checkout's state
    detail = {"command_name": args.command, "runs": runs}
    save(out, detail, samples(detail), benchmark="bench_fresh_clone", label=args.command, env=env)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

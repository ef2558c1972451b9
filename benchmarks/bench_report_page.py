"""The HTML report in a browser: its size, when it has loaded, and when every figure is drawn.

Writes the report of a results directory (default: the committed Contoso Cabs study,
docs/data/cabs_scaling/, and a synthetic run with every section filled) and opens it ``--reps``
times in headless Chromium (Debian's ``chromium``, the flags of the report's browser test, a
fresh profile each time), driven over the DevTools protocol (aiohttp's websocket client):

- ``load``: the navigation's ``loadEventEnd`` (ms from navigation start): the page is parsed,
  its scripts have run, and what is on screen can be read;
- ``drawn``: when the last of the page's figures holds an SVG (polled every 20 ms): every
  figure drawn, including those below the fold.

    python benchmarks/bench_report_page.py [RESULTS_DIR ...] [--reps 5]

Prints a table (median and range over the reps) and saves
``benchmarks/results/bench_report_page.json``. Starts no Ray.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sweeps.engine.cli import EXIT_BAD_INPUT

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
STUDY = ROOT / "docs" / "data" / "cabs_scaling" / "20261122-203334"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
)
DRAWN_JS = (
    "(() => { const n = +document.body.dataset.figures; const d = [...document"
    ".querySelectorAll('.plotly-graph-div')].filter(e => e.querySelector('.main-svg'))"
    ".length; return d >= n ? performance.now() : -1; })()"
)
LOAD_JS = "performance.getEntriesByType('navigation')[0].loadEventEnd"


async def _open(exe: str, url: str, timeout_s: float = 60.0) -> tuple[float, float]:
    """(load ms, drawn ms) of one visit in a fresh headless Chromium."""
    import os
    import signal

    import aiohttp

    with tempfile.TemporaryDirectory(
        prefix="chromium-profile-", ignore_cleanup_errors=True
    ) as profile:
        proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.time() + timeout_s
            while not port_file.is_file() or not port_file.read_text().strip():
                if time.time() > deadline:
                    raise TimeoutError("chromium did not open its DevTools port")
                await asyncio.sleep(0.05)
            port = int(port_file.read_text().split()[0])
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                    page = next(t for t in await r.json() if t["type"] == "page")
                async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                    ids = iter(range(1, 1_000_000))

                    async def call(method: str, **params):
                        i = next(ids)
                        await ws.send_json({"id": i, "method": method, "params": params})
                        while True:
                            msg = await ws.receive_json(timeout=timeout_s)
                            if msg.get("id") == i:
                                return msg.get("result", {})
                            if msg.get("method") == "Page.loadEventFired":
                                loaded.set()

                    loaded = asyncio.Event()
                    await call("Page.enable")
                    await call("Page.navigate", url=url)
                    while not loaded.is_set():
                        msg = await ws.receive_json(timeout=timeout_s)
                        if msg.get("method") == "Page.loadEventFired":
                            loaded.set()
                    load = (await call("Runtime.evaluate", expression=LOAD_JS, returnByValue=True))[
                        "result"
                    ]["value"]
                    while True:
                        drawn = (
                            await call("Runtime.evaluate", expression=DRAWN_JS, returnByValue=True)
                        )["result"]["value"]
                        if drawn >= 0:
                            return float(load), float(drawn)
                        if time.time() > deadline:
                            raise TimeoutError("the figures were not all drawn")
                        await asyncio.sleep(0.02)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)  # the browser and its renderers
            proc.wait(timeout=30)


def measure(page: Path, reps: int, exe: str) -> dict:
    """Size and timings of one report page over ``reps`` fresh browsers."""
    runs = [asyncio.run(_open(exe, page.as_uri())) for _ in range(reps)]
    load, drawn = [r[0] for r in runs], [r[1] for r in runs]
    text = page.read_text(encoding="utf-8")
    return {
        "page": page.name,
        "size_mib": page.stat().st_size / 2**20,
        "figures": int(text.split('data-figures="', 1)[1].split('"', 1)[0]),
        "load_ms": load,
        "drawn_ms": drawn,
        "load_median_ms": statistics.median(load),
        "drawn_median_ms": statistics.median(drawn),
    }


def _machine(exe: str) -> dict:
    """Where the numbers were taken: CPU, cores, the browser's version, the git revision."""
    import os
    import platform

    def run(*cmd: str) -> str:
        try:
            return subprocess.run(
                cmd, capture_output=True, text=True, timeout=60, cwd=ROOT
            ).stdout.strip()
        except OSError:
            return ""

    cpu = (
        next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").is_file()
        else platform.processor()
    )
    return {
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "browser": run(exe, "--version"),
        "git_revision": run("git", "rev-parse", "--short", "HEAD"),
    }


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): per report, milliseconds
    to the page's load event and until every figure is drawn, one value per visit."""
    from analysis.benchmarks import sample

    return [
        sample(r["results"], measure, "ms", r[key], "lower")
        for r in out["rows"]
        for key, measure in (("load_ms", "page load"), ("drawn_ms", "all figures drawn"))
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "results",
        nargs="*",
        help="results directories (default: the Cabs study and a synthetic run)",
    )
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=str(HERE / "results" / "bench_report_page.json"))
    args = p.parse_args()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("error: chromium is not installed (apt-get install -y chromium)", file=sys.stderr)
        return EXIT_BAD_INPUT
    from analysis.report import write_report
    from analysis.synthetic import write_synthetic_results

    with tempfile.TemporaryDirectory() as tmp:
        dirs = [Path(r) for r in args.results]
        if not dirs:
            study = Path(tmp) / "cabs_scaling"
            shutil.copytree(STUDY, study)
            dirs = [
                study,
                write_synthetic_results(
                    Path(tmp) / "synthetic",
                    seeds=5,
                    env_runners=(1, 2, 4, 8),
                    censor=0.2,
                    errors=1,
                    no_episode_errors=1,
                    n_lr=2,
                    rng_seed=2,
                ),
            ]
        rows = []
        for d in dirs:
            page = write_report(d, Path(tmp) / f"{d.name}.html")
            rows.append({"results": d.name, **measure(page, args.reps, exe)})
    print(
        f"{'report':<14}{'MiB':>6}{'figures':>9}{'load ms (median, range)':>28}"
        f"{'all drawn ms (median, range)':>32}"
    )
    for r in rows:
        print(
            f"{r['results']:<14}{r['size_mib']:>6.2f}{r['figures']:>9}"
            f"{r['load_median_ms']:>12.0f} ({min(r['load_ms']):.0f}-{max(r['load_ms']):.0f})"
            f"{r['drawn_median_ms']:>18.0f} ({min(r['drawn_ms']):.0f}-"
            f"{max(r['drawn_ms']):.0f})"
        )
    from analysis.benchmarks import save

    out = Path(args.out)
    detail = {"reps": args.reps, "machine": _machine(exe), "rows": rows}
    save(out, detail, samples(detail), benchmark="bench_report_page", label=out.stem)
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

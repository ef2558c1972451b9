"""Benchmark results in one format (analysis.benchmarks): every saved result and every
benchmark script in it, the comparison's known answers (a 30 % slower benchmark is flagged,
repetitions of one distribution are not, too few repetitions are not judged), the CLI's exit
codes as a CI gate uses them, and docs/benchmarks.md changed only through its generator."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis import benchmarks as bm
from analysis.compare import ALPHA, EXIT_OK, EXIT_REFUSED, EXIT_REGRESSION, FACTOR, main
from analysis.pages import fill_page, regions_of, stale_regions

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("bench_*.py"))
RESULTS = sorted((ROOT / "benchmarks" / "results").glob("*.json")) + sorted(
    p for p in (ROOT / "docs" / "data").glob("*/bench_*.json")
)


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _result(path: Path, values: dict[str, list[float]], better: str = "higher") -> Path:
    samples = [bm.sample(case, "env steps/s", "1/s", v, better) for case, v in values.items()]
    env = {"git_revision": path.stem, "cpu_model": "test CPU", "cpu_count": 2, "versions": {}}
    bm.save(path, {"note": "synthetic"}, samples, benchmark="bench_test", env=env)
    return path


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_every_saved_result_is_in_the_format_with_its_revision_and_machine(path):
    res = bm.read(path)
    assert res.environment["git_revision"] and res.environment["cpu_count"]
    assert res.benchmark in {p.stem for p in SCRIPTS}, res.benchmark
    for s in res.samples.values():
        assert s["unit"] and s["better"] in bm.BETTER and s["values"]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_every_benchmark_script_saves_through_the_format(path):
    tree = ast.parse(path.read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "samples" in functions, f"{path.name} has no samples(out)"
    calls = {
        n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
    }
    assert "save" in calls, f"{path.name} does not save through analysis.benchmarks.save"


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in RESULTS
        # the files of before/after pairs hold whole results as runs, their cases prefixed
        if not isinstance(json.loads(p.read_text()).get("runs"), list)
        or json.loads(p.read_text())["benchmark"] in ("bench_time_to_answer", "bench_fresh_clone")
    ],
    ids=lambda p: p.name,
)
def test_a_results_samples_are_its_scripts_reading_of_its_own_detail(path):
    """The saved samples are what the benchmark's ``samples`` takes from the saved detail:
    nothing in the standard block was written by hand."""
    data = json.loads(path.read_text())
    got = _script(data["benchmark"]).samples(data)
    assert got == data["samples"]


def test_a_published_command_names_no_path_of_the_measuring_machine():
    """The command saved beside a number is one anyone can run: an output option given an
    absolute path is left out of it (the numbers do not depend on where a file went), a
    relative one and every other argument stay; no saved result's command holds an absolute
    path but the machine's Ray lock, which the docs name for every Ray workload."""
    argv = ["bench_x.py", "--out", "/tmp/a.json", "--keep-report=/root/r.html", "--reps", "2"]
    assert bm.environment(argv)["command"] == "python benchmarks/bench_x.py --reps 2"
    argv = ["bench_x.py", "--out", "benchmarks/results/x.json", "--before", "/w/DIR"]
    assert bm.environment(argv)["command"].endswith(
        "--out benchmarks/results/x.json --before /w/DIR"
    )
    for path in RESULTS:
        command = (json.loads(path.read_text()).get("environment") or {}).get("command", "")
        absolute = [
            a
            for a in command.replace("=", " ").split()
            if a.startswith(("/", "~")) and a != "/tmp/ray_workload.lock"
        ]
        assert not absolute, (path.name, absolute)


def test_a_malformed_result_is_refused_in_one_line(tmp_path):
    with pytest.raises(bm.BenchmarkError, match="better='faster'"):
        bm.sample("DQN", "env steps/s", "1/s", [1.0], "faster")
    with pytest.raises(bm.BenchmarkError, match="no finite value"):
        bm.sample("DQN", "env steps/s", "1/s", [float("nan")], "higher")
    s = bm.sample("DQN", "env steps/s", "1/s", [1.0], "higher")
    with pytest.raises(bm.BenchmarkError, match="two samples of case 'DQN'"):
        bm.save(tmp_path / "x.json", {}, [s, s], benchmark="bench_x", env={})
    (tmp_path / "old.json").write_text(json.dumps({"command": "python x.py", "rows": []}))
    with pytest.raises(bm.BenchmarkError, match="not a benchmark result in format") as e:
        bm.read(tmp_path / "old.json")
    assert "\n" not in str(e.value)


def test_a_30_percent_slower_benchmark_is_flagged_and_one_distribution_is_not():
    """Known answers: 10 repetitions a side with 8 % noise (lognormal), as the benchmarks'
    spread on this machine; a rate 30 % lower is found in every one of 10 pairs, and pairs
    drawn from one distribution are flagged in at most 1 of 20 (alpha 0.01)."""
    rng = np.random.default_rng(7)

    def draw(scale: float) -> list[float]:
        return list(scale * 1000 * np.exp(rng.normal(0, 0.08, 10)))

    slower = [bm.judge(draw(1.0), draw(0.7), "higher", FACTOR, ALPHA) for _ in range(10)]
    assert all(v == bm.SLOWER for *_, v in slower), slower
    same = [bm.judge(draw(1.0), draw(1.0), "higher", FACTOR, ALPHA) for _ in range(20)]
    assert sum(v != bm.SAME for *_, v in same) <= 1
    # a time that got 30 % longer is worse too: the direction follows ``better``
    longer = bm.judge(draw(1.0), draw(1.3), "lower", FACTOR, ALPHA)
    assert longer[0] == pytest.approx(1 / 1.3, rel=0.15) and longer[3] == bm.SLOWER


def test_few_repetitions_fall_back_to_the_ranges_and_one_is_not_judged():
    change, p, test, verdict = bm.judge([100, 102, 98], [80, 79, 81], "higher", FACTOR, ALPHA)
    assert (test, verdict) == ("ranges (too few for U)", bm.SLOWER) and np.isnan(p)
    # overlapping ranges: no change claimed, however far the medians
    assert bm.judge([100, 60, 98], [80, 79, 81], "higher", FACTOR, ALPHA)[3] == bm.SAME
    # beyond the ranges but within the factor: no change
    assert bm.judge([100, 101, 102], [95, 96, 97], "higher", FACTOR, ALPHA)[3] == bm.SAME
    assert bm.judge([100, 101], [50, 51], "higher", FACTOR, ALPHA)[3] == bm.UNJUDGED


def test_the_cli_gates_a_regression_with_exit_5_and_compares_folders(tmp_path, capsys):
    rng = np.random.default_rng(3)
    base = [1000 * x for x in np.exp(rng.normal(0, 0.05, 8))]
    (tmp_path / "base").mkdir()
    (tmp_path / "new").mkdir()
    a = _result(tmp_path / "base" / "bench_x.json", {"IMPALA": base, "PPO": base})
    b = _result(tmp_path / "new" / "bench_x.json", {"IMPALA": [0.7 * x for x in base], "SAC": base})
    assert main(["--benchmarks", str(a), str(a)]) == EXIT_OK
    assert main(["--benchmarks", str(a), str(b), "--markdown", str(tmp_path / "c.md")]) == (
        EXIT_REGRESSION
    )
    out = capsys.readouterr().out
    assert "1 samples compared: 1 worse" in out
    assert "only in BASE: PPO env steps/s" in out and "only in NEW: SAC env steps/s" in out
    assert "| IMPALA |" in (tmp_path / "c.md").read_text()
    # folders match results by file name
    assert main(["--benchmarks", str(tmp_path / "base"), str(tmp_path / "new")]) == (
        EXIT_REGRESSION
    )
    assert "bench_x/IMPALA" in capsys.readouterr().out
    # a file that is not a result: refused in one line, exit 2
    (tmp_path / "old.json").write_text("{}")
    assert main(["--benchmarks", str(a), str(tmp_path / "old.json")]) == EXIT_REFUSED
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err


def test_a_ci_style_shell_gate_fails_on_a_slower_benchmark(tmp_path):
    base = [1000.0, 990.0, 1010.0, 1005.0, 995.0, 1002.0]
    a = _result(tmp_path / "a.json", {"DQN": base})
    b = _result(tmp_path / "b.json", {"DQN": [0.75 * x for x in base]})
    gate = (
        f"{sys.executable} -m analysis.compare --benchmarks {a} {b} > /dev/null; rc=$?; "
        'if [ "$rc" -eq 5 ]; then echo regression; exit 1; fi; exit "$rc"'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", "-c", gate], capture_output=True, text=True, env=env)
    assert (proc.returncode, proc.stdout.strip()) == (1, "regression")
    same = gate.replace(str(b), str(a))
    assert subprocess.run(["bash", "-c", same], env=env).returncode == 0


def test_a_changed_result_changes_docs_benchmarks_only_through_its_generator(tmp_path):
    """docs/benchmarks.md quotes its numbers through generated regions: a result changed
    on disk makes its region stale (the docs test fails) until the generator rewrites it, and
    the rewrite touches that region alone."""
    page = ROOT / "docs" / "benchmarks.md"
    cited = sorted({run for name, run, _ in regions_of(page) if name == "benchmark"})
    assert len(cited) >= 8, cited
    # a copy of the page and of everything it cites, at the same relative paths
    docs = tmp_path / "docs"
    docs.mkdir()
    text = page.read_text()
    for _, run, _ in regions_of(page):
        src = (page.parent / run).resolve()
        dst = (docs / run).resolve()
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy(src, dst)
    (docs / "benchmarks.md").write_text(text)
    assert stale_regions(docs / "benchmarks.md") == []
    target = (docs / cited[0]).resolve()
    data = json.loads(target.read_text())
    data["samples"][0]["values"] = [v * 2 for v in data["samples"][0]["values"]]
    target.write_text(json.dumps(data))
    assert stale_regions(docs / "benchmarks.md") == [f"benchmark from {cited[0]}"]
    assert fill_page(docs / "benchmarks.md") == 1
    new = (docs / "benchmarks.md").read_text()
    assert len(text.splitlines()) == len(new.splitlines())
    changed = [(a, b) for a, b in zip(text.splitlines(), new.splitlines(), strict=True) if a != b]
    assert len(changed) == 1
    assert bm.fmt_count(float(np.median(data["samples"][0]["values"]))) in changed[0][1]


def test_the_fresh_clone_benchmark_reads_the_cpu_busy_share_of_each_part():
    """CI's parts are timed back to back from the command's end; each part's CPU busy share
    is the machine's busy CPU seconds over all its CPU seconds between the readings nearest
    its ends, and a result saved before the share was read still gives its samples."""
    fresh = _script("bench_fresh_clone")
    ticks = [(0.0, 0.0, 0.0), (2.0, 1.0, 4.0), (4.0, 3.0, 8.0), (6.0, 7.0, 12.0)]
    assert fresh.busy_percent(ticks, 0.0, 6.0) == pytest.approx(100 * 7 / 12)
    assert fresh.busy_percent(ticks, 2.0, 6.0) == pytest.approx(100 * 6 / 8)
    assert np.isnan(fresh.busy_percent(ticks, 2.5, 3.5))  # no two readings inside
    busy, total = fresh.cpu_ticks()
    assert 0 < busy < total
    run = {"wall_s": 100.0, "cpu_busy_pct": 90.0, "parts": [{"passed": 9, "seconds": 80.0}]}
    run["parts"][0]["cpu_busy_pct"] = 95.0
    got = fresh.samples({"command_name": "ci", "runs": [run]})
    assert {(s["case"], s["measure"]): s["values"] for s in got} == {
        ("ci", "wall-clock with install"): [100.0],
        ("ci", "CPU busy"): [90.0],
        ("ci: two at a time", "pytest wall-clock"): [80.0],
        ("ci: two at a time", "CPU busy"): [95.0],
    }
    del run["cpu_busy_pct"], run["parts"][0]["cpu_busy_pct"]
    old = fresh.samples({"command_name": "ci", "runs": [run]})
    assert [s["measure"] for s in old] == ["wall-clock with install", "pytest wall-clock"]

"""python -m analysis.history: a sweep's runs in order, each compared with the previous run on
its machine, change points where a run got slower, other machines and runs judged differently
kept apart; the report's section against the previous run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest

from analysis.compare import EXIT_OK, EXIT_REFUSED, EXIT_REGRESSION, SAME, SLOWER
from analysis.history import history, main, previous_run
from analysis.load import load_results
from analysis.synthetic import write_synthetic_results


def _sweep(tmp_path: Path, slowdowns: list[float], rng: int = 0) -> Path:
    """results/<sweep>/ with one synthetic run per slowdown, in that order."""
    root = tmp_path / "synthetic_scaling"
    for i, slow in enumerate(slowdowns):
        write_synthetic_results(  # history reads no Optuna study: none written, much faster
            root / f"20260101-00000{i}",
            rng_seed=7000 + 31 * rng + i,
            slowdown=slow,
            seeds=5,
            with_optuna=False,
        )
    return root


def _history(root: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lifelines' convergence notes on tiny samples
        return history(root)


def test_the_run_that_got_slower_is_the_change_point_and_the_others_are_not(tmp_path):
    root = _sweep(tmp_path, [1.0, 1.0, 1.3, 1.3])
    h = _history(root)
    assert [r.run_id for r in h.runs] == sorted(p.name for p in root.iterdir())
    first, same, slower, after = h.runs
    assert first.against is None
    assert same.against.verdict == SAME and not same.against.regression
    assert slower.against.verdict == SLOWER and slower.against.regression
    assert after.against.verdict == SAME and not h.newest_regression
    # with 5 seeds a configuration's own log-rank test can flag it too (3 cannot go below
    # p = 0.025: analysis.compare)
    marked = h.cells[h.cells["change"] != ""]
    assert set(marked["run_id"]) == {slower.run_id}, marked
    assert (marked["change"] == SLOWER).all() and (marked["speedup"] < 1).all()
    assert len(marked) >= len(h.cells[h.cells["run_id"] == slower.run_id]) / 2
    # the command's exit code follows the newest run: slower against the one before it
    shutil.rmtree(root / after.run_id)
    assert main([str(root)]) == EXIT_REGRESSION


def test_another_machine_starts_its_own_line_and_a_run_judged_differently_is_left_out(tmp_path):
    root = _sweep(tmp_path, [1.0, 1.3, 1.0], rng=1)
    runs = sorted(root.iterdir())
    env = json.loads((runs[1] / "environment.json").read_text())
    env["cpu_model"] = "another CPU"
    (runs[1] / "environment.json").write_text(json.dumps(env))
    other = tmp_path / "other" / "20260101-000009"
    shutil.copytree(runs[2], other)
    spec = json.loads((other / "spec.json").read_text())
    spec["budget"]["time_s"] = 10.0
    (other / "spec.json").write_text(json.dumps(spec))
    shutil.copytree(other, root / "20251231-000000")  # an older run with another budget

    h = _history(root)
    assert [r.run_id for r in h.runs] == [p.name for p in runs]
    assert h.runs[1].machine.startswith("another CPU") and h.runs[1].against is None
    # the third run is compared with the first (its machine's previous run), not the second
    assert h.runs[2].against.base.res.path.name == runs[0].name
    assert len(h.left_out) == 1 and h.left_out[0].startswith("20251231-000000: not comparable")
    assert previous_run(load_results(runs[2])).path.name == runs[0].name
    assert previous_run(load_results(runs[0])) is None


def test_the_published_default_study_s_history_and_its_pages(tmp_path, capsys):
    root = Path(__file__).resolve().parents[1] / "docs" / "data" / "cabs_scaling"
    md, page = tmp_path / "history.md", tmp_path / "history.html"
    assert main([str(root), "--markdown", str(md), "--html", str(page)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "run(s) of cabs_scaling" in out and "left out" in out
    text = md.read_text()
    assert "## Time-to-target" in text and "APEX, 8 env runner(s)" in text
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed (apt-get install -y chromium); required in CI")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        dom = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
             page.as_uri()],
            capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
    assert '<section id="figure">' in dom and "plotly" in dom and dom.count("<tr>") >= 10
    # text reads left-aligned (the runs table, a configuration's name), numbers right
    assert '<td class="l">first run on this machine</td>' in dom
    assert '<td class="l">APEX, 8 env runner(s)</td>' in dom
    assert re.search(r'<td class="">\d+\.\d s \(\d/\d\)</td>', dom)


def test_no_run_is_refused_in_one_line(tmp_path, capfd):
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == EXIT_REFUSED
    assert main([str(tmp_path / "missing")]) == EXIT_REFUSED
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


def test_the_report_compares_with_the_previous_run_on_its_machine_when_there_is_one(tmp_path):
    from analysis.report import build_report

    root = _sweep(tmp_path, [1.0, 1.3], rng=2)
    first, second = sorted(root.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = build_report(load_results(second))
        alone = build_report(load_results(first))
    assert '<section id="previous">' in page and f"Run {first.name}" in page
    assert "This run is slower than that run" in page
    assert '<section id="previous">' not in alone  # a first run draws no empty section


def test_a_previous_run_with_no_configuration_in_common_is_said_in_the_section(tmp_path):
    """The sweep file changed between the runs (other algorithms): section 9 says why it does
    not compare them; it is no failed section and no warning in the summary."""
    from analysis.report import build_report

    root = tmp_path / "synthetic_scaling"
    first = write_synthetic_results(
        root / "20260101-000000", algorithms=("DQN",), env_runners=(1,), seeds=3
    )
    second = write_synthetic_results(
        root / "20260101-000001",
        algorithms=("IMPALA",),
        env_runners=(2,),
        baseline=("IMPALA", 2),
        seeds=3,
        rng_seed=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = build_report(load_results(second))
    assert '<section id="previous">' in page and f"Run {first.name}" in page
    assert "it is not compared with this one" in page and "no configuration in common" in page
    assert "This section could not be drawn" not in page and "CompareError" not in page

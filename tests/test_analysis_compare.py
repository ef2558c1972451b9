"""python -m analysis.compare: known answers on synthetic runs (a 30 % slower run is flagged,
runs of one distribution are not), censored runs, the published default study, refusals and
the HTML page in a real browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest

from analysis.compare import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_REGRESSION,
    FASTER,
    SAME,
    SLOWER,
    compare,
    main,
)
from analysis.load import load_results
from analysis.synthetic import write_synthetic_results

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_STUDY = sorted((ROOT / "docs" / "data" / "cabs_scaling").iterdir())
# the two latest published runs of the README's main command (their revisions differ)
BASE_RUN, NEW_RUN = DEFAULT_STUDY[-2], DEFAULT_STUDY[-1]


def _pair(tmp_path: Path, i: int, slowdown: float = 1.0, **kw) -> tuple[Path, Path]:
    # a comparison reads no Optuna study; writing one is most of the cost of a synthetic run
    kw.setdefault("with_optuna", False)
    a = write_synthetic_results(tmp_path / f"a{i}", rng_seed=100 + i, **kw)
    b = write_synthetic_results(tmp_path / f"b{i}", rng_seed=5000 + i, slowdown=slowdown, **kw)
    return a, b


def _compare(a: Path, b: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lifelines' convergence notes on tiny samples
        return compare(load_results(a), load_results(b))


def test_a_run_30_percent_slower_is_flagged_and_the_command_says_so_by_its_exit_code(tmp_path):
    for i in range(5):
        a, b = _pair(tmp_path, i, slowdown=1.3)
        c = _compare(a, b)
        assert c.verdict == SLOWER and c.regression, (i, c.speedup, c.p_pooled)
        assert 0.6 < c.speedup < 0.9 and c.p_pooled < c.alpha
    assert main([str(a), str(b)]) == EXIT_REGRESSION
    assert main([str(b), str(a)]) == EXIT_OK  # the other way round it is faster
    assert _compare(b, a).verdict == FASTER


def test_runs_of_one_distribution_are_flagged_at_most_once_in_20(tmp_path):
    flagged = 0
    for i in range(20):
        c = _compare(*_pair(tmp_path, i))
        flagged += c.verdict != SAME or bool((c.rows["verdict"] != SAME).any())
        shutil.rmtree(tmp_path / f"a{i}"), shutil.rmtree(tmp_path / f"b{i}")
    assert flagged <= 1


def test_censored_seeds_are_compared_by_the_log_rank_test_not_dropped(tmp_path):
    a, b = _pair(tmp_path, 0, slowdown=1.3, censor=0.34)
    c = _compare(a, b)
    base, new = load_results(a).trials, load_results(b).trials
    assert (base["status"] == "censored").any() and (new["status"] == "censored").any()
    # every seed is in the test: one censored seed of three per configuration
    assert (c.rows["seeds"] == "3/3").all()
    assert c.rows["p_logrank"].between(0, 1).all() and c.rows["p_adjusted"].between(0, 1).all()
    assert c.speedup < 1.0


def test_the_published_default_study_against_itself_finds_no_change(capsys):
    assert main([str(NEW_RUN), str(NEW_RUN)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "NEW is not significantly different from BASE" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "env runner" in line]
    assert len(rows) >= 8 and all(line.rstrip(" |").endswith(SAME) for line in rows)


def test_two_published_runs_of_the_default_study_are_compared_with_intervals(capsys, tmp_path):
    md = tmp_path / "compare.md"
    rc = main([str(BASE_RUN), str(NEW_RUN), "--markdown", str(md)])
    out = capsys.readouterr().out
    assert rc in (EXIT_OK, EXIT_REGRESSION)
    rows = [
        line
        for line in out.splitlines()
        if line.startswith("| ") and ("env runner" in line or "(reference)" in line)
    ]
    # every configuration of the study is in both runs: a scaling curve per algorithm
    assert len(rows) == len(
        {c for c in load_results(NEW_RUN).trials.query("stage == 'confirm'")["config_id"]}
    )
    assert all("x [" in line for line in rows)  # an interval on every row
    assert "git revision" in md.read_text() and "pooled Cox p" in md.read_text()


def _edited(run: Path, tmp_path: Path, key: str, field: str, value) -> Path:
    copy = tmp_path / key / run.name
    shutil.copytree(run, copy)
    spec = json.loads((copy / "spec.json").read_text())
    spec[key][field] = value
    (copy / "spec.json").write_text(json.dumps(spec))
    return copy


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [("target", "value", 1.0), ("budget", "time_s", 10.0), ("evaluation", "episodes", 5)],
)
def test_runs_judged_differently_are_refused_in_one_line(tmp_path, capfd, key, field, value):
    other = _edited(NEW_RUN, tmp_path, key, field, value)
    assert main([str(NEW_RUN), str(other)]) == EXIT_REFUSED
    out, err = capfd.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ") and field in err
    assert f"({key}.{field}: {value!r} against " in err, err  # named as in the sweep file


def test_a_setting_one_run_left_unset_is_called_unset(tmp_path, capfd):
    other = _edited(NEW_RUN, tmp_path, "evaluation", "every_env_steps", 500)
    base = json.loads((NEW_RUN / "spec.json").read_text())["evaluation"]["every_env_steps"]
    assert base is None  # the published run evaluates on a wall-clock cadence
    assert main([str(NEW_RUN), str(other)]) == EXIT_REFUSED
    err = capfd.readouterr().err
    assert "(evaluation.every_env_steps: 500 against unset)" in err and "None" not in err, err


def test_bad_arguments_are_refused_in_one_line(capfd, tmp_path):
    assert main([str(NEW_RUN), str(tmp_path / "missing")]) == EXIT_REFUSED
    assert main([str(NEW_RUN), str(NEW_RUN), "--factor", "0.9"]) == EXIT_REFUSED
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


def test_the_comparison_page_opens_in_headless_chromium(tmp_path, capsys):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed (apt-get install -y chromium); required in CI")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    page = tmp_path / "compare.html"
    main([str(BASE_RUN), str(NEW_RUN), "--html", str(page)])
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        dom = subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    assert '<section id="verdict">' in dom and '<section id="environment">' in dom
    assert dom.count("<tr>") >= 10 and "APEX, 8 env runner(s)" in dom
    # text reads left-aligned (a configuration, a verdict, an environment's value), numbers right
    assert '<td class="l">APEX, 8 env runner(s)</td>' in dom
    assert '<td class="l">no significant change</td>' in dom
    assert '<td class="">3/3</td>' in dom and '<td class="l">2.60.0</td>' in dom


def test_a_ci_step_gates_on_the_regression_exit_code(tmp_path):
    """The command as a CI step runs it: exit 5 on the 30 % slower run, 0 on a run against
    itself (docs/results.md, exit codes)."""
    import sys

    a, b = _pair(tmp_path, 0, slowdown=1.3)
    gate = '"$0" -m analysis.compare "$1" "$2" > /dev/null || { rc=$?; echo "gate: exit $rc"; exit $rc; }'
    for new, code in ((b, EXIT_REGRESSION), (a, EXIT_OK)):
        proc = subprocess.run(
            ["bash", "-c", gate, sys.executable, str(a), str(new)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == code, proc.stderr
        assert proc.stdout == ("gate: exit 5\n" if code else "")


def test_the_headline_tells_a_small_significant_change_from_no_significant_change():
    """A pooled change below the factor is not flagged either way, but the headline (and the
    history's runs table, through pooled_verdict) says whether it was significant ("within
    1.1x") or not ("not significantly different", "no significant change")."""
    from dataclasses import replace

    from analysis.compare import SAME, headline, pooled_verdict

    c = _compare(NEW_RUN, NEW_RUN)
    small = replace(c, speedup=1.05, p_pooled=0.0005)
    assert headline(small).startswith("NEW is within 1.1x of BASE: time-to-target speedup 1.05x")
    noise = replace(c, speedup=1.05, p_pooled=0.3)
    assert (pooled_verdict(small), pooled_verdict(noise)) == ("within 1.1x", SAME)
    assert headline(noise).startswith("NEW is not significantly different from BASE")
    assert headline(replace(c, verdict="faster", speedup=1.3, p_pooled=0.001)).startswith(
        "NEW is faster than BASE"
    )

"""The HTML report: self-contained, robust to partial results, renders in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.report import main, write_report
from analysis.synthetic import write_synthetic_results
from analysis.templates import static_text

ARTIFACTS = Path(__file__).parent / "artifacts"
SECTIONS = ("summary", "curves", "scaling", "cost", "check", "batch", "optuna", "environment")


def _sections_ok(page: str) -> None:
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in page
    assert "could not be drawn" not in page
    assert not re.search(r"<script[^>]*\bsrc=", page)  # plotly.js is inline, no CDN
    assert not re.search(r"<link[^>]*href=[\"']https?:", page)


def _run_printed_commands(page: str, run: Path) -> list[str]:
    """Every ``python -m analysis.X ... RESULTS_DIR ...`` the page prints, run on ``run`` as a
    reader would paste it (in this process: each module's ``main``); each must exit 0."""
    import importlib
    import shlex

    ran = []
    for code in re.findall(r"<code>(python -m analysis\.[^<]*RESULTS_DIR[^<]*)</code>", page):
        module, *args = shlex.split(code.replace("RESULTS_DIR", shlex.quote(str(run))))[2:]
        assert importlib.import_module(module).main(args) == 0, code
        ran.append(" ".join(code.split()[2:4]))
    return ran


@pytest.fixture(scope="module")
def rich_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Censored runs, errors, a trial with no episode, several configurations per N."""
    return write_synthetic_results(
        tmp_path_factory.mktemp("report") / "run",
        seeds=5,
        env_runners=(1, 2, 4, 8),
        censor=0.2,
        errors=1,
        no_episode_errors=1,
        n_lr=2,
        rng_seed=2,
    )


@pytest.fixture(scope="module")
def rich_report(rich_results: Path) -> Path:
    """The report of :func:`rich_results` at its default place, written once: the tests below
    read it, the browser among them (its analysis is the slow part, ~7 s)."""
    return write_report(rich_results)


@pytest.mark.xdist_group("rich_report")  # one worker writes it once
def test_full_report_is_self_contained(rich_results: Path, rich_report: Path) -> None:
    assert rich_report == rich_results / "report.html"
    page = rich_report.read_text()
    _sections_ok(page)
    # 2 curves, TTT, speedup, efficiency, throughput, cost, plan check, optuna history and
    # importances
    assert 'data-figures="10"' in page
    assert page.count('class="plotly-graph-div"') == 10
    # N = 1, 2, 4, 8 measured: the plan check fits on 1, 2, 4 and predicts 8
    assert re.search(
        r"<td[^>]*>8</td><td[^>]*>TTT \(s\)</td><td[^>]*>USL on 1/TTT</td>"
        r"<td[^>]*>1,2,4</td>",
        page,
    )
    assert "Synthetic data" in page and "Kaplan-Meier" in page
    assert "censored trial(s)" in page and "oversubscribed" in page
    assert "Knee of the efficiency curve" in page and "Pareto front" in page
    # the commands it prints to reproduce its sections run as printed
    ran = _run_printed_commands(page, rich_results)
    assert ran == ["analysis.plan fit", "analysis.plan holdout"], ran


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"censor": 1.0}, ["no seed reached the target", "No speedup", "nothing to plan"]),
        ({"algorithms": ("DQN",), "env_runners": (1,)}, ["Only one env runner count"]),
        (
            {"env_runners": (2,), "baseline": ("DQN", 2)},
            ["Only one env runner count", "no scaling fit"],
        ),
        ({"errors": 2, "no_episode_errors": 1}, ["ended in an error", "finished no episode"]),
        ({"with_optuna": False}, ["No Optuna study"]),
        ({"with_progress": False}, ["No learning curves"]),
        ({"seeds": 1}, ["too few seeds for a CI"]),
        (
            {"env_runners": (0, 1, 2), "baseline": ("DQN", 0)},
            ["0 = sampling in the driver", "per-runner efficiency undefined"],
        ),
    ],
    ids=[
        "all-censored",
        "baseline-only",
        "single-n",
        "errors",
        "no-optuna",
        "no-progress",
        "one-seed",
        "driver-baseline",
    ],
)
def test_partial_results_say_what_cannot_be_shown(tmp_path: Path, kwargs, expected) -> None:
    path = write_synthetic_results(
        tmp_path / "run", **{"seeds": 3, "env_runners": (1, 2), **kwargs}
    )
    page = write_report(path).read_text()
    _sections_ok(page)
    for text in expected:
        assert text in page, text


@pytest.mark.parametrize(
    "censor, title, value",
    [(0.0, "Target reached", "12 of 12 trials"), (1.0, "Target not reached", "0 of 12 trials")],
)
def test_without_a_reference_the_card_says_how_many_trials_reached_the_target(
    tmp_path: Path, censor: float, title: str, value: str
) -> None:
    """Seen on sweeps/cartpole_quick.py's report: a card titled "Target not reached" read
    "3 of 4 trials" when three had reached it."""
    path = write_synthetic_results(
        tmp_path / "run", seeds=3, env_runners=(1, 2), censor=censor, with_optuna=False
    )
    page = write_report(path).read_text()
    card = f'<div class="k">{title}</div><div class="v">{value}</div>'
    assert card in page, re.findall(r'<div class="card">.*?</div></div>', page)


def test_the_speedup_card_says_when_the_fastest_configuration_is_the_baseline(
    tmp_path: Path,
) -> None:
    """On sweeps/cartpole_quick.py's report the baseline was the fastest: its card read "1.00x,
    efficiency 1.00 per CPU", a comparison of the baseline with itself."""
    path = write_synthetic_results(
        tmp_path / "run", seeds=3, env_runners=(1, 2), algorithms=("DQN",), with_optuna=False
    )
    slow = 4.0  # every trial not of the baseline 4x slower: the baseline is the fastest
    trials = pd.read_parquet(path / "trials.parquet")
    prog = pd.read_parquet(path / "progress.parquet")
    others = set(trials.trial_id[~trials.is_baseline])
    prog.loc[prog.trial_id.isin(others), "wall_time_s"] *= slow
    prog.to_parquet(path / "progress.parquet")
    trials.loc[trials.trial_id.isin(others), "time_to_target_s"] *= slow
    trials.to_parquet(path / "trials.parquet")
    page = write_report(path).read_text()
    cards = re.findall(r'<div class="card">.*?</div></div>', page)
    speedup = [c for c in cards if "Speedup vs baseline" in c]
    assert speedup and "the baseline itself" in speedup[0], cards


def test_one_env_runner_count_is_named_without_the_references_one_process() -> None:
    """Seen on a user's CartPole sweep: "Only one env runner count was measured (N=0, 1)",
    where 0 was the single-process reference and every algorithm ran at 1."""
    from analysis.report import _one_n

    def best(*rows):
        return pd.DataFrame(rows, columns=["algorithm", "num_env_runners", "is_reference"])

    assert _one_n(best(("DQN", 1, False), ("PPO", 1, False), ("SB3-PPO", 0, True))) == (
        "Only one env runner count was measured (N=1, the single-process reference apart)"
    )
    assert _one_n(best(("DQN", 2, False))) == "Only one env runner count was measured (N=2)"
    assert _one_n(best(("DQN", 1, False), ("PPO", 2, False))) == (
        "Only one env runner count was measured per algorithm (DQN N=1, PPO N=2)"
    )
    assert _one_n(best(("DQN", 1, False), ("DQN", 2, False), ("PPO", 2, False))) is None


def test_report_with_no_trials_yet(tmp_path: Path) -> None:
    path = write_synthetic_results(tmp_path / "run", seeds=1, env_runners=(1,), with_optuna=False)
    trials = pd.read_parquet(path / "trials.parquet")
    trials.iloc[:0].to_parquet(path / "trials.parquet")
    page = write_report(path).read_text()
    _sections_ok(page)
    assert "No trials yet" in page


def test_target_override(tmp_path: Path) -> None:
    path = write_synthetic_results(tmp_path / "run", seeds=2, env_runners=(1, 2), with_optuna=False)
    page = write_report(path, tmp_path / "r.html", target="95%").read_text()
    assert "&ge; 237.5</b>" in page and "the sweep ran with 200" in page


def test_cli(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such results directory" in err
    path = write_synthetic_results(tmp_path / "run", seeds=2, env_runners=(1, 2), with_optuna=False)
    assert main([str(path), "--target", "oops"]) == 2
    assert "--target 'oops'" in capsys.readouterr().err
    out = tmp_path / "sub" / "x.html"
    assert main([str(path), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.is_file()


# ---------------------------------------------------------------------------------------------
# Headless Chromium (Debian's chromium): no console errors, every figure rendered, screenshot.
# ---------------------------------------------------------------------------------------------
def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed (apt-get install -y chromium); required in CI")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return exe


def _run_chromium(exe: str, url: str, *extra: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=15000",
                *extra,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )


def _errors(dom: str) -> str:
    m = re.search(r'<ul id="report-errors"[^>]*>(.*?)</ul>', dom, re.S)
    assert m, "the error hook's element is missing from the DOM"
    return m.group(1)


@pytest.mark.browser
def test_error_hook_catches_errors(tmp_path: Path) -> None:
    """The hook the browser test relies on does report a failing script (the test can fail)."""
    exe = _chromium()
    page = tmp_path / "broken.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><script>\n{static_text('error_hook.js')}</script></head><body>"
        '<ul id="report-errors" hidden></ul>'
        "<script>console.error('bad data'); undefinedFunction();</script>"
        "</body></html>"
    )
    dom = _run_chromium(exe, page.as_uri(), "--dump-dom").stdout
    errors = _errors(dom)
    assert "bad data" in errors and "undefinedFunction" in errors


@pytest.mark.xdist_group("rich_report")  # one worker writes it once
@pytest.mark.browser
def test_report_renders_in_headless_chromium(rich_report: Path) -> None:
    exe = _chromium()
    report = rich_report
    proc = _run_chromium(exe, report.as_uri(), "--dump-dom")
    dom = proc.stdout
    # chromium's exit status and its log's tail, in every failure's message
    said = f"chromium exited {proc.returncode}; its log ends:\n{proc.stderr[-2000:]}"
    assert "<body" in dom, said
    assert _errors(dom).strip() == "", _errors(dom)
    n = int(re.search(r'<body[^>]*data-figures="(\d+)"', dom).group(1))
    parts = re.split(r'class="plotly-graph-div', dom)[1:]
    assert n == 10 and len(parts) == n, (n, len(parts), said)
    unrendered = [i + 1 for i, part in enumerate(parts) if 'class="main-svg"' not in part]
    assert not unrendered, f"figures {unrendered} did not render; {said}"
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report_synthetic.png"
    shot.unlink(missing_ok=True)
    proc = _run_chromium(
        exe, report.as_uri(), "--hide-scrollbars", "--window-size=1400,9000", f"--screenshot={shot}"
    )
    assert shot.is_file() and shot.stat().st_size > 100_000, (
        f"chromium exited {proc.returncode}; its log ends:\n{proc.stderr[-2000:]}"
    )
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1400, 9000)


def test_study_summary_names_the_metric_the_reference_and_every_absolute_speedup(
    tmp_path: Path,
) -> None:
    """On the committed Cabs study (docs/data): the summary says which metric was compared,
    the single-process reference's TTT, the absolute speedup of every configuration, and, in
    plain words, that no configuration beats the reference."""
    src = Path(__file__).parents[1] / "docs" / "data" / "cabs_scaling" / "20261122-203334"
    run = tmp_path / "run"
    shutil.copytree(src, run)
    page = write_report(run).read_text()
    _sections_ok(page)
    assert re.search(r'id="target-metric">greedy evaluation return \(mean of 20 episodes', page)
    assert re.search(r"Single-process reference.*?SB3-DQN.*?TTT 2\.0 s", page, re.S)
    # the card names the fastest configuration as every table does
    assert re.search(r"Fastest configuration.*?SB3-DQN, one process \(reference\)<", page, re.S)
    verdict = re.search(r'id="reference-verdict">([^<]*)<', page).group(1)
    assert verdict.startswith(
        "No configuration of the sweep beats the single-process "
        "reference (SB3-DQN) on this hardware"
    ), verdict
    table = re.search(r'id="all-configurations">(.*?)</details>', page, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
    assert len(rows) == 8  # 6 sampled configurations + baseline + reference
    for row in rows:
        # a cell's text (a value and its interval are spans that do not break inside)
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if "(reference)" in cells[0]:
            continue
        # every one slower than the reference, in the cell the Markdown tables show too
        assert re.match(r"0\.\d\d× \[", cells[6]), cells
    # the commands it prints to reproduce its sections run as printed
    ran = _run_printed_commands(page, run)
    assert ran == ["analysis.plan fit", "analysis.plan break-even"], ran


def test_the_report_says_how_many_configurations_each_algorithm_got():
    """And names a declared algorithm the search never measured."""
    from types import SimpleNamespace

    import pandas as pd

    from analysis.report import _configurations_per_algorithm

    trials = pd.DataFrame(
        {
            "algorithm": ["DQN", "DQN", "DQN", "APEX", "APEX", "SB3-DQN"],
            "config_id": ["baseline", "DQN-a", "DQN-b", "APEX-a", "APEX-a", "reference"],
            "is_baseline": [True, False, False, False, False, False],
            "is_reference": [False] * 5 + [True],
        }
    )
    spec = {"algorithms": ["DQN", "APEX", "IMPALA"], "search": {"sampler": "tpe"}}
    said = _configurations_per_algorithm(
        SimpleNamespace(res=SimpleNamespace(trials=trials, spec=spec))
    )
    assert said == {
        "counts": "DQN 2, APEX 1, IMPALA 0",
        "missing": "IMPALA",
        "defaults_first": True,
    }
    # as the summary's template lays it out
    from analysis.templates import render

    html = render(
        "report/summary.html.j2",
        stage_note=None,
        target=SimpleNamespace(
            metric="evaluation", value=1.0, source="the sweep", overridden=False
        ),
        metric="evaluation return",
        counts=dict.fromkeys(("trials", "configs", "reached", "censored", "stalled"), 0)
        | {"other_errors": 0},
        latency_ms=None,
        cpu_ms=None,
        empty=False,
        cards=[],
        verdict=None,
        eval_share=None,
        per_algorithm=said,
        best={"headers": ["algorithm"], "rows": []},
        all={"headers": ["algorithm"], "rows": []},
        stalled=[],
        search=[],
        warnings=[],
    )
    assert "per algorithm (baseline and reference apart): DQN 2, APEX 1, IMPALA 0." in html
    assert "<strong>Not measured: IMPALA</strong>" in html and "its defaults, queued" in html


def test_a_fit_exactly_determined_by_its_points_draws_no_line():
    """Two distinct N for Amdahl's two parameters: the fit passes through them whatever the
    truth, so it is neither drawn nor called a model; three N draw it, a poor one flagged."""
    import numpy as np

    from analysis.figures import fit_line_name, untestable_fit_note
    from analysis.scaling import fit_scaling

    two = fit_scaling(np.array([1, 1, 2, 2]), np.array([100.0, 110.0, 180.0, 170.0]))
    assert two["amdahl"].ok and fit_line_name("DQN", two["amdahl"]) is None
    note = untestable_fit_note([("DQN", "env steps/s", two["amdahl"])])
    assert "DQN (2 env runner counts)" in note and "at least 3 env runner counts" in note
    three = fit_scaling(np.array([1, 2, 4]), np.array([100.0, 190.0, 350.0]))
    assert fit_line_name("DQN", three["amdahl"]) == "DQN Amdahl fit"
    assert fit_line_name("DQN", three["usl"]) is None  # USL: 3 parameters, 3 N
    noisy = fit_scaling(np.array([1, 2, 4, 1, 2, 4]), np.array([100, 40, 100, 30, 160, 35.0]))
    assert "poor fit" in (fit_line_name("DQN", noisy["amdahl"]) or "")


def test_a_trial_with_one_evaluation_is_drawn_as_a_dot(tmp_path: Path) -> None:
    """Seen on sweeps/cartpole_quick.py's report: a trial that reached the target at its first
    evaluation has one point, and a line through one point draws nothing; three of its four
    trials were missing from the learning curves. Such a trial is a dot (open when censored);
    a trial with more points stays a line."""
    from analysis.figures import learning_curve_figure
    from analysis.load import load_results
    from analysis.study import analyse

    path = write_synthetic_results(tmp_path / "run", seeds=2, env_runners=(1, 2), censor=0.5)
    prog = pd.read_parquet(path / "progress.parquet")
    trials = pd.read_parquet(path / "trials.parquet")
    reached = trials[trials.status == "reached"].trial_id.iloc[0]
    censored = trials[trials.status == "censored"].trial_id.iloc[0]
    target = analyse(load_results(path)).target
    crossed = prog[(prog.trial_id == reached) & (prog[target.column] >= target.value)]
    one = prog.trial_id.isin([reached, censored])
    prog = pd.concat([prog[~one], crossed.head(1), prog[prog.trial_id == censored].head(1)])
    prog.to_parquet(path / "progress.parquet")
    for x in ("wall_time_s", "env_steps"):
        fig = learning_curve_figure(analyse(load_results(path)), x)
        drawn = {t.hovertemplate.split("<br>")[0]: t for t in fig.data if t.hovertemplate}
        assert drawn[reached].mode == "markers" and drawn[reached].marker.symbol == "circle"
        assert drawn[censored].mode == "markers"
        assert drawn[censored].marker.symbol == "circle-open"
        others = [t for tid, t in drawn.items() if tid not in (reached, censored)]
        assert others and all(t.mode == "lines" for t in others)


def test_a_speedup_only_bounded_is_a_triangle_at_its_bound(analysed_runs) -> None:
    """Seen on a user's CartPole sweep and on the published latency study: a configuration
    whose median was not reached has S = 0 (only "S < bound" is known), which a log axis
    cannot draw, so its legend entry stood with no point. It is a downward triangle at its
    bound; measured speedups stay circles with their intervals."""
    from analysis.figures import speedup_figures

    study = analysed_runs(
        Path(__file__).parents[1] / "docs/data/cabs_latency_scaling/20261123-023125"
    )
    sp = study.configs
    bounded = sp[(sp["speedup"] == 0) & np.isfinite(sp["speedup_upper_bound"])]
    assert len(bounded), "the latency study has APEX at 1 and 16 env runners unreached"
    fig = speedup_figures(study).speedup
    triangles = [t for t in fig.data if t.marker and t.marker.symbol == "triangle-down"]
    assert [t.name for t in triangles] == ["APEX: median not reached (S < bound)"]
    drawn = dict(zip(triangles[0].x, triangles[0].y, strict=True))
    apex = bounded[bounded["algorithm"] == "APEX"]
    for n, bound in zip(apex["num_env_runners"], apex["speedup_upper_bound"], strict=True):
        assert drawn.get(n) == pytest.approx(bound), (n, drawn)
    measured = [t for t in fig.data if t.name and t.name.endswith(" measured")]
    assert measured and all((np.asarray(t.y, float) > 0).all() for t in measured)


def test_the_plan_check_figure_labels_its_log_axis_in_1_2_5_steps(analysed_runs):
    """On the published Cabs study (TTT 5-45 s): the y ticks are 5, 10, 20 s, never plotly's
    own log ticks, which label 20, 30 and 40 s as "2", "3" and "4"."""
    from analysis.figures import plan_check_figure

    study = analysed_runs(Path(__file__).parents[1] / "docs/data/cabs_scaling/20261128-001042")
    y = plan_check_figure(study).layout.yaxis
    assert y.type == "log" and y.tickvals, y
    assert {"5", "10", "20"} <= set(y.ticktext) and set(t[0] for t in y.ticktext) <= {"1", "2", "5"}


def test_a_fits_r2_is_spelled_alike_in_its_sentence_legend_and_table_cell():
    """A slowdown that Amdahl can only meet with a flat line (alpha = 1) leaves R² a rounding
    error below zero (about -2e-16): it reads 0.000, as every R², never -0.000 or -2.22e-16."""
    import numpy as np

    from analysis.figures import fit_line_name
    from analysis.fmt import fmt_r2
    from analysis.scaling import fit_scaling

    n = np.array([1, 1, 2, 2, 4, 4, 8, 8])
    fits = fit_scaling(n, 1 / np.array([5.8, 6.0, 8.0, 8.4, 15.0, 14.0, 30.0, 29.0]))
    flat, usl = fits["amdahl"], fits["usl"]
    assert flat.alpha == pytest.approx(1) and -1e-9 < flat.r2 <= 0
    assert fmt_r2(flat.r2) == "0.000" and fmt_r2(usl.r2) == f"{usl.r2:.3f}"
    assert "R2=0.000," in flat.describe()
    assert fit_line_name("APEX", flat) == "APEX Amdahl fit (R² 0.000: poor fit)"
    assert fmt_r2(float("nan")) == fmt_r2(None) == "-" and fmt_r2(1.0) == "1.000"


def test_a_relative_error_that_rounds_to_zero_reads_0_percent():
    """Every model check (plan check, batch size, break-even, transfer) spells its errors
    through one function: signed, and 0% with no sign when it rounds to zero."""
    from analysis.fmt import fmt_error

    got = [fmt_error(x) for x in (0.12, -0.031, 0.004, -0.0049, -0.006)]
    assert got == ["+12%", "-3%", "0%", "0%", "-1%"]
    assert fmt_error(float("nan")) == fmt_error(None) == fmt_error(float("inf")) == "n/a"


@pytest.mark.xdist_group("rich_report")  # one worker writes it once
def test_a_long_text_cell_keeps_a_readable_width(rich_report: Path) -> None:
    """Seen on a user's CartPole sweep: in the per-algorithm table, wider than the page, the
    browser squeezed the notes column to its longest word and one row grew 300 px tall. A
    cell of long text is marked and given a minimum width; a short cell is not."""
    import html as html_lib

    page = rich_report.read_text()
    cells = re.findall(r'<td class="([^"]*)">(.*?)</td>', page, re.S)
    text = [(cls.split(), html_lib.unescape(re.sub(r"<[^>]+>", "", c))) for cls, c in cells]
    long_cells = [cls for cls, t in text if len(t) > 80]
    assert long_cells and all("long" in cls for cls in long_cells)
    assert not any("long" in cls for cls, t in text if len(t) <= 40)
    assert re.search(r"td\.long\s*\{\s*min-width:\s*\d+em", page)


def test_the_plan_section_answers_first_and_keeps_the_rest_in_details(rich_report: Path) -> None:
    """The plan section opens with one sentence (measured and planned TTT, the start-up
    assumption named), then the commands and the assumptions table; every other line sits in a
    collapsed <details>. The summary card splits its planned time the same way."""
    page = rich_report.read_text()
    cost = re.search(r'<section id="cost">(.*?)</section>', page, re.S).group(1)
    first = re.match(r'<h2>[^<]*</h2><p id="plan-answer"><b>([^<]*)</b></p>', cost)
    assert first, cost[:500]
    assert first.group(1).startswith("Fastest run to the target: ")
    assert "+ 5.0 min start-up assumed for azure-ml" in first.group(1), first.group(1)
    assert re.search(
        r"planned TTT [\d.]+ min = [\d.]+ s \[[\d.]+ s, [\d.]+ s\] (measured here|predicted by)",
        first.group(1),
    ), first.group(1)
    order = [
        cost.index(k)
        for k in (
            'id="plan-commands"',
            'id="plan-assumptions"',
            'class="fig"',
            '<details id="plan-details">',
        )
    ]
    assert order == sorted(order)
    assumptions = re.search(r'id="plan-assumptions">(.*?)</div>', cost, re.S).group(1)
    for name in (
        "Start-up and billing",
        "vCPU speed",
        "CPUs and memory per run",
        "Extrapolated",
        "Prices",
    ):
        assert f">{name}</td>" in assumptions
    details = cost.split('<details id="plan-details">')[1]
    assert '<details id="plan-details" open' not in cost  # collapsed
    assert "Knee of the efficiency curve" in details and "Scaling model for" in details
    card = re.search(
        r'Recommended \(cheapest run\)</div><div class="v">[^<]*</div>'
        r'<div class="s">([^<]*)</div>',
        page,
    ).group(1)
    assert re.search(r"[\d.]+ min planned \([\d.]+ s TTT \+ 5\.0 min assumed start-up\)", card), (
        card
    )


def test_a_cell_breaks_between_a_value_and_its_interval_never_inside_a_number_and_its_unit():
    """The report's table cells: a value and its interval as fmt_interval writes them become
    non-breaking pieces whose text is the cell's; any other cell stays as it is, escaped."""
    import html

    from analysis.templates import cell

    out = str(cell("6.0 s [5.8 s, 7.4 s]"))
    pieces = re.findall(r'<span class="nw">(.*?)</span>', out)
    assert pieces == ["6.0 s", "[5.8 s,", "7.4 s]"]
    assert html.unescape(re.sub(r"<[^>]+>", "", out)) == "6.0 s [5.8 s, 7.4 s]"
    assert re.findall(r'"nw">(.*?)<', str(cell("93.4 [31.0, never] ms"))) == [
        "93.4",
        "[31.0,",
        "never]",
    ]
    assert "&lt;b&gt;" in str(cell("<b> [1, 2]"))
    assert cell("n/a (not the baseline's algorithm)") == "n/a (not the baseline's algorithm)"


def test_the_pieces_of_a_cell_are_read_back_from_what_fmt_ci_writes():
    """analysis.fmt owns the interval's spelling both ways: whatever fmt_ci writes (seconds,
    counts, speedups, an unbounded or missing end), interval_pieces splits into the value and
    the interval's ends, and the pieces joined by spaces are the text again."""
    import math

    from analysis.fmt import fmt_ci, fmt_count, fmt_s, interval_pieces

    cases = [
        fmt_ci(6.0, 5.8, 7.4, fmt_s),
        fmt_ci(12_345, 9_000, math.inf, fmt_count),
        fmt_ci(1.3, math.nan, 2.0, lambda x: f"{x:.2f}x"),
        fmt_ci(125.0, 61.0, 3_601.0, fmt_s) + " (3 of 5 reached)",
    ]
    for text in cases:
        split = interval_pieces(text)
        assert split is not None, text
        pieces, tail = split
        assert len(pieces) == 3, (text, pieces)
        assert " ".join(pieces) + tail == text
        assert pieces[1].startswith("[") and pieces[2].endswith("]")
    assert interval_pieces(fmt_ci(math.nan, 1.0, 2.0, fmt_s)) is None  # "-": no interval
    assert interval_pieces("n/a (none reached)") is None

"""analysis.publish: Markdown tables from the analysis' own numbers, real PNG images, CLI errors."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from analysis.fmt import fmt_s
from analysis.load import load_results
from analysis.metrics import trial_metrics
from analysis.plan import make_plan, plan_answer, plan_text
from analysis.publish import (
    DEFAULT_FIGURES,
    ExportError,
    build_figures,
    export_png,
    find_browser,
    main,
    publish,
)
from analysis.report import FIGURE_HEIGHT, analyse
from analysis.stats import summarize_configs
from analysis.synthetic import write_synthetic_results


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two algorithms x N in {1, 2, 4}, 3 seeds, one censored seed per configuration."""
    return write_synthetic_results(
        tmp_path_factory.mktemp("publish") / "run",
        seeds=3,
        env_runners=(1, 2, 4),
        censor=0.34,
        rng_seed=3,
        machine_cpus=4,
        with_optuna=False,
    )


def _table(md: str) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of the per-configuration table (the first table after its heading)."""
    lines = md.split("## Results per configuration", 1)[1].splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| "))
    block = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        block.append(ln)
    split = [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in block]
    header, sep, body = split[0], split[1], split[2:]
    assert all(set(c) <= set("-:") for c in sep)
    assert all(len(r) == len(header) for r in body)
    return header, [dict(zip(header, r, strict=True)) for r in body]


def _browser() -> str:
    try:
        return find_browser()
    except ExportError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{exc}; required in CI")
        pytest.skip(str(exc))


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------
def test_table_has_one_row_per_configuration_with_the_analysis_numbers(
    study: Path, tmp_path: Path
) -> None:
    done = publish(study, tmp_path / "docs", name="cabs", figures=())
    assert done.markdown_path == tmp_path / "docs" / "cabs_tables.md"
    md = done.markdown_path.read_text()
    assert md == done.markdown
    header, rows = _table(md)
    trials = pd.read_parquet(study / "trials.parquet")
    assert len(rows) == trials["config_id"].nunique() == 6
    for col in (
        "algorithm",
        "env runners",
        "batch",
        "seeds",
        "success",
        "TTT [95% CI]",
        "speedup [95% CI]",
        "efficiency per env runner",
        "efficiency per CPU",
        "env steps/s",
        "steps-to-target",
        "oversubscribed",
    ):
        assert col in header
    assert sum(r["algorithm"].endswith("(baseline)") for r in rows) == 1

    # the numbers are the analysis' own (recomputed here with the library functions)
    tm, _, _ = trial_metrics(load_results(study))
    summary = summarize_configs(tm)
    by_key = {(r["algorithm"].removesuffix(" (baseline)"), int(r["env runners"])): r for r in rows}
    for _, c in summary.iterrows():
        r = by_key[(c["algorithm"], c["num_env_runners"])]
        n = c["n_reached"] + c["n_censored"]
        assert r["success"].startswith(f"{c['n_reached']}/{n} ")
        assert r["seeds"] == "3"
        if math.isfinite(c["ttt_s"]):
            prefix = "KM " if c["estimator"] == "KM median" else ""
            assert r["TTT [95% CI]"].startswith(f"{prefix}{fmt_s(c['ttt_s'])}")
        else:
            assert r["TTT [95% CI]"].startswith("> ")
        assert r["oversubscribed"] == ("**yes**" if c["oversubscribed"] else "no")
    assert by_key[("DQN", 4)]["oversubscribed"] == "**yes**"  # 5 CPUs on a 4-CPU node

    # what was run, and the plan's own recommendation text
    for text in (
        "## What was run",
        "`episode_return_mean` ≥ 200 = 0.8 × the optimal return 250",
        "2.0 min wall-clock",
        "synthetic CPU, 4 CPUs",
        "**Git revision**",
        "total wall-clock",
        "DQN, 1 env runner(s)",
        "3 seed(s) each",
        "Synthetic data",
    ):
        assert text in md, text
    plan = make_plan(tm, summary, cpu_model="synthetic CPU", progress=load_results(study).progress)
    for line in plan_text(plan):
        assert f"- {line}" in md, line
    answer = plan_answer(plan)
    assert f"## Recommendation (capacity plan)\n\n{answer.sentence}\n" in md
    for name, value in answer.assumptions:
        assert f"| {name} | {value} |" in md, name
    assert "## Figures" not in md  # none asked for


def test_missing_things_are_said_not_hidden(tmp_path: Path) -> None:
    path = write_synthetic_results(
        tmp_path / "two", seeds=2, env_runners=(1, 2), censor=0.5, rng_seed=1, with_optuna=False
    )
    md = publish(path, tmp_path / "out2", figures=()).markdown
    _, rows = _table(md)
    assert len(rows) == 4
    assert all(
        "[CI n/a (2 seeds)]" in r["TTT [95% CI]"] or r["TTT [95% CI]"].startswith("> ")
        for r in rows
    )
    assert any(r["TTT [95% CI]"].startswith("KM ") for r in rows)
    assert "Kaplan-Meier median, no IQM" in md

    path = write_synthetic_results(
        tmp_path / "cens", seeds=3, env_runners=(1, 2), censor=1.0, with_optuna=False
    )
    done = publish(path, tmp_path / "out3", figures=("speedup", "efficiency"))
    _, rows = _table(done.markdown)
    assert all(r["success"].startswith("0/3") for r in rows)
    assert all("(median not reached)" in r["TTT [95% CI]"] for r in rows)
    assert all(r["steps-to-target"] == "n/a (none reached)" for r in rows)
    assert "No recommendation:\n\n" in done.markdown
    assert "- nothing to plan: no configuration reached the target" in done.markdown
    assert set(done.unavailable) == {"speedup", "efficiency"} and not done.figures
    assert (
        "not drawn. No speedup curve: the baseline (DQN, 1 env runner(s)) did not reach"
        in done.markdown
    )


def test_target_override_and_driver_baseline(tmp_path: Path) -> None:
    path = write_synthetic_results(
        tmp_path / "run", seeds=3, env_runners=(0, 1, 2), baseline=("DQN", 0), with_optuna=False
    )
    md = publish(path, tmp_path / "o", figures=(), target="95%").markdown
    assert "≥ 237.5" in md and "overridden with --target (the sweep ran with 200" in md
    _, rows = _table(md)
    assert len(rows) == 6
    # parallel efficiency only within the baseline's algorithm (DQN); others say why not
    for r in rows:
        want = (
            "n/a (baseline samples in the driver)"
            if r["algorithm"].startswith("DQN")
            else "n/a (not the baseline's algorithm)"
        )
        assert r["efficiency per env runner"] == want, r


# ---------------------------------------------------------------------------------------------
# PNG figures
# ---------------------------------------------------------------------------------------------
def _check_png(path: Path, size: tuple[int, int]) -> None:
    with Image.open(path) as im:
        assert im.format == "PNG"
        assert im.size == size
        rgb = np.asarray(im.convert("RGB"), dtype=float)
    assert rgb.std() > 10, f"{path.name} looks blank (pixel std {rgb.std():.1f})"
    nonwhite = (rgb.min(axis=-1) < 200).mean()
    assert 0.01 < nonwhite < 0.6, f"{path.name}: {nonwhite:.1%} non-white pixels"
    coloured = (rgb.max(axis=-1) - rgb.min(axis=-1) > 80).sum()  # traces, not only axes/text
    assert coloured > 500, f"{path.name}: only {coloured} coloured pixels"


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_pngs_are_real_images_linked_from_the_markdown(study: Path, tmp_path: Path) -> None:
    _browser()
    done = publish(study, tmp_path / "docs", name="cabs", width=800, scale=1)
    assert done.export_error is None and done.engine == "kaleido"
    assert list(done.figures) == list(DEFAULT_FIGURES)
    heights = {
        "learning_curves": FIGURE_HEIGHT["learning_curves"],
        "speedup": FIGURE_HEIGHT["speedup"],
        "ttt_vs_env_runners": FIGURE_HEIGHT["ttt"],
    }
    for name, path in done.figures.items():
        assert path == tmp_path / "docs" / "figures" / f"cabs_{name}.png"
        _check_png(path, (800, heights[name]))
        assert f"](figures/cabs_{name}.png)" in done.markdown


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_the_chromium_engine_is_a_deprecated_alias_of_kaleido(study: Path, tmp_path: Path) -> None:
    """One PNG engine: ``engine="chromium"`` (the screenshot engine there was beside kaleido)
    still writes the figure, with kaleido, and warns; an unknown engine is refused."""
    _browser()
    figs, _ = build_figures(analyse(load_results(study)), ["ttt_vs_env_runners"])
    fig, height = figs["ttt_vs_env_runners"]
    a, b = tmp_path / "k.png", tmp_path / "c.png"
    assert export_png({a: (fig, height)}, width=700, scale=1, engine="kaleido") == "kaleido"
    with pytest.warns(FutureWarning, match="engine 'chromium' is deprecated"):
        assert export_png({b: (fig, height)}, width=700, scale=1, engine="chromium") == "kaleido"
    _check_png(a, (700, height))
    _check_png(b, (700, height))
    with pytest.raises(ValueError, match="expected auto or kaleido"):
        export_png({a: (fig, height)}, engine="screenshot")


def test_export_failure_still_writes_the_tables(
    study: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-browser"))
    done = publish(study, tmp_path / "d", figures=("ttt_vs_env_runners",))
    assert (
        done.export_error == f"BROWSER_PATH={str(tmp_path / 'no-such-browser')!r}: not "
        "an executable file"
    )
    assert not done.figures and done.markdown_path.is_file()
    assert "not drawn. PNG export failed: BROWSER_PATH=" in done.markdown
    rc = main([str(study), "--out", str(tmp_path / "e"), "--figures", "ttt_vs_env_runners"])
    assert rc == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(
        "python -m analysis.publish: error: PNG export failed: BROWSER_PATH="
    )


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, message",
    [
        (["{missing}", "--out", "{tmp}"], "no such results directory"),
        (["{study}", "--out", "{tmp}", "--target", "oops"], "--target 'oops'"),
        (["{study}", "--out", "{tmp}", "--figures", "pie_chart"], "--figures 'pie_chart'"),
        (["{study}", "--out", "{tmp}", "--name", "../escape"], "--name '../escape'"),
        (["{study}", "--out", "{file}"], "exists and is not a directory"),
        (["{study}", "--out", "{tmp}", "--engine", "gimp"], "argument --engine"),
        (["{study}", "--out", "{tmp}", "--scale", "0"], "--scale 0"),
        (["{study}"], "the following arguments are required: --out"),
    ],
    ids=[
        "missing-dir",
        "bad-target",
        "bad-figure",
        "bad-name",
        "out-is-file",
        "bad-engine",
        "bad-scale",
        "no-out",
    ],
)
def test_cli_bad_input_is_one_line_exit_2(
    study: Path, tmp_path: Path, capsys, args, message
) -> None:
    (tmp_path / "file").write_text("x")
    subst = {
        "missing": tmp_path / "missing",
        "tmp": tmp_path / "out",
        "study": study,
        "file": tmp_path / "file",
    }
    argv = [a.format(**{k: str(v) for k, v in subst.items()}) for a in args]
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own errors (one line, see _Parser.error)
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_cli_prints_the_markdown(study: Path, tmp_path: Path, capsys) -> None:
    assert main([str(study), "--out", str(tmp_path / "docs"), "--no-figures"]) == 0
    out, err = capsys.readouterr()
    path = tmp_path / "docs" / "synthetic_scaling_tables.md"
    assert out == path.read_text()
    assert out.startswith("<!-- Generated by `python -m analysis.publish`")
    assert f"wrote {path}" in err


DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("tables", sorted(p.name for p in DOCS.glob("*_tables.md")))
def test_docs_tables_are_what_publish_generates_today(tables: str, analysed_runs) -> None:
    """Every docs/*_tables.md equals analysis.publish's Markdown of its recorded run (named in
    its first line) with the figures it links: generated, never hand-edited or stale. On a
    mismatch, rerun the publish command its page prints."""
    import re

    from analysis.publish import markdown_tables

    text = (DOCS / tables).read_text(encoding="utf-8")
    run = re.search(r"from run (\S+)/(\S+); regenerate", text.splitlines()[0])
    assert run, text.splitlines()[0]
    stem = tables.removesuffix("_tables.md")
    linked = re.findall(rf"\]\(figures/{re.escape(stem)}_(\w+)\.png\)", text)
    figures = {n: f"figures/{stem}_{n}.png" for n in linked}
    assert all((DOCS / p).is_file() for p in figures.values()), figures
    data = analysed_runs(DOCS / "data" / run[1] / run[2])
    assert markdown_tables(data, figures) == text

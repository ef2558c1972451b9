"""Each quantity of a study is computed or spelled in one module of analysis/ (its owner); the
others read it from :class:`analysis.study.Study` or call the owner.

A copy that drifts is how two pages come to disagree (a stalled trial counted apart in one
table and folded into the errors in another), so the check is textual: it fails on the
spelling, wherever it appears outside its owner.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: quantity -> (owner module, patterns that spell or compute it by hand)
OWNERS: dict[str, tuple[str, tuple[str, ...]]] = {
    # seeds that finished (reached or censored): analysis.stats.summarize_configs'
    # ``finished_seeds``
    "finished seeds": (
        "analysis/stats.py",
        (r"""n_reached["']\]\s*\+""", r"""\[\s*["']n_reached["'],\s*["']n_censored["']\s*\]"""),
    ),
    # the per-configuration join of statistics and speedups: analysis.stats.config_table
    "configuration table": ("analysis/stats.py", (r"""speed\.set_index\(\s*["']config_id""",)),
    # a configuration's name and its (baseline)/(reference) mark: analysis.fmt.config_name
    "configuration name": (
        "analysis/fmt.py",
        (r"""["'] \((baseline|reference)\)["']""", r"""\}, \{[^{}]*\} env runner\(s\)"""),
    ),
    # a configuration named in a sentence ("IMPALA with 16 env runners", "SB3-DQN in one
    # process"): analysis.fmt.config_phrase
    "configuration in a sentence": ("analysis/fmt.py", (r"""\} with \{[^{}]*\} env runner""",)),
    # one seed-level bootstrap draw: analysis.stats.draw_seeds (analysis.parts.resample_seeds
    # for data frames); the speedup interval's vectorised draw is stats' own
    "seed draw": ("analysis/stats.py", (r"rng\.integers\(0, len\(\w+\), size=len\(",)),
    # the batch-size check's table cells: analysis.batch_size.check_table
    "batch-size check cells": (
        "analysis/batch_size.py",
        (r"""(updates|steps|ttt)_low["']\](:|, \d)""",),  # formatted, as a cell is
    ),
    # the "reached/finished" cell: analysis.fmt.fmt_reached
    "reached cell": ("analysis/fmt.py", (r"""n_reached["']\]\)?\}/\{""",)),
    # a configuration's text cells (efficiency, success, steps-to-target ...):
    # analysis.fmt.config_cells, which every table lays out
    "configuration cells": (
        "analysis/fmt.py",
        (r"fmt_efficiency\(", r"""success_rate["']\]:\.0%""", r"n/a \(none reached\)"),
    ),
    # a value with its 95 % interval, " [lo, hi]": analysis.fmt.fmt_interval / fmt_ci
    "interval": (
        "analysis/fmt.py",
        # a value's brackets by hand: "{v} [{lo}, {hi}]", "{v:.2f}x [..", " s [..", or split
        # over lines ("[{lo}, " at a line's end); or read back by a regex of its brackets
        # (analysis.fmt.interval_pieces)
        (
            r"""(\}|\}x| s) \[\{[^{}]*\}, (\{[^{}]*\}\]|"$)""",
            r"""[\[(]95% \{""",
            r"\\\[",
        ),
    ),
    # a fit's R² (three decimals, never -0.000 or -2.22e-16): analysis.fmt.fmt_r2
    "R²": ("analysis/fmt.py", (r"\br2:\.\d", r"fmt_num\([^()]*\br2\b")),
    # a prediction's relative error (+12%, 0% never +0% or -0%): analysis.fmt.fmt_error
    "relative error": ("analysis/fmt.py", (r":\+\.0%",)),
    # each N's seeds behind a TTT-model bootstrap: analysis.stats.trial_durations
    "TTT seed samples": ("analysis/stats.py", (r"""\bt\[["']duration_s["']\]\.to_numpy""",)),
}


def _spellings(patterns: tuple[str, ...], owner: str) -> list[str]:
    found = []
    regexes = [re.compile(p) for p in patterns]
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == owner:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(r.search(line) for r in regexes):
                found.append(f"{rel}:{i}: {line.strip()}")
    return found


@pytest.mark.parametrize("quantity", sorted(OWNERS))
def test_a_quantity_is_spelled_by_its_owner_only(quantity):
    owner, patterns = OWNERS[quantity]
    found = _spellings(patterns, owner)
    assert not found, f"{quantity}: read it from {owner}'s function, not by hand:\n" + "\n".join(
        found
    )


def test_each_owner_spells_what_the_others_may_not():
    """The patterns are not vacuous: each matches in its owner (or its owner's output)."""
    for quantity, (owner, patterns) in OWNERS.items():
        text = (ROOT / owner).read_text(encoding="utf-8")
        hit = any(re.search(p, text) for p in patterns)
        if quantity == "configuration table":  # the owner joins by index, not by this spelling
            hit = "def config_table" in text
        if quantity == "finished seeds":
            hit = '"finished_seeds"' in text
        if quantity == "seed draw":
            hit = "def draw_seeds" in text
        if quantity == "configuration cells":
            hit = hit and "def config_cells" in text
        if quantity == "batch-size check cells":  # the owner formats each quantity in a loop
            hit = "def check_table" in text
        if quantity == "relative error":
            hit = hit and "def fmt_error" in text
        if quantity == "R²":
            hit = "def fmt_r2" in text
        if quantity == "interval":  # the owner writes the brackets apart from the value
            hit = "def fmt_interval" in text and "def interval_pieces" in text
        assert hit, quantity
    assert re.search(OWNERS["finished seeds"][1][0], """int(c["n_reached"] + c["n_censored"])""")
    assert re.search(OWNERS["configuration name"][1][0], """+ (" (baseline)" if b else "")""")
    assert re.search(OWNERS["interval"][1][2], r"""re.compile(r"(\S+) (\[[^\[\]]*\])")""")
    assert re.search(OWNERS["configuration name"][1][1], """f"{a}, {n} env runner(s)\"""")
    assert not re.search(OWNERS["configuration name"][1][1], """f"{a} with {n} env runner(s) ok""")
    assert re.search(OWNERS["reached cell"][1][0], """f"{c['n_reached']}/{n}\"""")
    assert re.search(OWNERS["batch-size check cells"][1][0], """f"{r['ttt_low']:,.1f}\"""")
    assert re.search(OWNERS["R²"][1][0], """f"; R2={self.r2:.3f}\"""")
    assert re.search(OWNERS["R²"][1][1], """fmt_num(f.r2, 3),""")
    interval = OWNERS["interval"][1]
    assert re.search(interval[0], """f"{fmt_s(t)} [{fmt_s(lo)}, {fmt_s(hi)}]\"""")
    assert re.search(interval[1], """f"TTT {t} [95% {fmt_s(lo)}, {fmt_s(hi)}]\"""")
    assert not re.search(interval[0], """f"integer [{lo}, {hi}]\"""")  # a search space
    assert re.search(interval[0], """f"{fmt_s(r['t'])} [{fmt_s(r['lo'])}, {fmt_s(r['hi'])}]\"""")
    assert re.search(interval[0], """f"{r['s']:.2f}x [{r['lo']:.2f}, {r['hi']:.2f}]\"""")
    assert re.search(interval[0], """f"predicted {p:,.0f} [{lo:,.0f}, \"""")
    assert re.search(OWNERS["seed draw"][1][0], "k = rng.integers(0, len(ok), size=len(ok))")
    assert not re.search(OWNERS["configuration name"][1][1], """f"{n} env runner(s)\"""")
    phrase = OWNERS["configuration in a sentence"][1][0]
    assert re.search(phrase, """f"{r['algorithm']} with {int(r['n'])} env runners\"""")


def test_the_configuration_table_joins_statistics_and_speedups_once():
    """``Study.configs``: one row per configuration with its summary, its speedups, the seeds
    that finished and whether it is its algorithm's best at its env runner count."""
    from analysis.stats import config_table

    summary = pd.DataFrame(
        {
            "config_id": ["a", "b", "c", "ref"],
            "algorithm": ["PPO", "PPO", "PPO", "SB3-DQN"],
            "num_env_runners": [1, 1, 2, 0],
            "is_reference": [False, False, False, True],
            "ttt_s": [5.0, 4.0, 9.0, 1.0],
            "success_rate": [1.0, 1.0, 1.0, 1.0],
            "finished_seeds": [3, 3, 2, 3],
        }
    )
    speed = pd.DataFrame({"config_id": ["a", "b", "c", "ref"], "speedup": [1.0, 1.25, 0.5, 5.0]})
    t = config_table(summary, speed)
    assert list(t.index) == ["a", "b", "c", "ref"]
    assert t.loc["b", "speedup"] == 1.25 and t.loc["c", "finished_seeds"] == 2
    assert t["is_best_at_n"].to_dict() == {"a": False, "b": True, "c": True, "ref": False}
    empty = config_table(summary.iloc[0:0], speed.iloc[0:0])
    assert empty.empty and "is_best_at_n" in empty


def test_a_configuration_is_named_one_way():
    from analysis.fmt import config_name

    assert config_name("IMPALA", 16) == "IMPALA, 16 env runner(s)"
    assert (
        config_name("IMPALA", 2, " x 32 async envs", baseline=True)
        == "IMPALA, 2 env runner(s) x 32 async envs (baseline)"
    )
    assert config_name("SB3-DQN", reference=True) == "SB3-DQN (reference)"


def test_stalled_trials_are_counted_apart_from_other_errors_everywhere():
    """The report and the Markdown tables say the same thing of a configuration whose trials
    failed: the stalled ones (the stall detector ended them) apart from other errors."""
    from analysis.fmt import fmt_errors

    row = pd.Series({"n_error": 3, "n_stalled": 1})
    assert fmt_errors(row) == "1 stalled, 2 other errors"
    assert fmt_errors(pd.Series({"n_error": 1, "n_stalled": 0})) == "1 error"
    assert fmt_errors(pd.Series({"n_error": 2, "n_stalled": 2})) == "2 stalled"
    assert fmt_errors(pd.Series({"n_error": 0, "n_stalled": 0})) == ""
    # both lay out analysis.fmt.config_cells, whose "seeds" cell says the failed trials
    assert "fmt_errors(" in (ROOT / "analysis" / "fmt.py").read_text(encoding="utf-8")
    for module in ("publish", "report", "pages"):
        text = (ROOT / "analysis" / f"{module}.py").read_text(encoding="utf-8")
        assert "config_cells(" in text, module
        assert not re.search(r"""n_error['"]\]\}? ?err""", text), module


def test_the_vocabulary_columns_are_listed_once():
    """The trial-config keys recorded as trials.parquet columns of their own name are
    ``sweeps.engine.rundir.schema.VOCAB_COLUMNS``; the search's recorded params, the
    analysis' configuration columns, the loader's grouping and the tables' varying
    parameters read that tuple instead of listing its members again."""
    from analysis.metrics import CONFIG_COLUMNS
    from sweeps.engine.rundir.schema import VOCAB_COLUMNS
    from sweeps.engine.search import RECORDED_PARAMS

    assert RECORDED_PARAMS is VOCAB_COLUMNS and CONFIG_COLUMNS is VOCAB_COLUMNS
    listed = re.compile(r"""["']num_envs_per_env_runner["'],\s*["']train_batch_size["']""")
    owner = ROOT / "sweeps" / "engine" / "rundir" / "schema.py"
    found = [
        str(path.relative_to(ROOT))
        for package in ("sweeps", "analysis")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != owner and listed.search(path.read_text(encoding="utf-8"))
    ]
    assert listed.search(owner.read_text(encoding="utf-8"))
    assert not found, "list the vocabulary through VOCAB_COLUMNS:\n" + "\n".join(found)


def test_reading_a_number_that_may_not_be_one_has_one_owner():
    """``as_float`` (NaN for None or RLlib's ``"auto"``) is defined once, in the run files'
    schema; the recorder and the renderers import it."""
    from analysis.fmt import as_float
    from sweeps.engine.rundir import schema

    assert as_float is schema.as_float and as_float("auto") != as_float("auto")
    defined = [
        str(path.relative_to(ROOT))
        for package in ("sweeps", "analysis")
        for path in sorted((ROOT / package).rglob("*.py"))
        if re.search(
            r"def \w+\(x: Any\) -> float:\s+.*?\s+try:\s+return float\(x\)",
            path.read_text(encoding="utf-8"),
            re.S,
        )
    ]
    assert defined == ["sweeps/engine/rundir/schema.py"], defined


def test_the_report_and_the_markdown_tables_show_a_configuration_s_cells_alike(tmp_path):
    """One synthetic study: every configuration's TTT and speedup cells of
    :func:`analysis.fmt.config_cells` stand, as they are, in the Markdown table and (escaped)
    in the HTML report."""
    import html

    from analysis.fmt import config_cells
    from analysis.load import load_results
    from analysis.publish import config_rows
    from analysis.report import build_report
    from analysis.study import analyse
    from analysis.synthetic import write_synthetic_results

    run = write_synthetic_results(tmp_path / "run", seeds=3, env_runners=(1, 2), with_optuna=False)
    res = load_results(run)
    data = analyse(res)
    cells = config_cells(data)
    assert list(cells.index) == list(data.summary["config_id"])
    _, rows, _ = config_rows(data)
    markdown = [" | ".join(r) for r in rows]
    page = build_report(res)
    # each cell's text (a value and its interval are spans that do not break inside)
    shown = {
        html.unescape(re.sub(r"<[^>]+>", "", td))
        for td in re.findall(r"<td[^>]*>(.*?)</td>", page, re.S)
    }
    for cid, c in cells.iterrows():
        for col in ("TTT", "speedup", "absolute speedup"):
            assert any(c[col] in line for line in markdown), (cid, col, c[col])
            assert c[col] in shown, (cid, col, c[col])

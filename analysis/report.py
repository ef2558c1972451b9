"""The HTML report: one self-contained file (plotly.js inline; opens offline, no CDN).

Usage::

    python -m analysis.report RESULTS_DIR [-o report.html] [--target VALUE|PCT%]

or from Python (``sweeps.run`` does this at the end of a sweep)::

    from analysis.report import write_report
    path = write_report("results/cabs_scaling/20260101-120000")   # -> .../report.html

Sections: 1 summary (best configuration per algorithm with TTT, speedup, efficiency and cost;
recommended env runner counts; warnings), 2 learning curves, 3 scaling (TTT, speedup with ideal
line and Amdahl/USL fits, efficiency, throughput), 4 cost vs time Pareto front, 5 plan check
(predictions at held-out env runner counts vs measurements), 6 batch size and gradient noise
scale, 7 Optuna history and parameter importances, 8 environment and sweep spec. What cannot be shown (no
baseline, a single N, no optuna.db, every run censored, ...) is said in place of the figure.

The numbers are computed once by :func:`analysis.study.analyse` (a frozen
:class:`~analysis.study.Study`); the figures are :mod:`analysis.figures`' pure functions of it,
which :mod:`analysis.publish` (the Markdown renderer beside this HTML one) exports as PNG too,
so exported PNGs are the report's figures. A builder raises
:class:`~analysis.figures.FigureUnavailable` (one line: why) when its figure cannot be drawn.

The page around the sections (header, navigation, style sheet, scripts) is the Jinja2
template ``analysis/templates/report.html.j2`` (:mod:`analysis.templates`); each section's body
is HTML built here from the study. plotly.js is embedded once, after the text; each figure is
its JSON beside an empty div of its height, drawn when it nears the viewport or, for the rest,
when the browser is idle (``benchmarks/bench_report_page.py`` measures the page's size, load
and drawing times).

The page records JavaScript errors (``window.onerror``, unhandled rejections,
``console.error``) into the hidden ``#report-errors`` element, so a headless browser test can
read them from the DOM; ``<body data-figures=...>`` holds the number of figures.
"""

from __future__ import annotations

import html
import json
import math
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.batch_size import check_table
from analysis.figures import (
    FIGURE_HEIGHT,
    FigureUnavailable,
    batch_size_figure,
    best_per_n,
    fit_line_name,
    learning_curve_figure,
    log_ticks,
    plan_check_figure,
    speedup_figures,
    style_figure,
    throughput_figure,
    ttt_figure,
    untestable_fit_note,
)
from analysis.fmt import (
    config_name,
    fmt_ci,
    fmt_errors,
    fmt_num,
    fmt_reached,
    fmt_s,
    fmt_speedup,
    fmt_ttt,
    fmt_usd,
)
from analysis.load import Results, ResultsError, load_results
from analysis.metrics import describe_metric
from analysis.plan_check import (
    FIT_CAPTION,
    FIT_HEADERS,
    MIN_FIT_N,
    TABLE_HEADERS,
    fit_table_rows,
    table_rows,
)
from analysis.plan_text import command_parts, plan_answer, planned_short, sweep_file_of
from analysis.stats import best_configs
from analysis.study import ALG_COLORS, Study, analyse, reference_verdict
from analysis.style import page_style  # noqa: F401 - re-exported: the report's style
from analysis.templates import render, static_text
from sweeps.engine import rundir
from sweeps.engine.cli import EXIT_BAD_INPUT, OneLineParser

__all__ = ["analyse", "build_report", "main", "write_report"]


#: The script that records the page's JavaScript errors into ``#report-errors``
#: (``analysis/templates/error_hook.js``), as a ``<script>`` element.
_ERROR_HOOK = "<script>\n" + static_text("error_hook.js") + "</script>"


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _ttt_html(row: pd.Series) -> str:
    """:func:`analysis.fmt.fmt_ttt`, escaped for HTML."""
    return _esc(fmt_ttt(row))


def _resolution_s(row: pd.Series) -> float:
    """How finely a configuration's TTT was measured (the median gap between the evaluation
    that crossed the target and the one before), seconds; NaN when unknown."""
    return float(row.get("ttt_resolution_s", math.nan))


def _resolution_html(row: pd.Series) -> str:
    """``≤ 1.1 s`` (:func:`_resolution_s`) for a table cell; ``-`` when unknown."""
    r = _resolution_s(row)
    return f"&le; {_esc(fmt_s(r))}" if math.isfinite(r) else "-"


def _resolution_note(row: pd.Series) -> str:
    """`` (resolution ≤ 1.1 s)`` beside a TTT in a card; empty when unknown."""
    r = _resolution_s(row)
    return f" (resolution ≤ {fmt_s(r)})" if math.isfinite(r) else ""


def _speedup_html(r: pd.Series, key: str = "speedup", ratio: float = 1.0) -> str:
    """:func:`analysis.fmt.fmt_speedup` (no unit, no reason), escaped for HTML."""
    return _esc(fmt_speedup(r, key=key, ratio=ratio, unit="", why=False))


def _table(
    headers: list[str], rows: list[list[str]], left: tuple[int, ...] = (0,), raw: bool = False
) -> str:
    th = "".join(
        f'<th class="{"l" if i in left else ""}">{_esc(h)}</th>' for i, h in enumerate(headers)
    )
    body = []
    for r in rows:
        tds = "".join(
            f'<td class="{"l" if i in left else ""}">{c if raw else _esc(c)}</td>'
            for i, c in enumerate(r)
        )
        body.append(f"<tr>{tds}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


class _Figures:
    """Turns plotly figures into placeholders that ``analysis/templates/figure_loader.js``
    draws (those near the viewport as they come into it, the rest when the browser is idle,
    so a printout or a test sees all of them): each is an
    empty ``plotly-graph-div`` of the figure's height and the figure's JSON beside it, so the
    page shows its text before any figure is drawn (plotly.js is embedded once, at the end)."""

    def __init__(self, data: Study) -> None:
        self.data = data
        self.count = 0  # figures placed in the page so far

    def div(self, fig: Any, height: int = 430) -> str:
        style_figure(fig, height)
        self.count += 1
        div_id = f"fig-{self.count}"
        # "</" closes the script element wherever it appears: JSON allows "<\/" instead
        payload = fig.to_json().replace("</", "<\\/")
        return (
            f'<div class="fig"><div id="{div_id}" class="plotly-graph-div" '
            f'style="height:{height}px; width:100%;"></div>'
            f'<script type="application/json" class="fig-data" data-for="{div_id}">'
            f"{payload}</script></div>"
        )


def _missing(text: str) -> str:
    return f'<div class="missing">{_esc(text)}</div>'


# ---------------------------------------------------------------------------------------------
# Section 1: summary
# ---------------------------------------------------------------------------------------------
def _stalled(tm: pd.DataFrame) -> pd.DataFrame:
    """The trials that ended as stalled (``error_kind == "stalled"``)."""
    if not len(tm) or "error_kind" not in tm:
        return tm.iloc[:0]
    return tm[tm["error_kind"] == "stalled"]


def _summary(data: Study) -> str:
    s, tm = data.summary, data.tm
    stalled = _stalled(tm)
    parts = [
        f"<p>Target: <b>{_esc(data.target.metric)} &ge; {data.target.value:g}</b> "
        f"(from {_esc(data.target.source)}"
        + (f"; the sweep ran with {data.target.original:g}" if data.target.overridden else "")
        + f'). Metric: <span id="target-metric">'
        f"{_esc(describe_metric(data.target.metric, data.res.spec))}</span>. {len(tm)} trials in {len(s)} configurations: "
        f"{int((tm['status'] == 'reached').sum()) if len(tm) else 0} reached the target, "
        f"{int((tm['status'] == 'censored').sum()) if len(tm) else 0} censored, "
        f"{len(stalled)} stalled, "
        f"{int((tm['status'] == 'error').sum()) - len(stalled) if len(tm) else 0} "
        "other errors.</p>"
    ]
    if data.stage_note:
        parts.insert(0, f'<p id="stage-note"><b>{_esc(data.stage_note)}</b></p>')
    lat = tm["step_latency_ms"] if "step_latency_ms" in tm else pd.Series(dtype=float)
    if (lat > 0).any():
        cpr = tm["cpus_per_env_runner"] if "cpus_per_env_runner" in tm else pd.Series([1.0])
        parts.append(
            f'<p id="step-latency">Every env step waited <b>{fmt_num(float(lat.max()), 3)} ms'
            "</b> (<code>step_latency_ms</code>, envs/latency.py): a model of a slow simulator, "
            "a remote service or a renderer, not a property of the env; evaluation episodes "
            f"ran without it. Env runners asked for {_esc(', '.join(sorted({f'{x:g}' for x in cpr})))}"
            " CPU each.</p>"
        )
    cpu = tm["step_cpu_ms"] if "step_cpu_ms" in tm else pd.Series(dtype=float)
    if (cpu > 0).any():
        parts.append(
            f'<p id="step-cpu">Every env step burned <b>{fmt_num(float(cpu.max()), 3)} ms of one '
            "core</b> (<code>step_cpu_ms</code>, envs/latency.py): a model of a CPU-bound "
            "simulator; env runners that outnumber the cores queue for them. Evaluation episodes "
            "ran without it.</p>"
        )
    if s.empty:
        parts.append(_missing("No trials yet: nothing to summarise."))
    else:
        best = best_configs(s, ("algorithm",))
        sp = data.configs
        cards = []
        top = best.assign(_t=best["ttt_s"].fillna(np.inf)).sort_values("_t").iloc[0]
        if math.isfinite(top["ttt_s"]):
            cards.append(
                (
                    "Fastest configuration",
                    f"{top['algorithm']}, "
                    + (
                        "single process (reference)"
                        if top["is_reference"]
                        else f"{top['num_env_runners']} env runner(s)"
                    ),
                    f"TTT {_ttt_html(top)}{_resolution_note(top)}",
                )
            )
        ref = s[s["is_reference"]]
        if len(ref):
            ref = ref.iloc[0]
            cards.append(
                (
                    "Single-process reference",
                    f"{ref['algorithm']}",
                    f"TTT {_ttt_html(ref)}{_resolution_note(ref)}; "
                    f"{fmt_reached(ref)} seeds reached the target",
                )
            )
        else:
            n_tr = int(s["finished_seeds"].sum())
            cards.append(
                (
                    "Target not reached",
                    f"{int(s['n_reached'].sum())} of {n_tr} trials",
                    f"best return {tm['best_return'].max():.4g} vs target {data.target.value:g}",
                )
            )
        if top["config_id"] in sp.index and (
            math.isfinite(sp.at[top["config_id"], "speedup"])
            or math.isfinite(sp.at[top["config_id"], "speedup_lower_bound"])
        ):
            r = sp.loc[top["config_id"]]
            effs = [
                f"{_speedup_html(r, c, r[ratio])} per {w}"
                for c, ratio, w in (
                    ("efficiency_per_runner", "runner_ratio", "env runner"),
                    ("efficiency_per_cpu", "cpu_ratio", "CPU"),
                )
                if math.isfinite(r[ratio])
            ]
            cards.append(
                (
                    "Speedup vs baseline",
                    _speedup_html(r) + "x",
                    "efficiency " + ", ".join(effs) if effs else "",
                )
            )
        if (
            top["config_id"] in sp.index
            and not top["is_reference"]
            and (
                math.isfinite(sp.at[top["config_id"], "abs_speedup"])
                or math.isfinite(sp.at[top["config_id"], "abs_speedup_lower_bound"])
            )
        ):
            cards.append(
                (
                    "Absolute speedup (vs reference)",
                    _speedup_html(sp.loc[top["config_id"]], "abs_speedup") + "x",
                    "TTT(reference) / TTT(fastest configuration)",
                )
            )
        if data.plan is not None and data.plan.cheapest is not None:
            c = data.plan.cheapest
            cards.append(
                (
                    "Recommended (cheapest run)",
                    f"{c['num_env_runners']} env runner(s)",
                    f"{c['algorithm']} on {c['nodes']} x {c['vm']}: "
                    f"{planned_short(data.plan, c)}, {fmt_usd(c['cost_usd'])}",
                )
            )
        if data.plan is not None and data.plan.knee is not None:
            k = data.plan.knee
            sub = (
                f"{k['algorithm']}: more env runners are not predicted to help"
                if k["num_env_runners"] == k["relative_to_n"]
                else f"{k['algorithm']}: speedup {k['speedup']:.2f}x over {k['relative_to_n']}, "
                f"efficiency {k['efficiency']:.0%}"
                + (" (extrapolated)" if k["extrapolated"] else "")
            )
            cards.append(
                ("Knee of the efficiency curve", f"{k['num_env_runners']} env runner(s)", sub)
            )
        if data.plan is not None and data.plan.fastest is not None:
            f = data.plan.fastest
            cards.append(
                (
                    "Fastest predicted run",
                    f"{f['num_env_runners']} env runner(s)",
                    f"{f['algorithm']} on {f['nodes']} x {f['vm']}: "
                    f"{planned_short(data.plan, f)}, {fmt_usd(f['cost_usd'])}"
                    + (" (extrapolated)" if f["extrapolated"] else ""),
                )
            )
        parts.append(
            '<div class="cards">'
            + "".join(
                f'<div class="card"><div class="k">{_esc(k)}</div><div class="v">{v}</div>'
                f'<div class="s">{_esc(sub) if "&" not in sub else sub}</div></div>'
                for k, v, sub in cards
            )
            + "</div>"
        )
        verdict = reference_verdict(s, data.speed)
        if verdict:
            parts.append(f'<p class="banner" id="reference-verdict">{_esc(verdict)}</p>')
        share = tm["eval_time_s"] / tm["elapsed_s"] if "eval_time_s" in tm else pd.Series()
        share = share[np.isfinite(share.astype(float))] if len(share) else share
        if len(share) and data.target.metric == "evaluation":
            parts.append(
                f'<p class="note">The evaluation protocol took a median '
                f"{share.median():.1%} (at most {share.max():.1%}) of a trial's "
                "wall-clock; it is inside every time-to-target.</p>"
            )
        rows = []
        for _, b in best.iterrows():
            r = sp.loc[b["config_id"]] if b["config_id"] in sp.index else None
            cost = "-"
            if data.plan is not None and not data.plan.candidates.empty:
                c = data.plan.candidates
                c = c[(c["config_id"] == b["config_id"]) & (c["source"] == "measured")]
                if len(c):
                    c = c.sort_values("cost_usd").iloc[0]
                    cost = f"{fmt_usd(c['cost_usd'])} on {c['nodes']} x {c['vm']}"
            rows.append(
                [
                    _config_name(b),
                    str(b["num_env_runners"]),
                    _esc(b["config_label"]),
                    fmt_reached(b) + (f" (+{fmt_errors(b)})" if b["n_error"] else ""),
                    _esc(b["estimator"] or "-"),
                    _ttt_html(b),
                    _resolution_html(b),
                    _speedup_html(r) if r is not None else "-",
                    _speedup_html(r, "abs_speedup") if r is not None else "-",
                    _speedup_html(r, "efficiency_per_runner", r["runner_ratio"])
                    if r is not None and math.isfinite(r["runner_ratio"])
                    else "-",
                    _speedup_html(r, "efficiency_per_cpu", r["cpu_ratio"])
                    if r is not None and math.isfinite(r["cpu_ratio"])
                    else "-",
                    _esc(cost),
                    _esc(b["note"] or ""),
                ]
            )
        parts.append("<h3>Best configuration per algorithm</h3>")
        parts.append(
            '<p class="note">Best = lowest median time-to-target (Kaplan-Meier median '
            "when some seeds were censored) over all sampled configurations of the "
            "algorithm. TTT resolution: the median gap between the evaluation that "
            "crossed the target and the one before (the crossing lies in it). "
            "Brackets: 95 % confidence intervals (bootstrap over seeds; "
            "Kaplan-Meier/Greenwood with censoring). Speedup = TTT(baseline) / TTT; "
            "absolute speedup = TTT(single-process reference) / TTT. Efficiency = "
            "speedup / resources ratio, per env runner and per CPU, only for the "
            "baseline's algorithm. Cost: one run at the measured TTT on "
            "the cheapest VM size that fits it (pay-as-you-go).</p>"
        )
        parts.append(_configurations_per_algorithm(data))
        parts.append(
            _table(
                [
                    "algorithm",
                    "env runners",
                    "configuration",
                    "reached",
                    "estimator",
                    "TTT [95% CI]",
                    "TTT resolution",
                    "speedup [95% CI]",
                    "absolute speedup [95% CI]",
                    "efficiency / runner",
                    "efficiency / CPU",
                    "cost per run",
                    "notes",
                ],
                rows,
                left=(0, 2, 4, 11, 12),
                raw=True,
            )
        )
    if len(stalled):
        parts.append('<h3 id="stalled-trials">Stalled trials</h3>')
        parts.append(
            '<p class="note">Their env steps or learner updates stopped moving (the '
            "sweep's <code>stall</code> rule): a fault of the run, not a slow "
            "configuration. They count neither as reached nor as censored in any "
            "statistic.</p>"
        )
        parts.append(
            _table(
                ["algorithm", "env runners", "seed", "after (s)", "reason"],
                [
                    [
                        r["algorithm"],
                        str(r["num_env_runners"]),
                        str(r["seed"]),
                        fmt_num(float(r["elapsed_s"]), 3),
                        r["error"],
                    ]
                    for _, r in stalled.iterrows()
                ],
                left=(0, 4),
            )
        )
    if not s.empty:
        sp = data.configs
        rows = []
        for _, c in (
            s.assign(_t=s["ttt_s"].astype(float).fillna(np.inf))
            .sort_values(["algorithm", "num_env_runners", "_t"])
            .iterrows()
        ):
            r = sp.loc[c["config_id"]] if c["config_id"] in sp.index else None
            rows.append(
                [
                    _config_name(c),
                    str(c["num_env_runners"]),
                    _esc(c["config_label"]),
                    fmt_reached(c),
                    _ttt_html(c),
                    _speedup_html(r) if r is not None else "-",
                    _speedup_html(r, "abs_speedup") if r is not None else "-",
                    f"{c['eval_share']:.1%}" if math.isfinite(c["eval_share"]) else "-",
                    _resolution_html(c),
                ]
            )
        parts.append(
            f'<details id="all-configurations"><summary>All {len(s)} configurations '
            "(time-to-target, speedup, absolute speedup)</summary>"
        )
        parts.append(
            _table(
                [
                    "algorithm",
                    "env runners",
                    "configuration",
                    "reached",
                    "TTT [95% CI]",
                    "speedup [95% CI]",
                    "absolute speedup [95% CI]",
                    "evaluation share of wall-clock",
                    "TTT resolution",
                ],
                rows,
                left=(0, 2),
                raw=True,
            )
        )
        parts.append("</details>")
    if data.search_summary is not None:
        parts.append(_search_stage(data.search_summary))
    if data.warnings:
        parts.append(
            '<h3>Warnings</h3><ul class="warn">'
            + "".join(f"<li>{_esc(w)}</li>" for w in data.warnings)
            + "</ul>"
        )
    return "".join(parts)


def _config_name(c: pd.Series) -> str:
    """A summary row's algorithm, marked ``(baseline)`` or ``(reference)``."""
    return config_name(c["algorithm"], baseline=c["is_baseline"], reference=c["is_reference"])


def _search_stage(search: pd.DataFrame) -> str:
    """The search stage's configurations, fastest first, marked exploratory: they chose what
    the confirmation ran and are judged on nothing here."""
    s = search.assign(_t=search["ttt_s"].astype(float).fillna(np.inf)).sort_values("_t")
    rows = [
        [
            _config_name(c),
            str(c["num_env_runners"]),
            _esc(c["config_label"]),
            fmt_reached(c),
            _ttt_html(c),
        ]
        for _, c in s.iterrows()
    ]
    return (
        '<details id="search-stage"><summary>Search stage (exploratory): '
        f"{len(s)} configurations on the search seeds</summary>"
        "<p>These trials chose the configurations the confirmation ran; their numbers "
        "are biased towards whatever the search happened to favour on these seeds and "
        "are not used above.</p>"
        + _table(
            ["algorithm", "env runners", "configuration", "reached", "TTT [95% CI]"],
            rows,
            left=(0, 2),
            raw=True,
        )
        + "</details>"
    )


# ---------------------------------------------------------------------------------------------
# Section 2: learning curves
# ---------------------------------------------------------------------------------------------


def _learning_curves(data: Study, figs: _Figures) -> str:
    try:
        out = [
            figs.div(learning_curve_figure(data, x), height=FIGURE_HEIGHT["learning_curves"])
            for x in ("wall_time_s", "env_steps")
        ]
    except FigureUnavailable as exc:
        return _missing(str(exc))
    return (
        '<p class="note">One line per trial (dotted: censored or failed), coloured by '
        "algorithm, darker for more env runners. Crosses mark where each trial first "
        "reached the target.</p>" + "".join(out)
    )


# ---------------------------------------------------------------------------------------------
# Section 3: scaling
# ---------------------------------------------------------------------------------------------


def _scaling(data: Study, figs: _Figures) -> str:
    s = data.summary
    if s.empty:
        return _missing("No configurations yet.")
    best, ns_all, _ = best_per_n(s)
    out = [
        '<p class="note">Per algorithm, the best configuration at each env runner count '
        "(lowest median TTT) is plotted; all configurations are in the table at the end of "
        "this section.</p>"
    ]
    distinct_per_alg = best.groupby("algorithm")["num_env_runners"].nunique()
    if distinct_per_alg.max() < 2:
        out.append(
            _missing(
                f"Only one env runner count was measured "
                f"(N={', '.join(map(str, ns_all))}): no scaling curve can be drawn "
                "or fitted. Measure at least two (three for the USL)."
            )
        )
    out.append(figs.div(ttt_figure(data), height=FIGURE_HEIGHT["ttt"]))

    sp = data.configs
    try:
        sf = speedup_figures(data)
    except FigureUnavailable as exc:
        out.append(_missing(str(exc)))
        fit_rows = []
    else:
        out.extend(f'<p class="note">{_esc(n)}</p>' for n in sf.notes)
        out.append(figs.div(sf.speedup, height=FIGURE_HEIGHT["speedup"]))
        out.append(figs.div(sf.efficiency, height=FIGURE_HEIGHT["efficiency"]))
        fit_rows = sf.fits
    fig, tp_fit_rows = throughput_figure(data)
    out.append(figs.div(fig, height=FIGURE_HEIGHT["throughput"]))
    untestable = untestable_fit_note([*fit_rows, *tp_fit_rows])
    if untestable:
        out.append(f'<p class="note" id="untestable-fits">{_esc(untestable)}</p>')

    rows = []
    for alg, what, f in [*fit_rows, *tp_fit_rows]:
        fitted = (
            "no"
            if not f.ok
            else "yes"
            if fit_line_name(alg, f) is not None
            else "exactly determined: not a model"
        )
        rows.append(
            [
                alg,
                what,
                f.model.upper() if f.model == "usl" else "Amdahl",
                fitted,
                fmt_num(f.gamma, 4),
                fmt_num(f.alpha, 3),
                fmt_num(f.beta, 3) if f.model == "usl" else "0",
                fmt_num(f.peak_n, 3) if f.model == "usl" else "none",
                fmt_num(f.r2, 3),
                str(f.n_distinct),
                f.reason,
            ]
        )
    if rows:
        out.append(
            '<h3>Scaling fits</h3><p class="note">X(N) = &gamma;N / (1 + &alpha;(N&minus;1)'
            " + &beta;N(N&minus;1)) (Gunther's Universal Scalability Law; Amdahl: &beta; = 0),"
            " fitted with 0 &le; &alpha; &le; 1, &beta; &ge; 0. Peak N* = "
            "&radic;((1&minus;&alpha;)/&beta;). A model is not fitted to fewer distinct N "
            "than it has parameters.</p>"
        )
        out.append(
            _table(
                [
                    "algorithm",
                    "capacity X",
                    "model",
                    "fitted",
                    "gamma",
                    "alpha",
                    "beta",
                    "peak N*",
                    "R2",
                    "distinct N",
                    "caveat",
                ],
                rows,
                left=(0, 1, 2, 10),
            )
        )
    if not sp.empty:
        rows = []
        for _, c in best.iterrows():
            if c["config_id"] not in sp.index:
                continue
            r = sp.loc[c["config_id"]]
            rows.append(
                [
                    c["algorithm"],
                    str(c["num_env_runners"]),
                    _speedup_html(r),
                    fmt_num(r["throughput_ratio"], 3),
                    fmt_num(r["sample_efficiency_ratio"], 3),
                    fmt_num(r["residual"], 3),
                    r["speedup_note"] or "",
                ]
            )
        out.append(
            "<h3>Why faster? Speedup = throughput ratio &times; sample-efficiency "
            'ratio</h3><p class="note">Throughput ratio: median env steps/s vs the '
            "baseline. Sample-efficiency ratio: median steps-to-target of the baseline / "
            "this configuration (&gt; 1: fewer samples needed). Residual: the part of the "
            "speedup neither explains (start-up time, iteration granularity).</p>"
        )
        out.append(
            _table(
                [
                    "algorithm",
                    "env runners",
                    "speedup [95% CI]",
                    "throughput ratio",
                    "sample-efficiency ratio",
                    "residual",
                    "notes",
                ],
                [[x if i == 2 else _esc(x) for i, x in enumerate(row)] for row in rows],
                left=(0, 6),
                raw=True,
            )
        )
    rows = []
    for _, c in s.sort_values(["algorithm", "num_env_runners", "ttt_s"]).iterrows():
        rows.append(
            [
                c["algorithm"],
                str(c["num_env_runners"]),
                _esc(c["config_label"]),
                fmt_reached(c),
                _esc(c["estimator"] or "-"),
                _ttt_html(c),
                fmt_ci(
                    c["ttt_iqm_s"], c["ttt_iqm_low_s"], c["ttt_iqm_high_s"], lambda z: f"{z:.1f}"
                ),
                fmt_num(c["ttt_olympic_s"], 4),
                fmt_num(c["env_steps_per_s"], 4),
                fmt_num(c["steps_to_target"], 4),
                fmt_num(c.get("cpus_per_env_runner", 1.0), 3),
                fmt_num(c["num_cpus"], 3),
                fmt_num(c.get("peak_rss_mib", math.nan), 4),
                _esc(c["note"] or ""),
            ]
        )
    out.append(
        "<details><summary>All configurations ("
        + str(len(s))
        + ")</summary>"
        + _table(
            [
                "algorithm",
                "env runners",
                "configuration",
                "reached",
                "estimator",
                "TTT [95% CI]",
                "IQM TTT (s) [95% CI]",
                "olympic mean (s)",
                "env steps/s",
                "steps-to-target",
                "CPUs per env runner",
                "CPUs asked",
                "peak RSS (MiB)",
                "notes",
            ],
            rows,
            left=(0, 2, 4, 13),
            raw=True,
        )
        + "</details>"
    )
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 4: cost vs time
# ---------------------------------------------------------------------------------------------
def _cost(data: Study, figs: _Figures) -> str:
    import plotly.graph_objects as go

    plan = data.plan
    if plan is None or plan.candidates.empty:
        why = "; ".join(plan.notes) if plan is not None else "the plan could not be made"
        return _missing(f"No cost/time trade-off: {why}")
    c = plan.candidates.copy()
    # the launcher's start-up is one assumed constant on every point: drawn apart, so that the
    # points differ by what the run measured (env runners, VM size, nodes)
    up = float(plan.launcher.startup_s)
    c["run_s"] = c["ttt_s"] - up
    fig = go.Figure()
    for i, (vm, g) in enumerate(c.groupby("vm", sort=False)):
        fig.add_trace(
            go.Scatter(
                x=g["run_s"],
                y=g["cost_usd"],
                mode="markers",
                name=vm,
                marker={
                    "size": 8,
                    "color": ALG_COLORS[i % len(ALG_COLORS)],
                    "symbol": ["circle-open" if e else "circle" for e in g["extrapolated"]],
                },
                customdata=np.stack(
                    [g["algorithm"], g["num_env_runners"], g["nodes"], g["source"]], axis=-1
                ),
                hovertemplate="%{customdata[0]}, N=%{customdata[1]}, %{customdata[2]} node(s)<br>"
                "TTT %{x:.4g} s, $%{y:.4g}<br>%{customdata[3]}<extra>" + vm + "</extra>",
            )
        )
    front = c[c["pareto"]].sort_values("ttt_s")
    fig.add_trace(
        go.Scatter(
            x=front["run_s"],
            y=front["cost_usd"],
            mode="lines",
            name="Pareto front",
            line={"color": "#222", "width": 2},
        )
    )
    for (label, r), (ax, ay) in zip(
        (("cheapest", plan.cheapest), ("fastest", plan.fastest)), ((90, 40), (90, -45)), strict=True
    ):
        if r is not None:
            fig.add_annotation(
                x=math.log10(max(r["ttt_s"] - up, 1e-9)),
                y=math.log10(max(r["cost_usd"], 1e-9)),
                text=f"{label}: {r['algorithm']} N={r['num_env_runners']}, "
                f"{r['nodes']} x {r['vm']}",
                showarrow=True,
                arrowhead=2,
                ax=ax,
                ay=ay,
                bgcolor="rgba(255,255,255,0.85)",
                bordercolor="#888",
            )
    start = (
        f"; the {plan.launcher.name} launcher's {fmt_s(up)} start-up (assumed) comes on top of each"
        if up > 0
        else ""
    )
    fig.update_layout(
        title="Cost vs time of one run to the target (open markers: extrapolated)",
        xaxis={
            "title": f"predicted time-to-target once the cluster is up (s){start}",
            "type": "log",
            **log_ticks(c["run_s"]),
        },
        yaxis={"title": "cost per run (US$)", "type": "log", **log_ticks(c["cost_usd"], "$")},
    )
    answer = plan_answer(plan, sweep_file_of(data.res.environment))
    lines = [*answer.details, *data.batch_advice]
    commands = "".join(
        f"<li>{_esc(label)}: <code>{_esc(cmd)}</code>{_esc(note)}</li>"
        for label, cmd, note in map(command_parts, answer.commands)
    )
    return (
        f'<p id="plan-answer"><b>{_esc(answer.sentence)}</b></p>'
        + (f'<ul id="plan-commands">{commands}</ul>' if commands else "")
        + '<h3>What the plan assumes</h3><div id="plan-assumptions">'
        + _table(
            ["assumption", "the plan took"], [list(a) for a in answer.assumptions], left=(0, 1)
        )
        + "</div>"
        + figs.div(fig, height=480)
        + f'<details id="plan-details"><summary>Details: {len(lines)} more lines (every '
        "recommendation, the scaling models, caveats, batch size)</summary><ul>"
        + "".join(f"<li>{_esc(x)}</li>" for x in lines)
        + '</ul><p class="note">Cost model: nodes = ceil(CPUs / vCPUs per VM), '
        "with the CPUs the trials asked for (driver + N &times; CPUs per env runner), enough "
        "GPUs for the learner and enough memory for the trials' peak RSS (fitted per env "
        "runner; 70 % of a node's memory, the rest is Ray's object store); cost = nodes "
        "&times; $/h &times; billed time / 3600. "
        "Prices: analysis/vm_sizes.csv (pay-as-you-go Linux; source and date per row). "
        "Reproduce with <code>python -m analysis.plan RESULTS_DIR --deadline 10m "
        "--budget 1usd</code>.</p></details>"
    )


# ---------------------------------------------------------------------------------------------
# Section 5: plan check
# ---------------------------------------------------------------------------------------------


def _check(data: Study, figs: _Figures) -> str:
    check = data.check
    if check is None:
        return _missing(
            f"No plan check: it needs an algorithm measured at more than "
            f"{MIN_FIT_N} env runner counts (>= 1): {MIN_FIT_N} to fit the scaling "
            "models on, the rest to compare their predictions with."
        )
    out = [
        '<p class="note">The scaling models are fitted without the largest env runner '
        "counts, predict them, and are compared with what was measured there. "
        "<b>USL on 1/TTT</b> fits the curve of 1/TTT over N; <b>pipeline</b> predicts TTT = "
        "start-up(N) + env steps to target(N) / sampling rate(N) from the parts each trial "
        "measures (start-up linear in N, rate by the USL, env steps by a power law in N). "
        "The capacity plan uses, per algorithm, the one that leave-one-N-out "
        "cross-validation on the fitted N prefers (the notes below name it). "
        "Intervals: 95 % bootstrap over seeds. Reproduce with <code>python -m analysis.plan "
        "RESULTS_DIR --holdout "
        + ",".join(str(n) for n in sorted(check.rows["num_env_runners"].unique()))
        + "</code>.</p>"
    ]
    if not check.rows.empty:
        out.append(figs.div(plan_check_figure(data), height=FIGURE_HEIGHT["plan_check"]))
    rows = table_rows(check)
    if rows:
        out.append(_table(TABLE_HEADERS, rows, left=(0, 2, 3)))
    fit = fit_table_rows(check)
    if fit:
        out.append(f'<p class="note">{_esc(FIT_CAPTION)}</p>')
        out.append(_table(FIT_HEADERS, fit, left=(0, 1, 2)))
    out.extend(f'<p class="note">{_esc(n)}</p>' for n in check.notes)
    return "".join(out)


def _break_even_html(data: Study, held: list[Study]) -> str:
    """Section 5's break-even part: per configuration the env cost above which it beats the
    reference (:mod:`analysis.break_even`), and with ``held`` (the same study at other env
    costs) each held-out cell's predicted TTT against what was measured; empty without a
    reference with measured parts."""
    from analysis.break_even import (
        HELD_OUT_HEADERS,
        cost_kind,
        held_out_rows,
        held_out_table_rows,
        held_out_verdict,
        run_table,
        shared_seed_note,
    )

    table = run_table(data)
    if table is None:
        return ""
    head, cells, words = table
    out = [
        "<h3>Break-even env cost</h3>",
        '<p class="note">TTT(c) = start-up + env steps &times; (overhead + c) / concurrent envs, '
        "from this run's measured parts; above its break-even cost a configuration is "
        "predicted to beat the single-process reference. Reproduce with <code>python -m "
        "analysis.plan RESULTS_DIR --break-even</code>.</p>",
        _table(head, cells),
        f'<p class="note">{_esc(words)}</p>',
    ]
    if held:
        checked = held_out_rows(data, held)
        out.append("<h3>Break-even checked at other env costs</h3>")
        if len(checked):
            out.append(_table(HELD_OUT_HEADERS, held_out_table_rows(checked), left=(1,)))
        out.append(f"<p>{_esc(held_out_verdict(checked, cost_kind(data)))}</p>")
        note = shared_seed_note(data, held)
        if note:
            out.append(f'<p class="note">{_esc(note)}</p>')
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 6: batch size
# ---------------------------------------------------------------------------------------------


def _batch(data: Study, figs: _Figures) -> str:
    b = data.batch
    if b is None:
        return _missing(
            "No batch-size check: it needs one algorithm run at two or more "
            "train batch sizes with the gradient noise scale measured "
            "(grad_noise_scale in progress.parquet)."
        )
    out = [
        '<p class="note">McCandlish et al. 2018 (arXiv 1812.06162): the steps S and samples '
        "E to reach a target trade off as S = S<sub>min</sub>(1 + B<sub>noise</sub>/B), "
        "E = E<sub>min</sub>(1 + B/B<sub>noise</sub>); the learner measures the simple noise "
        "scale B<sub>simple</sub> = tr(&Sigma;)/|G|&sup2; as the estimate of B<sub>noise</sub>. "
        "From the pilot batch size alone (its measured updates to the target and "
        "B<sub>simple</sub>), the other batch sizes are predicted and compared with what they "
        "measured. Reproduce with <code>python -m analysis.batch_size RESULTS_DIR</code>.</p>"
    ]
    if not b.rows.empty:
        out.append(figs.div(batch_size_figure(data), height=FIGURE_HEIGHT["batch_size"]))
        out.append(_table(*check_table(b), left=(0, 2)))
        for alg, f in b.fits.items():
            out.append(
                f'<p class="note">{_esc(alg)}: the measured outcomes at every batch size '
                f"imply a critical batch size B<sub>crit</sub> = {fmt_num(f['b_crit'], 3)}"
                f" (least squares of S against 1/B), against the pilot's measured "
                f"B<sub>simple</sub> = {fmt_num(f['b_simple'], 3)}.</p>"
            )
    out.extend(f'<p class="note">{_esc(n)}</p>' for n in b.notes)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 7: Optuna
# ---------------------------------------------------------------------------------------------
def _optuna(data: Study, figs: _Figures) -> str:
    study = data.res.study
    if study is None:
        return _missing(
            "No Optuna study (optuna.db missing or unreadable): no optimisation "
            "history or parameter importances."
        )
    import optuna
    import optuna.visualization as ov

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(done) < 1:
        return _missing("The Optuna study has no completed trials yet.")
    out = [
        '<p class="note">Objective (minimised): time-to-target in seconds, or '
        "budget &times; (1 + shortfall) for censored trials.</p>"
    ]
    fig = ov.plot_optimization_history(study)
    out.append(figs.div(fig))
    if len(done) < 2 or not any(t.params for t in done):
        out.append(
            _missing("Parameter importances need at least two completed trials with parameters.")
        )
    else:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fig = ov.plot_param_importances(study)
            out.append(figs.div(fig, height=380))
            if caught or len(done) < 10:
                out.append(
                    f'<p class="note">Only {len(done)} completed Optuna trials: '
                    "importances are rough (some parameter values were tried fewer "
                    "than twice).</p>"
                )
        except (RuntimeError, ValueError, ZeroDivisionError) as exc:
            out.append(_missing(f"Parameter importances could not be computed ({exc})."))
    return "".join(out)


def _configurations_per_algorithm(data: Study) -> str:
    """One sentence: how many configurations the search gave each declared algorithm (the
    baseline and the reference apart), naming any declared algorithm it never measured."""
    trials = data.res.trials
    sampled = trials[~trials["is_baseline"].astype(bool) & ~trials["is_reference"].astype(bool)]
    counts = sampled.groupby("algorithm")["config_id"].nunique()
    declared = list((data.res.spec or {}).get("algorithms") or counts.index)
    parts = [f"{a} {int(counts.get(a, 0))}" for a in declared]
    missing = [a for a in declared if not counts.get(a, 0)]
    return (
        '<p class="note" id="configs-per-algorithm">Configurations the search measured, '
        f"per algorithm (baseline and reference apart): {_esc(', '.join(parts))}."
        + (
            f" <strong>Not measured: {_esc(', '.join(missing))}</strong> (no trial of "
            "theirs was recorded)."
            if missing
            else ""
        )
        + (
            " Each algorithm's first configuration is its defaults, queued before the "
            "sampler takes over."
            if len(declared) > 1
            and (data.res.spec or {}).get("search", {}).get("sampler") != "grid"
            else ""
        )
        + "</p>"
    )


def _defaults_note(spec: dict) -> str:
    """Where each algorithm's unset parameters came from (spec.json ``presets``:
    :mod:`sweeps.engine.presets`) and, for a reference, the horizon of its schedules
    (exploration), so that a reader knows which settings were compared."""
    presets = spec.get("presets")
    if not presets:
        return ""
    env = spec.get("env")
    parts = [
        f"{_esc(a)}: " + (f"preset <code>{_esc(p)}</code>" if p else "library defaults")
        for a, p in presets.items()
    ]
    out = (
        f"<p>Defaults on <code>{_esc(str(env))}</code> (a sweep's own values win): "
        + "; ".join(parts)
        + ".</p>"
    )
    from sweeps.engine.reference import REFERENCE_ALGORITHMS, schedule_horizon
    from sweeps.engine.search import resolve_params

    ref = spec.get("reference")
    if ref and ref.get("algorithm") in REFERENCE_ALGORITHMS:
        budget = (spec.get("budget") or {}).get("env_steps")
        horizon, _, ends = schedule_horizon(ref, budget, env)
        p = resolve_params(ref, env)
        what = f"its schedules run over {horizon:,} env steps"
        if ref["algorithm"] == "SB3-DQN":
            decay = int(float(p["exploration_fraction"]) * horizon)
            what += (
                f" (ε from {p['exploration_initial_eps']:g} to {p['exploration_final_eps']:g}"
                f" over the first {decay:,})"
            )
        what += (
            ", where training ends (a horizon the sweep set: censor_reason 'horizon')"
            if ends
            else ", then hold their final values until the budget or the target ends training"
        )
        out += f"<p>Reference {_esc(ref['algorithm'])}: {_esc(what)}.</p>"
    return out


def _where_trials_ran(trials: pd.DataFrame) -> str:
    """How many trials Ray placed over several nodes, and which (``nodes_used``)."""
    if "nodes_used" not in trials or not trials["nodes_used"].astype(bool).any():
        return ""
    nodes = trials["nodes_used"].fillna("").astype(str)
    spanning = trials[nodes.str.count(",") > 0]
    out = [
        f'<p id="nodes-used">Trials whose env runners ran on more than one node: '
        f"{len(spanning)} of {len(trials)}; {nodes[nodes != ''].str.split(',').explode().nunique()} "
        "node(s) used in all (<code>nodes_used</code>, first 12 hex digits of Ray's node "
        "ids).</p>"
    ]
    if len(spanning):
        out.append(
            _table(
                ["algorithm", "env runners", "seed", "nodes used"],
                [
                    [
                        r["algorithm"],
                        str(r["num_env_runners"]),
                        str(r["seed"]),
                        _esc(r["nodes_used"]),
                    ]
                    for _, r in spanning.iterrows()
                ],
                left=(0, 3),
            )
        )
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 8: environment and spec
# ---------------------------------------------------------------------------------------------
def _environment(data: Study) -> str:
    env, spec = data.res.environment, data.res.spec
    out = []
    if env:
        rows = [[k, str(v)] for k, v in (env.get("versions") or {}).items()]
        for k in (
            "cpu_model",
            "cpu_count",
            "memory_gib",
            "git_revision",
            "started_at",
            "finished_at",
            "ray_address",
            "command",
        ):
            if k in env:
                rows.append([k, str(env[k])])
        nodes = env.get("nodes") or []
        rows.append(
            [
                "nodes",
                f"{len(nodes)}: "
                + ", ".join(
                    f"{n.get('node_ip', '?')} ({n.get('num_cpus', '?')} CPUs, {n.get('num_gpus', 0)} "
                    "GPUs)"
                    for n in nodes
                ),
            ]
        )
        out.append(_table(["", "value"], rows, left=(0, 1)))
    else:
        out.append(_missing("environment.json is missing."))
    out.append(_where_trials_ran(data.res.trials))
    out.append(f"<p>Results directory: <code>{_esc(data.res.path)}</code></p>")
    out.append(_defaults_note(spec))
    if spec:
        out.append(
            "<h3>Sweep spec (spec.json)</h3><pre>" + _esc(json.dumps(spec, indent=2)) + "</pre>"
        )
    else:
        out.append(_missing("spec.json is missing."))
    return "".join(out)


# ---------------------------------------------------------------------------------------------


def _previous_run(res: Results) -> Results | None:
    """The run :func:`analysis.history.previous_run` finds for ``res``; None when there is
    none or the sibling runs cannot be read."""
    from analysis.history import previous_run

    try:
        return previous_run(res)
    except Exception as exc:  # noqa: BLE001 - the report draws without it, and says why
        print(f"warning: no comparison with earlier runs: {exc}", file=sys.stderr)
        return None


def _against_previous(previous: Results, res: Results) -> str:
    """Section 9: this run against the previous run of its sweep on this machine
    (:func:`analysis.compare.compare`), its verdict, table and environments."""
    import warnings

    from analysis.compare import CompareError, compare, headline, table

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lifelines' convergence notes on few seeds
            c = compare(previous, res)
    except CompareError as exc:  # e.g. the sweep file changed between the runs: not a fault
        return (
            f"<p>Run {_esc(previous.path.name)} is the previous run of this sweep on this "
            f"machine; it is not compared with this one: {_esc(exc)}</p>"
        )
    headers, rows = table(c)
    th = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    trs = "".join(
        "<tr>" + "".join(f'<td class="l">{_esc(x)}</td>' if i == 0 else f"<td>{_esc(x)}</td>"
                         for i, x in enumerate(r)) + "</tr>"
        for r in rows
    )  # fmt: skip
    parts = [
        f"<p>Run {_esc(previous.path.name)} (git "
        f"{_esc(str(previous.environment.get('git_revision', '?'))[:12])}) is the previous run "
        f"of this sweep on this machine. {_esc(headline(c).replace('NEW', 'This run').replace('BASE', 'that run'))}</p>",
        f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>",
    ]
    if c.unmatched:
        parts.append(f'<p class="note">Not in both runs: {_esc("; ".join(c.unmatched))}.</p>')
    if c.warnings:
        parts.append(
            '<ul class="warn">' + "".join(f"<li>{_esc(w)}</li>" for w in c.warnings) + "</ul>"
        )
    parts.append(
        '<p class="note">The whole history of this sweep: <code>python -m analysis.history '
        f"{_esc(res.path.parent)}</code>.</p>"
    )
    return "".join(parts)


def build_report(
    res: Results, target: str | float | None = None, held_out: list[Results] = ()
) -> str:
    """The report's HTML for a loaded results directory; ``held_out``: runs of the same study
    at other env costs, whose TTTs section 5 compares with the break-even model fitted here.

    Raises:
        ValueError: no usable target (see :func:`analysis.metrics.resolve_target`).
    """
    import plotly
    import plotly.offline

    data = analyse(res, target)
    tm = data.tm
    figs = _Figures(data)

    def section(sid: str, title: str, body) -> str:
        try:
            content = body()
        except Exception as exc:  # show what can be shown; say what cannot
            content = _missing(f"This section could not be drawn: {type(exc).__name__}: {exc}")
            data.warnings.append(f"section '{title}' failed: {type(exc).__name__}: {exc}")
            traceback.print_exc(file=sys.stderr)
        return content

    sections = [
        ("curves", "2. Learning curves", lambda: _learning_curves(data, figs)),
        ("scaling", "3. Scaling with env runners", lambda: _scaling(data, figs)),
        ("cost", "4. Cost vs time (capacity plan)", lambda: _cost(data, figs)),
        (
            "check",
            "5. Plan check (held-out env runner counts)",
            lambda: (
                _check(data, figs) + _break_even_html(data, [analyse(h, target) for h in held_out])
            ),
        ),
        ("batch", "6. Batch size and gradient noise scale", lambda: _batch(data, figs)),
        ("optuna", "7. Optuna search", lambda: _optuna(data, figs)),
        ("environment", "8. Environment and sweep spec", lambda: _environment(data)),
    ]
    previous = _previous_run(res)
    if previous is not None:  # only when there is one: a first run has nothing to say here
        sections.append(
            (
                "previous",
                "9. Against the previous run of this sweep on this machine",
                lambda: _against_previous(previous, res),
            )
        )
    bodies = [section(*s) for s in sections]
    summary_html = section("summary", "1. Summary", lambda: _summary(data))
    env = res.environment
    algorithms = res.spec.get("algorithms", sorted(tm["algorithm"].unique()) if len(tm) else [])
    return render(
        "report.html.j2",
        title=f"rl-scaling report: {res.name}",
        command="python -m analysis.report",
        figure_count=figs.count,
        env=res.spec.get("env", "?"),
        algorithms=", ".join(map(str, algorithms)),
        run=res.path.name,
        git=env.get("git_revision", "?"),
        started=env.get("started_at", ""),
        synthetic=bool(env.get("synthetic")),
        sections=[
            {"id": sid, "title": title, "html": body}
            for (sid, title, _), body in zip(
                [("summary", "1. Summary", None), *sections], [summary_html, *bodies], strict=True
            )
        ],
        plotly_version=plotly.__version__,
        plotly_js=plotly.offline.get_plotlyjs(),
    )


def write_report(
    results_dir: str | Path,
    output: str | Path | None = None,
    target: str | float | None = None,
    held_out: list[str | Path] = (),
) -> Path:
    """Write the self-contained HTML report of a results directory.

    Args:
        results_dir: a ``results/<sweep>/<run_id>/`` directory, or its URI in object storage.
        output: file to write (default ``<results_dir>/report.html``, uploaded there for a URI).
        target: override the target (absolute value or percent of optimum, e.g. ``"95%"``).
        held_out: results directories of the same study at other env costs (section 5
            checks the break-even model on them).

    Returns:
        Path of the written file (its URI, a str, when it went to object storage).

    Raises:
        ResultsError: the directory or its trials.parquet is missing or unreadable.
        ValueError: no usable target or a bad ``target``.
    """
    from sweeps.engine.rundir import mirror

    res = load_results(results_dir)
    held = [load_results(h) for h in held_out]
    out = Path(output) if output is not None else res.path / rundir.REPORT
    page = build_report(res, target, held)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    if output is None and mirror.is_uri(results_dir):  # next to the run, in the store
        uri = f"{str(results_dir).rstrip('/')}/report.html"
        mirror.upload_file(out, uri)
        return uri
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 2 bad input)."""
    p = OneLineParser(
        prog="python -m analysis.report",
        description="Write the self-contained HTML report of a results directory.",
    )
    p.add_argument("results_dir", help="results/<sweep>/<run_id>/ directory")
    p.add_argument("-o", "--output", help="output file (default RESULTS_DIR/report.html)")
    p.add_argument(
        "--target", help="override the target: absolute value or percent of optimum (e.g. 95%%)"
    )
    p.add_argument(
        "--held-out",
        default="",
        metavar="RUN[,RUN]",
        help="runs of the same study at other env costs (sweeps.run FILE "
        "--env-config step_latency_ms=C): section 5 compares their TTTs with "
        "the break-even model fitted on RESULTS_DIR",
    )
    args = p.parse_args(argv)
    held = [x.strip() for x in args.held_out.split(",") if x.strip()]
    try:
        path = write_report(args.results_dir, args.output, args.target, held)
    except (ResultsError, ValueError, OSError) as exc:
        sys.stderr.write(f"{p.prog}: error: {exc}\n")
        return EXIT_BAD_INPUT
    print(path)
    return 0


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m analysis.report", main))

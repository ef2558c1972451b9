"""The HTML report: one self-contained file (plotly.js inline; opens offline, no CDN).

Usage::

    python -m analysis.report RESULTS_DIR [-o report.html] [--target VALUE|PCT%]

or from Python (``sweeps.run`` does this at the end of a sweep)::

    from analysis.report import write_report
    path = write_report("results/cabs_scaling/20260101-120000")   # -> .../report.html

Sections: 1 summary (best configuration per algorithm with TTT, speedup, efficiency and cost;
recommended worker counts; warnings), 2 learning curves, 3 scaling (TTT, speedup with ideal
line and Amdahl/USL fits, efficiency, throughput), 4 cost vs time Pareto front, 5 plan check
(predictions at held-out env runner counts vs measurements), 6 batch size and gradient noise
scale, 7 Optuna history and parameter importances, 8 environment and sweep spec. What cannot be shown (no
baseline, a single N, no optuna.db, every run censored, ...) is said in place of the figure.

The numbers are computed once by :func:`analyse` (a :class:`ReportData`); the figures come from
public builders (:func:`learning_curve_figure`, :func:`ttt_figure`, :func:`speedup_figures`,
:func:`throughput_figure`, styled by :func:`style_figure`), which :mod:`analysis.publish` uses
too, so exported PNGs are the report's figures. A builder raises :class:`FigureUnavailable`
(one line: why) when its figure cannot be drawn.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.batch_size import BatchSizeCheck, batch_size_check
from analysis.fmt import fmt_ci, fmt_num, fmt_s, fmt_speedup, fmt_ttt, fmt_usd
from analysis.load import Results, ResultsError, load_results
from analysis.metrics import Target, describe_metric, trial_metrics
from analysis.plan import Plan, make_plan, plan_text
from analysis.plan_check import (
    MIN_FIT_N,
    TABLE_HEADERS,
    PlanCheck,
    auto_holdout,
    plan_check,
    table_rows,
)
from analysis.scaling import fit_scaling
from analysis.stats import (
    MIN_SEEDS_FOR_CI,
    best_configs,
    speedup_table,
    summarize_configs,
)
from sweeps.cli import OneLineParser

__all__ = [
    "FIGURE_HEIGHT",
    "FigureUnavailable",
    "ReportData",
    "SpeedupFigures",
    "analyse",
    "build_report",
    "learning_curve_figure",
    "plan_check_figure",
    "batch_size_figure",
    "main",
    "speedup_figures",
    "style_figure",
    "throughput_figure",
    "ttt_figure",
    "write_report",
]

_ALG_SCALES = ["Blues", "Oranges", "Greens", "Purples", "Reds", "Greys"]
_ALG_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#7f7f7f"]

_ERROR_HOOK = """
<script>
(function () {
  var pending = [];
  function put(msg) {
    var el = document.getElementById('report-errors');
    if (!el) { pending.push(msg); return; }
    var li = document.createElement('li'); li.textContent = String(msg); el.appendChild(li);
  }
  window.onerror = function (m, src, line, col) { put('error: ' + m + ' at ' + src + ':' + line + ':' + col); };
  window.addEventListener('unhandledrejection', function (e) { put('unhandled rejection: ' + (e.reason && e.reason.message || e.reason)); });
  var orig = console.error;
  console.error = function () { put('console.error: ' + Array.prototype.join.call(arguments, ' ')); return orig.apply(console, arguments); };
  document.addEventListener('DOMContentLoaded', function () { pending.splice(0).forEach(put); });
})();
</script>
"""

_CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 0;
       color: #1d2330; background: #f6f7f9; font-size: 15px; line-height: 1.45; }
main { max-width: 1280px; margin: 0 auto; padding: 8px 24px 48px; }
header { background: #1d2b44; color: #fff; padding: 18px 24px; }
header h1 { margin: 0 0 4px; font-size: 24px; } header p { margin: 0; color: #c9d3e6; }
nav { background: #fff; border-bottom: 1px solid #dde1e8; padding: 8px 24px; font-size: 14px; }
nav a { margin-right: 18px; color: #1d4f91; text-decoration: none; }
section { background: #fff; border: 1px solid #dde1e8; border-radius: 8px; padding: 16px 20px;
          margin: 18px 0; }
h2 { margin: 0 0 10px; font-size: 20px; } h3 { font-size: 16px; margin: 16px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13.5px; }
th, td { border-bottom: 1px solid #e4e7ec; padding: 4px 9px; text-align: right; vertical-align: top; }
th { background: #f0f2f6; text-align: center; } td.l, th.l { text-align: left; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 8px 0 12px; }
.card { flex: 1 1 220px; border: 1px solid #dde1e8; border-radius: 8px; padding: 10px 14px;
        background: #fbfcfe; }
.card .k { color: #5a6478; font-size: 13px; } .card .v { font-size: 21px; font-weight: 600; }
.card .s { color: #5a6478; font-size: 12.5px; }
.warn { background: #fff7e6; border: 1px solid #f5d08a; border-radius: 6px; padding: 8px 14px; }
.warn li { margin: 2px 0; } .note { color: #5a6478; font-size: 13.5px; }
.missing { background: #f3f4f7; border: 1px dashed #b8bfcc; border-radius: 6px; padding: 10px 14px;
           color: #4a5468; margin: 8px 0; }
.banner { background: #ffe9e9; border: 1px solid #f0a0a0; color: #7a1010; padding: 8px 14px;
          border-radius: 6px; margin-top: 14px; font-weight: 600; }
pre { background: #f3f4f7; padding: 10px; border-radius: 6px; overflow-x: auto; font-size: 12.5px;
      max-height: 420px; }
.fig { margin: 6px 0 14px; } .grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
details summary { cursor: pointer; color: #1d4f91; margin: 6px 0; }
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _ttt_html(row: pd.Series) -> str:
    """:func:`analysis.fmt.fmt_ttt`, escaped for HTML."""
    return _esc(fmt_ttt(row))


def _speedup_html(r: pd.Series, key: str = "speedup", ratio: float = 1.0) -> str:
    """:func:`analysis.fmt.fmt_speedup` (no unit, no reason), escaped for HTML."""
    return _esc(fmt_speedup(r, key=key, ratio=ratio, unit="", why=False))


def reference_verdict(summary: pd.DataFrame, speed: pd.DataFrame) -> str | None:
    """One plain sentence: does any distributed configuration beat the single-process
    reference on this hardware? None when the sweep ran no reference.

    A configuration beats it when its absolute speedup's point estimate is > 1 (its lower
    bound when the reference's median was censored); the sentence gives the fastest
    configuration's absolute speedup either way.
    """
    if "is_reference" not in summary or not summary["is_reference"].any() or speed.empty:
        return None
    ref = summary[summary["is_reference"]].iloc[0]
    sp = speed.set_index("config_id")
    others = summary[~summary["is_reference"]]
    others = others.assign(_t=others["ttt_s"].astype(float).fillna(np.inf)).sort_values("_t")
    if others.empty:
        return None
    top = others.iloc[0]
    r = sp.loc[top["config_id"]]
    name = f"{top['algorithm']} with {top['num_env_runners']} env runner(s)"
    ref_name = f"the single-process reference ({ref['algorithm']})"
    s, lb = float(r["abs_speedup"]), float(r["abs_speedup_lower_bound"])
    if (math.isfinite(s) and s > 1) or (math.isinf(s) and lb > 1):
        return (f"{name} beats {ref_name}: absolute speedup "
                f"{fmt_speedup(r, key='abs_speedup', unit='', why=False)}x")
    if math.isnan(s):
        return (f"Neither {ref_name} nor any distributed configuration reached the target by "
                "median: no absolute speedup can be stated.")
    return (f"No configuration of the sweep beats {ref_name} on this hardware: the fastest, "
            f"{name}, has an absolute speedup of "
            f"{fmt_speedup(r, key='abs_speedup', unit='', why=False)}x "
            f"(TTT {fmt_s(float(top['ttt_s']))} against {fmt_s(float(ref['ttt_s']))}).")


def _table(headers: list[str], rows: list[list[str]], left: tuple[int, ...] = (0,),
           raw: bool = False) -> str:
    th = "".join(f'<th class="{"l" if i in left else ""}">{_esc(h)}</th>'
                 for i, h in enumerate(headers))
    body = []
    for r in rows:
        tds = "".join(f'<td class="{"l" if i in left else ""}">{c if raw else _esc(c)}</td>'
                      for i, c in enumerate(r))
        body.append(f"<tr>{tds}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


@dataclass
class ReportData:
    """Everything the report computes once from a results directory (see :func:`analyse`).

    The report's sections, its figure builders (:func:`learning_curve_figure`,
    :func:`ttt_figure`, :func:`speedup_figures`, :func:`throughput_figure`) and
    :mod:`analysis.publish` all read from this, so the HTML and the exported PNGs/tables show
    the same numbers.

    Attributes:
        res: the loaded results directory.
        tm: per-trial metrics (:func:`analysis.metrics.trial_metrics`), one row per trial.
        target: the target the trials are judged against.
        summary: per-configuration statistics (:func:`analysis.stats.summarize_configs`).
        speed: speedup / parallel efficiency per configuration
            (:func:`analysis.stats.speedup_table`); empty without configurations.
        plan: the capacity plan (:func:`analysis.plan.make_plan`); None without configurations.
        check: the plan check (:func:`analysis.plan_check.plan_check`) on the N above the
            :data:`~analysis.plan_check.MIN_FIT_N` smallest; None when no algorithm has more.
        batch: the batch-size check (:func:`analysis.batch_size.batch_size_check`) when an
            algorithm ran several batch sizes with the gradient noise scale measured; else None.
        warnings: one line each: what was missing, repaired or is not trustworthy.
        colors: line colour per ``(algorithm, num_env_runners)``; alg_color: per algorithm.
        n_figures: figures placed in the HTML page so far.
    """

    res: Results
    tm: pd.DataFrame
    target: Target
    summary: pd.DataFrame
    speed: pd.DataFrame
    plan: Plan | None
    warnings: list[str]
    check: PlanCheck | None = None
    batch: BatchSizeCheck | None = None
    colors: dict[tuple[str, int], str] = field(default_factory=dict)
    alg_color: dict[str, str] = field(default_factory=dict)
    n_figures: int = 0


class FigureUnavailable(Exception):
    """A figure cannot be drawn from these results; the message (one line) says why."""


FIGURE_HEIGHT = {"learning_curves": 460, "ttt": 430, "speedup": 470, "efficiency": 430,
                 "throughput": 430, "plan_check": 430, "batch_size": 430}
"""Height in CSS pixels of each figure, in the report and in exported images."""


def style_figure(fig: Any, height: int = 430) -> Any:
    """Apply the report's look (white template, margins, fonts) and ``height`` (CSS px).

    Returns the same figure (modified in place), so calls can be chained.
    """
    fig.update_layout(template="plotly_white", height=height,
                      margin={"l": 64, "r": 24, "t": 56, "b": 56},
                      font={"size": 13}, legend={"font": {"size": 12}})
    return fig


class _Figures:
    """Turns plotly figures into divs (plotly.js is embedded once, in the head)."""

    def __init__(self, ctx: ReportData) -> None:
        self.ctx = ctx

    def div(self, fig: Any, height: int = 430) -> str:
        style_figure(fig, height)
        self.ctx.n_figures += 1
        div_id = f"fig-{self.ctx.n_figures}"
        return '<div class="fig">' + fig.to_html(
            full_html=False, include_plotlyjs=False, div_id=div_id,
            config={"displaylogo": False, "responsive": True}) + "</div>"


def _missing(text: str) -> str:
    return f'<div class="missing">{_esc(text)}</div>'


# ---------------------------------------------------------------------------------------------
# Section 1: summary
# ---------------------------------------------------------------------------------------------
def _summary(ctx: ReportData) -> str:
    s, tm = ctx.summary, ctx.tm
    parts = [f'<p>Target: <b>{_esc(ctx.target.metric)} &ge; {ctx.target.value:g}</b> '
             f'(from {_esc(ctx.target.source)}'
             + (f"; the sweep ran with {ctx.target.original:g}" if ctx.target.overridden else "")
             + f'). Metric: <span id="target-metric">'
             f'{_esc(describe_metric(ctx.target.metric, ctx.res.spec))}</span>. {len(tm)} trials in {len(s)} configurations: '
             f'{int((tm["status"] == "reached").sum()) if len(tm) else 0} reached the target, '
             f'{int((tm["status"] == "censored").sum()) if len(tm) else 0} censored, '
             f'{int((tm["status"] == "error").sum()) if len(tm) else 0} errors.</p>']
    lat = tm["step_latency_ms"] if "step_latency_ms" in tm else pd.Series(dtype=float)
    if (lat > 0).any():
        cpr = tm["cpus_per_env_runner"] if "cpus_per_env_runner" in tm else pd.Series([1.0])
        parts.append(
            f'<p id="step-latency">Every env step waited <b>{fmt_num(float(lat.max()), 3)} ms'
            '</b> (<code>step_latency_ms</code>, envs/latency.py): a model of a slow simulator, '
            'a remote service or a renderer, not a property of the env; evaluation episodes '
            f'ran without it. Env runners asked for {_esc(", ".join(sorted({f"{x:g}" for x in cpr})))}'
            ' CPU each.</p>')
    if s.empty:
        parts.append(_missing("No trials yet: nothing to summarise."))
    else:
        best = best_configs(s, ("algorithm",))
        sp = ctx.speed.set_index("config_id") if len(ctx.speed) else pd.DataFrame()
        cards = []
        top = best.assign(_t=best["ttt_s"].fillna(np.inf)).sort_values("_t").iloc[0]
        if math.isfinite(top["ttt_s"]):
            cards.append(("Fastest configuration", f"{top['algorithm']}, "
                          + ("single process (reference)" if top["is_reference"] else
                             f"{top['num_env_runners']} env runner(s)"),
                          f"TTT {_ttt_html(top)}"))
        ref = s[s["is_reference"]]
        if len(ref):
            ref = ref.iloc[0]
            cards.append(("Single-process reference", f"{ref['algorithm']}",
                          f"TTT {_ttt_html(ref)}; "
                          f"{ref['n_reached']}/{ref['n_reached'] + ref['n_censored']} seeds "
                          "reached the target"))
        else:
            n_tr = int((s["n_reached"] + s["n_censored"]).sum())
            cards.append(("Target not reached", f"{int(s['n_reached'].sum())} of {n_tr} trials",
                          f"best return {tm['best_return'].max():.4g} vs target "
                          f"{ctx.target.value:g}"))
        if top["config_id"] in sp.index and (
                math.isfinite(sp.at[top["config_id"], "speedup"])
                or math.isfinite(sp.at[top["config_id"], "speedup_lower_bound"])):
            r = sp.loc[top["config_id"]]
            effs = [f"{_speedup_html(r, c, r[ratio])} per {w}" for c, ratio, w in (
                ("efficiency_per_runner", "runner_ratio", "env runner"),
                ("efficiency_per_cpu", "cpu_ratio", "CPU")) if math.isfinite(r[ratio])]
            cards.append(("Speedup vs baseline", _speedup_html(r) + "x",
                          "efficiency " + ", ".join(effs) if effs else ""))
        if top["config_id"] in sp.index and not top["is_reference"] and (
                math.isfinite(sp.at[top["config_id"], "abs_speedup"])
                or math.isfinite(sp.at[top["config_id"], "abs_speedup_lower_bound"])):
            cards.append(("Absolute speedup (vs reference)",
                          _speedup_html(sp.loc[top["config_id"]], "abs_speedup") + "x",
                          "TTT(reference) / TTT(fastest configuration)"))
        if ctx.plan is not None and ctx.plan.cheapest is not None:
            c = ctx.plan.cheapest
            cards.append(("Recommended (cheapest run)", f"{c['num_env_runners']} env runner(s)",
                          f"{c['algorithm']} on {c['nodes']} x {c['vm']}: {fmt_s(c['ttt_s'])}, "
                          f"{fmt_usd(c['cost_usd'])}"))
        if ctx.plan is not None and ctx.plan.knee is not None:
            k = ctx.plan.knee
            sub = (f"{k['algorithm']}: more env runners are not predicted to help"
                   if k["num_env_runners"] == k["relative_to_n"] else
                   f"{k['algorithm']}: speedup {k['speedup']:.2f}x over {k['relative_to_n']}, "
                   f"efficiency {k['efficiency']:.0%}"
                   + (" (extrapolated)" if k["extrapolated"] else ""))
            cards.append(("Knee of the efficiency curve", f"{k['num_env_runners']} env runner(s)",
                          sub))
        if ctx.plan is not None and ctx.plan.fastest is not None:
            f = ctx.plan.fastest
            cards.append(("Fastest predicted run", f"{f['num_env_runners']} env runner(s)",
                          f"{f['algorithm']} on {f['nodes']} x {f['vm']}: {fmt_s(f['ttt_s'])}, "
                          f"{fmt_usd(f['cost_usd'])}"
                          + (" (extrapolated)" if f["extrapolated"] else "")))
        parts.append('<div class="cards">' + "".join(
            f'<div class="card"><div class="k">{_esc(k)}</div><div class="v">{v}</div>'
            f'<div class="s">{_esc(sub) if "&" not in sub else sub}</div></div>'
            for k, v, sub in cards) + "</div>")
        verdict = reference_verdict(s, ctx.speed)
        if verdict:
            parts.append(f'<p class="banner" id="reference-verdict">{_esc(verdict)}</p>')
        share = tm["eval_time_s"] / tm["elapsed_s"] if "eval_time_s" in tm else pd.Series()
        share = share[np.isfinite(share.astype(float))] if len(share) else share
        if len(share) and ctx.target.metric == "evaluation":
            parts.append(f'<p class="note">The evaluation protocol took a median '
                         f'{share.median():.1%} (at most {share.max():.1%}) of a trial\'s '
                         'wall-clock; it is inside every time-to-target.</p>')
        rows = []
        for _, b in best.iterrows():
            r = sp.loc[b["config_id"]] if b["config_id"] in sp.index else None
            cost = "-"
            if ctx.plan is not None and not ctx.plan.candidates.empty:
                c = ctx.plan.candidates
                c = c[(c["config_id"] == b["config_id"]) & (c["source"] == "measured")]
                if len(c):
                    c = c.sort_values("cost_usd").iloc[0]
                    cost = f"{fmt_usd(c['cost_usd'])} on {c['nodes']} x {c['vm']}"
            rows.append([
                b["algorithm"] + (" (baseline)" if b["is_baseline"] else "")
                + (" (reference)" if b["is_reference"] else ""),
                str(b["num_env_runners"]), _esc(b["config_label"]),
                f"{b['n_reached']}/{b['n_reached'] + b['n_censored']}"
                + (f" (+{b['n_error']} err)" if b["n_error"] else ""),
                _esc(b["estimator"] or "-"), _ttt_html(b),
                _speedup_html(r) if r is not None else "-",
                _speedup_html(r, "abs_speedup") if r is not None else "-",
                _speedup_html(r, "efficiency_per_runner", r["runner_ratio"])
                if r is not None and math.isfinite(r["runner_ratio"]) else "-",
                _speedup_html(r, "efficiency_per_cpu", r["cpu_ratio"])
                if r is not None and math.isfinite(r["cpu_ratio"]) else "-",
                _esc(cost), _esc(b["note"] or "")])
        parts.append("<h3>Best configuration per algorithm</h3>")
        parts.append('<p class="note">Best = lowest median time-to-target (Kaplan-Meier median '
                     'when some seeds were censored) over all sampled configurations of the '
                     'algorithm. Brackets: 95 % confidence intervals (bootstrap over seeds; '
                     'Kaplan-Meier/Greenwood with censoring). Speedup = TTT(baseline) / TTT; '
                     'absolute speedup = TTT(single-process reference) / TTT. Efficiency = '
                     'speedup / resources ratio, per env runner and per CPU, only for the '
                     'baseline\'s algorithm. Cost: one run at the measured TTT on '
                     'the cheapest VM size that fits it (pay-as-you-go).</p>')
        parts.append(_table(["algorithm", "env runners", "configuration", "reached",
                             "estimator", "TTT [95% CI]", "speedup [95% CI]",
                             "absolute speedup [95% CI]",
                             "efficiency / runner", "efficiency / CPU", "cost per run", "notes"],
                            rows, left=(0, 2, 4, 10, 11), raw=True))
    if not s.empty:
        sp = ctx.speed.set_index("config_id") if len(ctx.speed) else pd.DataFrame()
        rows = []
        for _, c in s.assign(_t=s["ttt_s"].astype(float).fillna(np.inf)).sort_values(
                ["algorithm", "num_env_runners", "_t"]).iterrows():
            r = sp.loc[c["config_id"]] if c["config_id"] in sp.index else None
            rows.append([
                c["algorithm"] + (" (baseline)" if c["is_baseline"] else "")
                + (" (reference)" if c["is_reference"] else ""),
                str(c["num_env_runners"]), _esc(c["config_label"]),
                f"{c['n_reached']}/{c['n_reached'] + c['n_censored']}", _ttt_html(c),
                _speedup_html(r) if r is not None else "-",
                _speedup_html(r, "abs_speedup") if r is not None else "-",
                f"{c['eval_share']:.1%}" if math.isfinite(c["eval_share"]) else "-"])
        parts.append(f'<details id="all-configurations"><summary>All {len(s)} configurations '
                     '(time-to-target, speedup, absolute speedup)</summary>')
        parts.append(_table(["algorithm", "env runners", "configuration", "reached",
                             "TTT [95% CI]", "speedup [95% CI]", "absolute speedup [95% CI]",
                             "evaluation share of wall-clock"], rows, left=(0, 2), raw=True))
        parts.append("</details>")
    if ctx.warnings:
        parts.append('<h3>Warnings</h3><ul class="warn">' + "".join(
            f"<li>{_esc(w)}</li>" for w in ctx.warnings) + "</ul>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Section 2: learning curves
# ---------------------------------------------------------------------------------------------
_METRIC_AXIS = {"evaluation": "evaluation return (greedy, fixed seeds)",
                "training": "training return (exploring episodes)",
                "episode_return_mean": "training return (exploring episodes)"}
_CURVE_AXES = {"wall_time_s": ("wall-clock since trial start (s)", "Episode return vs wall-clock"),
               "env_steps": ("env steps sampled", "Episode return vs env steps")}


def learning_curve_figure(data: ReportData, x: str = "wall_time_s") -> Any:
    """Learning curves: the target metric of every trial against wall-clock or env steps.

    One line per trial (dotted: censored or failed), coloured by algorithm, darker for more env
    runners; crosses where each trial first reached the target; the target as a dashed line.

    Args:
        data: from :func:`analyse`.
        x: ``"wall_time_s"`` (seconds since trial start) or ``"env_steps"`` (env steps sampled).

    Returns:
        A ``plotly.graph_objects.Figure`` (unstyled; see :func:`style_figure`).

    Raises:
        FigureUnavailable: progress.parquet is missing or empty, or there are no trials.
        ValueError: an unknown ``x``.
    """
    import plotly.graph_objects as go

    if x not in _CURVE_AXES:
        raise ValueError(f"x={x!r}: expected one of {sorted(_CURVE_AXES)}")
    prog, tm = data.res.progress, data.tm
    col = data.target.column
    if prog.empty or col not in prog.columns or tm.empty:
        raise FigureUnavailable("No learning curves: progress.parquet is missing or empty.")
    info = tm.set_index("trial_id")
    xlabel, title = _CURVE_AXES[x]
    fig = go.Figure()
    for key in sorted(data.colors):
        name = f"{key[0]}, {key[1]} env runner(s)"
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=name,
                                 legendgroup=name, line={"color": data.colors[key],
                                                         "width": 2.5}))
    trials = prog[prog["trial_id"].isin(info.index)]
    order = sorted(trials["trial_id"].unique(), key=lambda tid: (
        info.at[tid, "algorithm"], info.at[tid, "num_env_runners"], tid))
    groups = dict(tuple(trials.groupby("trial_id", sort=False)))
    for tid in order:
        g, t = groups[tid], info.loc[tid]
        key = (t["algorithm"], int(t["num_env_runners"]))
        name = f"{key[0]}, {key[1]} env runner(s)"
        fig.add_trace(go.Scatter(
            x=g[x], y=g[col], mode="lines", name=name, legendgroup=name,
            connectgaps=True,  # an iteration in which no episode ended has no return (NaN)
            showlegend=False, line={"color": data.colors[key], "width": 1.5,
                                    "dash": "dot" if t["status"] != "reached"
                                    else "solid"},
            hovertemplate=f"{_esc(tid)}<br>%{{x:.4g}}, return %{{y:.4g}}<extra>"
                          f"{t['status']}</extra>"))
    reached = tm[tm["reached"]]
    if len(reached):
        xs = reached["time_to_target_s" if x == "wall_time_s" else "steps_to_target"]
        fig.add_trace(go.Scatter(x=xs, y=[data.target.value] * len(reached), mode="markers",
                                 name="reached target", marker={"symbol": "x", "size": 8,
                                                                "color": "#222"}))
    fig.add_hline(y=data.target.value, line={"color": "#d62728", "dash": "dash"},
                  annotation_text=f"target {data.target.value:g}",
                  annotation_position="top left")
    fig.update_layout(title=title, xaxis_title=xlabel,
                      yaxis_title=_METRIC_AXIS.get(data.target.metric, data.target.metric))
    return fig


def _learning_curves(ctx: ReportData, figs: _Figures) -> str:
    try:
        out = [figs.div(learning_curve_figure(ctx, x), height=FIGURE_HEIGHT["learning_curves"])
               for x in ("wall_time_s", "env_steps")]
    except FigureUnavailable as exc:
        return _missing(str(exc))
    return ('<p class="note">One line per trial (dotted: censored or failed), coloured by '
            'algorithm, darker for more env runners. Crosses mark where each trial first '
            'reached the target.</p>' + "".join(out))


# ---------------------------------------------------------------------------------------------
# Section 3: scaling
# ---------------------------------------------------------------------------------------------
def _log_ticks(values: Any, prefix: str = "") -> dict[str, Any]:
    """Tick values 1-2-5 per decade covering ``values`` (readable labels on log axes)."""
    v = np.asarray(pd.to_numeric(pd.Series(np.ravel(values)), errors="coerce"), float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return {}
    lo, hi = v.min(), v.max()
    ticks = [m * 10.0**k for k in range(math.floor(math.log10(lo)) - 1,
                                        math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo / 2.5 <= t <= hi * 2.5]
    return {"tickvals": ticks, "ticktext": [f"{prefix}{t:g}" for t in ticks]}


def _n_axis(ns: list[int]) -> dict[str, Any]:
    """x axis over env runner counts: log scale, or linear when N = 0 (driver) is present."""
    ns = sorted(set(ns))
    if not ns:
        return {"title": "env runners (N)"}
    kind = "linear" if ns[0] < 1 else "log"
    return {"type": kind, "tickvals": ns, "ticktext": [str(n) for n in ns],
            "title": "env runners (N)" + (" (0 = sampling in the driver)" if ns[0] < 1 else "")}


def _best_per_n(summary: pd.DataFrame) -> tuple[pd.DataFrame, list[int], dict[str, Any]]:
    """Best configuration per (algorithm, N), the measured N, and the N axis."""
    best = best_configs(summary, ("algorithm", "num_env_runners"))
    ns_all = sorted(int(n) for n in best["num_env_runners"].unique())
    return best, ns_all, _n_axis(ns_all)


def ttt_figure(data: ReportData) -> Any:
    """Time-to-target against env runners: per algorithm, its best configuration at each N.

    Median TTT (Kaplan-Meier median with censoring) with its 95 % CI as error bars; an N whose
    median was not reached is drawn as a triangle at its longest censored time (> budget).

    Returns:
        A ``plotly.graph_objects.Figure`` (unstyled; see :func:`style_figure`).

    Raises:
        FigureUnavailable: no configurations yet.
    """
    import plotly.graph_objects as go

    if data.summary.empty:
        raise FigureUnavailable("No configurations yet.")
    best, _, axis = _best_per_n(data.summary)
    fig = go.Figure()
    for alg, g in best.groupby("algorithm"):
        g = g.sort_values("num_env_runners")
        fin = g[np.isfinite(g["ttt_s"].astype(float))]
        lo = (fin["ttt_s"] - fin["ttt_low_s"]).clip(lower=0)
        hi = (fin["ttt_high_s"] - fin["ttt_s"]).replace(np.inf, np.nan)
        fig.add_trace(go.Scatter(
            x=fin["num_env_runners"], y=fin["ttt_s"], mode="lines+markers", name=alg,
            line={"color": data.alg_color[alg]},
            error_y={"type": "data", "array": hi.fillna(0), "arrayminus": lo.fillna(0),
                     "visible": True},
            hovertemplate="N=%{x}<br>TTT %{y:.4g} s<extra>" + alg + "</extra>"))
        inf = g[~np.isfinite(g["ttt_s"].astype(float))]
        if len(inf):
            fig.add_trace(go.Scatter(
                x=inf["num_env_runners"], y=inf["max_censor_s"], mode="markers",
                name=f"{alg}: not reached (> budget)", marker={
                    "symbol": "triangle-up", "size": 11, "color": data.alg_color[alg]}))
    fig.update_layout(title="Time-to-target vs env runners (median, 95% CI; target metric: "
                            f"{data.target.metric})", xaxis=axis,
                      yaxis_title="time-to-target (s)")
    return fig


@dataclass
class SpeedupFigures:
    """The speedup and parallel-efficiency figures (see :func:`speedup_figures`).

    Attributes:
        speedup: speedup vs env runners with the ideal line and Amdahl/USL fits.
        efficiency: parallel efficiency per env runner and per CPU vs env runners.
        fits: ``(algorithm, "1/TTT", ScalingFit)`` for every fit tried (shown or not).
        notes: plain-text caveats to print beside the figures.
    """

    speedup: Any
    efficiency: Any
    fits: list[tuple[str, str, Any]]
    notes: list[str]


def speedup_figures(data: ReportData) -> SpeedupFigures:
    """Speedup S = TTT(baseline) / TTT vs env runners, and parallel efficiency.

    Per algorithm, its best configuration at each N: measured speedups with bootstrap 95 % CIs
    (only bounded ones drawn), the ideal linear speedup, and Amdahl (dotted) / USL (solid) fits
    of 1/TTT (:func:`analysis.scaling.fit_scaling`) scaled to the baseline's TTT. Efficiency
    E = S / resources ratio, per env runner (solid) and per CPU (dashed).

    Raises:
        FigureUnavailable: no baseline trials, or no finite speedup (the baseline's median TTT
            was not reached, so speedups are only bounded).
    """
    import plotly.graph_objects as go

    s = data.summary
    if s.empty:
        raise FigureUnavailable("No configurations yet.")
    best, ns_all, axis = _best_per_n(s)
    sp = data.speed.set_index("config_id") if len(data.speed) else pd.DataFrame()
    base = s[s["is_baseline"]]
    if base.empty or sp.empty or not np.isfinite(sp["speedup"].astype(float)).any():
        if base.empty:
            why = "there are no baseline trials"
        else:
            b0 = base.iloc[0]
            why = (f"the baseline ({b0['algorithm']}, {b0['num_env_runners']} env runner(s)) "
                   f"did not reach the target in half its seeds; speedups are only bounded "
                   f"(see the tables)")
        raise FigureUnavailable(f"No speedup curve: {why}.")
    notes: list[str] = []
    fit_rows: list[tuple[str, str, Any]] = []
    b = base.sort_values("n_trials", ascending=False).iloc[0]
    nb = int(b["num_env_runners"])
    fig = go.Figure()
    grid = np.unique(np.concatenate([np.geomspace(1, max(ns_all + [2]), 60),
                                     np.array(ns_all, float)]))
    grid = grid[grid >= 1]
    if nb >= 1:
        fig.add_trace(go.Scatter(x=grid, y=grid / nb, mode="lines", name="ideal (linear)",
                                 line={"color": "#888", "dash": "dash"}))
    else:
        notes.append("The baseline samples in the driver (0 env runners): there is no ideal "
                     "linear-speedup line in env runners.")
    nb = max(nb, 1)
    eff = go.Figure()
    for alg, g in best.groupby("algorithm"):
        g = g[g["config_id"].isin(sp.index)].sort_values("num_env_runners")
        r = sp.loc[g["config_id"]]
        ok = np.isfinite(r["speedup"].astype(float)).to_numpy()
        if not ok.any():
            continue
        gg, rr = g[ok], r[ok]
        # Error bars only for bounded intervals (an unbounded one is said in the tables).
        bounded = np.isfinite(rr["speedup_high"].astype(float)) & (
            rr["speedup_low"].astype(float) > 0)
        hi = (rr["speedup_high"] - rr["speedup"]).where(bounded, 0.0).fillna(0)
        lo = (rr["speedup"] - rr["speedup_low"]).where(bounded, 0.0).fillna(0)
        fig.add_trace(go.Scatter(
            x=gg["num_env_runners"], y=rr["speedup"], mode="markers", name=f"{alg} measured",
            marker={"color": data.alg_color[alg], "size": 9},
            error_y={"type": "data", "array": hi.to_numpy(), "arrayminus": lo.to_numpy()}))
        usable = g[(g["num_env_runners"] >= 1) & np.isfinite(g["ttt_s"].astype(float))]
        fits = fit_scaling(usable["num_env_runners"].to_numpy(float),
                           1.0 / usable["ttt_s"].to_numpy(float))
        for m, dash in (("amdahl", "dot"), ("usl", "solid")):
            f = fits[m]
            fit_rows.append((alg, "1/TTT", f))
            if f.ok:
                fig.add_trace(go.Scatter(
                    x=grid, y=f.predict(grid) * float(b["ttt_s"]), mode="lines",
                    name=f"{alg} {'USL' if m == 'usl' else 'Amdahl'} fit",
                    line={"color": data.alg_color[alg], "dash": dash, "width": 1.5}))
        eff.add_trace(go.Scatter(
            x=gg["num_env_runners"], y=rr["efficiency_per_runner"], mode="lines+markers",
            name=f"{alg} per env runner", line={"color": data.alg_color[alg]}))
        eff.add_trace(go.Scatter(
            x=gg["num_env_runners"], y=rr["efficiency_per_cpu"], mode="lines+markers",
            name=f"{alg} per CPU", line={"color": data.alg_color[alg], "dash": "dash"},
            marker={"symbol": "square"}))
    fig.update_layout(title=f"Speedup vs env runners (baseline: {b['algorithm']}, "
                            f"{b['num_env_runners']} env runner(s))", xaxis=axis,
                      yaxis={"title": "speedup S = TTT(baseline) / TTT", "type": "log",
                             **_log_ticks([0.5, *data.speed["speedup"], max(ns_all) / nb])})
    eff.add_hline(y=1.0, line={"color": "#888", "dash": "dash"})
    eff.update_layout(title="Parallel efficiency E = S / resources ratio", xaxis=axis,
                      yaxis_title="parallel efficiency")
    return SpeedupFigures(speedup=fig, efficiency=eff, fits=fit_rows, notes=notes)


def throughput_figure(data: ReportData) -> tuple[Any, list[tuple[str, str, Any]]]:
    """Throughput (env steps per second of wall-clock, start-up included) vs env runners.

    One marker per trial of each algorithm's best configurations, with Amdahl (dotted) and USL
    (solid) fits (:func:`analysis.scaling.fit_scaling`).

    Returns:
        ``(figure, fits)`` with ``fits`` = ``(algorithm, "env steps/s", ScalingFit)`` rows.

    Raises:
        FigureUnavailable: no configurations yet.
    """
    import plotly.graph_objects as go

    if data.summary.empty:
        raise FigureUnavailable("No configurations yet.")
    best, ns_all, axis = _best_per_n(data.summary)
    fig = go.Figure()
    tp_fit_rows = []
    for alg, g in best.groupby("algorithm"):
        t = data.tm[data.tm["config_id"].isin(g["config_id"]) & (data.tm["status"] != "error")]
        t = t[np.isfinite(t["env_steps_per_s"].astype(float))]
        if t.empty:
            continue
        fig.add_trace(go.Scatter(x=t["num_env_runners"], y=t["env_steps_per_s"], mode="markers",
                                 name=f"{alg} trials", marker={"color": data.alg_color[alg],
                                                               "size": 7, "opacity": 0.7}))
        fits = fit_scaling(t["num_env_runners"].to_numpy(float),
                           t["env_steps_per_s"].to_numpy(float))
        grid = np.geomspace(1, max(ns_all + [2]), 60)
        for m, dash in (("amdahl", "dot"), ("usl", "solid")):
            f = fits[m]
            tp_fit_rows.append((alg, "env steps/s", f))
            if f.ok:
                fig.add_trace(go.Scatter(x=grid, y=f.predict(grid), mode="lines",
                                         name=f"{alg} {'USL' if m == 'usl' else 'Amdahl'} fit",
                                         line={"color": data.alg_color[alg], "dash": dash}))
    fig.update_layout(title="Throughput vs env runners (env steps per second of wall-clock, "
                            "start-up included)", xaxis=axis, yaxis_title="env steps / s")
    return fig, tp_fit_rows


def _scaling(ctx: ReportData, figs: _Figures) -> str:
    s = ctx.summary
    if s.empty:
        return _missing("No configurations yet.")
    best, ns_all, _ = _best_per_n(s)
    out = ['<p class="note">Per algorithm, the best configuration at each env runner count '
           '(lowest median TTT) is plotted; all configurations are in the table at the end of '
           'this section.</p>']
    distinct_per_alg = best.groupby("algorithm")["num_env_runners"].nunique()
    if distinct_per_alg.max() < 2:
        out.append(_missing(f"Only one env runner count was measured "
                            f"(N={', '.join(map(str, ns_all))}): no scaling curve can be drawn "
                            "or fitted. Measure at least two (three for the USL)."))
    out.append(figs.div(ttt_figure(ctx), height=FIGURE_HEIGHT["ttt"]))

    sp = ctx.speed.set_index("config_id") if len(ctx.speed) else pd.DataFrame()
    try:
        sf = speedup_figures(ctx)
    except FigureUnavailable as exc:
        out.append(_missing(str(exc)))
        fit_rows = []
    else:
        out.extend(f'<p class="note">{_esc(n)}</p>' for n in sf.notes)
        out.append(figs.div(sf.speedup, height=FIGURE_HEIGHT["speedup"]))
        out.append(figs.div(sf.efficiency, height=FIGURE_HEIGHT["efficiency"]))
        fit_rows = sf.fits
    fig, tp_fit_rows = throughput_figure(ctx)
    out.append(figs.div(fig, height=FIGURE_HEIGHT["throughput"]))

    rows = []
    for alg, what, f in [*fit_rows, *tp_fit_rows]:
        rows.append([alg, what, f.model.upper() if f.model == "usl" else "Amdahl",
                     "yes" if f.ok else "no", fmt_num(f.gamma, 4), fmt_num(f.alpha, 3),
                     fmt_num(f.beta, 3) if f.model == "usl" else "0",
                     fmt_num(f.peak_n, 3) if f.model == "usl" else "none",
                     fmt_num(f.r2, 3), str(f.n_distinct), f.reason])
    if rows:
        out.append("<h3>Scaling fits</h3><p class=\"note\">X(N) = &gamma;N / (1 + &alpha;(N&minus;1)"
                   " + &beta;N(N&minus;1)) (Gunther's Universal Scalability Law; Amdahl: &beta; = 0),"
                   " fitted with 0 &le; &alpha; &le; 1, &beta; &ge; 0. Peak N* = "
                   "&radic;((1&minus;&alpha;)/&beta;). A model is not fitted to fewer distinct N "
                   "than it has parameters.</p>")
        out.append(_table(["algorithm", "capacity X", "model", "fitted", "gamma", "alpha",
                           "beta", "peak N*", "R2", "distinct N", "caveat"], rows,
                          left=(0, 1, 2, 10)))
    if not sp.empty:
        rows = []
        for _, c in best.iterrows():
            if c["config_id"] not in sp.index:
                continue
            r = sp.loc[c["config_id"]]
            rows.append([c["algorithm"], str(c["num_env_runners"]), _speedup_html(r),
                         fmt_num(r["throughput_ratio"], 3),
                         fmt_num(r["sample_efficiency_ratio"], 3), fmt_num(r["residual"], 3),
                         r["speedup_note"] or ""])
        out.append("<h3>Why faster? Speedup = throughput ratio &times; sample-efficiency "
                   "ratio</h3><p class=\"note\">Throughput ratio: median env steps/s vs the "
                   "baseline. Sample-efficiency ratio: median steps-to-target of the baseline / "
                   "this configuration (&gt; 1: fewer samples needed). Residual: the part of the "
                   "speedup neither explains (start-up time, iteration granularity).</p>")
        out.append(_table(["algorithm", "env runners", "speedup [95% CI]", "throughput ratio",
                           "sample-efficiency ratio", "residual", "notes"],
                          [[x if i == 2 else _esc(x) for i, x in enumerate(row)] for row in rows],
                          left=(0, 6), raw=True))
    rows = []
    for _, c in s.sort_values(["algorithm", "num_env_runners", "ttt_s"]).iterrows():
        rows.append([c["algorithm"], str(c["num_env_runners"]), _esc(c["config_label"]),
                     f"{c['n_reached']}/{c['n_reached'] + c['n_censored']}",
                     _esc(c["estimator"] or "-"), _ttt_html(c),
                     fmt_ci(c["ttt_iqm_s"], c["ttt_iqm_low_s"], c["ttt_iqm_high_s"],
                            lambda z: f"{z:.1f}"),
                     fmt_num(c["ttt_olympic_s"], 4), fmt_num(c["env_steps_per_s"], 4),
                     fmt_num(c["steps_to_target"], 4),
                     fmt_num(c.get("cpus_per_env_runner", 1.0), 3),
                     fmt_num(c["num_cpus"], 3),
                     fmt_num(c.get("peak_rss_mib", math.nan), 4),
                     _esc(c["note"] or "")])
    out.append("<details><summary>All configurations (" + str(len(s)) + ")</summary>"
               + _table(["algorithm", "env runners", "configuration", "reached", "estimator",
                         "TTT [95% CI]", "IQM TTT (s) [95% CI]", "olympic mean (s)",
                         "env steps/s", "steps-to-target", "CPUs per env runner",
                         "CPUs asked", "peak RSS (MiB)", "notes"], rows,
                        left=(0, 2, 4, 13), raw=True) + "</details>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 4: cost vs time
# ---------------------------------------------------------------------------------------------
def _cost(ctx: ReportData, figs: _Figures) -> str:
    import plotly.graph_objects as go

    plan = ctx.plan
    if plan is None or plan.candidates.empty:
        why = "; ".join(plan.notes) if plan is not None else "the plan could not be made"
        return _missing(f"No cost/time trade-off: {why}")
    c = plan.candidates
    fig = go.Figure()
    for i, (vm, g) in enumerate(c.groupby("vm", sort=False)):
        fig.add_trace(go.Scatter(
            x=g["ttt_s"], y=g["cost_usd"], mode="markers", name=vm,
            marker={"size": 8, "color": _ALG_COLORS[i % len(_ALG_COLORS)],
                    "symbol": ["circle-open" if e else "circle" for e in g["extrapolated"]]},
            customdata=np.stack([g["algorithm"], g["num_env_runners"], g["nodes"],
                                 g["source"]], axis=-1),
            hovertemplate="%{customdata[0]}, N=%{customdata[1]}, %{customdata[2]} node(s)<br>"
                          "TTT %{x:.4g} s, $%{y:.4g}<br>%{customdata[3]}<extra>" + vm
                          + "</extra>"))
    front = c[c["pareto"]].sort_values("ttt_s")
    fig.add_trace(go.Scatter(x=front["ttt_s"], y=front["cost_usd"], mode="lines",
                             name="Pareto front", line={"color": "#222", "width": 2}))
    for (label, r), (ax, ay) in zip((("cheapest", plan.cheapest), ("fastest", plan.fastest)),
                                    ((90, 40), (90, -45)), strict=True):
        if r is not None:
            fig.add_annotation(x=math.log10(r["ttt_s"]), y=math.log10(max(r["cost_usd"], 1e-9)),
                               text=f"{label}: {r['algorithm']} N={r['num_env_runners']}, "
                                    f"{r['nodes']} x {r['vm']}", showarrow=True, arrowhead=2,
                               ax=ax, ay=ay, bgcolor="rgba(255,255,255,0.85)",
                               bordercolor="#888")
    fig.update_layout(title="Cost vs time of one run to the target (open markers: "
                            "extrapolated)", xaxis={"title": "predicted time-to-target (s)",
                                                    "type": "log", **_log_ticks(c["ttt_s"])},
                      yaxis={"title": "cost per run (US$)", "type": "log",
                             **_log_ticks(c["cost_usd"], "$")})
    lines = plan_text(plan)
    return (figs.div(fig, height=480) + "<ul>" + "".join(f"<li>{_esc(x)}</li>" for x in lines)
            + "</ul><p class=\"note\">Cost model: nodes = ceil(CPUs / vCPUs per VM), "
            "with the CPUs the trials asked for (driver + N &times; CPUs per env runner), enough "
            "GPUs for the learner and enough memory for the trials' peak RSS (fitted per env "
            "runner; 70 % of a node's memory, the rest is Ray's object store); cost = nodes &times; $/h &times; TTT / 3600. "
            "Prices: analysis/vm_sizes.csv (pay-as-you-go Linux; source and date per row). "
            "Reproduce with <code>python -m analysis.plan RESULTS_DIR --deadline 10m "
            "--budget 1usd</code>.</p>")


# ---------------------------------------------------------------------------------------------
# Section 5: plan check
# ---------------------------------------------------------------------------------------------
def plan_check_figure(data: ReportData) -> Any:
    """Measured TTT per N (95 % CI) against the predictions made without the held-out N.

    Raises:
        FigureUnavailable: no plan check (too few distinct N).
    """
    import plotly.graph_objects as go

    if data.check is None or data.check.rows.empty:
        raise FigureUnavailable("No plan check.")
    best, _, axis = _best_per_n(data.summary)
    rows = data.check.rows[data.check.rows["quantity"] == "TTT"]
    fig = go.Figure()
    for alg, g in best[best["num_env_runners"] >= 1].groupby("algorithm"):
        g = g[np.isfinite(g["ttt_s"].astype(float))].sort_values("num_env_runners")
        held = set(rows[rows["algorithm"] == alg]["num_env_runners"])
        for part, sym in ((g[~g["num_env_runners"].isin(held)], "circle"),
                          (g[g["num_env_runners"].isin(held)], "diamond")):
            if part.empty:
                continue
            fig.add_trace(go.Scatter(
                x=part["num_env_runners"], y=part["ttt_s"], mode="markers",
                name=f"{alg} measured" + (" (held out)" if sym == "diamond" else " (fitted)"),
                marker={"symbol": sym, "size": 10, "color": data.alg_color[alg]},
                error_y={"type": "data", "visible": True,
                         "array": (part["ttt_high_s"] - part["ttt_s"]).replace(np.inf, np.nan)
                         .fillna(0), "arrayminus": (part["ttt_s"] - part["ttt_low_s"]).clip(
                             lower=0).fillna(0)}))
        for k, (model, mg) in enumerate(rows[rows["algorithm"] == alg].groupby("model")):
            mg = mg[np.isfinite(mg["predicted"])]
            if mg.empty:
                continue
            fig.add_trace(go.Scatter(
                x=mg["num_env_runners"] * (1.06 + 0.06 * k), y=mg["predicted"],
                mode="markers", name=f"{alg} predicted: {model}",
                marker={"symbol": "x" if model == "pipeline" else "star", "size": 10,
                        "color": data.alg_color[alg]},
                error_y={"type": "data", "visible": True,
                         "array": (mg["high"] - mg["predicted"]).replace(np.inf, np.nan)
                         .fillna(0), "arrayminus": (mg["predicted"] - mg["low"]).fillna(0)}))
    fig.update_layout(title="Plan check: TTT predicted without the held-out N vs measured "
                            "(95% intervals)", xaxis=axis, yaxis={"title": "time-to-target (s)",
                                                                  "type": "log"})
    return fig


def _check(ctx: ReportData, figs: _Figures) -> str:
    check = ctx.check
    if check is None:
        return _missing(f"No plan check: it needs an algorithm measured at more than "
                        f"{MIN_FIT_N} env runner counts (>= 1): {MIN_FIT_N} to fit the scaling "
                        "models on, the rest to compare their predictions with.")
    out = ['<p class="note">The scaling models are fitted without the largest env runner '
           'counts, predict them, and are compared with what was measured there. '
           '<b>USL on 1/TTT</b> is the capacity plan\'s model; <b>pipeline</b> predicts TTT = '
           'start-up(N) + env steps to target(N) / sampling rate(N) from the parts each trial '
           'measures (start-up linear in N, rate by the USL, env steps by a power law in N). '
           'Intervals: 95 % bootstrap over seeds. Reproduce with <code>python -m analysis.plan '
           'RESULTS_DIR --holdout ' + ",".join(str(n) for n in sorted(
               check.rows["num_env_runners"].unique())) + '</code>.</p>']
    if not check.rows.empty:
        out.append(figs.div(plan_check_figure(ctx), height=FIGURE_HEIGHT["plan_check"]))
    rows = table_rows(check)
    if rows:
        out.append(_table(TABLE_HEADERS, rows, left=(0, 2, 3)))
    out.extend(f'<p class="note">{_esc(n)}</p>' for n in check.notes)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 6: batch size
# ---------------------------------------------------------------------------------------------
def batch_size_figure(data: ReportData) -> Any:
    """Learner updates and env steps to the target against the batch size: measured medians
    (markers; the pilot filled) and the curves predicted from the pilot's noise scale
    (McCandlish et al. 2018: S = S_min (1 + B_noise / B), E = S x env steps per update).

    Raises:
        FigureUnavailable: no batch-size check.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from analysis.batch_size import steps_at

    if data.batch is None or data.batch.rows.empty:
        raise FigureUnavailable("No batch-size check.")
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "learner updates to the target", "env steps to the target"))
    for alg, g in data.batch.rows.groupby("algorithm"):
        f = data.batch.fits[alg]
        color = data.alg_color.get(alg, "#333")
        bs = np.geomspace(g["train_batch_size"].min() / 1.5, g["train_batch_size"].max() * 1.5,
                          60)
        s_curve = steps_at(bs, f["s_min"], f["b_simple"])
        pilot = g[g["role"] == "pilot"].iloc[0]
        spu = pilot["steps_pred"] / pilot["updates_pred"] / pilot["train_batch_size"]
        for col, y_meas, y_curve, lo, hi in (
                (1, g["updates"], s_curve, g["updates_low"], g["updates_high"]),
                (2, g["steps"], s_curve * spu * bs, g["steps_low"], g["steps_high"])):
            fig.add_trace(go.Scatter(
                x=bs, y=y_curve, mode="lines", line={"color": color, "dash": "dash"},
                name=f"{alg} predicted from B={f['pilot']:g} (B_simple {f['b_simple']:.3g})",
                showlegend=col == 1), row=1, col=col)
            fig.add_trace(go.Scatter(
                x=g["train_batch_size"], y=y_meas, mode="markers", name=f"{alg} measured",
                marker={"color": color, "size": 10,
                        "symbol": ["circle" if r == "pilot" else "circle-open"
                                   for r in g["role"]]},
                showlegend=col == 1), row=1, col=col)
            fig.add_trace(go.Scatter(
                x=g["train_batch_size"], y=(lo + hi) / 2, mode="markers",
                marker={"size": 1, "color": color}, showlegend=False,
                error_y={"type": "data", "array": (hi - lo) / 2, "visible": True}),
                row=1, col=col)
    fig.update_xaxes(type="log", title_text="train batch size B")
    fig.update_yaxes(type="log")
    fig.update_layout(title="Batch size: predicted from the pilot's noise scale (dashed) vs "
                            "measured (filled: pilot)")
    return fig


def _batch(ctx: ReportData, figs: _Figures) -> str:
    b = ctx.batch
    if b is None:
        return _missing("No batch-size check: it needs one algorithm run at two or more "
                        "train batch sizes with the gradient noise scale measured "
                        "(grad_noise_scale in progress.parquet).")
    out = ['<p class="note">McCandlish et al. 2018 (arXiv 1812.06162): the steps S and samples '
           'E to reach a target trade off as S = S<sub>min</sub>(1 + B<sub>noise</sub>/B), '
           'E = E<sub>min</sub>(1 + B/B<sub>noise</sub>); the learner measures the simple noise '
           'scale B<sub>simple</sub> = tr(&Sigma;)/|G|&sup2; as the estimate of B<sub>noise</sub>. '
           'From the pilot batch size alone (its measured updates to the target and '
           'B<sub>simple</sub>), the other batch sizes are predicted and compared with what they '
           'measured. Reproduce with <code>python -m analysis.batch_size RESULTS_DIR</code>.</p>']
    if not b.rows.empty:
        out.append(figs.div(batch_size_figure(ctx), height=FIGURE_HEIGHT["batch_size"]))
        rows = []
        for _, r in b.rows.iterrows():
            def e(x: float) -> str:
                return f"{x:+.0%}" if math.isfinite(x) else "n/a"

            rows.append([r["algorithm"], f"{r['train_batch_size']:g}", r["role"],
                         f"{r['n_reached']}/{r['n_trials']}", fmt_num(r["b_simple"], 3),
                         fmt_num(r["updates"], 4),
                         f"{fmt_num(r['updates_pred'], 4)} [{fmt_num(r['updates_low'], 3)}, "
                         f"{fmt_num(r['updates_high'], 3)}]", e(r["updates_error"]),
                         fmt_num(r["steps"], 4),
                         f"{fmt_num(r['steps_pred'], 4)} [{fmt_num(r['steps_low'], 3)}, "
                         f"{fmt_num(r['steps_high'], 3)}]", e(r["steps_error"]),
                         fmt_num(r["ttt"], 3),
                         f"{fmt_num(r['ttt_pred'], 3)} [{fmt_num(r['ttt_low'], 3)}, "
                         f"{fmt_num(r['ttt_high'], 3)}]", e(r["ttt_error"])])
        out.append(_table(["algorithm", "batch B", "role", "reached", "B_simple (median)",
                           "updates to target", "predicted [95%]", "error",
                           "env steps to target", "predicted [95%]", "error", "TTT (s)",
                           "predicted [95%]", "error"], rows, left=(0, 2)))
        for alg, f in b.fits.items():
            out.append(f'<p class="note">{_esc(alg)}: the measured outcomes at every batch size '
                       f'imply a critical batch size B<sub>crit</sub> = {fmt_num(f["b_crit"], 3)}'
                       f' (least squares of S against 1/B), against the pilot\'s measured '
                       f'B<sub>simple</sub> = {fmt_num(f["b_simple"], 3)}.</p>')
    out.extend(f'<p class="note">{_esc(n)}</p>' for n in b.notes)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 7: Optuna
# ---------------------------------------------------------------------------------------------
def _optuna(ctx: ReportData, figs: _Figures) -> str:
    study = ctx.res.study
    if study is None:
        return _missing("No Optuna study (optuna.db missing or unreadable): no optimisation "
                        "history or parameter importances.")
    import optuna
    import optuna.visualization as ov

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(done) < 1:
        return _missing("The Optuna study has no completed trials yet.")
    out = ['<p class="note">Objective (minimised): time-to-target in seconds, or '
           'budget &times; (1 + shortfall) for censored trials.</p>']
    fig = ov.plot_optimization_history(study)
    out.append(figs.div(fig))
    if len(done) < 2 or not any(t.params for t in done):
        out.append(_missing("Parameter importances need at least two completed trials with "
                            "parameters."))
    else:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fig = ov.plot_param_importances(study)
            out.append(figs.div(fig, height=380))
            if caught or len(done) < 10:
                out.append(f'<p class="note">Only {len(done)} completed Optuna trials: '
                           "importances are rough (some parameter values were tried fewer "
                           "than twice).</p>")
        except (RuntimeError, ValueError, ZeroDivisionError) as exc:
            out.append(_missing(f"Parameter importances could not be computed ({exc})."))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Section 8: environment and spec
# ---------------------------------------------------------------------------------------------
def _environment(ctx: ReportData) -> str:
    env, spec = ctx.res.environment, ctx.res.spec
    out = []
    if env:
        rows = [[k, str(v)] for k, v in (env.get("versions") or {}).items()]
        for k in ("cpu_model", "cpu_count", "memory_gib", "git_revision", "started_at",
                  "finished_at", "ray_address", "command"):
            if k in env:
                rows.append([k, str(env[k])])
        nodes = env.get("nodes") or []
        rows.append(["nodes", f"{len(nodes)}: " + ", ".join(
            f"{n.get('node_ip', '?')} ({n.get('num_cpus', '?')} CPUs, {n.get('num_gpus', 0)} "
            "GPUs)" for n in nodes)])
        out.append(_table(["", "value"], rows, left=(0, 1)))
    else:
        out.append(_missing("environment.json is missing."))
    out.append(f"<p>Results directory: <code>{_esc(ctx.res.path)}</code></p>")
    if spec:
        out.append("<h3>Sweep spec (spec.json)</h3><pre>" + _esc(json.dumps(spec, indent=2))
                   + "</pre>")
    else:
        out.append(_missing("spec.json is missing."))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
def _colors(tm: pd.DataFrame) -> tuple[dict[tuple[str, int], str], dict[str, str]]:
    from plotly.colors import sample_colorscale

    colors, alg_color = {}, {}
    for i, alg in enumerate(sorted(tm["algorithm"].unique()) if len(tm) else []):
        alg_color[alg] = _ALG_COLORS[i % len(_ALG_COLORS)]
        ns = sorted(tm.loc[tm["algorithm"] == alg, "num_env_runners"].unique())
        shades = sample_colorscale(_ALG_SCALES[i % len(_ALG_SCALES)],
                                   list(np.linspace(0.45, 0.95, len(ns))) if len(ns) > 1
                                   else [0.75])
        for n, c in zip(ns, shades, strict=True):
            colors[(alg, int(n))] = c
    return colors, alg_color


def _collect_warnings(res: Results, tm: pd.DataFrame, summary: pd.DataFrame,
                      extra: list[str]) -> list[str]:
    w = list(res.warnings) + list(extra)
    if tm.empty:
        return w
    n_c = int((tm["status"] == "censored").sum())
    if n_c:
        w.append(f"{n_c} censored trial(s) (budget spent before the target): their TTT is "
                 "'> time run'; medians use Kaplan-Meier, success rates are shown")
    few = summary[(summary["n_reached"] + summary["n_censored"]) < MIN_SEEDS_FOR_CI]
    if len(few):
        w.append(f"{len(few)} configuration(s) have fewer than {MIN_SEEDS_FOR_CI} finished "
                 "seeds: no confidence interval for them")
    n_o = int(tm["oversubscribed"].sum())
    if n_o:
        w.append(f"{n_o} oversubscribed trial(s) (asked for more CPUs than the node had): "
                 "their timings are not trustworthy")
    n_capped = int((tm["censor_reason"] == "capped").sum()) if "censor_reason" in tm else 0
    if n_capped:
        w.append(f"{n_capped} trial(s) capped (censor_reason 'capped'): stopped once their "
                 "elapsed time exceeded the capping margin x the fastest configuration's TTT, "
                 "so they could no longer be the fastest; counted as censored at that time")
    retried = res.trials[res.trials["attempts"] > 1] if "attempts" in res.trials else []
    if len(retried):
        w.append(f"{len(retried)} trial(s) were retried after an error (attempts column): "
                 "their time-to-target counts from the first attempt's start")
    errs = tm[tm["status"] == "error"]
    if len(errs):
        first = str(errs["error"].iloc[0]) if "error" in errs else ""
        w.append(f"{len(errs)} trial(s) ended in an error and are left out of TTT statistics"
                 + (f" (e.g. {first})" if first else ""))
    if summary["num_env_runners"].nunique() < 2:
        w.append("only one env runner count measured: no scaling fit or extrapolation")
    return w


def analyse(res: Results, target: str | float | None = None) -> ReportData:
    """Everything the report shows, computed once: per-trial metrics, per-configuration
    statistics, speedups, the capacity plan (default: no deadline or budget), the plan check
    and warnings.

    Args:
        res: a loaded results directory (:func:`analysis.load.load_results`).
        target: ``None`` for the sweep's target, or an override (absolute value or ``"95%"``
            of the optimum; see :func:`analysis.metrics.parse_target`).

    Returns:
        :class:`ReportData`.

    Raises:
        ValueError: no usable target (see :func:`analysis.metrics.resolve_target`).
    """
    tm, tgt, warns = trial_metrics(res, target)
    summary = summarize_configs(tm)
    speed, w2 = speedup_table(tm, summary) if len(summary) else (pd.DataFrame(), [])
    plan = None
    if len(summary):
        plan = make_plan(tm, summary, cpu_model=str(res.environment.get("cpu_model", "")))
    holdout = auto_holdout(summary) if len(summary) else []
    check = plan_check(tm, summary, res.progress, holdout) if holdout else None
    batch = None
    prog = res.progress
    if ("grad_noise_scale" in prog and prog["grad_noise_scale"].notna().any()
            and "train_batch_size" in tm
            and tm.groupby("algorithm")["train_batch_size"].nunique().max() >= 2):
        batch = batch_size_check(tm, prog)
    data = ReportData(res=res, tm=tm, target=tgt, summary=summary, speed=speed, plan=plan,
                      warnings=_collect_warnings(res, tm, summary, [*warns, *w2]), check=check,
                      batch=batch)
    data.colors, data.alg_color = _colors(tm)
    return data


def build_report(res: Results, target: str | float | None = None) -> str:
    """The report's HTML for a loaded results directory.

    Raises:
        ValueError: no usable target (see :func:`analysis.metrics.resolve_target`).
    """
    import plotly
    import plotly.offline

    ctx = analyse(res, target)
    tm = ctx.tm
    figs = _Figures(ctx)

    def section(sid: str, title: str, body) -> str:
        try:
            content = body()
        except Exception as exc:  # show what can be shown; say what cannot
            content = _missing(f"This section could not be drawn: {type(exc).__name__}: {exc}")
            ctx.warnings.append(f"section '{title}' failed: {type(exc).__name__}: {exc}")
            traceback.print_exc(file=sys.stderr)
        return f'<section id="{sid}"><h2>{_esc(title)}</h2>{content}</section>'

    sections = [
        ("curves", "2. Learning curves", lambda: _learning_curves(ctx, figs)),
        ("scaling", "3. Scaling with env runners", lambda: _scaling(ctx, figs)),
        ("cost", "4. Cost vs time (capacity plan)", lambda: _cost(ctx, figs)),
        ("check", "5. Plan check (held-out env runner counts)", lambda: _check(ctx, figs)),
        ("batch", "6. Batch size and gradient noise scale", lambda: _batch(ctx, figs)),
        ("optuna", "7. Optuna search", lambda: _optuna(ctx, figs)),
        ("environment", "8. Environment and sweep spec", lambda: _environment(ctx)),
    ]
    bodies = [section(*s) for s in sections]
    summary_html = section("summary", "1. Summary", lambda: _summary(ctx))
    env = res.environment
    synthetic = ('<div class="banner">Synthetic data (analysis.synthetic): these numbers '
                 'describe no real run.</div>' if env.get("synthetic") else "")
    nav = "".join(f'<a href="#{sid}">{_esc(t)}</a>' for sid, t, _ in
                  [("summary", "1. Summary", None), *sections])
    title = f"rl-scaling report: {res.name}"
    sub = (f"{_esc(res.spec.get('env', '?'))} &middot; algorithms "
           f"{_esc(', '.join(map(str, res.spec.get('algorithms', sorted(tm['algorithm'].unique()) if len(tm) else []))))}"
           f" &middot; run {_esc(res.path.name)} &middot; git {_esc(env.get('git_revision', '?'))}"
           f" &middot; {_esc(env.get('started_at', ''))}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{_esc(title)}</title>{_ERROR_HOOK}<style>{_CSS}</style>"
        f"<script type=\"text/javascript\">/* plotly.js {plotly.__version__} (embedded) */\n"
        f"{plotly.offline.get_plotlyjs()}</script></head>"
        f"<body data-figures=\"{ctx.n_figures}\"><ul id=\"report-errors\" hidden></ul>"
        f"<header><h1>{_esc(title)}</h1><p>{sub}</p></header><nav>{nav}</nav><main>"
        f"{synthetic}{summary_html}{''.join(bodies)}"
        "<p class=\"note\">Written by <code>python -m analysis.report</code> (rl-scaling). "
        "Schema: docs/results.md.</p></main></body></html>")


def write_report(results_dir: str | Path, output: str | Path | None = None,
                 target: str | float | None = None) -> Path:
    """Write the self-contained HTML report of a results directory.

    Args:
        results_dir: a ``results/<sweep>/<run_id>/`` directory, or its URI in object storage.
        output: file to write (default ``<results_dir>/report.html``, uploaded there for a URI).
        target: override the target (absolute value or percent of optimum, e.g. ``"95%"``).

    Returns:
        Path of the written file (its URI, a str, when it went to object storage).

    Raises:
        ResultsError: the directory or its trials.parquet is missing or unreadable.
        ValueError: no usable target or a bad ``target``.
    """
    from sweeps import storage

    res = load_results(results_dir)
    out = Path(output) if output is not None else res.path / "report.html"
    page = build_report(res, target)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    if output is None and storage.is_uri(results_dir):  # next to the run, in the store
        uri = f"{str(results_dir).rstrip('/')}/report.html"
        storage.upload_file(out, uri)
        return uri
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 2 bad input)."""
    p = OneLineParser(prog="python -m analysis.report",
                description="Write the self-contained HTML report of a results directory.")
    p.add_argument("results_dir", help="results/<sweep>/<run_id>/ directory")
    p.add_argument("-o", "--output", help="output file (default RESULTS_DIR/report.html)")
    p.add_argument("--target", help="override the target: absolute value or percent of optimum "
                                    "(e.g. 95%%)")
    args = p.parse_args(argv)
    try:
        path = write_report(args.results_dir, args.output, args.target)
    except (ResultsError, ValueError, OSError) as exc:
        sys.stderr.write(f"{p.prog}: error: {exc}\n")
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    from sweeps.cli import guard

    raise SystemExit(guard("python -m analysis.report", main))

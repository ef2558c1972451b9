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

The page is Jinja2 templates (:mod:`analysis.templates`): ``report.html.j2`` around the
sections (header, navigation, style sheet, scripts) and one template per section in
``analysis/templates/report/``, which lays out the text, table cells and figures built here
from the study (no HTML is written in this module). plotly.js is embedded once, after the text; each figure is
its JSON beside an empty div of its height, drawn when it nears the viewport or, for the rest,
when the browser is idle (``benchmarks/bench_report_page.py`` measures the page's size, load
and drawing times).

The page records JavaScript errors (``window.onerror``, unhandled rejections,
``console.error``) into the hidden ``#report-errors`` element, so a headless browser test can
read them from the DOM; ``<body data-figures=...>`` holds the number of figures.
"""

from __future__ import annotations

import json
import math
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from analysis.batch_size import check_table
from analysis.figures import (
    FIGURE_HEIGHT,
    FigureUnavailable,
    batch_size_figure,
    best_per_n,
    cost_figure,
    fit_line_name,
    learning_curve_figure,
    plan_check_figure,
    speedup_figures,
    style_figure,
    throughput_figure,
    ttt_figure,
    untestable_fit_note,
)
from analysis.fmt import (
    config_cells,
    config_name,
    fmt_num,
    fmt_r2,
    fmt_reached,
    fmt_s,
    fmt_speedup,
    fmt_ttt,
    fmt_usd,
    lay_out,
    summary_cells,
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
from analysis.plan_model import Plan
from analysis.plan_text import plan_answer, planned_short, sweep_file_of
from analysis.stats import best_configs
from analysis.study import Study, analyse, reference_verdict
from analysis.style import page_style  # noqa: F401 - re-exported: the report's style
from analysis.templates import render
from sweeps.engine import rundir
from sweeps.engine.cli import EXIT_BAD_INPUT, OneLineParser

__all__ = ["analyse", "build_report", "main", "write_report"]


def _resolution_s(row: pd.Series) -> float:
    """How finely a configuration's TTT was measured (the median gap between the evaluation
    that crossed the target and the one before), seconds; NaN when unknown."""
    return float(row.get("ttt_resolution_s", math.nan))


def _resolution_note(row: pd.Series) -> str:
    """`` (resolution ≤ 1.1 s)`` beside a TTT in a card; empty when unknown."""
    r = _resolution_s(row)
    return f" (resolution ≤ {fmt_s(r)})" if math.isfinite(r) else ""


def _speedup_text(r: pd.Series, key: str = "speedup", ratio: float = 1.0) -> str:
    """:func:`analysis.fmt.fmt_speedup` (no unit, no reason) for a table cell or a card."""
    return fmt_speedup(r, key=key, ratio=ratio, unit="", why=False)


class _Figures:
    """Turns plotly figures into placeholders that ``analysis/templates/figure_loader.js``
    draws (those near the viewport as they come into it, the rest when the browser is idle,
    so a printout or a test sees all of them): each is an
    empty ``plotly-graph-div`` of the figure's height and the figure's JSON beside it, so the
    page shows its text before any figure is drawn (plotly.js is embedded once, at the end)."""

    def __init__(self, data: Study) -> None:
        self.data = data
        self.count = 0  # figures placed in the page so far

    def div(self, fig: Any, height: int = 430) -> Markup:
        style_figure(fig, height)
        self.count += 1
        div_id = f"fig-{self.count}"
        # "</" closes the script element wherever it appears: JSON allows "<\/" instead
        payload = fig.to_json().replace("</", "<\\/")
        return Markup(render("report/figure.html.j2", id=div_id, height=height, payload=payload))


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
    lat = tm["step_latency_ms"] if "step_latency_ms" in tm else pd.Series(dtype=float)
    cpr = tm["cpus_per_env_runner"] if "cpus_per_env_runner" in tm else pd.Series([1.0])
    cpu = tm["step_cpu_ms"] if "step_cpu_ms" in tm else pd.Series(dtype=float)
    n_status = tm["status"].value_counts() if len(tm) else pd.Series(dtype=int)
    context: dict[str, Any] = {
        "stage_note": data.stage_note,
        "target": data.target,
        "metric": describe_metric(data.target.metric, data.res.spec),
        "counts": {
            "trials": len(tm),
            "configs": len(s),
            "reached": int(n_status.get("reached", 0)),
            "censored": int(n_status.get("censored", 0)),
            "stalled": len(stalled),
            "other_errors": int(n_status.get("error", 0)) - len(stalled),
        },
        "latency_ms": fmt_num(float(lat.max()), 3) if (lat > 0).any() else None,
        "cpus_per_env_runner": ", ".join(sorted({f"{x:g}" for x in cpr})),
        "cpu_ms": fmt_num(float(cpu.max()), 3) if (cpu > 0).any() else None,
        "empty": s.empty,
        "stalled": [
            [
                r["algorithm"],
                str(r["num_env_runners"]),
                str(r["seed"]),
                fmt_num(float(r["elapsed_s"]), 3),
                r["error"],
            ]
            for _, r in stalled.iterrows()
        ],
        "search": _search_stage(data.search_summary) if data.search_summary is not None else None,
        "warnings": data.warnings,
    }
    if not s.empty:
        context.update(_summary_tables(data))
    return render("report/summary.html.j2", **context)


def _runners(plan: Plan, r: dict[str, Any]) -> str:
    """A plan card's headline: the run's env runner count, or "one process" for the
    single-process reference (it has no env runners)."""
    if r["algorithm"] in plan.references:
        return "one process"
    return f"{r['num_env_runners']} env runner(s)"


def _cards(data: Study, best: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The summary's cards, ``(what, value, detail)`` text: the fastest configuration, the
    reference (or how far from the target the study stayed), its speedups and the plan's
    recommendations."""
    s, tm, sp = data.summary, data.tm, data.configs
    cards = []
    top = best.assign(_t=best["ttt_s"].fillna(np.inf)).sort_values("_t").iloc[0]
    if math.isfinite(top["ttt_s"]):
        cards.append(
            (
                "Fastest configuration",
                config_name(
                    top["algorithm"], top["num_env_runners"], reference=bool(top["is_reference"])
                ),
                f"TTT {fmt_ttt(top)}{_resolution_note(top)}",
            )
        )
    ref = s[s["is_reference"]]
    if len(ref):
        ref = ref.iloc[0]
        cards.append(
            (
                "Single-process reference",
                f"{ref['algorithm']}",
                f"TTT {fmt_ttt(ref)}{_resolution_note(ref)}; "
                f"{fmt_reached(ref)} seeds reached the target",
            )
        )
    else:
        reached = int(s["n_reached"].sum())
        cards.append(
            (
                "Target reached" if reached else "Target not reached",
                f"{reached} of {int(s['finished_seeds'].sum())} trials",
                f"best return {tm['best_return'].max():.4g} vs target {data.target.value:g}",
            )
        )
    r = sp.loc[top["config_id"]] if top["config_id"] in sp.index else None
    if r is not None and (math.isfinite(r["speedup"]) or math.isfinite(r["speedup_lower_bound"])):
        effs = [
            f"{_speedup_text(r, c, r[ratio])} per {w}"
            for c, ratio, w in (
                ("efficiency_per_runner", "runner_ratio", "env runner"),
                ("efficiency_per_cpu", "cpu_ratio", "CPU"),
            )
            if math.isfinite(r[ratio])
        ]
        if bool(top.get("is_baseline", False)):
            detail = "the fastest configuration is the baseline itself"
        else:
            detail = "efficiency " + ", ".join(effs) if effs else ""
        cards.append(("Speedup vs baseline", _speedup_text(r) + "x", detail))
    if (
        r is not None
        and not top["is_reference"]
        and (math.isfinite(r["abs_speedup"]) or math.isfinite(r["abs_speedup_lower_bound"]))
    ):
        cards.append(
            (
                "Absolute speedup (vs reference)",
                _speedup_text(r, "abs_speedup") + "x",
                "TTT(reference) / TTT(fastest configuration)",
            )
        )
    plan = data.plan
    if plan is not None and plan.cheapest is not None:
        c = plan.cheapest
        cards.append(
            (
                "Recommended (cheapest run)",
                _runners(plan, c),
                f"{c['algorithm']} on {c['nodes']} x {c['vm']}: "
                f"{planned_short(plan, c)}, {fmt_usd(c['cost_usd'])}",
            )
        )
    if plan is not None and plan.knee is not None:
        k = plan.knee
        sub = (
            f"{k['algorithm']}: more env runners are not predicted to help"
            if k["num_env_runners"] == k["relative_to_n"]
            else f"{k['algorithm']}: speedup {k['speedup']:.2f}x over {k['relative_to_n']}, "
            f"efficiency {k['efficiency']:.0%}" + (" (extrapolated)" if k["extrapolated"] else "")
        )
        cards.append(("Knee of the efficiency curve", f"{k['num_env_runners']} env runner(s)", sub))
    if plan is not None and plan.fastest is not None:
        f = plan.fastest
        cards.append(
            (
                "Fastest predicted run",
                _runners(plan, f),
                f"{f['algorithm']} on {f['nodes']} x {f['vm']}: "
                f"{planned_short(plan, f)}, {fmt_usd(f['cost_usd'])}"
                + (" (extrapolated)" if f["extrapolated"] else ""),
            )
        )
    return cards


def _summary_tables(data: Study) -> dict[str, Any]:
    """The summary's values beside its cards: the verdict on the reference, the evaluation's
    share of the wall-clock, the configurations per algorithm and the two tables (best per
    algorithm, every configuration)."""
    s, tm = data.summary, data.tm
    best = best_configs(s, ("algorithm",))
    share = tm["eval_time_s"] / tm["elapsed_s"] if "eval_time_s" in tm else pd.Series()
    share = share[np.isfinite(share.astype(float))] if len(share) else share
    cells = config_cells(data)
    headers, rows = lay_out(cells, _BEST, best["config_id"])
    for row, (_, b) in zip(rows, best.iterrows(), strict=True):
        cost = "-"
        if data.plan is not None and not data.plan.candidates.empty:
            c = data.plan.candidates
            c = c[(c["config_id"] == b["config_id"]) & (c["source"] == "measured")]
            if len(c):
                c = c.sort_values("cost_usd").iloc[0]
                cost = f"{fmt_usd(c['cost_usd'])} on {c['nodes']} x {c['vm']}"
        row += [cost, cells.at[b["config_id"], "note"]]
    order = s.assign(_t=s["ttt_s"].astype(float).fillna(np.inf)).sort_values(
        ["algorithm", "num_env_runners", "_t"]
    )
    every = lay_out(cells, _ALL, order["config_id"])
    return {
        "cards": _cards(data, best),
        "verdict": reference_verdict(s, data.speed),
        "eval_share": (
            {"median": f"{share.median():.1%}", "max": f"{share.max():.1%}"}
            if len(share) and data.target.metric == "evaluation"
            else None
        ),
        "per_algorithm": _configurations_per_algorithm(data),
        "best": {"headers": [*headers, "cost per run", "notes"], "rows": rows},
        "all": {"headers": every[0], "rows": every[1]},
    }


#: The summary's "best configuration per algorithm" table: ``(column, cell)`` pairs, each cell
#: a column of :func:`analysis.fmt.config_cells` (then the cost per run and the notes).
_BEST = [
    ("algorithm", "algorithm"),
    ("env runners", "env runners"),
    ("configuration", "configuration"),
    ("seeds", "seeds"),
    ("reached", "reached"),
    ("estimator", "estimator"),
    ("TTT [95% CI]", "TTT"),
    ("TTT resolution", "TTT resolution"),
    ("speedup [95% CI]", "speedup"),
    ("absolute speedup [95% CI]", "absolute speedup"),
    ("efficiency / runner", "efficiency per env runner"),
    ("efficiency / CPU", "efficiency per CPU"),
]

#: The summary's "all configurations" table: ``(column, cell)`` pairs.
_ALL = [
    ("algorithm", "algorithm"),
    ("env runners", "env runners"),
    ("configuration", "configuration"),
    ("reached", "reached"),
    ("TTT [95% CI]", "TTT"),
    ("speedup [95% CI]", "speedup"),
    ("absolute speedup [95% CI]", "absolute speedup"),
    ("evaluation share of wall-clock", "evaluation share"),
    ("TTT resolution", "TTT resolution"),
]

#: Section 3's table of every configuration: ``(column, cell)`` pairs.
_SCALING = [
    ("algorithm", "algorithm"),
    ("env runners", "env runners"),
    ("configuration", "configuration"),
    ("reached", "reached"),
    ("estimator", "estimator"),
    ("TTT [95% CI]", "TTT"),
    ("IQM TTT (s) [95% CI]", "IQM TTT"),
    ("olympic mean", "olympic mean"),
    ("env steps/s", "env steps/s"),
    ("steps-to-target", "steps-to-target"),
    ("CPUs per env runner", "CPUs per env runner"),
    ("CPUs asked", "CPUs"),
    ("peak RSS (MiB)", "peak RSS (MiB)"),
    ("notes", "note"),
]


def _search_stage(search: pd.DataFrame) -> dict[str, list]:
    """The search stage's configurations, fastest first, as the summary's exploratory table
    (``{"headers", "rows"}``): they chose what the confirmation ran and are judged on nothing
    here."""
    order = search.assign(_t=search["ttt_s"].astype(float).fillna(np.inf)).sort_values("_t")
    headers, rows = lay_out(summary_cells(search), _SEARCH, order["config_id"])
    return {"headers": headers, "rows": rows}


_SEARCH = [
    ("algorithm", "algorithm"),
    ("env runners", "env runners"),
    ("configuration", "configuration"),
    ("reached", "reached"),
    ("TTT [95% CI]", "TTT"),
]


# ---------------------------------------------------------------------------------------------
# Section 2: learning curves
# ---------------------------------------------------------------------------------------------


def _learning_curves(data: Study, figs: _Figures) -> str:
    try:
        figures = [
            figs.div(learning_curve_figure(data, x), height=FIGURE_HEIGHT["learning_curves"])
            for x in ("wall_time_s", "env_steps")
        ]
    except FigureUnavailable as exc:
        return render("report/curves.html.j2", unavailable=str(exc))
    return render("report/curves.html.j2", unavailable=None, figures=figures)


# ---------------------------------------------------------------------------------------------
# Section 3: scaling
# ---------------------------------------------------------------------------------------------


def _one_n(best: pd.DataFrame) -> str | None:
    """Why no scaling curve can be drawn when no algorithm was measured at two env runner
    counts: the count (or each algorithm's), the single-process reference's one process
    apart; None when some algorithm has two."""
    if best.groupby("algorithm")["num_env_runners"].nunique().max() >= 2:
        return None
    ref = best.get("is_reference", pd.Series(False, index=best.index)).astype(bool)
    per_alg = best[~ref].groupby("algorithm")["num_env_runners"].first().astype(int)
    apart = ", the single-process reference apart" if ref.any() else ""
    if per_alg.empty:
        return "Only the single-process reference was measured"
    if per_alg.nunique() == 1:
        return f"Only one env runner count was measured (N={per_alg.iloc[0]}{apart})"
    each = ", ".join(f"{a} N={n}" for a, n in per_alg.items())
    return f"Only one env runner count was measured per algorithm ({each}{apart})"


def _scaling(data: Study, figs: _Figures) -> str:
    s = data.summary
    if s.empty:
        return render("report/scaling.html.j2", empty=True)
    best, _, _ = best_per_n(s)
    context: dict[str, Any] = {
        "empty": False,
        "one_n": _one_n(best),
        "ttt_figure": figs.div(ttt_figure(data), height=FIGURE_HEIGHT["ttt"]),
        "speedup_missing": None,
    }
    sp = data.configs
    try:
        sf = speedup_figures(data)
    except FigureUnavailable as exc:
        context["speedup_missing"] = str(exc)
        fit_rows = []
    else:
        context["speedup_notes"] = sf.notes
        context["speedup_figure"] = figs.div(sf.speedup, height=FIGURE_HEIGHT["speedup"])
        context["efficiency_figure"] = figs.div(sf.efficiency, height=FIGURE_HEIGHT["efficiency"])
        fit_rows = sf.fits
    fig, tp_fit_rows = throughput_figure(data)
    context["throughput_figure"] = figs.div(fig, height=FIGURE_HEIGHT["throughput"])
    context["untestable"] = untestable_fit_note([*fit_rows, *tp_fit_rows])
    context["fits"] = [
        [
            alg,
            what,
            f.model.upper() if f.model == "usl" else "Amdahl",
            "no"
            if not f.ok
            else "yes"
            if fit_line_name(alg, f) is not None
            else "exactly determined: not a model",
            fmt_num(f.gamma, 4),
            fmt_num(f.alpha, 3),
            fmt_num(f.beta, 3) if f.model == "usl" else "0",
            fmt_num(f.peak_n, 3) if f.model == "usl" else "none",
            fmt_r2(f.r2),
            str(f.n_distinct),
            f.reason,
        ]
        for alg, what, f in [*fit_rows, *tp_fit_rows]
    ]
    context["why_faster"] = (
        None
        if sp.empty
        else [
            [
                c["algorithm"],
                str(c["num_env_runners"]),
                _speedup_text(r),
                fmt_num(r["throughput_ratio"], 3),
                fmt_num(r["sample_efficiency_ratio"], 3),
                fmt_num(r["residual"], 3),
                r["speedup_note"] or "",
            ]
            for _, c in best.iterrows()
            if c["config_id"] in sp.index
            for r in [sp.loc[c["config_id"]]]
        ]
    )
    order = s.sort_values(["algorithm", "num_env_runners", "ttt_s"])["config_id"]
    context["every_headers"], context["every"] = lay_out(config_cells(data), _SCALING, order)
    return render("report/scaling.html.j2", **context)


# ---------------------------------------------------------------------------------------------
# Section 4: cost vs time
# ---------------------------------------------------------------------------------------------
def _cost(data: Study, figs: _Figures) -> str:
    plan = data.plan
    try:
        fig = cost_figure(data)
    except FigureUnavailable as exc:
        return render("report/cost.html.j2", unavailable=str(exc))
    answer = plan_answer(plan, sweep_file_of(data.res.environment))
    return render(
        "report/cost.html.j2",
        unavailable=None,
        answer=answer,
        figure=figs.div(fig, height=FIGURE_HEIGHT["cost"]),
        details=[*answer.details, *data.batch_advice],
    )


# ---------------------------------------------------------------------------------------------
# Section 5: plan check
# ---------------------------------------------------------------------------------------------


def _check(data: Study, figs: _Figures, held: list[Study]) -> str:
    """Section 5: the plan check (:mod:`analysis.plan_check`) and, after it, the break-even
    env cost (:func:`_break_even`)."""
    check = data.check
    context: dict[str, Any] = {
        "held_out": None,
        "min_fit_n": MIN_FIT_N,
        "break_even": _break_even(data, held),
    }
    if check is not None:
        context.update(
            held_out=",".join(str(n) for n in sorted(check.rows["num_env_runners"].unique())),
            figure=(
                None
                if check.rows.empty
                else figs.div(plan_check_figure(data), height=FIGURE_HEIGHT["plan_check"])
            ),
            headers=TABLE_HEADERS,
            rows=table_rows(check),
            fit_caption=FIT_CAPTION,
            fit_headers=FIT_HEADERS,
            fit_rows=fit_table_rows(check),
            check_notes=check.notes,
        )
    return render("report/check.html.j2", **context)


def _break_even(data: Study, held: list[Study]) -> dict[str, Any] | None:
    """Section 5's break-even part: per configuration the env cost above which it beats the
    reference (:mod:`analysis.break_even`), and with ``held`` (the same study at other env
    costs) each held-out cell's predicted TTT against what was measured; None without a
    reference with measured parts."""
    from analysis.break_even import held_out_check, run_table

    table = run_table(data)
    if table is None:
        return None
    head, cells, words = table
    out: dict[str, Any] = {"headers": head, "rows": cells, "words": words, "held": None}
    if held:
        out["held"] = held_out_check(data, held)
    return out


# ---------------------------------------------------------------------------------------------
# Section 6: batch size
# ---------------------------------------------------------------------------------------------


def _batch(data: Study, figs: _Figures) -> str:
    b = data.batch
    if b is None:
        return render("report/batch.html.j2", unavailable=True)
    context: dict[str, Any] = {"unavailable": False, "figure": None, "batch_notes": b.notes}
    if not b.rows.empty:
        headers, rows = check_table(b)
        context.update(
            figure=figs.div(batch_size_figure(data), height=FIGURE_HEIGHT["batch_size"]),
            headers=headers,
            rows=rows,
            fits=[
                (alg, fmt_num(f["b_crit"], 3), fmt_num(f["b_simple"], 3))
                for alg, f in b.fits.items()
            ],
        )
    return render("report/batch.html.j2", **context)


# ---------------------------------------------------------------------------------------------
# Section 7: Optuna
# ---------------------------------------------------------------------------------------------
def _optuna(data: Study, figs: _Figures) -> str:
    study = data.res.study
    if study is None:
        return render(
            "report/optuna.html.j2",
            unavailable="No Optuna study (optuna.db missing or unreadable): no optimisation "
            "history or parameter importances.",
        )
    import optuna
    import optuna.visualization as ov

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(done) < 1:
        return render(
            "report/optuna.html.j2", unavailable="The Optuna study has no completed trials yet."
        )
    context: dict[str, Any] = {
        "unavailable": None,
        "history": figs.div(ov.plot_optimization_history(study)),
        "importances": None,
        "importances_missing": None,
    }
    if len(done) < 2 or not any(t.params for t in done):
        context["importances_missing"] = (
            "Parameter importances need at least two completed trials with parameters."
        )
    else:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fig = ov.plot_param_importances(study)
            context["importances"] = figs.div(fig, height=380)
            context["rough"] = len(done) if caught or len(done) < 10 else None
        except (RuntimeError, ValueError, ZeroDivisionError) as exc:
            context["importances_missing"] = f"Parameter importances could not be computed ({exc})."
    return render("report/optuna.html.j2", **context)


def _configurations_per_algorithm(data: Study) -> dict[str, Any]:
    """How many configurations the search gave each declared algorithm (the baseline and the
    reference apart): ``counts`` (``"DQN 3, PPO 2"``), ``missing`` (the declared algorithms it
    never measured, or empty) and ``defaults_first`` (whether each algorithm's defaults were
    queued before the sampler)."""
    trials = data.res.trials
    sampled = trials[~trials["is_baseline"].astype(bool) & ~trials["is_reference"].astype(bool)]
    counts = sampled.groupby("algorithm")["config_id"].nunique()
    declared = list((data.res.spec or {}).get("algorithms") or counts.index)
    return {
        "counts": ", ".join(f"{a} {int(counts.get(a, 0))}" for a in declared),
        "missing": ", ".join(a for a in declared if not counts.get(a, 0)),
        "defaults_first": len(declared) > 1
        and (data.res.spec or {}).get("search", {}).get("sampler") != "grid",
    }


def _defaults_note(spec: dict) -> Markup:
    """Where each algorithm's unset parameters came from (spec.json ``presets``:
    :mod:`sweeps.engine.presets`) and, for a reference, the horizon of its schedules
    (:func:`_reference_schedules`), so that a reader knows which settings were compared;
    empty without presets."""
    presets = spec.get("presets") or {}
    return Markup(
        render(
            "report/defaults.html.j2",
            env=str(spec.get("env")),
            presets=list(presets.items()),
            reference=_reference_schedules(spec) if presets else None,
        )
    )


def _reference_schedules(spec: dict) -> dict[str, str] | None:
    """The single-process reference's algorithm and the horizon of its schedules
    (exploration), so that a reader knows which settings were compared; None without a
    reference of :data:`sweeps.engine.reference.REFERENCE_ALGORITHMS`."""
    from sweeps.engine.reference import REFERENCE_ALGORITHMS, schedule_horizon
    from sweeps.engine.search import resolve_params

    ref, env = spec.get("reference"), spec.get("env")
    if not ref or ref.get("algorithm") not in REFERENCE_ALGORITHMS:
        return None
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
    return {"algorithm": ref["algorithm"], "schedules": what}


def _nodes_used(trials: pd.DataFrame) -> dict[str, Any] | None:
    """How many trials Ray placed over several nodes, and which (``nodes_used``); None when
    no trial recorded its nodes."""
    if "nodes_used" not in trials or not trials["nodes_used"].astype(bool).any():
        return None
    nodes = trials["nodes_used"].fillna("").astype(str)
    spanning = trials[nodes.str.count(",") > 0]
    return {
        "trials": len(trials),
        "nodes": nodes[nodes != ""].str.split(",").explode().nunique(),
        "spanning": [
            [r["algorithm"], str(r["num_env_runners"]), str(r["seed"]), r["nodes_used"]]
            for _, r in spanning.iterrows()
        ],
    }


# ---------------------------------------------------------------------------------------------
# Section 8: environment and spec
# ---------------------------------------------------------------------------------------------
def _environment(data: Study) -> str:
    env, spec = data.res.environment, data.res.spec
    versions = []
    if env:
        versions = [[k, str(v)] for k, v in (env.get("versions") or {}).items()]
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
                versions.append([k, str(env[k])])
        nodes = env.get("nodes") or []
        listed = ", ".join(
            f"{n.get('node_ip', '?')} ({n.get('num_cpus', '?')} CPUs, {n.get('num_gpus', 0)} GPUs)"
            for n in nodes
        )
        versions.append(["nodes", f"{len(nodes)}: {listed}"])
    return render(
        "report/environment.html.j2",
        versions=versions,
        nodes_used=_nodes_used(data.res.trials),
        path=str(data.res.path),
        defaults=_defaults_note(spec or {}),
        spec=json.dumps(spec, indent=2) if spec else "",
    )


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
        return render("report/previous.html.j2", run=previous.path.name, not_compared=str(exc))
    headers, rows = table(c)
    return render(
        "report/previous.html.j2",
        run=previous.path.name,
        not_compared=None,
        git=str(previous.environment.get("git_revision", "?"))[:12],
        headline=headline(c).replace("NEW", "This run").replace("BASE", "that run"),
        headers=headers,
        rows=rows,
        unmatched="; ".join(c.unmatched),
        warnings=c.warnings,
        sweep_dir=str(res.path.parent),
    )


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
            content = render("report/failed.html.j2", error=f"{type(exc).__name__}: {exc}")
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
            lambda: _check(data, figs, [analyse(h, target) for h in held_out]),
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

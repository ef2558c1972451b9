"""Publish a study: PNG figures and Markdown tables from a results directory, for ``docs/``.

Usage::

    python -m analysis.publish RESULTS_DIR --out docs/ [--name cabs_scaling]
        [--target VALUE|PCT%] [--figures learning_curves,speedup,ttt_vs_env_runners]
        [--engine auto|kaleido|chromium] [--width 1000] [--scale 2] [--no-figures]

writes

- ``<out>/figures/<name>_<figure>.png`` -- the report's own figures (same builders as
  :mod:`analysis.figures`: :func:`~analysis.figures.learning_curve_figure`,
  :func:`~analysis.figures.ttt_figure`, :func:`~analysis.figures.speedup_figures`,
  :func:`~analysis.figures.throughput_figure`), and
- ``<out>/<name>_tables.md`` -- "what was run" (sweep spec, target and optimum, budget, seeds,
  machine, versions, git revision, start/end, wall-clock), one table row per configuration
  (success rate, TTT with 95 % CI or Kaplan-Meier median, speedup vs the baseline with CI,
  parallel efficiency per env runner and per CPU, throughput, steps-to-target, oversubscribed),
  the capacity plan's answer, assumptions and details (:func:`analysis.plan_text.plan_answer`), warnings, and links to
  the figures,

and prints the Markdown on stdout. Every number comes from :func:`analysis.study.analyse`
(so from :mod:`analysis.metrics`, :mod:`analysis.stats` and :mod:`analysis.plan`); this module
only formats. What cannot be given is said in place ("n/a (2 seeds)", "> 40.1 s (median not
reached)", a figure that cannot be drawn and why).

PNG export: :mod:`analysis.export` (a headless Chromium; kaleido when installed).

Exit status: 0 ok; 1 the tables were written but a figure could not be exported (no browser,
render failure: the message says which); 2 bad input (one line on stderr).
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.export import ExportError, export_png, find_browser
from analysis.figures import (
    FIGURE_HEIGHT,
    FigureUnavailable,
    batch_size_figure,
    learning_curve_figure,
    plan_check_figure,
    speedup_figures,
    style_figure,
    throughput_figure,
    ttt_figure,
)
from analysis.fmt import (
    as_float,
    config_cells,
    config_phrase,
    fmt_count,
    fmt_s,
    fmt_value,
    lay_out,
)
from analysis.load import ResultsError, load_results
from analysis.metrics import describe_metric
from analysis.plan_check import (
    FIT_CAPTION,
    FIT_HEADERS,
    TABLE_HEADERS,
    fit_table_rows,
    table_rows,
)
from analysis.plan_text import plan_answer, sweep_file_of
from analysis.stats import MIN_SEEDS_FOR_CI
from analysis.study import Study, analyse
from sweeps.engine.cli import EXIT_BAD_INPUT, OneLineParser

__all__ = [
    "DEFAULT_FIGURES",
    "FIGURES",
    "ExportError",
    "Published",
    "build_figures",
    "config_rows",
    "export_png",
    "find_browser",
    "main",
    "markdown_tables",
    "publish",
]

FIGURES: dict[str, str] = {
    "learning_curves": "Episode return vs wall-clock, one line per trial",
    "learning_curves_steps": "Episode return vs env steps, one line per trial",
    "ttt_vs_env_runners": "Time-to-target vs env runners (best configuration per N)",
    "speedup": "Speedup vs the baseline against env runners, with Amdahl/USL fits",
    "efficiency": "Parallel efficiency (per env runner and per CPU) vs env runners",
    "throughput": "Throughput (env steps/s) vs env runners, with Amdahl/USL fits",
    "plan_check": "Plan check: TTT at held-out env runner counts, predicted vs measured",
    "batch_size": "Updates and env steps to the target vs batch size, predicted from the "
    "gradient noise scale vs measured",
}
"""Figures that can be exported: file suffix -> caption."""

DEFAULT_FIGURES = ("learning_curves", "speedup", "ttt_vs_env_runners")

_HOW_TO_READ = {
    "learning_curves": "The target metric of every trial against wall-clock since its start; "
    "dotted: censored or failed; crosses: where a trial first reached the "
    "target (dashed red line).",
    "learning_curves_steps": "The target metric of every trial against env steps sampled; "
    "dotted: censored or failed; crosses: where a trial first reached "
    "the target (dashed red line).",
    "ttt_vs_env_runners": "Median time-to-target (Kaplan-Meier median when seeds were censored) of "
    "each algorithm's best configuration at each env runner count. Error "
    f"bars: 95 % CI, only with >= {MIN_SEEDS_FOR_CI} seeds; an unbounded "
    "upper limit is not drawn. Triangles: median not reached, drawn at the "
    "longest censored time.",
    "speedup": "Speedup S = TTT(baseline) / TTT of each algorithm's best configuration per env "
    "runner count (bars: bounded 95 % CIs only); dashed grey: ideal linear speedup; "
    "dotted / solid: Amdahl / USL fits of 1/TTT.",
    "efficiency": "Parallel efficiency E = S / resources ratio, per env runner (solid) and per "
    "CPU (dashed); 1 = ideal.",
    "throughput": "Env steps per second of wall-clock (start-up included), one marker per "
    "trial of each algorithm's best configurations; dotted / solid: Amdahl / USL "
    "fits.",
    "plan_check": "Circles: median TTT (95 % CI) at the env runner counts the models were "
    "fitted on; diamonds: at the held-out ones. Stars: USL on 1/TTT; crosses: the "
    "pipeline model (start-up + env steps / sampling rate); bars: 95 % bootstrap "
    "intervals of the predictions.",
    "batch_size": "Markers: median learner updates (left) and env steps (right) to the target "
    "per batch size, the pilot filled; dashed: S(B) = S_min (1 + B_simple / B) and "
    "its env steps, predicted from the pilot's measured noise scale alone; bars: "
    "95 % bootstrap intervals over the pilot's seeds.",
}

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------
def build_figures(
    data: Study, names: tuple[str, ...] | list[str] = DEFAULT_FIGURES
) -> tuple[dict[str, tuple[Any, int]], dict[str, str]]:
    """The report's figures, by export name (see :data:`FIGURES`).

    Args:
        data: from :func:`analysis.study.analyse`.
        names: which figures, in order.

    Returns:
        ``(figures, unavailable)``: ``figures[name] = (plotly Figure, height in CSS px)``,
        styled like the report; ``unavailable[name]`` = why it cannot be drawn.

    Raises:
        ValueError: an unknown figure name.
    """
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"figure {unknown[0]!r}: unknown; choose from {', '.join(FIGURES)}")
    builders = {
        "learning_curves": (lambda: learning_curve_figure(data, "wall_time_s"), "learning_curves"),
        "learning_curves_steps": (
            lambda: learning_curve_figure(data, "env_steps"),
            "learning_curves",
        ),
        "ttt_vs_env_runners": (lambda: ttt_figure(data), "ttt"),
        "speedup": (lambda: speedup_figures(data).speedup, "speedup"),
        "efficiency": (lambda: speedup_figures(data).efficiency, "efficiency"),
        "throughput": (lambda: throughput_figure(data)[0], "throughput"),
        "plan_check": (lambda: plan_check_figure(data), "plan_check"),
        "batch_size": (lambda: batch_size_figure(data), "batch_size"),
    }
    figures: dict[str, tuple[Any, int]] = {}
    unavailable: dict[str, str] = {}
    for name in names:
        build, kind = builders[name]
        try:
            fig = build()
        except FigureUnavailable as exc:
            unavailable[name] = str(exc)
            continue
        height = FIGURE_HEIGHT[kind]
        figures[name] = (style_figure(fig, height), height)
    return figures, unavailable


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------
def _caption(name: str, data: Study) -> str:
    """What a figure shows, how to read it, and which of its points are oversubscribed."""
    text = f"{FIGURES[name]}. {_HOW_TO_READ[name]}"
    s = data.summary
    over = s[s["oversubscribed"]] if len(s) else s
    if len(over):
        pairs = sorted(
            {
                (str(a), int(n))
                for a, n in zip(over["algorithm"], over["num_env_runners"], strict=True)
            }
        )
        text += (
            " Oversubscribed, timings not trustworthy (not marked in the figure): "
            + ", ".join(config_phrase(a, n) for a, n in pairs)
            + "."
        )
    return text


def _cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def md_table(headers: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> str:
    """A Markdown table: ``headers`` and ``rows`` of text cells (``|`` escaped, newlines
    flattened), the columns whose indices are in ``right`` right-aligned."""
    sep = ["---:" if i in right else "---" for i in range(len(headers))]
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _fmt_param(spec: dict[str, Any]) -> str:
    kind = spec.get("kind")
    if kind == "choice":
        return "{" + ", ".join(fmt_value(v) for v in spec.get("values", [])) + "}"
    if kind in ("uniform", "loguniform"):
        word = "log-uniform" if kind == "loguniform" else "uniform"
        return f"{word} [{fmt_value(spec.get('low'))}, {fmt_value(spec.get('high'))})"
    if kind == "int":
        return f"integer [{spec.get('low')}, {spec.get('high')}]" + (
            " (log)" if spec.get("log") else ""
        )
    return json.dumps(spec)


def _space(space: dict[str, Any]) -> str:
    return "; ".join(
        f"{k} {_fmt_param(v)}" if isinstance(v, dict) and "kind" in v else f"{k}={fmt_value(v)}"
        for k, v in space.items()
    )


def _scrub_paths(text: str) -> str:
    """Absolute paths of the machine the study ran on, cut to ``.../<last part>``."""
    return re.sub(r"(?<![\w.~])/(?:[^\s/'\"]+/)+([^\s/'\"]+)", r".../\1", text)


def _iso(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def _what_was_run(data: Study) -> list[str]:
    res, spec, env, tgt, tm = data.res, data.res.spec, data.res.environment, data.target, data.tm
    lines = ["## What was run", ""]
    item = lines.append
    item(
        f"- **Sweep**: `{res.name}`, run `{res.path.name}`"
        + (f" (sweep file `{spec['source_file']}`)" if spec.get("source_file") else "")
    )
    if spec.get("env"):
        cfg = spec.get("env_config") or {}
        item(
            f"- **Environment**: `{spec['env']}`"
            + (f" with `{json.dumps(cfg, sort_keys=True)}`" if cfg else "")
        )
    algs = spec.get("algorithms") or (sorted(tm["algorithm"].unique()) if len(tm) else [])
    item(f"- **Algorithms**: {', '.join(map(str, algs)) or 'n/a'}")
    if spec.get("search_space") or spec.get("per_algorithm"):
        space = _space(spec.get("search_space") or {})
        per = [f"{alg}: {_space(s)}" for alg, s in (spec.get("per_algorithm") or {}).items() if s]
        item("- **Search space**: " + "; ".join(x for x in [space, *per] if x))
    fixed = {**(spec.get("fixed") or {})}
    per_fixed = {a: f for a, f in (spec.get("per_algorithm_fixed") or {}).items() if f}
    if fixed or per_fixed:
        item(
            "- **Fixed**: "
            + "; ".join(
                [_space(fixed)] * bool(fixed) + [f"{a}: {_space(f)}" for a, f in per_fixed.items()]
            )
        )
    search = spec.get("search") or {}
    if search:
        conc = search.get("max_concurrent")
        item(
            f"- **Search**: {str(search.get('sampler', '?')).upper()} sampler, "
            f"{search.get('num_samples', '?')} sampled configuration(s) plus the baseline, "
            f"{search.get('seeds', '?')} seed(s) each"
            + (f", {conc} trial(s) at a time" if conc else "")
        )
    base = spec.get("baseline") or {}
    if base:
        extra = ", ".join(
            f"{k}={fmt_value(v)}"
            for k, v in base.items()
            if k not in ("algorithm", "num_env_runners")
        )
        n = base.get("num_env_runners", "?")
        item(
            f"- **Baseline** (speedups are relative to it): {base.get('algorithm', '?')}, "
            f"{n} env runner(s)" + (f", {extra}" if extra else "")
        )
    st = spec.get("target") or {}
    opt = as_float(st.get("optimal_return"))
    frac = as_float(st.get("fraction_of_optimal"))
    txt = f"- **Target**: `{tgt.metric}` ≥ {tgt.value:.6g}"
    if math.isfinite(opt):
        txt += f" = {tgt.value / opt:.3g} × the optimal return {opt:.6g} (the env's oracle)"
    if tgt.overridden:
        txt += f"; overridden with --target (the sweep ran with {tgt.original:.6g}"
        txt += f", {frac:.3g} × optimum)" if math.isfinite(frac) else ")"
    item(txt)
    bud = spec.get("budget") or {}
    parts = []
    if as_float(bud.get("time_s")) > 0:
        parts.append(f"{fmt_s(float(bud['time_s']))} wall-clock")
    if as_float(bud.get("env_steps")) > 0:
        parts.append(f"{fmt_count(float(bud['env_steps']))} env steps")
    if not parts and len(tm):
        b = pd.to_numeric(tm["budget_s"], errors="coerce").dropna()
        parts = [f"{fmt_s(float(b.iloc[0]))} wall-clock"] if len(b) else []
    item(
        f"- **Budget per trial**: {' or '.join(parts) if parts else 'n/a'}"
        " (a trial that spends it first is censored)"
    )
    if len(tm):
        st_counts = tm["status"].value_counts()
        seeds = data.summary["n_trials"]
        item(
            f"- **Trials**: {len(tm)} in {len(data.summary)} configuration(s) "
            f"({seeds.min()}"
            + (f"-{seeds.max()}" if seeds.max() != seeds.min() else "")
            + f" seed(s) each): {int(st_counts.get('reached', 0))} reached the target, "
            f"{int(st_counts.get('censored', 0))} censored, "
            f"{int(st_counts.get('error', 0))} error(s)"
        )
    else:
        item("- **Trials**: none yet")
    if data.stage_note:
        item(f"- **Stages**: {data.stage_note}")
    if env:
        nodes = env.get("nodes") or []
        mach = f"{env.get('cpu_model', '?')}, {env.get('cpu_count', '?')} CPUs" + (
            f", {env['memory_gib']} GiB memory" if env.get("memory_gib") else ""
        )
        if nodes:
            mach += (
                f"; {len(nodes)} node(s) in the Ray cluster ("
                + ", ".join(
                    f"{fmt_value(n.get('num_cpus', '?'))} CPUs, {fmt_value(n.get('num_gpus', 0))}"
                    " GPUs"
                    for n in nodes
                )
                + ")"
            )
        if env.get("platform"):
            mach += f"; {env['platform']}"
        item(f"- **Machine**: {mach}")
        vers = env.get("versions") or {}
        if vers:
            item("- **Versions**: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
        if env.get("git_revision"):
            item(f"- **Git revision**: `{env['git_revision']}`")
        t0, t1 = _iso(env.get("started_at")), _iso(env.get("finished_at"))
        if t0 and t1:
            item(
                f"- **Ran**: {env['started_at']} to {env['finished_at']} "
                f"(total wall-clock {fmt_s((t1 - t0).total_seconds())}"
                + (
                    f"; the trials themselves ran {fmt_s(float(tm['elapsed_s'].sum()))}"
                    if len(tm) and tm["elapsed_s"].notna().any()
                    else ""
                )
                + ")"
            )
        else:
            item(
                f"- **Ran**: started {env.get('started_at', 'n/a')}, finished "
                f"{env.get('finished_at', 'n/a (unfinished, or not recorded)')}"
            )
        if env.get("command"):
            item(f"- **Command**: `{_scrub_paths(str(env['command']))}`")
        if env.get("synthetic"):
            item("- **Synthetic data** (analysis.synthetic): these numbers describe no real run.")
    else:
        item("- **Machine, versions, times**: n/a (environment.json is missing)")
    return lines


_SAID_IN_CELLS = frozenset(
    {
        "too_few_seeds",
        "base_not_reached",
        "not_reached",
        "neither_reached",
        "abs_base_not_reached",
        "abs_not_reached",
        "abs_neither_reached",
        "oversubscribed",
        "no_sample_efficiency",
        "median_not_reached",
    }
)
"""Codes of the notes of analysis.stats (:class:`analysis.stats.Note`) that a table cell
already shows (CI n/a, bounds, flags)."""


#: The configuration table: ``(column, cell)`` pairs, each cell a column of
#: :func:`analysis.fmt.config_cells` (then "oversubscribed", in bold when so, and the notes'
#: numbers).
_COLUMNS = [
    ("algorithm", "algorithm"),
    ("env runners", "env runners"),
    ("CPUs", "CPUs"),
    ("batch", "batch"),
    ("other params", "other params"),
    ("seeds", "seeds"),
    ("success", "success"),
    ("TTT [95% CI]", "TTT"),
    ("speedup [95% CI]", "speedup"),
    ("absolute speedup [95% CI]", "absolute speedup"),
    ("efficiency per env runner", "efficiency per env runner"),
    ("efficiency per CPU", "efficiency per CPU"),
    ("env steps/s", "env steps/s"),
    ("steps-to-target", "steps-to-target"),
]


def config_rows(data: Study) -> tuple[list[str], list[list[str]], list[str]]:
    """The per-configuration table: headers, one row per configuration, numbered notes.

    Rows follow the sweep's algorithm order, then env runners, batch size and TTT.
    """
    s = data.summary
    headers = [*(h for h, _ in _COLUMNS), "oversubscribed", "notes"]
    if s.empty:
        return headers, [], []
    order = [str(a) for a in data.res.spec.get("algorithms") or []]
    rank = {a: i for i, a in enumerate(order)}
    s = s.assign(
        _alg=s["algorithm"].map(lambda a: rank.get(a, len(rank))),
        _b=pd.to_numeric(s.get("train_batch_size", np.nan), errors="coerce"),
        _t=s["ttt_s"].astype(float).fillna(np.inf),
        _nb=~s["is_baseline"],
    )
    s = s.sort_values(["_alg", "algorithm", "num_env_runners", "_b", "_nb", "_t"], kind="stable")
    _, rows = lay_out(config_cells(data), _COLUMNS, s["config_id"])
    notes: list[str] = []
    for row, (_, c) in zip(rows, s.iterrows(), strict=True):
        r = data.configs.loc[c["config_id"]]
        row_notes = list(c["notes"])
        if isinstance(r["speedup_notes"], list):
            row_notes += [x for x in r["speedup_notes"] if x not in row_notes]
        row_notes = [x for x in row_notes if x.code not in _SAID_IN_CELLS]
        refs = []
        for x in row_notes:
            if x not in notes:
                notes.append(x)
            refs.append(f"[{notes.index(x) + 1}]")
        row += ["**yes**" if c["oversubscribed"] else "no", " ".join(refs) or "-"]
    return headers, rows, notes


def _plan_check_lines(data: Study) -> list[str]:
    check = data.check
    if check is None:
        return []
    out = ["", "## Plan check (held-out env runner counts)", ""]
    held = ",".join(str(n) for n in sorted(check.rows["num_env_runners"].unique()))
    out.append(
        "The scaling models fitted without the held-out env runner counts, their "
        "predictions there, and what was measured (`python -m analysis.plan holdout "
        f"{data.res.name}/{data.res.path.name} {held or 'N,...'}`). The "
        "pipeline model predicts TTT = start-up(N) + env steps to target(N) / sampling "
        "rate(N) (analysis/plan_check.py); the capacity plan uses, per algorithm, the "
        "TTT model that leave-one-N-out cross-validation on the fitted N prefers (the "
        "notes name it). Error = "
        "predicted / measured - 1; intervals: 95 % bootstrap over seeds; measured: "
        "median [95 % CI] (TTT) or median [range over seeds] (env steps/s)."
    )
    rows = table_rows(check)
    if rows:
        out += ["", md_table(TABLE_HEADERS, rows, right=(1, 5, 6, 7)), ""]
    fit = fit_table_rows(check)
    if fit:
        out += [
            FIT_CAPTION,
            "",
            md_table(FIT_HEADERS, fit, right=tuple(range(3, len(FIT_HEADERS)))),
            "",
        ]
    out += [f"- {_scrub_paths(n)}" for n in check.notes]
    return out


def _fit_lines(data: Study) -> list[str]:
    """The Amdahl and USL fits behind the speedup and throughput figures, with the parameters'
    standard errors (analysis.scaling)."""
    fits = [*data.speedup_fits(), *data.throughput_fit_rows()]
    if not fits:
        return []
    out = [
        "",
        "## Scaling fits",
        "",
        "X(N) = gamma N / (1 + alpha (N - 1) + beta N (N - 1)) (Gunther's Universal "
        "Scalability Law; Amdahl: beta = 0), fitted to the capacity named (1/TTT of the best "
        "configuration per N, or every trial's env steps/s) with 0 <= alpha <= 1, beta >= 0; "
        "+- one standard error from the fit's covariance; peak N* = sqrt((1 - alpha) / "
        "beta).",
        "",
    ]
    out += [f"- {alg}, {what}: {f.describe()}" for alg, what, f in fits]
    return out


def _batch_size_lines(data: Study) -> list[str]:
    b = data.batch
    if b is None:
        return []
    from analysis.batch_size import check_lines, check_table

    out = [
        "",
        "## Batch size and gradient noise scale",
        "",
        "Predicted from the pilot batch size's measured learner updates to the target and its "
        "gradient noise scale B_simple (McCandlish et al. 2018: S = S_min (1 + B_noise / B)), "
        "against the measured medians (`python -m analysis.batch_size "
        f"{data.res.name}/{data.res.path.name}`); error = predicted / measured - 1.",
        "",
    ]
    headers, rows = check_table(b)
    if rows:
        out += [md_table(headers, rows, right=(1, *range(4, 14))), ""]
    out += [
        f"- {_scrub_paths(x)}" for x in check_lines(b) if "B_crit" in x or not rows or x in b.notes
    ]
    return out


def markdown_tables(
    data: Study, figures: dict[str, str] | None = None, unavailable: dict[str, str] | None = None
) -> str:
    """The Markdown summary of a study (see the module docstring for its parts).

    Args:
        data: from :func:`analysis.study.analyse`.
        figures: ``{figure name: image path relative to the Markdown file}`` to link.
        unavailable: ``{figure name: why it is missing}`` to say in place of the image.

    Returns:
        Markdown text (GitHub-flavoured tables), ending in a newline.
    """
    figures, unavailable = figures or {}, unavailable or {}
    res = data.res
    out = [
        f"<!-- Generated by `python -m analysis.publish` (rl-scaling) from run "
        f"{res.name}/{res.path.name}; regenerate rather than edit. -->",
        "",
    ]
    out += _what_was_run(data)
    out += ["", "## Results per configuration", ""]
    headers, rows, notes = config_rows(data)
    base = data.baseline
    if rows:
        bl = (
            config_phrase(base["algorithm"], base["num_env_runners"])
            if base is not None
            else "none (no baseline trials)"
        )
        out.append(
            "TTT: wall-clock seconds from trial start (actor start-up included) to the end of "
            "the first iteration whose metric reached the target; median over seeds, or "
            "Kaplan-Meier median (KM) when some seeds were censored; 95 % CI by bootstrap over "
            "seeds (KM: Greenwood), none with fewer than "
            f"{MIN_SEEDS_FOR_CI} seeds. Speedup S = TTT(baseline) / TTT, baseline: {bl}. "
            "Absolute speedup = TTT(single-process reference) / TTT. "
            "Parallel efficiency = S / (env runners ratio) and S / (CPUs ratio), only for the "
            "baseline's algorithm. Target metric: "
            f"{describe_metric(data.target.metric, res.spec)}. Env steps/s: "
            "median over seeds of total env steps / trial wall-clock. Steps-to-target: median "
            "over the seeds that reached the target. Oversubscribed: the trial asked for more "
            "CPUs than the cluster had, so its timings are not trustworthy."
        )
        out += ["", md_table(headers, rows, right=(1, 2, 3, 5, 12, 13)), ""]
        if notes:
            out.append("Notes:")
            out += [""] + [f"{i}. {x}" for i, x in enumerate(notes, start=1)]
    else:
        out.append("No trials yet: nothing to tabulate.")
    out += ["", "## Recommendation (capacity plan)", ""]
    plan = data.plan
    if plan is None or plan.candidates.empty:
        out.append("No recommendation:")
        out += [""] + [
            f"- {_scrub_paths(x)}"
            for x in (plan.notes if plan is not None else ["no configurations yet"])
        ]
    else:
        answer = plan_answer(plan, sweep_file_of(res.environment))
        out.append(_scrub_paths(answer.sentence))
        if answer.commands:
            out += [""] + [f"- {c.label}: `{c.command}`{c.note}" for c in answer.commands]
        out += ["", "What the plan assumes:", "", "| assumption | the plan took |", "|---|---|"]
        out += [f"| {a} | {_scrub_paths(b).replace('|', '/')} |" for a, b in answer.assumptions]
        out += [
            "",
            "<details><summary>Details: every recommendation, the scaling models, "
            "caveats, batch size</summary>",
            "",
            "From `analysis.plan` (no deadline or budget given; reproduce or constrain "
            f"with `python -m analysis.plan fit {res.name}/{res.path.name} --deadline 10m "
            "--budget 1usd`):",
            "",
        ]
        out += [f"- {_scrub_paths(x)}" for x in [*answer.details, *data.batch_advice]]
        out += ["", "</details>"]
    out += _fit_lines(data)
    out += _plan_check_lines(data)
    out += _batch_size_lines(data)
    if data.warnings:
        out += ["", "## Warnings", ""] + [f"- {_scrub_paths(w)}" for w in data.warnings]
    if figures or unavailable:
        out += ["", "## Figures", ""]
        for name in [*figures, *[n for n in unavailable if n not in figures]]:
            if name in figures:
                out += [f"![{FIGURES[name]}]({figures[name]})", "", f"*{_caption(name, data)}*", ""]
            else:
                out += [f"*{FIGURES[name]}: not drawn. {unavailable[name]}*", ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------
# Publish
# ---------------------------------------------------------------------------------------------
@dataclass
class Published:
    """What :func:`publish` wrote.

    Attributes:
        markdown_path: ``<out>/<name>_tables.md``.
        markdown: its text.
        figures: PNG files written, by figure name.
        unavailable: figures that could not be drawn from these results, and why.
        export_error: why the PNGs could not be written (None if they were, or none asked).
        engine: the export engine used (``"kaleido"``), "" if none ran.
        warnings: the analysis' warnings (also in the Markdown).
    """

    markdown_path: Path
    markdown: str
    figures: dict[str, Path] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    export_error: str | None = None
    engine: str = ""
    warnings: list[str] = field(default_factory=list)


def publish(
    results_dir: str | Path,
    out: str | Path,
    *,
    name: str | None = None,
    target: str | float | None = None,
    figures: tuple[str, ...] | list[str] = DEFAULT_FIGURES,
    engine: str = "auto",
    width: int = 1000,
    scale: float = 2.0,
) -> Published:
    """Write the PNG figures and the Markdown tables of a results directory.

    Args:
        results_dir: a ``results/<sweep>/<run_id>/`` directory.
        out: output folder (e.g. ``docs/``); figures go to ``<out>/figures/``.
        name: file name stem (default: the sweep's name); letters, digits, ``_ . -``.
        target: override the target (absolute, or ``"95%"`` of the optimum).
        figures: figure names (:data:`FIGURES`); empty for tables only.
        engine, width, scale: PNG export (see :func:`export_png`).

    Returns:
        :class:`Published`. A figure export failure does not raise: the tables are written,
        the failure is in ``export_error`` and the Markdown says the figure is missing.

    Raises:
        ResultsError: the results directory is missing or unreadable.
        ValueError: bad name, target, figure name, engine, width or scale; ``out`` is a file.
    """
    if engine not in ("auto", "kaleido", "chromium"):
        raise ValueError(f"--engine {engine!r}: expected auto or kaleido")
    if not width >= 100 or not 0 < scale <= 8:
        raise ValueError(
            f"--width {width} / --scale {scale}: need width >= 100 (CSS px) and 0 < scale <= 8"
        )
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: exists and is not a directory")
    res = load_results(results_dir)
    stem = name or res.name
    if not _NAME_RE.fullmatch(stem):
        raise ValueError(f"--name {stem!r}: use letters, digits, '_', '.' or '-' (it names files)")
    data = analyse(res, target)
    built, unavailable = build_figures(data, list(figures))
    paths = {n: out / "figures" / f"{stem}_{n}.png" for n in built}
    export_error, used = None, ""
    if built:
        try:
            used = export_png(
                {paths[n]: built[n] for n in built}, width=width, scale=scale, engine=engine
            )
        except ExportError as exc:
            export_error = str(exc)
    written = {n: p for n, p in paths.items() if export_error is None and p.is_file()}
    for n in built:
        if n not in written:
            unavailable[n] = f"PNG export failed: {export_error or 'no file written'}"
    md = markdown_tables(
        data,
        {n: f"figures/{p.name}" for n, p in written.items()},
        {n: unavailable[n] for n in figures if n in unavailable},
    )
    out.mkdir(parents=True, exist_ok=True)
    md_path = out / f"{stem}_tables.md"
    md_path.write_text(md, encoding="utf-8")
    return Published(
        markdown_path=md_path,
        markdown=md,
        figures=written,
        unavailable=unavailable,
        export_error=export_error,
        engine=used,
        warnings=list(data.warnings),
    )


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 1 figure export failed, 2 bad input)."""
    p = OneLineParser(
        prog="python -m analysis.publish",
        description="Export the report's figures as PNG and a Markdown summary "
        "(what was run, per-configuration table, recommendation) of a "
        "results directory, e.g. for docs/.",
    )
    p.add_argument("results_dir", help="results/<sweep>/<run_id>/ directory")
    p.add_argument(
        "--out", required=True, help="output folder, e.g. docs/ (figures go to OUT/figures/)"
    )
    p.add_argument("--name", help="file name stem (default: the sweep's name)")
    p.add_argument(
        "--target", help="override the target: absolute value or percent of optimum (e.g. 95%%)"
    )
    p.add_argument(
        "--figures",
        default=",".join(DEFAULT_FIGURES),
        help=f"comma-separated, from {', '.join(FIGURES)} (default {','.join(DEFAULT_FIGURES)})",
    )
    p.add_argument("--no-figures", action="store_true", help="write the Markdown only")
    p.add_argument(
        "--engine",
        default="auto",
        choices=("auto", "kaleido", "chromium"),
        help="PNG export: kaleido (auto is the same; chromium is a deprecated alias of it)",
    )
    p.add_argument("--width", type=int, default=1000, help="figure width in CSS px (default 1000)")
    p.add_argument(
        "--scale", type=float, default=2.0, help="pixels per CSS px in the PNG (default 2)"
    )
    args = p.parse_args(argv)
    names = [] if args.no_figures else [f.strip() for f in args.figures.split(",") if f.strip()]
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        p.error(f"--figures {unknown[0]!r}: unknown; choose from {', '.join(FIGURES)}")
    try:
        done = publish(
            args.results_dir,
            args.out,
            name=args.name,
            target=args.target,
            figures=names,
            engine=args.engine,
            width=args.width,
            scale=args.scale,
        )
    except (ResultsError, ValueError, OSError) as exc:
        sys.stderr.write(f"{p.prog}: error: {exc}\n")
        return EXIT_BAD_INPUT
    sys.stdout.write(done.markdown)
    sys.stdout.flush()
    for path in done.figures.values():
        sys.stderr.write(f"wrote {path} ({done.engine})\n")
    for n, why in done.unavailable.items():
        sys.stderr.write(f"figure {n} not drawn: {why}\n")
    sys.stderr.write(f"wrote {done.markdown_path}\n")
    if done.export_error is not None:
        sys.stderr.write(f"{p.prog}: error: PNG export failed: {done.export_error}\n")
        return 1
    return 0


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m analysis.publish", main))

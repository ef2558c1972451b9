"""The report's figures, as pure functions of a :class:`~analysis.study.Study`.

Each builder returns plotly figures (unstyled; :func:`style_figure` gives the report's look
and :data:`FIGURE_HEIGHT` its heights) or raises :class:`FigureUnavailable` with one line
saying why the figure cannot be drawn. The HTML report (:mod:`analysis.report`) embeds them
and :mod:`analysis.publish` exports the same figures as PNG (:mod:`analysis.export`).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.fmt import config_name, fmt_r2, fmt_s
from analysis.scaling import N_PARAMS
from analysis.stats import best_configs
from analysis.study import ALG_COLORS, Study

__all__ = [
    "FIGURE_HEIGHT",
    "FigureUnavailable",
    "SpeedupFigures",
    "batch_size_figure",
    "best_per_n",
    "cost_figure",
    "learning_curve_figure",
    "log_ticks",
    "plan_check_figure",
    "speedup_figures",
    "style_figure",
    "throughput_figure",
    "ttt_figure",
]


class FigureUnavailable(Exception):
    """A figure cannot be drawn from these results; the message (one line) says why."""


FIGURE_HEIGHT = {
    "learning_curves": 460,
    "ttt": 430,
    "speedup": 470,
    "efficiency": 430,
    "throughput": 430,
    "plan_check": 430,
    "batch_size": 430,
    "cost": 480,
}
"""Height in CSS pixels of each figure, in the report and in exported images."""


def style_figure(fig: Any, height: int = 430) -> Any:
    """Apply the report's look (white template, margins, fonts) and ``height`` (CSS px).

    Returns the same figure (modified in place), so calls can be chained.
    """
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 64, "r": 24, "t": 56, "b": 56},
        font={"size": 13},
        legend={"font": {"size": 12}},
    )
    return fig


_METRIC_AXIS = {
    "evaluation": "evaluation return (greedy, fixed seeds)",
    "training": "training return (exploring episodes)",
    "episode_return_mean": "training return (exploring episodes)",
}


_CURVE_AXES = {
    "wall_time_s": ("wall-clock since trial start (s)", "Episode return vs wall-clock"),
    "env_steps": ("env steps sampled", "Episode return vs env steps"),
}


def learning_curve_figure(data: Study, x: str = "wall_time_s") -> Any:
    """Learning curves: the target metric of every trial against wall-clock or env steps.

    One line per trial (dotted: censored or failed; a trial with a single point is a dot, open
    when censored or failed), coloured by algorithm, darker for more env runners; crosses where
    each trial first reached the target; the target as a dashed line.

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
        name = config_name(*key)
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=name,
                legendgroup=name,
                line={"color": data.colors[key], "width": 2.5},
            )
        )
    trials = prog[prog["trial_id"].isin(info.index)]
    order = sorted(
        trials["trial_id"].unique(),
        key=lambda tid: (info.at[tid, "algorithm"], info.at[tid, "num_env_runners"], tid),
    )
    groups = dict(tuple(trials.groupby("trial_id", sort=False)))
    for tid in order:
        g, t = groups[tid], info.loc[tid]
        key = (t["algorithm"], int(t["num_env_runners"]))
        name = config_name(*key)
        # a trial that reached the target at its first evaluation has one point: no line
        one_point = g[col].notna().sum() < 2
        fig.add_trace(
            go.Scatter(
                x=g[x],
                y=g[col],
                mode="markers" if one_point else "lines",
                marker={
                    "color": data.colors[key],
                    "size": 7,
                    "symbol": "circle" if t["status"] == "reached" else "circle-open",
                },
                name=name,
                legendgroup=name,
                connectgaps=True,  # an iteration in which no episode ended has no return (NaN)
                showlegend=False,
                line={
                    "color": data.colors[key],
                    "width": 1.5,
                    "dash": "dot" if t["status"] != "reached" else "solid",
                },
                hovertemplate=f"{html.escape(str(tid))}<br>%{{x:.4g}}, return %{{y:.4g}}<extra>"
                f"{t['status']}</extra>",
            )
        )
    reached = tm[tm["reached"]]
    if len(reached):
        xs = reached["time_to_target_s" if x == "wall_time_s" else "steps_to_target"]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[data.target.value] * len(reached),
                mode="markers",
                name="reached target",
                marker={"symbol": "x", "size": 8, "color": "#222"},
            )
        )
    fig.add_hline(
        y=data.target.value,
        line={"color": "#d62728", "dash": "dash"},
        annotation_text=f"target {data.target.value:g}",
        annotation_position="top left",
    )
    fig.update_layout(
        title=title,
        xaxis_title=xlabel,
        yaxis_title=_METRIC_AXIS.get(data.target.metric, data.target.metric),
    )
    return fig


def log_ticks(values: Any, prefix: str = "") -> dict[str, Any]:
    """Tick values 1-2-5 per decade covering ``values`` (readable labels on log axes); empty
    (plotly's own ticks) when fewer than two of them fall inside the values' range."""
    v = np.asarray(pd.to_numeric(pd.Series(np.ravel(values)), errors="coerce"), float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return {}
    lo, hi = v.min(), v.max()
    ticks = [
        m * 10.0**k
        for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
        for m in (1, 2, 5)
    ]
    ticks = [t for t in ticks if lo / 2.5 <= t <= hi * 2.5]
    if sum(lo <= t <= hi for t in ticks) < 2:
        return {}  # a range narrower than 1-2-5 steps: plotly's own ticks label it
    return {"tickvals": ticks, "ticktext": [f"{prefix}{t:g}" for t in ticks]}


def _n_axis(ns: list[int]) -> dict[str, Any]:
    """x axis over env runner counts: log scale, or linear when N = 0 (driver) is present."""
    ns = sorted(set(ns))
    if not ns:
        return {"title": "env runners (N)"}
    kind = "linear" if ns[0] < 1 else "log"
    return {
        "type": kind,
        "tickvals": ns,
        "ticktext": [str(n) for n in ns],
        "title": "env runners (N)" + (" (0 = sampling in the driver)" if ns[0] < 1 else ""),
    }


def best_per_n(summary: pd.DataFrame) -> tuple[pd.DataFrame, list[int], dict[str, Any]]:
    """Best configuration per (algorithm, N), the measured N, and the N axis."""
    best = best_configs(summary, ("algorithm", "num_env_runners"))
    ns_all = sorted(int(n) for n in best["num_env_runners"].unique())
    return best, ns_all, _n_axis(ns_all)


def _ttt_error_y(rows: pd.DataFrame) -> dict[str, Any]:
    """Error bars from a median TTT to its 95 % CI (``ttt_low_s``, ``ttt_high_s``; seconds);
    an unbounded side is drawn as none."""
    return {
        "type": "data",
        "array": (rows["ttt_high_s"] - rows["ttt_s"]).replace(np.inf, np.nan).fillna(0),
        "arrayminus": (rows["ttt_s"] - rows["ttt_low_s"]).clip(lower=0).fillna(0),
        "visible": True,
    }


def ttt_figure(data: Study) -> Any:
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
    best, _, axis = best_per_n(data.summary)
    fig = go.Figure()
    for alg, g in best.groupby("algorithm"):
        g = g.sort_values("num_env_runners")
        fin = g[np.isfinite(g["ttt_s"].astype(float))]
        fig.add_trace(
            go.Scatter(
                x=fin["num_env_runners"],
                y=fin["ttt_s"],
                mode="lines+markers",
                name=alg,
                line={"color": data.alg_color[alg]},
                error_y=_ttt_error_y(fin),
                hovertemplate="N=%{x}<br>TTT %{y:.4g} s<extra>" + alg + "</extra>",
            )
        )
        inf = g[~np.isfinite(g["ttt_s"].astype(float))]
        if len(inf):
            fig.add_trace(
                go.Scatter(
                    x=inf["num_env_runners"],
                    y=inf["max_censor_s"],
                    mode="markers",
                    name=f"{alg}: not reached (> budget)",
                    marker={"symbol": "triangle-up", "size": 11, "color": data.alg_color[alg]},
                )
            )
    fig.update_layout(
        title="Time-to-target vs env runners (median, 95% CI; target metric: "
        f"{data.target.metric})",
        xaxis=axis,
        yaxis_title="time-to-target (s)",
    )
    return fig


#: Below this R² a drawn fit is flagged in its legend entry as a poor fit.
POOR_FIT_R2 = 0.5


def fit_line_name(alg: str, f: Any) -> str | None:
    """The legend name of a fit worth drawing, or None when the data cannot test it: a model
    that failed, or one exactly determined by its points (as many distinct N as parameters:
    it passes through them whatever the truth, no residual). A drawn fit with R² below
    :data:`POOR_FIT_R2` says so in its name."""
    if not f.testable:
        return None
    name = f"{alg} {'USL' if f.model == 'usl' else 'Amdahl'} fit"
    if math.isfinite(f.r2) and f.r2 < POOR_FIT_R2:
        name += f" (R² {fmt_r2(f.r2)}: poor fit)"
    return name


def _add_fit_lines(
    fig: Any,
    alg: str,
    fits: dict[str, Any],
    grid: np.ndarray,
    color: str,
    scale: float = 1.0,
    width: float | None = None,
) -> None:
    """Adds to ``fig`` the Amdahl (dotted) and USL (solid) lines of ``fits`` (model name ->
    :class:`~analysis.scaling.ScalingFit`) over ``grid`` (env runners), times ``scale``; a fit
    the data cannot test (:func:`fit_line_name`) is left out."""
    import plotly.graph_objects as go

    for m, dash in (("amdahl", "dot"), ("usl", "solid")):
        name = fit_line_name(alg, fits[m])
        if name is not None:
            line = {"color": color, "dash": dash, **({"width": width} if width else {})}
            y = fits[m].predict(grid) * scale if scale != 1.0 else fits[m].predict(grid)
            fig.add_trace(go.Scatter(x=grid, y=y, mode="lines", name=name, line=line))


def untestable_fit_note(fits: list[tuple[str, str, Any]]) -> str | None:
    """One line for the fits not drawn because the measured N determine them exactly."""
    short = sorted(
        {(alg, f.n_distinct) for alg, _, f in fits if f.ok and fit_line_name(alg, f) is None}
    )
    if not short:
        return None
    which = ", ".join(f"{alg} ({n} env runner counts)" for alg, n in short)
    return (
        f"No scaling model is drawn for {which}: as many distinct N as a model has "
        "parameters determine it exactly, so the data cannot test it; measure at least "
        f"{N_PARAMS['amdahl'] + 1} env runner counts to fit Amdahl, {N_PARAMS['usl'] + 1} "
        "for the USL."
    )


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


def speedup_figures(data: Study) -> SpeedupFigures:
    """Speedup S = TTT(baseline) / TTT vs env runners, and parallel efficiency.

    Per algorithm, its best configuration at each N: measured speedups with bootstrap 95 % CIs
    (only bounded ones drawn; a speedup only bounded, because a median was not reached, is a
    triangle at its bound), the ideal linear speedup, and Amdahl (dotted) / USL (solid) fits
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
    best, ns_all, axis = best_per_n(s)
    sp = data.configs
    b = data.baseline
    if b is None or sp.empty or not np.isfinite(sp["speedup"].astype(float)).any():
        if b is None:
            why = "there are no baseline trials"
        else:
            why = (
                f"the baseline ({config_name(b['algorithm'], b['num_env_runners'])}) "
                f"did not reach the target in half its seeds; speedups are only bounded "
                f"(see the tables)"
            )
        raise FigureUnavailable(f"No speedup curve: {why}.")
    notes: list[str] = []
    nb = int(b["num_env_runners"])
    fig = go.Figure()
    grid = np.unique(
        np.concatenate([np.geomspace(1, max(ns_all + [2]), 60), np.array(ns_all, float)])
    )
    grid = grid[grid >= 1]
    if nb >= 1:
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=grid / nb,
                mode="lines",
                name="ideal (linear)",
                line={"color": "#888", "dash": "dash"},
            )
        )
    else:
        notes.append(
            "The baseline samples in the driver (0 env runners): there is no ideal "
            "linear-speedup line in env runners."
        )
    nb = max(nb, 1)
    eff = go.Figure()
    for alg, g in best.groupby("algorithm"):
        g = g[g["config_id"].isin(sp.index)].sort_values("num_env_runners")
        r = sp.loc[g["config_id"]]
        speedup = r["speedup"].astype(float).to_numpy()
        # a median not reached leaves only a bound (S = 0 or inf, which a log axis cannot
        # draw): a triangle at the bound, pointing the way the truth lies, as the TTT figure
        # draws a censored median
        for bound, symbol, side in (
            ("speedup_upper_bound", "triangle-down", "<"),
            ("speedup_lower_bound", "triangle-up", ">"),
        ):
            at = np.isfinite(r[bound].astype(float)).to_numpy()
            if at.any():
                fig.add_trace(
                    go.Scatter(
                        x=g["num_env_runners"][at],
                        y=r[bound][at],
                        mode="markers",
                        name=f"{alg}: median not reached (S {side} bound)",
                        marker={"color": data.alg_color[alg], "size": 11, "symbol": symbol},
                    )
                )
        ok = np.isfinite(speedup) & (speedup > 0)
        if not ok.any():
            continue
        gg, rr = g[ok], r[ok]
        # Error bars only for bounded intervals (an unbounded one is said in the tables).
        bounded = np.isfinite(rr["speedup_high"].astype(float)) & (
            rr["speedup_low"].astype(float) > 0
        )
        hi = (rr["speedup_high"] - rr["speedup"]).where(bounded, 0.0).fillna(0)
        lo = (rr["speedup"] - rr["speedup_low"]).where(bounded, 0.0).fillna(0)
        fig.add_trace(
            go.Scatter(
                x=gg["num_env_runners"],
                y=rr["speedup"],
                mode="markers",
                name=f"{alg} measured",
                marker={"color": data.alg_color[alg], "size": 9},
                error_y={"type": "data", "array": hi.to_numpy(), "arrayminus": lo.to_numpy()},
            )
        )
        # 1/TTT of the best configuration per N >= 1, scaled to the baseline's TTT
        _add_fit_lines(
            fig,
            alg,
            data.models[alg].fits,
            grid,
            data.alg_color[alg],
            scale=float(b["ttt_s"]),
            width=1.5,
        )
        eff.add_trace(
            go.Scatter(
                x=gg["num_env_runners"],
                y=rr["efficiency_per_runner"],
                mode="lines+markers",
                name=f"{alg} per env runner",
                line={"color": data.alg_color[alg]},
            )
        )
        eff.add_trace(
            go.Scatter(
                x=gg["num_env_runners"],
                y=rr["efficiency_per_cpu"],
                mode="lines+markers",
                name=f"{alg} per CPU",
                line={"color": data.alg_color[alg], "dash": "dash"},
                marker={"symbol": "square"},
            )
        )
    fig.update_layout(
        title=f"Speedup vs env runners (baseline: {b['algorithm']}, "
        f"{b['num_env_runners']} env runner(s))",
        xaxis=axis,
        yaxis={
            "title": "speedup S = TTT(baseline) / TTT",
            "type": "log",
            **log_ticks(
                [
                    0.5,
                    *data.speed["speedup"],
                    *data.speed["speedup_upper_bound"],
                    *data.speed["speedup_lower_bound"],
                    max(ns_all) / nb,
                ]
            ),
        },
    )
    eff.add_hline(y=1.0, line={"color": "#888", "dash": "dash"})
    eff.update_layout(
        title="Parallel efficiency E = S / resources ratio",
        xaxis=axis,
        yaxis_title="parallel efficiency",
    )
    return SpeedupFigures(speedup=fig, efficiency=eff, fits=data.speedup_fits(), notes=notes)


def throughput_figure(data: Study) -> tuple[Any, list[tuple[str, str, Any]]]:
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
    best, ns_all, axis = best_per_n(data.summary)
    fig = go.Figure()
    for alg, g in best.groupby("algorithm"):
        t = data.tm[data.tm["config_id"].isin(g["config_id"]) & (data.tm["status"] != "error")]
        t = t[np.isfinite(t["env_steps_per_s"].astype(float))]
        if t.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=t["num_env_runners"],
                y=t["env_steps_per_s"],
                mode="markers",
                name=f"{alg} trials",
                marker={"color": data.alg_color[alg], "size": 7, "opacity": 0.7},
            )
        )
        grid = np.geomspace(1, max(ns_all + [2]), 60)
        _add_fit_lines(fig, alg, data.throughput_fits[alg], grid, data.alg_color[alg])
    fig.update_layout(
        title="Throughput vs env runners (env steps per second of wall-clock, start-up included)",
        xaxis=axis,
        yaxis_title="env steps / s",
    )
    return fig, data.throughput_fit_rows()


def cost_figure(data: Study) -> Any:
    """Cost against time of one run to the target: every candidate of the capacity plan
    (:mod:`analysis.plan_model`; one marker colour per VM size, open when extrapolated), its
    Pareto front, and the cheapest and fastest runs named. Time is the predicted TTT once the
    cluster is up (seconds, log axis): the launcher's start-up, an assumed constant, is said
    in the axis title instead of shifting every point. Cost: US$ per run, log axis.

    Raises:
        FigureUnavailable: no plan, or a plan without candidates (its notes say why).
    """
    import plotly.graph_objects as go

    plan = data.plan
    if plan is None or plan.candidates.empty:
        why = "; ".join(plan.notes) if plan is not None else "the plan could not be made"
        raise FigureUnavailable(f"No cost/time trade-off: {why}")
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
    return fig


def plan_check_figure(data: Study) -> Any:
    """Measured TTT per N (95 % CI) against the predictions made without the held-out N.

    Raises:
        FigureUnavailable: no plan check (too few distinct N).
    """
    import plotly.graph_objects as go

    if data.check is None or data.check.rows.empty:
        raise FigureUnavailable("No plan check.")
    best, _, axis = best_per_n(data.summary)
    rows = data.check.rows[data.check.rows["quantity"] == "TTT"]
    fig = go.Figure()
    shown = [rows["predicted"], rows["low"], rows["high"]]  # every y drawn, for the ticks
    for alg, g in best[best["num_env_runners"] >= 1].groupby("algorithm"):
        g = g[np.isfinite(g["ttt_s"].astype(float))].sort_values("num_env_runners")
        shown.append(g["ttt_s"])
        held = set(rows[rows["algorithm"] == alg]["num_env_runners"])
        for part, sym in (
            (g[~g["num_env_runners"].isin(held)], "circle"),
            (g[g["num_env_runners"].isin(held)], "diamond"),
        ):
            if part.empty:
                continue
            fig.add_trace(
                go.Scatter(
                    x=part["num_env_runners"],
                    y=part["ttt_s"],
                    mode="markers",
                    name=f"{alg} measured" + (" (held out)" if sym == "diamond" else " (fitted)"),
                    marker={"symbol": sym, "size": 10, "color": data.alg_color[alg]},
                    error_y=_ttt_error_y(part),
                )
            )
        for k, (model, mg) in enumerate(rows[rows["algorithm"] == alg].groupby("model")):
            mg = mg[np.isfinite(mg["predicted"])]
            if mg.empty:
                continue
            fig.add_trace(
                go.Scatter(
                    x=mg["num_env_runners"] * (1.06 + 0.06 * k),
                    y=mg["predicted"],
                    mode="markers",
                    name=f"{alg} predicted: {model}",
                    marker={
                        "symbol": "x" if model == "pipeline" else "star",
                        "size": 10,
                        "color": data.alg_color[alg],
                    },
                    error_y={
                        "type": "data",
                        "visible": True,
                        "array": (mg["high"] - mg["predicted"]).replace(np.inf, np.nan).fillna(0),
                        "arrayminus": (mg["predicted"] - mg["low"]).fillna(0),
                    },
                )
            )
    fig.update_layout(
        title="Plan check: TTT predicted without the held-out N vs measured (95% intervals)",
        xaxis=axis,
        # 1-2-5 ticks: plotly's own log ticks label 20, 30, 40 s as "2", "3", "4"
        yaxis={"title": "time-to-target (s)", "type": "log", **log_ticks(pd.concat(shown))},
    )
    return fig


def batch_size_figure(data: Study) -> Any:
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
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("learner updates to the target", "env steps to the target")
    )
    for alg, g in data.batch.rows.groupby("algorithm"):
        f = data.batch.fits[alg]
        color = data.alg_color.get(alg, "#333")
        bs = np.geomspace(g["train_batch_size"].min() / 1.5, g["train_batch_size"].max() * 1.5, 60)
        s_curve = steps_at(bs, f["s_min"], f["b_simple"])
        pilot = g[g["role"] == "pilot"].iloc[0]
        spu = pilot["steps_pred"] / pilot["updates_pred"] / pilot["train_batch_size"]
        for col, y_meas, y_curve, lo, hi in (
            (1, g["updates"], s_curve, g["updates_low"], g["updates_high"]),
            (2, g["steps"], s_curve * spu * bs, g["steps_low"], g["steps_high"]),
        ):
            fig.add_trace(
                go.Scatter(
                    x=bs,
                    y=y_curve,
                    mode="lines",
                    line={"color": color, "dash": "dash"},
                    name=f"{alg} predicted from B={f['pilot']:g} (B_simple {f['b_simple']:.3g})",
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
            fig.add_trace(
                go.Scatter(
                    x=g["train_batch_size"],
                    y=y_meas,
                    mode="markers",
                    name=f"{alg} measured",
                    marker={
                        "color": color,
                        "size": 10,
                        "symbol": ["circle" if r == "pilot" else "circle-open" for r in g["role"]],
                    },
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
            fig.add_trace(
                go.Scatter(
                    x=g["train_batch_size"],
                    y=(lo + hi) / 2,
                    mode="markers",
                    marker={"size": 1, "color": color},
                    showlegend=False,
                    error_y={"type": "data", "array": (hi - lo) / 2, "visible": True},
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(type="log", title_text="train batch size B")
    fig.update_yaxes(type="log")
    fig.update_layout(
        title="Batch size: predicted from the pilot's noise scale (dashed) vs "
        "measured (filled: pilot)"
    )
    return fig

"""A sweep's history: every run of one sweep, configuration by configuration, with the runs
that changed it marked.

``python -m analysis.history results/<sweep>/ [--markdown FILE] [--html FILE] [--factor 1.1]
[--alpha 0.01]``

The runs are the ``results/<sweep>/<run_id>/`` folders that hold a ``trials.parquet``, in
the order they started (``environment.json``'s ``started_at``, else the run id). A run judged
differently from the newest (another target, evaluation protocol or trial budget:
:func:`analysis.compare.check_comparable`) is listed apart and left out; so is one that
cannot be read.

Per configuration and run: the median time-to-target (Kaplan-Meier when seeds are censored),
the seeds that reached the target, and the median env steps/s of its judged trials
(:class:`analysis.compare.Judged`: the confirmation stage when the run has one). Each run is
compared with the previous run **on the same machine** (CPU model, CPU count and node count,
from ``environment.json``) by :func:`analysis.compare.compare`, the test ``compare`` uses:
a configuration whose verdict there is *faster* or *slower* is a change point, marked in its
cell, and the run's pooled verdict is its row's. A run on another machine starts a line of its
own: a change of machine is not a change of the code.

Exit codes: 0, 5 when the newest run is a regression against the previous run on its
machine (as ``compare``'s), 2 when the folder holds no readable run.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.compare import (
    ALPHA,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_REGRESSION,
    FACTOR,
    FASTER,
    SLOWER,
    CompareError,
    Comparison,
    Judged,
    check_comparable,
    check_judging,
    compare,
    config_names,
    judging_arguments,
    pooled_verdict,
    write_pages,
)
from analysis.fmt import fmt_reached
from analysis.load import Results, ResultsError, load_results, runs_in
from analysis.publish import md_table
from sweeps.engine import rundir

__all__ = [
    "History",
    "HistoryRun",
    "history",
    "html_page",
    "machine_of",
    "markdown",
    "previous_run",
    "run_dirs",
]

#: How a change point is marked in a configuration's cell.
MARKS = {FASTER: "▲ faster", SLOWER: "▼ slower"}


def machine_of(res: Results) -> str:
    """The machine a run ran on, as the history groups runs: ``"AMD EPYC, 2 CPUs, 1 node(s)"``
    (``environment.json``'s ``cpu_model``, ``cpu_count`` and node count; ``?`` where absent)."""
    env = res.environment or {}
    nodes = len(env.get("nodes") or []) or "?"
    return f"{env.get('cpu_model') or '?'}, {env.get('cpu_count') or '?'} CPUs, {nodes} node(s)"


def _started(path: Path, res: Results | None = None) -> tuple[str, str]:
    """When a run started, as a sort key: ``(started_at or the run id, the run id)``."""
    env = (res.environment if res is not None else None) or {}
    return (str(env.get("started_at") or path.name), path.name)


def run_dirs(root: str | Path) -> list[Path]:
    """The run folders of one sweep's results folder (those with a ``trials.parquet``), by
    run id. ``root`` may also be one run's folder: then its sweep's.

    Raises:
        ResultsError: ``root`` is no folder, or holds no run.
    """
    root = Path(root)
    if (root / rundir.TRIALS).is_file():
        root = root.parent
    if not root.is_dir():
        raise ResultsError(f"{root}: no such results folder (give results/<sweep>/)")
    runs = runs_in(root)
    if not runs:
        raise ResultsError(f"{root}: no run in it (no <run_id>/trials.parquet)")
    return runs


@dataclass
class HistoryRun:
    """One run of the history: ``judged`` (:class:`analysis.compare.Judged`), its
    ``machine`` (:func:`machine_of`), ``started`` (ISO time, or the run id) and the
    comparison with the previous run on its machine (``against``; None for a machine's first
    run)."""

    judged: Judged
    machine: str
    started: str
    against: Comparison | None = None

    @property
    def run_id(self) -> str:
        return self.judged.res.path.name

    @property
    def revision(self) -> str:
        """The run's git revision, shortened to 12 characters (``?`` when not recorded)."""
        return str((self.judged.res.environment or {}).get("git_revision") or "?")[:12]


@dataclass
class History:
    """Every comparable run of one sweep (:func:`history`).

    Attributes:
        root: the sweep's results folder.
        runs: :class:`HistoryRun`, oldest first.
        cells: one row per configuration and run: ``config_id``, ``name``, ``run_id``,
            ``ttt_s`` (seconds; NaN: not reached), ``reached`` (``3/3``), ``env_steps_per_s``,
            ``change`` (``"faster"``, ``"slower"`` or ``""``) and ``speedup`` (against the
            previous run on its machine; NaN for a machine's first run or a configuration
            that run lacks).
        left_out: ``"<run_id>: why"`` for each run not in ``runs``.
    """

    root: Path
    runs: list[HistoryRun]
    cells: pd.DataFrame
    left_out: list[str] = field(default_factory=list)

    @property
    def newest_regression(self) -> bool:
        """Whether the newest run is a regression against the previous run on its machine."""
        last = self.runs[-1].against if self.runs else None
        return bool(last is not None and last.regression)


def history(
    root: str | Path, *, factor: float = FACTOR, alpha: float = ALPHA, seed: int = 0
) -> History:
    """Read every run of one sweep and compare each with the previous run on its machine.

    Args:
        root: ``results/<sweep>/`` (or one of its runs: its sweep's folder is read).
        factor, alpha: as :func:`analysis.compare.compare`'s.
        seed: seed of the comparisons' bootstrap resamples.

    Returns:
        :class:`History`.

    Raises:
        ResultsError: no readable run in ``root``.
    """
    paths = run_dirs(root)
    loaded: list[tuple[Path, Results]] = []
    left_out: list[str] = []
    for path in paths:
        try:
            loaded.append((path, load_results(path)))
        except ResultsError as e:
            left_out.append(f"{path.name}: unreadable ({e})")
    if not loaded:
        raise ResultsError(f"{Path(root)}: no readable run ({'; '.join(left_out)})")
    loaded.sort(key=lambda pr: _started(pr[0], pr[1]))
    newest = loaded[-1][1]
    comparable = []
    for path, res in loaded:
        try:
            check_comparable(newest, res)
        except CompareError as e:
            left_out.append(f"{path.name}: not comparable with the newest run ({e})")
            continue
        comparable.append(res)

    runs: list[HistoryRun] = []
    last_on: dict[str, HistoryRun] = {}
    rows = []
    for res in comparable:
        try:
            judged = Judged.of(res)
        except ValueError as e:  # no usable target: nothing to judge
            left_out.append(f"{res.path.name}: cannot be judged ({e})")
            continue
        machine = machine_of(res)
        prev = last_on.get(machine)
        against = None
        if prev is not None:
            try:
                against = compare(prev.judged, judged, factor=factor, alpha=alpha, seed=seed)
            except CompareError:  # no configuration in common: a line of its own
                against = None
        run = HistoryRun(judged, machine, _started(res.path, res)[0], against)
        runs.append(run)
        last_on[machine] = run
        names = config_names(prev.judged, judged) if prev is not None else config_names(judged)
        change = {}
        if against is not None:
            change = {
                str(r["config_id"]): (r["verdict"], r["speedup"])
                for _, r in against.rows.iterrows()
            }
        for _, c in judged.summary.iterrows():
            cid = str(c["config_id"])
            verdict, speedup = change.get(cid, ("", math.nan))
            rows.append(
                {
                    "config_id": cid,
                    "name": names[cid],
                    "run_id": run.run_id,
                    "ttt_s": float(c["ttt_s"]),
                    "reached": fmt_reached(c),
                    "env_steps_per_s": float(c.get("env_steps_per_s", math.nan)),
                    "change": verdict if verdict in MARKS else "",
                    "speedup": float(speedup),
                }
            )
    cells = pd.DataFrame(
        rows,
        columns=[
            "config_id",
            "name",
            "run_id",
            "ttt_s",
            "reached",
            "env_steps_per_s",
            "change",
            "speedup",
        ],
    )
    return History(Path(paths[0]).parent, runs, cells, left_out)


def previous_run(run: Results) -> Results | None:
    """The run of the same sweep (a sibling folder) that started last before ``run`` on the
    same machine and is judged the same way (:func:`analysis.compare.check_comparable`), or
    None. What the report's section "Against the previous run" compares with."""
    here = _started(run.path, run)
    machine = machine_of(run)
    best: tuple[tuple[str, str], Results] | None = None
    try:
        siblings = run_dirs(run.path.parent)
    except ResultsError:
        return None
    for path in siblings:
        if path.resolve() == run.path.resolve():
            continue
        try:
            res = load_results(path)
            check_comparable(res, run)
        except (ResultsError, CompareError):
            continue
        started = _started(path, res)
        if started < here and machine_of(res) == machine and (best is None or started > best[0]):
            best = (started, res)
    return None if best is None else best[1]


def _ttt_cell(r: pd.Series) -> str:
    ttt = f"{r['ttt_s']:.1f} s" if math.isfinite(r["ttt_s"]) else "not reached"
    mark = f" {MARKS[r['change']]} {r['speedup']:.2f}x" if r["change"] else ""
    return f"{ttt} ({r['reached']}){mark}"


def _rate_cell(r: pd.Series) -> str:
    return f"{r['env_steps_per_s']:,.0f}" if math.isfinite(r["env_steps_per_s"]) else "-"


def tables(h: History) -> list[tuple[str, list[str], list[list[str]]]]:
    """The history's tables as ``(title, headers, rows)``: the runs; TTT per configuration
    and run; env steps/s per configuration and run."""
    run_rows = []
    for run in h.runs:
        c = run.against
        vs = (
            f"{pooled_verdict(c)}: {c.speedup:.2f}x, pooled p = {c.p_pooled:.2g} (against "
            f"{c.base.res.path.name})"
            if c is not None
            else "first run on this machine"
        )
        run_rows.append([run.run_id, run.started, run.revision, run.machine, vs])
    out = [
        (
            "Runs",
            ["run", "started", "git revision", "machine", "against the previous run on it"],
            run_rows,
        )
    ]
    ids = [r.run_id for r in h.runs]
    order = list(dict.fromkeys(h.cells["config_id"]))
    names = h.cells.drop_duplicates("config_id", keep="last").set_index("config_id")["name"]
    for title, cell in (
        ("Time-to-target (seeds reached; ▲/▼ a change point against the previous run)", _ttt_cell),
        ("Env steps/s (median of the judged trials)", _rate_cell),
    ):
        body = []
        for cid in order:
            got = h.cells[h.cells["config_id"] == cid].set_index("run_id")
            body.append([names[cid], *(cell(got.loc[i]) if i in got.index else "" for i in ids)])
        out.append((title, ["configuration", *ids], body))
    return out


def headline(h: History) -> str:
    """One sentence: how many runs and machines the history holds, the runs that changed
    (their pooled verdict against the previous run on their machine) and the configuration
    change points."""
    machines = len({r.machine for r in h.runs})
    changed = [
        f"{r.run_id} {r.against.verdict}"
        for r in h.runs
        if r.against is not None and r.against.verdict in MARKS
    ]
    points = int((h.cells["change"] != "").sum()) if len(h.cells) else 0
    return (
        f"{len(h.runs)} run(s) of {h.root.name} on {machines} machine(s); "
        + (f"changed: {', '.join(changed)}" if changed else "no run changed")
        + f"; {points} configuration change point(s) (faster or slower than in the previous "
        f"run on its machine beyond {FACTOR:g}x at p < {ALPHA:g}, as python -m "
        "analysis.compare judges)"
        + (f"; {len(h.left_out)} run(s) left out" if h.left_out else "")
        + "."
    )


def markdown(h: History) -> str:
    """The history as Markdown: headline, the runs, TTT and env steps/s per configuration."""
    parts = [f"# History of {h.root.name}", "", headline(h)]
    for title, headers, rows in tables(h):
        parts += ["", f"## {title}", "", md_table(headers, rows)]
    if h.left_out:
        parts += ["", "Left out:", "", *[f"- {w}" for w in h.left_out]]
    return "\n".join(parts) + "\n"


def _figure(h: History) -> str:
    """TTT per configuration across the runs (plotly), change points marked."""
    import plotly.graph_objects as go

    fig = go.Figure()
    ids = [r.run_id for r in h.runs]
    for cid, g in h.cells.groupby("config_id", sort=False):
        g = g.set_index("run_id").reindex(ids)
        symbols = [
            "triangle-up" if c == FASTER else "triangle-down" if c == SLOWER else "circle"
            for c in g["change"].fillna("")
        ]
        fig.add_trace(
            go.Scatter(
                x=ids,
                y=g["ttt_s"].to_numpy(float),
                mode="lines+markers",
                name=str(g["name"].dropna().iloc[-1]) if g["name"].notna().any() else cid,
                marker={"symbol": symbols, "size": 9},
            )
        )
    fig.update_layout(
        title="Time-to-target per configuration across runs (▲ faster, ▼ slower)",
        xaxis_title="run",
        yaxis_title="time-to-target (s)",
        template="plotly_white",
        height=460,
    )
    return fig.to_html(full_html=False, include_plotlyjs=True)


def html_page(h: History) -> str:
    """The history as one HTML page in the report's style, with a TTT figure."""
    from markupsafe import Markup

    from analysis.templates import render

    return render(
        "history.html.j2",
        title=f"rl-scaling history: {h.root.name}",
        subtitle=headline(h),
        command="python -m analysis.history",
        note="how runs are grouped and compared: the module's docstring.",
        figure=Markup(_figure(h)),
        tables=tables(h),
        left_out=h.left_out,
    )


def main(argv: list[str] | None = None) -> int:
    """CLI: print the history; exit 0, 5 (the newest run a regression) or 2 (no run)."""
    p = argparse.ArgumentParser(
        prog="python -m analysis.history", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("root", help="a sweep's results folder: results/<sweep>/")
    judging_arguments(p, "the history")
    args = p.parse_args(argv)
    try:
        check_judging(args)
        h = history(args.root, factor=args.factor, alpha=args.alpha)
    except (CompareError, ResultsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    print(headline(h))
    for title, headers, rows in tables(h):
        print(f"\n{title}\n{md_table(headers, rows)}")
    for w in h.left_out:
        print(f"left out: {w}")
    write_pages(args, h, markdown, html_page)
    return EXIT_REGRESSION if h.newest_regression else EXIT_OK


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m analysis.history", main))

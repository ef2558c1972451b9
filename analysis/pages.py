"""Numbers in a study page's prose that come from the run they cite.

A study page (``docs/*.md``) holds hand-written explanation and, where it quotes a run's
numbers, *generated regions*::

    <!-- generated: headline from data/cabs_scaling/20261126-013000 -->
    ...written by this module...
    <!-- end generated -->

The run path is relative to the page's folder. ``python -m analysis.pages docs/cabs_scaling.md``
rewrites every region from the run it names (:func:`fill_page`); ``--check`` only says which
regions differ (:func:`stale_regions`, what ``tests/test_docs_numbers.py`` runs for every page),
so a number on a page cannot drift from its data unnoticed.

Regions (:data:`REGIONS`):

- ``answer``: the verdict against the single-process reference
  (:func:`analysis.study.reference_verdict`) and, for a two-stage run, which stage the numbers
  come from (:attr:`analysis.study.Study.stage_note`);
- ``headline``: one row per configuration: seeds that reached the target, median TTT with its
  95 % interval, the olympic mean (MLPerf Training's rule), the TTT resolution, the absolute
  speedup against the reference and the speedup against the baseline, each with its interval
  (the same numbers and formatting as ``analysis.publish``'s tables);
- ``run``: what ran: trials, seeds of each stage, wall-clock, git revision;
- ``components``: per configuration, the parts of its TTT (start-up, steady sampling rate, env
  steps to the target), learner updates/s, peak memory and the evaluation share of wall-clock;
- ``plan_check``: the capacity plan's models checked on held-out env runner counts, their
  residuals and leave-one-N-out errors on the fitted counts, and the model chosen by those;
- ``break_even``: per configuration, the env cost per step above which it beats the
  reference, and its predicted TTT at the run's step cost and twice it;
- ``break_even_check`` (``from data/<sweep>/RUN+RUN2+RUN3``): the same study's runs at other
  env costs, each configuration's TTT predicted from RUN's parts against what was measured,
  and the verdict in plain words;
- ``cpu_break_even``: the CPU-bound break-even on the run's own machine, from the transfer
  roofline (:func:`analysis.transfer.break_even_on`): per configuration, never or from which
  env CPU cost per step, and the absolute speedup it tends to;
- ``transfer_check`` (``from data/<sweep>/RUN+../<other sweep>/RUN2``): RUN's parts carried to
  the machine RUN2 ran on (its recorded usable cores, the same per-core speed, RUN2's env
  CPU cost per step) by
  :func:`analysis.transfer.transfer`, against what RUN2 measured, in plain words after.

Regions that cite a benchmark's saved JSON instead of a run (:data:`BENCHMARK_REGIONS`,
``from data/<folder>/<file>.json``):

- ``benchmark``: any result in the benchmarks' one format (:mod:`analysis.benchmarks`,
  ``from ../benchmarks/results/<file>.json``): its samples, median [range] over the
  repetitions, and where and by which command it was measured;
- ``sampling_layout``: ``benchmarks/bench_sampling_layout.py``'s layouts: start-up to the
  first env step, env steps/s against the env's own bound, CPU busy, peak memory, and in plain
  words the fastest layout and the leanest one within 10 % of it;
- ``gorila_learners``: ``benchmarks/bench_gorila_learners.py``'s learner counts (passes
  merged with its ``--merge``): applied updates/s, speedup and parallel efficiency against
  one learner, staleness, dropped gradients, the server's busy share, bytes per update.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.benchmarks import region as benchmark_region
from analysis.fmt import (
    config_cells,
    config_name,
    fmt_error,
    fmt_ttt,
    fmt_value,
    varying_params,
)
from analysis.load import load_results
from analysis.publish import md_table
from analysis.stats import finite_median
from analysis.study import Study, analyse, reference_verdict

__all__ = [
    "REGIONS",
    "MULTI_RUN_REGIONS",
    "BENCHMARK_REGIONS",
    "cached_study",
    "fill_page",
    "regions_of",
    "render",
    "stale_regions",
    "main",
]

_REGION = re.compile(
    r"<!-- generated: (?P<name>[a-z_]+) from (?P<run>\S+) -->\n(?P<body>.*?)"
    r"<!-- end generated -->",
    re.S,
)


def _answer(data: Study) -> str:
    verdict = reference_verdict(data.summary, data.speed) or (
        "This run has no single-process reference: no absolute speedup is stated."
    )
    return verdict + (f" {data.stage_note}" if data.stage_note else "")


def _headline(data: Study) -> str:
    s = data.summary
    varying = varying_params(s[~s["is_reference"]], with_batch=True)
    cells = config_cells(data)
    s = s.assign(_ref=~s["is_reference"], _t=s["ttt_s"].astype(float).fillna(np.inf))
    s = s.sort_values(["_ref", "_t", "algorithm", "num_env_runners"], kind="stable")
    headers = [
        "configuration",
        "reached",
        "median TTT [95% CI]",
        "olympic mean",
        "TTT resolution",
        "absolute speedup [95% CI]",
        "speedup [95% CI]",
    ]
    rows = []
    for _, c in s.iterrows():
        params = ", ".join(
            f"{col.removeprefix('param_')}={fmt_value(c[col])}"
            for col in varying
            if not c["is_reference"]
        )
        name = config_name(
            c["algorithm"],
            c["num_env_runners"],
            f", {params}" if params else "",
            baseline=c["is_baseline"],
            reference=c["is_reference"],
        )
        rows.append([name, *cells.loc[c["config_id"], _HEADLINE_CELLS]])
    return md_table(headers, rows, right=(1, 3, 4))


#: The cells of :func:`analysis.fmt.config_cells` in the headline table, after the name.
_HEADLINE_CELLS = [
    "reached",
    "TTT",
    "olympic mean",
    "TTT resolution",
    "absolute speedup",
    "speedup",
]


def _run(data: Study) -> str:
    env, spec = data.res.environment, data.res.spec
    seeds = spec.get("seeds") or {}
    stages = ", ".join(f"{stage} seeds {v[0]}-{v[-1]}" for stage, v in seeds.items() if v)
    trials = data.res.trials
    return (
        f"Run `{data.res.name}/{data.res.path.name}`: {len(trials)} trials"
        + (f" ({stages})" if stages else "")
        + f", git `{str(env.get('git_revision', '?'))[:12]}`, "
        f"from {env.get('started_at', '?')} to {env.get('finished_at', '?')}."
    )


def _median(values: pd.Series, spec: str) -> str:
    """The median of the finite ``values`` formatted with ``spec``; ``n/a`` when none is (a
    trial that reached the target at its first iteration has no steady rate)."""
    m = finite_median(values)
    return format(m, spec) if np.isfinite(m) else "n/a"


def _components(data: Study) -> str:
    """Per (algorithm, N), medians over seeds of the parts of TTT the pipeline model uses
    (:func:`analysis.parts.trial_components`), the learner's updates/s, the trial's peak
    memory, the share of its wall-clock spent in the evaluation protocol and the
    configuration's TTT."""
    from analysis.parts import trial_components

    tm = data.tm[data.tm["status"] != "error"]
    parts = trial_components(tm, data.res.progress).set_index("trial_id")
    trials = data.res.trials.set_index("trial_id")
    t = tm.set_index("trial_id").join(parts[["startup_s", "rate", "steps"]])
    t["updates_per_s"] = (trials["learner_updates"] / trials["elapsed_s"]).reindex(t.index)
    summary = data.configs
    headers = [
        "configuration",
        "start-up (s)",
        "steady env steps/s",
        "env steps to target",
        "learner updates/s",
        "peak RSS (MiB)",
        "evaluation share",
        "TTT",
    ]
    rows = []
    t = t.assign(_ref=t["is_reference"]).sort_values(["_ref", "algorithm", "num_env_runners"])
    # configurations of one algorithm and env runner count are told apart by the recorded
    # parameters in which they differ (e.g. GORILA's num_learners)
    labels = {
        cid: [p for p in str(summary.loc[cid].get("config_label") or "").split(", ") if p]
        for cid in t["config_id"].unique()
    }
    for cid, g in t.groupby("config_id", sort=False):
        c = summary.loc[cid]
        twins = [
            labels[o]
            for o in labels
            if o != cid
            and not c["is_reference"]
            and not summary.loc[o, "is_reference"]
            and summary.loc[o, "algorithm"] == c["algorithm"]
            and summary.loc[o, "num_env_runners"] == c["num_env_runners"]
        ]
        own = [p for p in labels[cid] if twins and any(p not in tw for tw in twins)]
        reached = g[g["reached"]]
        steps = (
            f"{np.median(reached['steps']):,.0f}"
            if len(reached)
            else f"> {np.median(g['steps']):,.0f}"
        ) + (f" ({len(reached)}/{len(g)})" if len(reached) < len(g) else "")
        rows.append(
            [
                config_name(
                    c["algorithm"],
                    c["num_env_runners"],
                    "".join(f", {p}" for p in own),
                    baseline=c["is_baseline"],
                    reference=c["is_reference"],
                ),
                _median(g["startup_s"], ".1f"),
                _median(g["rate"], ",.0f"),
                steps,
                _median(g["updates_per_s"], ".1f"),
                _median(g["peak_rss_mib"], ",.0f"),
                format(c["eval_share"], ".1%") if np.isfinite(c["eval_share"]) else "n/a",
                fmt_ttt(c),
            ]
        )
    return md_table(headers, rows, right=(1, 2, 3, 4, 5, 6))


def _plan_check(data: Study) -> str:
    """The plan check on the held-out env runner counts (:mod:`analysis.plan_check`): every
    model's prediction with its interval, the measurement and the error, then its notes."""
    from analysis.plan_check import (
        FIT_CAPTION,
        FIT_HEADERS,
        TABLE_HEADERS,
        fit_table_rows,
        table_rows,
    )

    if data.check is None:
        return "No plan check: no algorithm has env runner counts to hold out."
    rows = [md_table(TABLE_HEADERS, table_rows(data.check))]
    if len(data.check.fit):
        rows += ["", FIT_CAPTION, "", md_table(FIT_HEADERS, fit_table_rows(data.check))]
    return "\n".join(rows + [""] + [f"- {n}" for n in data.check.notes])


def _break_even(data: Study) -> str:
    """Per configuration, its measured parts, the env cost above which it beats the
    reference (:mod:`analysis.break_even`) and its predicted TTT at the run's own step cost
    and at twice it."""
    from analysis.break_even import run_table

    table = run_table(data)
    if table is None:
        return "No break-even: the run has no single-process reference with measured parts."
    head, cells, words = table
    return md_table(head, cells, right=tuple(range(1, len(head)))) + "\n\n" + words


def _break_even_check(data: Study, held: list[Study]) -> str:
    """The held-out env costs of a break-even study: each configuration's TTT predicted from
    ``data``'s parts against what ``held`` measured (:func:`analysis.break_even.held_out_rows`),
    then the verdict in plain words."""
    from analysis.break_even import held_out_check

    c = held_out_check(data, held)
    if not c["rows"]:
        return c["verdict"]
    table = md_table(c["headers"], c["rows"], right=(0, 2, 3, 5, 6))
    return "\n\n".join(filter(None, (table, c["verdict"], c["note"])))


def _transfer_check(data: Study, measured: list[Study]) -> str:
    """``data`` predicted on the machine of ``measured[0]`` (its usable cores; the same core
    speed; its env CPU cost per step) and compared with it
    (:func:`analysis.transfer.check_rows`)."""
    from analysis.transfer import (
        CHECK_HEADERS,
        Machine,
        check_rows,
        check_table_rows,
        check_words,
        env_costs_ms,
        source_cores,
        transfer,
    )

    target = measured[0]
    machine = Machine(source_cores(target))
    rows = check_rows(transfer(data, machine, cpu_cost_ms=env_costs_ms(target)[0]), target)
    return (
        md_table(CHECK_HEADERS, check_table_rows(rows), right=(1, 2, 3, 5, 6, 7, 9))
        + "\n\n"
        + check_words(rows, source_cores(data), machine)
    )


def _cpu_break_even(data: Study) -> str:
    """The CPU-bound break-even on the run's own machine (its usable cores) from its parts
    (:func:`analysis.transfer.break_even_on`): per configuration, then in plain words."""
    from analysis.transfer import Machine, break_even_on, break_even_on_words, source_cores

    machine = Machine(source_cores(data))
    rows = break_even_on(data, machine)
    if rows.empty:
        return break_even_on_words(rows, machine)
    cells = [
        [
            config_name(r["algorithm"], r["num_env_runners"]),
            "never" if r["break_even_ms"] == np.inf else f"{r['break_even_ms']:.0f}",
            f"{r['steps_ratio']:.1f}x",
            f"{r['speedup_bound']:.2f}x",
        ]
        for _, r in rows.iterrows()
    ]
    head = [
        "configuration",
        "CPU-bound break-even (ms/step)",
        "env steps against the reference's",
        "absolute speedup as the cost grows",
    ]
    return md_table(head, cells, right=(1, 2, 3)) + "\n\n" + break_even_on_words(rows, machine)


def _batch_size(data: Study) -> str:
    """The batch-size check (:func:`analysis.batch_size.batch_size_check`): the pilot's
    measured noise scale, then every batch size's prediction against its measurement."""
    from analysis.batch_size import check_lines

    if data.batch is None or data.batch.rows.empty:
        notes = "; ".join(data.batch.notes) if data.batch is not None else ""
        return "No batch-size check" + (f": {notes}" if notes else ".")
    return "\n".join(f"- {line}" for line in check_lines(data.batch))


#: Region name -> its renderer (a :class:`Study` in, Markdown out).
REGIONS: dict[str, Callable[[Study], str]] = {
    "answer": _answer,
    "headline": _headline,
    "run": _run,
    "components": _components,
    "plan_check": _plan_check,
    "break_even": _break_even,
    "cpu_break_even": _cpu_break_even,
    "batch_size": _batch_size,
}


#: Regions that read held-out runs beside their own: ``from data/<sweep>/RUN+RUN2+RUN3``
#: (RUN2, RUN3: sibling runs of RUN, in the same sweep folder).
def _learner_check(rows: pd.DataFrame, none: str) -> str:
    """A learner check's rows (``analysis.transfer``) as a table and a sentence; ``none`` when
    there are none."""
    from analysis.transfer import learner_check_table, learner_check_words

    if rows.empty:
        return f"No learner check: {none}.\n"
    return md_table(*learner_check_table(rows), right=(2, 3, 4, 5)) + (
        "\n\n" + learner_check_words(rows) + "\n"
    )


def _learner_scaling_check(data: Study, held_out: list[Study]) -> str:
    """GORILA's larger learner counts predicted from the run's one-learner trials
    (:func:`analysis.transfer.learner_scaling_check`) against their own runs' trials."""
    from analysis.transfer import learner_scaling_check

    return _learner_check(
        learner_scaling_check(data, held_out),
        "the run has no one-learner GORILA trial with the server's busy share recorded",
    )


def _sync_learner_check(data: Study, held_out: list[Study]) -> str:
    """RLlib's synchronous learners: each learner count predicted from the run's two smallest
    (:func:`analysis.transfer.sync_learner_check`) against its own trials."""
    from analysis.transfer import sync_learner_check

    return _learner_check(
        sync_learner_check(data, held_out),
        "the run has fewer than two learner counts of synchronous learners, or no third to check",
    )


MULTI_RUN_REGIONS: dict[str, Callable[[Study, list[Study]], str]] = {
    "break_even_check": _break_even_check,
    "transfer_check": _transfer_check,
    "learner_scaling_check": _learner_scaling_check,
    "sync_learner_check": _sync_learner_check,
}


def _sampling_layout(bench: dict) -> str:
    rows, done = [], []
    for layout, r in bench["results"].items():
        algo, shape, mode = layout.split(":")
        runners, envs = (int(x) for x in shape.split("x"))
        if "error" in r:
            rows.append(
                [algo, str(runners), str(envs), mode, "-", "-", "-", "failed", "-", "-", "-"]
            )
            continue
        done.append((layout, r))
        processes = runners + r.get("env_processes", 0)
        ideal = r.get("env_steps_per_s_ideal")
        rows.append(
            [
                algo,
                str(runners),
                str(envs),
                mode,
                str(r["concurrent_envs"]),
                str(processes),
                f"{r['first_step_s']:.1f}",
                f"{r['env_steps_per_s']:,.0f}",
                f"{r['env_steps_per_s'] / ideal:.0%}" if ideal else "-",
                f"{r['cpu_busy']:.0%}",
                f"{r['peak_memory_mib'] / 1024:.1f}",
            ]
        )
    table = md_table(
        [
            "algorithm",
            "env runners",
            "envs per env runner",
            "vectorize mode",
            "concurrent envs",
            "sampling processes",
            "first env step (s)",
            "env steps/s",
            "of the env's bound",
            "CPU busy",
            "peak memory (GiB)",
        ],
        rows,
        right=(1, 2, *range(4, 11)),
    )
    if not done:
        return table
    best_layout, best = max(done, key=lambda d: d[1]["env_steps_per_s"])
    lean_layout, lean = min(
        ((lay, r) for lay, r in done if r["env_steps_per_s"] >= 0.9 * best["env_steps_per_s"]),
        key=lambda d: d[1]["peak_memory_mib"],
    )
    words = (
        f"\nIn plain words: the fastest layout is {best_layout} at "
        f"{best['env_steps_per_s']:,.0f} env steps/s, its first env step "
        f"{best['first_step_s']:.1f} s after the start, {best['peak_memory_mib'] / 1024:.1f} "
        "GiB at peak"
    )
    if lean_layout != best_layout:
        words += (
            f"; {lean_layout} comes within 10 % of it "
            f"({lean['env_steps_per_s']:,.0f} env steps/s) on "
            f"{lean['peak_memory_mib'] / 1024:.1f} GiB"
        )
    most_layout, most = max(
        done, key=lambda d: (int(d[0].split(":")[1].split("x")[0]), -d[1]["env_steps_per_s"])
    )
    if most_layout not in (best_layout, lean_layout):
        words += (
            f". The most env runners, {most_layout}, take "
            f"{most['first_step_s']:.1f} s to their first env step and "
            f"{most['peak_memory_mib'] / 1024:.1f} GiB for "
            f"{most['env_steps_per_s']:,.0f} env steps/s"
        )
    by_runners: dict[tuple[str, int], list[tuple[int, dict]]] = {}
    for layout, r in done:
        algo, shape, mode = layout.split(":")
        runners, envs = (int(x) for x in shape.split("x"))
        if mode == "sync" and r.get("env_steps_per_s_ideal"):
            by_runners.setdefault((algo, runners), []).append((envs, r))
    for (_algo, runners), cells in sorted(by_runners.items()):
        if len(cells) > 1:
            cells.sort(key=lambda c: c[0])
            words += (
                f". With {runners} sync env runners, "
                + ", ".join(
                    f"{e} env(s) each reach {r['env_steps_per_s'] / r['env_steps_per_s_ideal']:.0%}"
                    for e, r in cells
                )
                + " of the env's bound"
            )
    return table + "\n" + words + ".\n"


def _gorila_learners(bench: dict) -> str:
    """``benchmarks/bench_gorila_learners.py``'s points (merged passes): per algorithm and
    learner count, applied learner updates/s (median [range] over the passes), speedup and
    parallel efficiency against one Gorila learner (ratio of medians; efficiency = speedup /
    M), staleness, dropped gradients, server busy share, bytes per update; and, where a
    one-learner pass recorded the server's busy share, each larger count's updates/s predicted
    from one learner's parts (:func:`analysis.transfer.learner_scaling`) with its error."""
    from analysis.transfer import learner_scaling

    def med(values: list[float]) -> float:
        return float(np.median(values))

    rows, by_m = [], {}
    for key, runs in bench["points"].items():
        algo, m = key.split("/")
        rate = [r["learner_updates_per_s"] for r in runs]
        g = [r["gorila"] for r in runs if "gorila" in r]
        busy = [r["server_busy"] for r in runs if "server_busy" in r]
        if algo == "GORILA":
            by_m[int(m)] = (med(rate), busy)
        rows.append((algo, int(m), rate, g, busy, [r["env_steps_per_s"] for r in runs]))
    one, one_busy = by_m.get(1, (math.nan, []))
    share = med(one_busy) if one_busy else math.nan

    def predicted(algo: str, m: int) -> float:
        if algo != "GORILA" or m == 1 or not math.isfinite(share):
            return math.nan
        return learner_scaling(m, one, share)

    table_rows = []
    for algo, m, rate, g, busy, steps in rows:
        speedup = med(rate) / one if one == one else math.nan
        pred = predicted(algo, m)
        table_rows.append(
            [
                algo,
                str(m),
                f"{med(rate):.0f} [{min(rate):.0f}-{max(rate):.0f}]",
                str(len(rate)),
                f"{speedup:.2f}x",
                f"{speedup / m:.0%}" if algo == "GORILA" else "-",
                f"{pred:.0f} ({fmt_error(pred / med(rate) - 1)})" if math.isfinite(pred) else "-",
                f"{med([x['staleness_mean'] for x in g]):.1f}" if g else "-",
                f"{sum(x['dropped_gradients'] for x in g)}" if g else "-",
                f"{med(busy):.0%}" if busy else "-",
                f"{med([x['bytes_per_update'] for x in g]) / 1024:.0f}" if g else "-",
                f"{med(steps):,.0f}",
            ]
        )
    table = md_table(
        [
            "algorithm",
            "learners",
            "learner updates/s",
            "passes",
            "against 1 Gorila learner",
            "parallel efficiency",
            "predicted from 1 learner (error)",
            "staleness (versions)",
            "dropped",
            "server busy",
            "KiB per update",
            "env steps/s",
        ],
        table_rows,
        right=tuple(range(1, 12)),
    )
    if len(by_m) < 2:
        return table
    top = max(by_m)
    rate_top, busy_top = by_m[top]
    two = by_m.get(2, (math.nan, []))[0]
    words = (
        f"\nIn plain words: a second learner lifts applied updates from {one:.0f} to "
        f"{two:.0f} per second ({two / one:.2f}x); {top} learners reach {rate_top:.0f} "
        f"({rate_top / one:.2f}x, {rate_top / one / top:.0%} parallel efficiency)"
    )
    if busy_top and one_busy:
        words += (
            f". The parameter server, one actor applying gradients one at a time, was busy "
            f"{share:.0%} of the time with one learner and {med(busy_top):.0%} "
            f"with {top}: every learner waits on it for its previous gradient and for "
            "its parameters, so past two learners the shared server, not learner compute, "
            "sets the pace"
        )
    if math.isfinite(share):
        errors = {m: predicted("GORILA", m) / r - 1 for m, (r, _) in sorted(by_m.items()) if m > 1}
        words += (
            f". From one learner's parts alone (its {one:.0f} updates/s and the server's "
            f"{share:.0%} busy share; Amdahl's law with the server's apply as the serial part, "
            f"`analysis.transfer.learner_scaling`), the prediction for "
            + ", ".join(f"{m} learners is off by {fmt_error(e)}" for m, e in errors.items())
            + f"; its bound, the server's {one / share:.0f} updates/s, lies above what was "
            "measured, because the server's time per update grows with the learners "
            f"({share / one * 1000:.1f} ms with one, {med(busy_top) / rate_top * 1000:.1f} ms "
            f"with {top} where recorded) and the learners' parameter pulls queue with their "
            "gradients"
            if busy_top
            else f"; its bound is the server's {one / share:.0f} updates/s"
        )
    return table + "\n" + words + ".\n"


#: Regions that cite a benchmark's saved JSON (``from data/<folder>/<file>.json``).
BENCHMARK_REGIONS: dict[str, Callable[[dict], str]] = {
    "benchmark": benchmark_region,
    "sampling_layout": _sampling_layout,
    "gorila_learners": _gorila_learners,
}


def cached_study(path: str | Path, studies: dict[Path, Study]) -> Study:
    """The analysis of the run in ``path`` (``analyse(load_results(path))``), from ``studies``
    (by resolved path) when it is there, else computed and added to it.

    Raises:
        ResultsError: the run cannot be read.
    """
    key = Path(path).resolve()
    if key not in studies:
        studies[key] = analyse(load_results(path))
    return studies[key]


def render(name: str, run_dir: str | Path, studies: dict[Path, Study] | None = None) -> str:
    """Region ``name`` of the run in ``run_dir``, as a page holds it (ending in a newline).
    For a region of :data:`MULTI_RUN_REGIONS`, ``run_dir`` is ``RUN+RUN2+...``: the run, then
    the names of its held-out sibling runs. ``studies``: runs already analysed, by resolved
    path (a page's regions share it, so each run is analysed once); filled as runs are read.

    Raises:
        KeyError: no such region; ResultsError: a run cannot be read.
    """
    studies = {} if studies is None else studies

    def study(path: str | Path) -> Study:
        return cached_study(path, studies)

    if name in BENCHMARK_REGIONS:
        import json

        return BENCHMARK_REGIONS[name](json.loads(Path(run_dir).read_text())).rstrip("\n") + "\n"

    if name in MULTI_RUN_REGIONS:
        first, *others = str(run_dir).split("+")
        siblings = [study(Path(first).parent / o) for o in others]
        return MULTI_RUN_REGIONS[name](study(first), siblings).rstrip("\n") + "\n"
    if name not in REGIONS:
        known = ", ".join([*REGIONS, *MULTI_RUN_REGIONS, *BENCHMARK_REGIONS])
        raise KeyError(f"no generated region {name!r} (known: {known})")
    return REGIONS[name](study(run_dir)).rstrip("\n") + "\n"


def regions_of(page: str | Path) -> list[tuple[str, str, str]]:
    """``(name, run path as written, body)`` of every generated region of ``page``."""
    text = Path(page).read_text()
    return [(m["name"], m["run"], m["body"]) for m in _REGION.finditer(text)]


def stale_regions(page: str | Path, studies: dict[Path, Study] | None = None) -> list[str]:
    """The regions of ``page`` whose text differs from a fresh render of the run each cites,
    as ``"name from run"``; empty when every number on it matches its data. ``studies``: runs
    already analysed, by resolved path, as :func:`render` takes it (pass one dict to check
    several pages that cite the same runs: each is analysed once)."""
    page = Path(page)
    cache: dict[tuple[str, str], str] = {}
    studies = {} if studies is None else studies
    stale = []
    for name, run, body in regions_of(page):
        key = (name, run)
        if key not in cache:
            cache[key] = render(name, page.parent / run, studies)
        if cache[key] != body:
            stale.append(f"{name} from {run}")
    return stale


def fill_page(page: str | Path, studies: dict[Path, Study] | None = None) -> int:
    """Rewrite every generated region of ``page`` from the run it cites; returns how many
    changed. The rest of the page is left as it is. ``studies``: as :func:`stale_regions`."""
    page = Path(page)
    text = page.read_text()
    changed = 0
    studies = {} if studies is None else studies

    def sub(m: re.Match) -> str:
        nonlocal changed
        body = render(m["name"], page.parent / m["run"], studies)
        changed += body != m["body"]
        return f"<!-- generated: {m['name']} from {m['run']} -->\n{body}<!-- end generated -->"

    new = _REGION.sub(sub, text)
    if new != text:
        page.write_text(new)
    return changed


def main(argv: list[str] | None = None) -> int:
    """``python -m analysis.pages PAGE... [--check]``: fill (or check) generated regions."""
    p = argparse.ArgumentParser(
        prog="python -m analysis.pages", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("pages", nargs="+", help="Markdown pages, e.g. docs/cabs_scaling.md")
    p.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when a region differs from its run",
    )
    args = p.parse_args(argv)
    bad = 0
    studies: dict[Path, Study] = {}  # pages that cite one run analyse it once
    for page in args.pages:
        if args.check:
            stale = stale_regions(page, studies)
            bad += len(stale)
            for s in stale:
                print(f"{page}: stale region {s}")
        else:
            print(f"{page}: {fill_page(page, studies)} region(s) rewritten")
    return 1 if bad else 0


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    sys.exit(guard("python -m analysis.pages", main))

"""One formatter per quantity, as plain text: the HTML report (which escapes it), the Markdown
tables of ``analysis.publish`` and the CLI of ``analysis.plan`` print the same numbers the same
way.

Seconds (:func:`fmt_s`), dollars (:func:`fmt_usd`), a number (:func:`fmt_num`), a parameter
value (:func:`fmt_value`), a count (:func:`fmt_count`), a 95 % interval (:func:`fmt_interval`),
a time-to-target cell (:func:`fmt_ttt`), a speedup or parallel-efficiency cell
(:func:`fmt_speedup`, :func:`fmt_efficiency`), and a configuration's name
(:func:`config_name`); :func:`config_cells` gives every configuration of a study all of its
cells, which the report's tables, the Markdown tables and the pages lay out
(:func:`lay_out`). Bounds from censored medians are rounded
outwards never: a lower bound down, an upper bound up, so a bound never claims more than the
data show.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from analysis.stats import MIN_SEEDS_FOR_CI, ceil_to, floor_to
from sweeps.engine.reference import REFERENCE_ALGORITHMS
from sweeps.engine.rundir.schema import (
    VOCAB_COLUMNS,
    as_float,  # one owner, re-exported for the renderers
)

__all__ = [
    "as_float",
    "config_cells",
    "config_name",
    "few_seeds",
    "fmt_ci",
    "fmt_count",
    "fmt_efficiency",
    "fmt_errors",
    "fmt_interval",
    "fmt_num",
    "fmt_reached",
    "fmt_s",
    "fmt_speedup",
    "fmt_ttt",
    "fmt_usd",
    "fmt_value",
    "interval_pieces",
    "lay_out",
    "varying_params",
]


def fmt_s(s: float) -> str:
    """Seconds: ``0.57 s`` (under 1 s: a reference's TTT, a resolution of a tenth of a second),
    ``12.3 s``, ``4.5 min`` (from 120 s), ``1.25 h`` (from 3600 s); ``unbounded`` for +inf,
    ``n/a`` for NaN."""
    if not math.isfinite(s):
        return "unbounded" if s > 0 else "n/a"
    if s >= 3600:
        return f"{s / 3600:.2f} h"
    if s >= 120:
        return f"{s / 60:.1f} min"
    if 0 < abs(s) < 1:
        return f"{s:.2f} s"
    return f"{s:.1f} s"


def fmt_usd(x: float) -> str:
    """Dollars: 4 decimals under $1, else 2; ``unbounded`` for +inf, ``n/a`` for NaN."""
    if not math.isfinite(x):
        return "unbounded" if x > 0 else "n/a"
    return f"${x:.4f}" if x < 1 else f"${x:.2f}"


def fmt_num(x: float | None, digits: int = 3) -> str:
    """A number to ``digits`` significant digits; ``-`` for None/NaN, ``unbounded`` for +inf."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "unbounded" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def fmt_r2(x: float | None) -> str:
    """A fit's R² as every table, legend and sentence spells it: three decimals (``0.998``,
    ``1.000``), a value that rounds to zero as ``0.000`` (an Amdahl line that fits nothing
    better than the mean has R² of about -1e-16, never shown as ``-0.000`` or
    ``-2.22e-16``), ``-`` when there is none (None, NaN)."""
    if x is None or not math.isfinite(x):
        return "-"
    return f"{round(float(x), 3) + 0.0:.3f}"


def fmt_error(x: float | None) -> str:
    """A prediction's relative error (predicted / measured - 1) as every table and sentence
    spells it: a signed whole percentage (``+12%``, ``-3%``), ``0%`` when it rounds to zero
    (never ``+0%`` or ``-0%``), ``n/a`` when unknown (None, NaN, infinite)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return "0%" if round(x * 100) == 0 else f"{x:+.0%}"


def fmt_value(x: Any) -> str:
    """A parameter value: integers without '.0', floats with 3 significant digits, NaN as
    ``default`` (the algorithm's default was used)."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return "default"
        return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.3g}"
    return str(x)


def fmt_count(x: float) -> str:
    """A count or rate (env steps, env steps/s): thousands separators from 100, else 3
    significant digits; ``n/a`` when not finite."""
    if not math.isfinite(x):
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def fmt_interval(
    lo: float, hi: float, fmt: Callable[[float], str], unbounded: str = "unbounded"
) -> str:
    """`` [lo, hi]`` (with its leading space) of a 95 % interval, the one spelling of an
    interval in every table, page and terminal line; ``""`` when both ends are NaN; a
    non-finite lower end reads ``n/a``, an infinite upper end ``unbounded`` (a break-even
    cost's: ``never``)."""
    lo, hi = as_float(lo), as_float(hi)
    if math.isnan(lo) and math.isnan(hi):
        return ""
    lo_s = fmt(lo) if math.isfinite(lo) else "n/a"
    hi_s = fmt(hi) if math.isfinite(hi) else unbounded
    return f" {_OPEN}{lo_s}{_SEP}{hi_s}{_CLOSE}"


_OPEN, _SEP, _CLOSE = "[", ", ", "]"
#: what :func:`fmt_ci` writes: a value (a number, with a unit of a few letters), its interval
#: as :func:`fmt_interval` spells it, then any words; or the interval alone
_VALUE_INTERVAL = re.compile(
    rf"(?:(\S+(?: [^\s{re.escape(_OPEN)}]{{1,3}})?) )?"
    rf"({re.escape(_OPEN)}[^{re.escape(_OPEN + _CLOSE)}]*{re.escape(_CLOSE)})(.*)",
    re.S,
)


def interval_pieces(text: str) -> tuple[list[str], str] | None:
    """The pieces a renderer may break a cell between, read back from the spelling of
    :func:`fmt_ci` / :func:`fmt_interval` (this module owns both the writing and the
    reading): ``"6.0 s [5.8 s, 7.4 s] (3 of 5)"`` gives ``(["6.0 s", "[5.8 s,", "7.4 s]"],
    " (3 of 5)")``, the value, the interval's two ends and the words after them; an interval
    alone (``"[5.8 s, 7.4 s]"``) gives its two ends; ``None`` when ``text`` holds no
    interval."""
    m = _VALUE_INTERVAL.fullmatch(text)
    if m is None:
        return None
    value, interval, tail = m.groups()
    low, sep, high = interval.partition(_SEP)
    ends = [low + sep.rstrip(), high] if sep else [interval]
    return ([value] if value is not None else []) + ends, tail


def fmt_ci(v: float, lo: float, hi: float, fmt: Callable[[float], str]) -> str:
    """A value with its 95 % interval, ``fmt(v) [lo, hi]``; ``-`` for NaN, ``unbounded`` for
    +inf (:func:`fmt_interval` for the brackets)."""
    v = as_float(v)
    if math.isnan(v):
        return "-"
    return (fmt(v) if math.isfinite(v) else "unbounded") + fmt_interval(
        as_float(lo), as_float(hi), fmt
    )


def few_seeds(n: int, base_n: int | None = None) -> str:
    """Why there is no CI: too few seeds (this configuration's, or the baseline's too)."""
    if base_n is None or base_n == n:
        return f" [CI n/a ({n} seed{'s' if n != 1 else ''})]"
    return f" [CI n/a ({n} seeds, baseline {base_n})]"


def config_name(
    algorithm: Any,
    num_env_runners: Any = None,
    detail: str = "",
    *,
    baseline: bool = False,
    reference: bool = False,
) -> str:
    """A configuration's name as every table, page and CLI of the analysis spells it:
    ``IMPALA, 16 env runner(s)``, then ``detail`` as given (``, lr=0.001`` or
    `` x 32 async envs``), marked ``(baseline)`` or ``(reference)``. An SB3 algorithm runs
    in one process with no env runners: ``SB3-DQN, one process (reference)``. Without
    ``num_env_runners``, the algorithm alone (``SB3-DQN (reference)``)."""
    name = str(algorithm)
    if num_env_runners is not None:
        one = name in REFERENCE_ALGORITHMS
        name += ", one process" if one else f", {int(num_env_runners)} env runner(s)"
    return (
        name
        + str(detail or "")
        + (" (baseline)" if baseline else "")
        + (" (reference)" if reference else "")
    )


def config_phrase(algorithm: Any, num_env_runners: Any, detail: str = "") -> str:
    """A configuration named inside a sentence, as every sentence of the analysis spells it:
    ``IMPALA with 16 env runners``, ``DQN with 1 env runner``, ``SB3-DQN in one process``
    (an SB3 algorithm has no env runners), then ``detail`` as given (`` x 32 async envs``).
    Table cells use :func:`config_name`."""
    alg, n = str(algorithm), int(num_env_runners)
    if alg in REFERENCE_ALGORITHMS:
        return f"{alg} in one process{detail or ''}"
    return f"{alg} with {n} env runner{'' if n == 1 else 's'}{detail or ''}"


def fmt_reached(c: pd.Series, of: str = "finished_seeds") -> str:
    """Seeds of a configuration that reached the target, out of those in its column ``of``:
    ``4/5``. ``c``: a row of :func:`analysis.stats.summarize_configs` (``of`` its
    ``finished_seeds``), or of a model's table with its own count (``n``, ``n_trials``)."""
    return f"{int(c['n_reached'])}/{int(c[of])}"


def fmt_errors(c: pd.Series) -> str:
    """A configuration's failed trials (a row of :func:`analysis.stats.summarize_configs`), the
    stalled ones apart: ``1 stalled, 2 other errors``, ``1 error``; empty when none failed."""
    stalled = int(c.get("n_stalled", 0) or 0)
    other = int(c["n_error"]) - stalled
    parts = [f"{stalled} stalled"] if stalled else []
    if other:
        parts.append(f"{other} {'other ' if stalled else ''}error{'s' if other != 1 else ''}")
    return ", ".join(parts)


def fmt_ttt(c: pd.Series) -> str:
    """A configuration's time-to-target (a row of :func:`analysis.stats.summarize_configs`):
    ``KM 12.3 s [10.1 s, 15.0 s]`` (KM: Kaplan-Meier median), ``> 60.0 s (median not
    reached)`` when half the seeds were censored, the CI or why there is none."""
    n = int(c["finished_seeds"])
    t = as_float(c["ttt_s"])
    if n == 0 or not c["estimator"]:
        return "n/a (every trial failed)"
    if math.isinf(t):
        cens = as_float(c["max_censor_s"])
        return f"> {fmt_s(cens)} (median not reached)" if math.isfinite(cens) else "not reached"
    km = "KM " if c["estimator"] == "KM median" else ""
    ci = (
        few_seeds(n)
        if n < MIN_SEEDS_FOR_CI
        else fmt_interval(as_float(c["ttt_low_s"]), as_float(c["ttt_high_s"]), fmt_s)
    )
    return f"{km}{fmt_s(t)}{ci}"


def fmt_speedup(
    r: pd.Series | None,
    n: int | None = None,
    base_n: int | None = None,
    key: str = "speedup",
    ratio: float = 1.0,
    unit: str = "×",
    why: bool = True,
) -> str:
    """A speedup cell (a row of :func:`analysis.stats.speedup_table`): ``key`` ``speedup``
    (vs the baseline), ``abs_speedup`` (vs the reference) or a parallel efficiency (then
    ``ratio`` = the resources ratio its bounds are divided by).

    Args:
        n, base_n: seeds of the configuration and of the baseline (or reference); when given
            and fewer than :data:`~analysis.stats.MIN_SEEDS_FOR_CI`, the cell says the CI is
            n/a instead of showing none.
        unit: appended to the value (``×``; ``""`` for efficiencies).
        why: say why a bound or n/a is shown (``(baseline median not reached)``).
    """
    if r is None:
        return "n/a (no baseline)"
    v = as_float(r[key])
    bound = "abs_speedup" if key == "abs_speedup" else "speedup"
    who = "reference" if key == "abs_speedup" else "baseline"
    lb, ub = as_float(r[f"{bound}_lower_bound"]), as_float(r[f"{bound}_upper_bound"])
    if math.isinf(v) and math.isfinite(lb):
        return f"> {floor_to(lb / ratio, 2):.2f}{unit}" + (
            f" ({who} median not reached)" if why else ""
        )
    if v == 0.0 and math.isfinite(ub):
        return f"< {ceil_to(ub / ratio, 2):.2f}{unit}" + (" (median not reached)" if why else "")
    if math.isnan(v):
        return "n/a (median not reached)" if why else "n/a"
    fmt = lambda z: f"{z:.2f}"  # noqa: E731
    if n is not None and base_n is not None and min(n, base_n) < MIN_SEEDS_FOR_CI:
        ci = few_seeds(n, base_n)
    else:
        ci = fmt_interval(as_float(r[f"{key}_low"]), as_float(r[f"{key}_high"]), fmt)
    return f"{fmt(v)}{unit}{ci}"


def fmt_efficiency(
    r: pd.Series | None, n: int | None, base_n: int | None, which: str, same_algorithm: bool = True
) -> str:
    """A parallel-efficiency cell, ``which`` = ``"runner"`` (per env runner) or ``"cpu"``
    (per CPU); n/a with the reason when it is not defined."""
    if r is None:
        return "n/a (no baseline)"
    if not same_algorithm:
        return "n/a (not the baseline's algorithm)"
    ratio = as_float(r[f"{which}_ratio"])
    if not math.isfinite(ratio) or ratio <= 0:
        return "n/a (baseline samples in the driver)" if which == "runner" else "n/a (no CPU count)"
    key = "efficiency_per_runner" if which == "runner" else "efficiency_per_cpu"
    return fmt_speedup(r, n, base_n, key=key, ratio=ratio, unit="", why=False)


def varying_params(summary: pd.DataFrame, with_batch: bool = False) -> list[str]:
    """Parameter columns (besides env runners, and batch unless ``with_batch``) that differ
    between the configurations of ``summary``."""
    cols = [c for c in ("train_batch_size",) if with_batch and c in summary.columns]
    rest = [c for c in VOCAB_COLUMNS if c not in ("num_env_runners", "train_batch_size")]
    rest.insert(1, "vectorize_mode")  # the layout beside its envs per env runner
    cols += [c for c in rest if c in summary.columns]
    cols += sorted(c for c in summary.columns if c.startswith("param_"))
    return [c for c in cols if summary[c].astype(str).nunique(dropna=False) > 1]


def config_cells(data: Any) -> pd.DataFrame:
    """Every configuration of ``data`` (a :class:`analysis.study.Study`; not imported here,
    which the study imports) as text cells, one column per quantity, each written
    one way for every table that shows it (the report's, the Markdown tables', the pages').

    Returns:
        A frame indexed by ``config_id`` (one row per configuration of ``data.summary``) with
        :func:`summary_cells`' columns and the comparisons: ``speedup``, ``absolute speedup``,
        ``efficiency per env runner``, ``efficiency per CPU`` (:func:`fmt_speedup`,
        :func:`fmt_efficiency`: with why a CI or a value is n/a), in :data:`CELL_COLUMNS`' order.
    """
    s = data.summary
    cells = summary_cells(s)
    base, base_n = data.baseline, data.baseline_seeds
    has_ref = bool(len(s)) and bool(s["is_reference"].any())
    ref_n = data.reference_seeds
    for _, c in s.iterrows():
        n = int(c["finished_seeds"])
        r = data.configs.loc[c["config_id"]]
        ref = bool(c["is_reference"])
        if base is None:
            speedup = "n/a (no baseline)"
            effs = ["-", "-"] if ref else ["n/a (no baseline)"] * 2
        elif ref:
            speedup, effs = "-", ["-", "-"]
        else:
            speedup = fmt_speedup(r, n, base_n)
            same = c["algorithm"] == base["algorithm"]
            effs = [fmt_efficiency(r, n, base_n, w, same) for w in ("runner", "cpu")]
        absolute = (
            "-"
            if ref
            else fmt_speedup(r, n, ref_n, key="abs_speedup")
            if has_ref
            else "n/a (no reference)"
        )
        cells.loc[c["config_id"], _COMPARISONS] = [speedup, absolute, *effs]
    return cells[CELL_COLUMNS]


#: The cells of :func:`config_cells` that compare a configuration with the baseline or the
#: reference (what :func:`summary_cells` leaves out).
_COMPARISONS = ["speedup", "absolute speedup", "efficiency per env runner", "efficiency per CPU"]


def summary_cells(s: pd.DataFrame) -> pd.DataFrame:
    """The configurations of a summary frame ``s`` (:func:`analysis.stats.summarize_configs`:
    a study's, or its search stage's) as the text cells that need nothing else.

    Returns:
        A frame indexed by ``config_id`` with the columns ``algorithm`` (:func:`config_name`,
        marked baseline or reference), ``env runners``, ``configuration`` (its label),
        ``CPUs``, ``CPUs per env runner``, ``batch``, ``other params`` (the parameters that
        differ between configurations, :func:`varying_params`), ``seeds`` (trials, failed
        ones said), ``reached`` (:func:`fmt_reached`), ``success`` (with its rate),
        ``estimator``, ``TTT`` (:func:`fmt_ttt`), ``IQM TTT``, ``olympic mean``, ``TTT
        resolution``, ``env steps/s``, ``steps-to-target`` (:func:`fmt_count`), ``evaluation
        share``, ``peak RSS (MiB)``, ``oversubscribed`` (``yes``/``no``) and ``note``; the
        comparisons of :func:`config_cells` empty.
    """
    varying = varying_params(s)
    rows = []
    for _, c in s.iterrows():
        n = int(c["finished_seeds"])
        ref = bool(c["is_reference"])
        olympic, resolution = as_float(c["ttt_olympic_s"]), as_float(c["ttt_resolution_s"])
        errors = f" ({fmt_errors(c)})" if c["n_error"] else ""
        rows.append(
            {
                "algorithm": config_name(c["algorithm"], baseline=c["is_baseline"], reference=ref),
                "env runners": str(int(c["num_env_runners"])),
                "configuration": str(c["config_label"]),
                "CPUs": fmt_value(as_float(c["num_cpus"])),
                "CPUs per env runner": fmt_num(as_float(c.get("cpus_per_env_runner", 1.0)), 3),
                "batch": fmt_value(c["train_batch_size"])
                if "train_batch_size" in c.index
                else "default",
                "other params": ", ".join(
                    f"{col.removeprefix('param_')}={fmt_value(c[col])}" for col in varying
                )
                or "-",
                "seeds": f"{int(c['n_trials'])}{errors}",
                "reached": fmt_reached(c),
                "success": f"{fmt_reached(c)} ({c['success_rate']:.0%})"
                if n
                else "n/a (every trial failed)",
                "estimator": c["estimator"] or "-",
                "TTT": fmt_ttt(c),
                "IQM TTT": fmt_ci(
                    c["ttt_iqm_s"], c["ttt_iqm_low_s"], c["ttt_iqm_high_s"], lambda z: f"{z:.1f}"
                ),
                "olympic mean": fmt_s(olympic) if np.isfinite(olympic) else "n/a",
                "TTT resolution": fmt_s(resolution) if np.isfinite(resolution) else "n/a",
                "env steps/s": fmt_count(as_float(c["env_steps_per_s"])),
                "steps-to-target": fmt_count(as_float(c["steps_to_target"]))
                if c["n_reached"]
                else "n/a (none reached)",
                "evaluation share": f"{c['eval_share']:.1%}"
                if math.isfinite(as_float(c.get("eval_share", math.nan)))
                else "-",
                "peak RSS (MiB)": fmt_num(as_float(c.get("peak_rss_mib", math.nan)), 4),
                "oversubscribed": "yes" if c["oversubscribed"] else "no",
                "note": c["note"] or "",
            }
        )
    return pd.DataFrame(
        rows, index=pd.Index(s["config_id"], name="config_id"), columns=CELL_COLUMNS
    ).fillna("")


def lay_out(
    cells: pd.DataFrame, columns: list[tuple[str, str]], ids: Any
) -> tuple[list[str], list[list[str]]]:
    """A table of :func:`config_cells`' ``cells``: ``(headers, rows)`` of the configurations
    ``ids`` (config ids, in the table's order), with ``columns`` as ``(column, cell)`` pairs:
    each column's header and the cell it shows.

    Raises:
        KeyError: an id or a cell that ``cells`` lacks.
    """
    headers, names = zip(*columns, strict=True)
    return list(headers), cells.loc[list(ids), list(names)].values.tolist()


#: The columns of :func:`config_cells`, in its order.
CELL_COLUMNS = [
    "algorithm",
    "env runners",
    "configuration",
    "CPUs",
    "CPUs per env runner",
    "batch",
    "other params",
    "seeds",
    "reached",
    "success",
    "estimator",
    "TTT",
    "IQM TTT",
    "olympic mean",
    "TTT resolution",
    "speedup",
    "absolute speedup",
    "efficiency per env runner",
    "efficiency per CPU",
    "env steps/s",
    "steps-to-target",
    "evaluation share",
    "peak RSS (MiB)",
    "oversubscribed",
    "note",
]

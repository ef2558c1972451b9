"""One formatter per quantity, as plain text: the HTML report (which escapes it), the Markdown
tables of ``analysis.publish`` and the CLI of ``analysis.plan`` print the same numbers the same
way.

Seconds (:func:`fmt_s`), dollars (:func:`fmt_usd`), a number (:func:`fmt_num`), a parameter
value (:func:`fmt_value`), a count (:func:`fmt_count`), a 95 % interval (:func:`fmt_interval`),
a time-to-target cell (:func:`fmt_ttt`), a speedup or parallel-efficiency cell
(:func:`fmt_speedup`, :func:`fmt_efficiency`), and a configuration's name
(:func:`config_name`). Bounds from censored medians are rounded
outwards never: a lower bound down, an upper bound up, so a bound never claims more than the
data show.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from analysis.stats import MIN_SEEDS_FOR_CI, ceil_to, floor_to
from sweeps.engine.rundir.schema import as_float  # one owner, re-exported for the renderers

__all__ = [
    "as_float",
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


def fmt_interval(lo: float, hi: float, fmt: Callable[[float], str]) -> str:
    """`` [lo, hi]`` (with its leading space) of a 95 % interval, ``""`` when both ends are NaN;
    a lower end of 0 reads ``0``, another non-finite one ``n/a``, an infinite upper end
    ``unbounded``."""
    if math.isnan(lo) and math.isnan(hi):
        return ""
    lo_s = fmt(lo) if math.isfinite(lo) else ("0" if lo == 0 else "n/a")
    hi_s = fmt(hi) if math.isfinite(hi) else "unbounded"
    return f" [{lo_s}, {hi_s}]"


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
    `` x 32 async envs``), marked ``(baseline)`` or ``(reference)``. Without
    ``num_env_runners``, the algorithm alone (``SB3-DQN (reference)``)."""
    name = str(algorithm)
    if num_env_runners is not None:
        name += f", {int(num_env_runners)} env runner(s)"
    return (
        name
        + str(detail or "")
        + (" (baseline)" if baseline else "")
        + (" (reference)" if reference else "")
    )


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

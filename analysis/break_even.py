"""The break-even env cost: above how many milliseconds per env step does a distributed
configuration beat the single-process reference?

A pipeline model of time-to-target, read from one run's measured parts (docs/design.md,
*break-even*). A configuration with ``L`` sampling lanes (its env runners; 1 for the
reference and for a trial that samples in its own process) that needs ``S`` env steps to the
target and starts in ``s`` seconds reaches it, when each env step costs ``c`` seconds, at

    TTT(c) = s + S * (o + c) / L

where ``o`` is what one lane spends per env step besides the env cost (inference, connector
pipelines, its share of learning). ``o`` is measured from the run's steady sampling rate ``R``
at the run's own step cost ``c0`` (``step_cpu_ms`` + ``step_latency_ms``): ``o = L / R - c0``.
Setting the configuration's ``TTT(c)`` equal to the reference's gives the break-even cost

    c* = (s - s_ref + S o / L - S_ref o_ref) / (S_ref - S / L),

above which the configuration is faster; when ``S / L >= S_ref`` it never is (it samples each
env step no faster per needed step than one process), and when ``c* < 0`` it already is at
any cost. The model assumes the lanes do not contend (a core per CPU-bound env runner, or
waiting envs) and that ``S`` and ``o`` do not change with ``c``: it is checked by running the
same sweep at another cost (:func:`predict_ttt` against the measured TTT; docs/device_16cpu.md
does this for 20 and 40 ms on a 16-core node). Pipeline models of this kind: Amdahl's
serial + parallel split with the start-up as the serial part; the suite's plan check
(:mod:`analysis.plan_check`) uses the same parts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.plan_check import trial_components
from analysis.stats import best_configs, finite_median
from analysis.study import Study

__all__ = ["Parts", "break_even_s", "measured_parts", "predict_ttt", "break_even_rows"]


@dataclass(frozen=True)
class Parts:
    """One configuration's measured parts of time-to-target.

    Attributes:
        algorithm, num_env_runners: the configuration (the reference: 0 env runners).
        lanes: env steps sampled in parallel (its env runners, at least 1).
        startup_s: seconds before its env steps start (median over seeds).
        steps: env steps to the target (median over the seeds that reached it).
        overhead_s: seconds one lane spends per env step besides the env cost.
        ttt_s: its measured median TTT (seconds), at the run's step cost.
    """

    algorithm: str
    num_env_runners: int
    lanes: int
    startup_s: float
    steps: float
    overhead_s: float
    ttt_s: float


def predict_ttt(p: Parts, cost_s: float) -> float:
    """``startup + steps * (overhead + cost) / lanes`` in seconds, for an env cost of
    ``cost_s`` seconds per env step."""
    return p.startup_s + p.steps * (p.overhead_s + cost_s) / p.lanes


def break_even_s(p: Parts, ref: Parts) -> float:
    """The env cost (seconds per env step) above which ``p`` reaches the target before
    ``ref``: ``inf`` when it never does, ``0`` when it always does (see the module docstring)."""
    denominator = ref.steps - p.steps / p.lanes
    if not denominator > 0:
        return math.inf
    numerator = (p.startup_s - ref.startup_s + p.steps * p.overhead_s / p.lanes
                 - ref.steps * ref.overhead_s)
    return max(numerator / denominator, 0.0)


def measured_parts(data: Study) -> tuple[Parts | None, list[Parts]]:
    """``(the reference's parts or None, the parts of each algorithm's best configuration per
    env runner count)`` of a run, at its own step cost; configurations whose median TTT was
    not reached, or whose parts could not be measured (a trial needs two iterations for a
    steady rate), are left out."""
    tm = data.tm[data.tm["status"] != "error"]
    if tm.empty:
        return None, []
    cost_s = (finite_median(tm.get("step_cpu_ms", pd.Series([0.0])))
              + finite_median(tm.get("step_latency_ms", pd.Series([0.0])))) / 1000.0
    cost_s = cost_s if math.isfinite(cost_s) else 0.0
    comps = trial_components(tm, data.res.progress).set_index("trial_id")
    t = tm.set_index("trial_id").join(comps[["startup_s", "rate"]])

    def parts_of(row: pd.Series) -> Parts | None:
        g = t[t["config_id"] == row["config_id"]]
        reached = g[g["reached"]]
        lanes = max(int(row["num_env_runners"]), 1)
        rate, startup = finite_median(g["rate"]), finite_median(g["startup_s"])
        steps = finite_median(reached["steps_to_target"])
        ttt = float(row["ttt_s"])
        if not all(math.isfinite(x) for x in (rate, startup, steps, ttt)) or rate <= 0:
            return None
        return Parts(str(row["algorithm"]), int(row["num_env_runners"]), lanes, startup, steps,
                     lanes / rate - cost_s, ttt)

    s = data.summary
    ref_rows = s[s["is_reference"]]
    ref = parts_of(ref_rows.iloc[0]) if len(ref_rows) else None
    best = best_configs(s[~s["is_reference"]], ("algorithm", "num_env_runners"))
    found = [p for _, row in best.iterrows() if (p := parts_of(row)) is not None]
    return ref, sorted(found, key=lambda p: (p.algorithm, p.num_env_runners))


def break_even_rows(data: Study, costs_ms: list[float] = ()) -> pd.DataFrame:
    """One row per configuration with measured parts: ``algorithm, num_env_runners,
    startup_s, steps, overhead_ms, ttt_s`` (measured), ``break_even_ms`` (``inf``: never;
    NaN without a reference) and, for each cost ``c`` in ``costs_ms``, ``ttt_at_<c>ms`` (the
    predicted TTT, seconds); the reference first (its own ``break_even_ms`` NaN)."""
    ref, parts = measured_parts(data)
    rows = []
    for p in ([ref] if ref is not None else []) + parts:
        is_ref = p is ref
        row = {"algorithm": p.algorithm, "num_env_runners": p.num_env_runners,
               "reference": is_ref, "startup_s": p.startup_s, "steps": p.steps,
               "overhead_ms": p.overhead_s * 1000.0, "ttt_s": p.ttt_s,
               "break_even_ms": (math.nan if is_ref or ref is None
                                 else break_even_s(p, ref) * 1000.0)}
        for c in costs_ms:
            row[f"ttt_at_{c:g}ms"] = predict_ttt(p, c / 1000.0)
        rows.append(row)
    return pd.DataFrame(rows)

"""The break-even env cost: above how many milliseconds per env step does a distributed
configuration beat the single-process reference?

A pipeline model of time-to-target, read from one run's measured parts (docs/design.md,
*break-even*). A configuration with ``L`` sampling lanes (its concurrent envs: its env
runners when they step their envs in turn, env runners x envs per env runner when async; 1
for the reference and for a trial that samples in its own process) that needs ``S`` env steps to the
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.catalogue import VMSize, nodes_for, run_cost_usd
from analysis.fmt import (
    config_name,
    config_phrase,
    fmt_ci,
    fmt_error,
    fmt_interval,
    fmt_reached,
    fmt_s,
    fmt_usd,
)
from analysis.parts import trial_components
from analysis.stats import best_configs, draw_seeds, finite_median, percentile_interval
from analysis.study import Study

__all__ = [
    "Parts",
    "break_even_s",
    "measured_parts",
    "predict_ttt",
    "break_even_rows",
    "step_cost_ms",
    "held_out_rows",
    "HELD_OUT_HEADERS",
    "held_out_table_rows",
    "held_out_verdict",
    "held_out_check",
    "break_even_headers",
    "break_even_table_rows",
    "break_even_words",
    "cost_kind",
    "predict_interval",
    "limiting_part",
    "PART_NAMES",
    "plan_at_cost",
    "run_table",
    "break_even_interval",
    "fmt_break_even_ms",
    "shared_seeds",
    "shared_seed_note",
]


@dataclass(frozen=True)
class Parts:
    """One configuration's measured parts of time-to-target.

    Attributes:
        algorithm, num_env_runners: the configuration (the reference: 0 env runners).
        lanes: env steps that can wait at once, its concurrent envs (docs/design.md,
            *sampling layout*): its env runners (at least 1) when sync, env runners x envs
            per env runner when async.
        startup_s: seconds before its env steps start (median over seeds).
        steps: env steps to the target (median over the seeds that reached it).
        overhead_s: seconds one lane spends per env step besides the env cost.
        ttt_s: its measured median TTT (seconds), at the run's step cost.
        run_cost_s: the run's env cost per step (seconds) the overhead was measured at.
        trials: per seed, ``(startup_s, rate, steps, reached)`` (seconds, env steps/s, env
            steps), for :func:`predict_interval`'s bootstrap; empty when built by hand.
        config_id: the configuration's id in the run ("" when built by hand).
    """

    algorithm: str
    num_env_runners: int
    lanes: int
    startup_s: float
    steps: float
    overhead_s: float
    ttt_s: float
    run_cost_s: float = 0.0
    trials: tuple[tuple[float, float, float, bool], ...] = ()
    config_id: str = ""
    envs_per_env_runner: int = 1
    vectorize_mode: str = "sync"

    @property
    def layout(self) -> str:
        """What its name adds to ``"<algorithm>, <N> env runner(s)"``: ``" x 32 async envs"``
        for an async layout, ``""`` for a sync one."""
        return f" x {self.envs_per_env_runner} async envs" if self.vectorize_mode == "async" else ""

    @property
    def layout_words(self) -> str:
        """The whole sampling layout in words: ``"2 env runner(s) x 32 envs each, async"``;
        with no env runner, ``"its own process with 64 env(s), async"``."""
        if self.num_env_runners == 0:
            return f"its own process with {self.envs_per_env_runner} env(s), {self.vectorize_mode}"
        return (
            f"{self.num_env_runners} env runner(s) x {self.envs_per_env_runner} env(s) "
            f"each, {self.vectorize_mode}"
        )


def predict_ttt(p: Parts, cost_s: float) -> float:
    """``startup + steps * (overhead + cost) / lanes`` in seconds, for an env cost of
    ``cost_s`` seconds per env step."""
    return p.startup_s + p.steps * (p.overhead_s + cost_s) / p.lanes


def predict_interval(
    p: Parts, cost_s: float, *, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """A percentile-bootstrap interval (seconds) of :func:`predict_ttt` at ``cost_s``: each
    resample draws the configuration's seeds with replacement and re-estimates every part
    (:func:`_resampled_parts`; a resample where no drawn seed reached the target predicts
    ``inf``). ``(nan, nan)`` with fewer than two seeds."""
    if _usable_seeds(p) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    out = np.array(
        [
            math.inf if (q := _resampled_parts(p, rng)) is None else predict_ttt(q, cost_s)
            for _ in range(n_resamples)
        ]
    )
    return percentile_interval(out, confidence)


def _usable_seeds(p: Parts) -> int:
    """Seeds of ``p`` with a finite start-up and a positive rate (what a resample draws)."""
    return sum(1 for t in p.trials if math.isfinite(t[0]) and math.isfinite(t[1]) and t[1] > 0)


#: The parts of a predicted TTT that :func:`limiting_part` names.
PART_NAMES = {
    "startup": "start-up (its processes, module build, first weights)",
    "env": "the env's own cost per step (sampling)",
    "overhead": "the rest of each env step (inference, connectors, learning)",
}


def limiting_part(p: Parts, cost_s: float) -> tuple[str, float]:
    """``(key of PART_NAMES, its share of the predicted TTT)`` for the largest of the three
    terms of :func:`predict_ttt` at ``cost_s``: start-up, ``steps * cost / lanes`` and
    ``steps * overhead / lanes``."""
    terms = {
        "startup": p.startup_s,
        "env": p.steps * cost_s / p.lanes,
        "overhead": p.steps * max(p.overhead_s, 0.0) / p.lanes,
    }
    total = sum(terms.values())
    key = max(terms, key=terms.get)
    return key, (terms[key] / total if total > 0 else math.nan)


def break_even_s(p: Parts, ref: Parts) -> float:
    """The env cost (seconds per env step) above which ``p`` reaches the target before
    ``ref``: ``inf`` when it never does, ``0`` when it always does (see the module docstring)."""
    denominator = ref.steps - p.steps / p.lanes
    if not denominator > 0:
        return math.inf
    numerator = (
        p.startup_s - ref.startup_s + p.steps * p.overhead_s / p.lanes - ref.steps * ref.overhead_s
    )
    return max(numerator / denominator, 0.0)


def _resampled_parts(p: Parts, rng: np.random.Generator) -> Parts | None:
    """``p`` re-estimated from its seeds drawn with replacement (medians of start-up and rate,
    median env steps of the seeds that reached the target); None where no drawn seed
    reached it."""
    ok = [t for t in p.trials if math.isfinite(t[0]) and math.isfinite(t[1]) and t[1] > 0]
    k = draw_seeds(len(ok), rng)
    drawn = [ok[i] for i in k]
    steps = [t[2] for t in drawn if t[3]]
    if not steps:
        return None
    startup = float(np.median([t[0] for t in drawn]))
    rate = float(np.median([t[1] for t in drawn]))
    return Parts(
        p.algorithm,
        p.num_env_runners,
        p.lanes,
        startup,
        float(np.median(steps)),
        p.lanes / rate - p.run_cost_s,
        p.ttt_s,
        p.run_cost_s,
        envs_per_env_runner=p.envs_per_env_runner,
        vectorize_mode=p.vectorize_mode,
    )


def break_even_interval(
    p: Parts, ref: Parts, *, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """A seed-level percentile-bootstrap interval (seconds per env step) of
    :func:`break_even_s`: each resample draws the configuration's seeds and the reference's
    seeds with replacement, independently, and recomputes both sets of parts (as
    :func:`predict_interval` does) and the break-even cost; a resample where the
    configuration never breaks even, or where none of its drawn seeds reached the target,
    counts as ``inf`` (never). ``(nan, nan)`` when either side has fewer than two seeds with
    parts. Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13."""
    if _usable_seeds(p) < 2 or _usable_seeds(ref) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    out = np.empty(n_resamples)
    for i in range(n_resamples):
        q, r = _resampled_parts(p, rng), _resampled_parts(ref, rng)
        out[i] = math.inf if q is None or r is None else break_even_s(q, r)
    return percentile_interval(out, confidence)


def fmt_break_even_ms(point_ms: float, low_ms: float = math.nan, high_ms: float = math.nan) -> str:
    """A break-even cost with its interval, as every table prints it: ``"42.0 [35.1, 60.2]"``,
    ``"93.4 [31.0, never]"``, ``"never"``; the point alone where the interval is NaN."""

    def one(x: float) -> str:
        return "never" if x == math.inf else f"{x:.1f}"

    if math.isnan(low_ms):
        return one(point_ms)
    if point_ms == math.inf and low_ms == math.inf:
        return "never"
    return one(point_ms) + fmt_interval(low_ms, high_ms, one, unbounded="never")


def shared_seeds(fit: Study, held: Study) -> list[int]:
    """The seeds ``held`` shares with ``fit`` (sorted; the references' included): a held-out
    check on them is not on fresh seeds."""

    def seeds(data: Study) -> set[int]:
        return {int(x) for x in pd.to_numeric(data.tm["seed"], errors="coerce").dropna()}

    return sorted(seeds(fit) & seeds(held))


def shared_seed_note(fit: Study, held: list[Study]) -> str:
    """One sentence naming the held-out runs that share seeds with ``fit`` ("" when none do),
    for every table of held-out cells."""
    shared = sorted({s for h in held for s in shared_seeds(fit, h)})
    if not shared:
        return ""
    return (
        f"Not on fresh seeds: the held-out runs share seeds {', '.join(map(str, shared))} "
        "with the fit run, so these cells check the model on seeds it was fitted on."
    )


def step_cost_ms(data: Study) -> float:
    """The run's env cost per step in milliseconds: the median over its trials of
    ``step_cpu_ms + step_latency_ms`` as recorded (0 for a run without either)."""
    tm = data.tm
    total = 0.0
    for col in ("step_cpu_ms", "step_latency_ms"):
        if col in tm:
            m = finite_median(pd.to_numeric(tm[col], errors="coerce"))
            total += m if math.isfinite(m) else 0.0
    return total


def measured_parts(data: Study) -> tuple[Parts | None, list[Parts]]:
    """``(the reference's parts or None, the parts of each algorithm's best configuration per
    env runner count)`` of a run, at its own step cost; configurations whose median TTT was
    not reached, or whose parts could not be measured (a trial needs two iterations for a
    steady rate), are left out."""
    tm = data.tm[data.tm["status"] != "error"]
    if tm.empty:
        return None, []
    cost_s = step_cost_ms(data) / 1000.0
    comps = trial_components(tm, data.res.progress).set_index("trial_id")
    t = tm.set_index("trial_id").join(comps[["startup_s", "rate"]])

    def parts_of(row: pd.Series) -> Parts | None:
        g = t[t["config_id"] == row["config_id"]]
        reached = g[g["reached"]]
        mode = str(row.get("vectorize_mode") or "sync")
        envs = int(row.get("num_envs_per_env_runner") or 1)
        lanes = (
            max(int(row["num_env_runners"]), 1) * envs
            if mode == "async"
            else max(int(row["num_env_runners"]), 1)
        )
        rate, startup = finite_median(g["rate"]), finite_median(g["startup_s"])
        steps = finite_median(reached["steps_to_target"])
        ttt = float(row["ttt_s"])
        if not all(math.isfinite(x) for x in (rate, startup, steps, ttt)) or rate <= 0:
            return None
        trials = tuple(
            (float(a), float(b), float(c), bool(d))
            for a, b, c, d in zip(
                g["startup_s"], g["rate"], g["steps_to_target"], g["reached"], strict=True
            )
        )
        return Parts(
            str(row["algorithm"]),
            int(row["num_env_runners"]),
            lanes,
            startup,
            steps,
            lanes / rate - cost_s,
            ttt,
            cost_s,
            trials,
            str(row["config_id"]),
            envs,
            mode,
        )

    s = data.summary
    ref_rows = s[s["is_reference"]]
    ref = parts_of(ref_rows.iloc[0]) if len(ref_rows) else None
    best = best_configs(s[~s["is_reference"]], _layout_keys(s))
    found = [p for _, row in best.iterrows() if (p := parts_of(row)) is not None]
    return ref, sorted(found, key=lambda p: (p.algorithm, p.num_env_runners, p.vectorize_mode))


def _layout_keys(summary: pd.DataFrame) -> tuple[str, ...]:
    """The columns one configuration of the break-even model is the best of: algorithm, env
    runners and, where the run recorded it, the vectorize mode (sync and async layouts of one
    env runner count are different configurations)."""
    keys = ("algorithm", "num_env_runners")
    return keys + ("vectorize_mode",) if "vectorize_mode" in summary else keys


def break_even_rows(data: Study, costs_ms: list[float] = ()) -> pd.DataFrame:
    """One row per configuration with measured parts: ``algorithm, num_env_runners,
    startup_s, steps, overhead_ms, ttt_s`` (measured), ``break_even_ms`` (``inf``: never;
    NaN without a reference) with ``break_even_low_ms, break_even_high_ms`` (its 95 %
    seed-level bootstrap interval, :func:`break_even_interval`; NaN with fewer than two seeds)
    and, for each cost ``c`` in ``costs_ms``, ``ttt_at_<c>ms`` (the predicted TTT, seconds);
    the reference first (its own break-even NaN)."""
    ref, parts = measured_parts(data)
    rows = []
    for p in ([ref] if ref is not None else []) + parts:
        is_ref = p is ref
        low, high = (math.nan, math.nan) if is_ref or ref is None else break_even_interval(p, ref)
        row = {
            "algorithm": p.algorithm,
            "num_env_runners": p.num_env_runners,
            "layout": p.layout,
            "reference": is_ref,
            "startup_s": p.startup_s,
            "steps": p.steps,
            "overhead_ms": p.overhead_s * 1000.0,
            "ttt_s": p.ttt_s,
            "break_even_ms": (math.nan if is_ref or ref is None else break_even_s(p, ref) * 1000.0),
            "break_even_low_ms": low * 1000.0,
            "break_even_high_ms": high * 1000.0,
        }
        for c in costs_ms:
            row[f"ttt_at_{c:g}ms"] = predict_ttt(p, c / 1000.0)
        rows.append(row)
    return pd.DataFrame(rows)


def break_even_headers(costs_ms: list[float]) -> list[str]:
    """Column headers of :func:`break_even_table_rows` for predictions at ``costs_ms``."""
    return [
        "configuration",
        "start-up (s)",
        "env steps to target",
        "overhead (ms/step)",
        "measured TTT",
        "break-even (ms/step) [95% CI]",
        *(f"predicted TTT at {c:g} ms" for c in costs_ms),
    ]


def break_even_table_rows(rows: pd.DataFrame, costs_ms: list[float]) -> list[list[str]]:
    """:func:`break_even_rows` as table cells under :func:`break_even_headers` (the terminal,
    the report and the pages print the same cells)."""
    out = []
    for _, r in rows.iterrows():
        be = r["break_even_ms"]
        out.append(
            [
                config_name(
                    r["algorithm"],
                    r["num_env_runners"],
                    r.get("layout", ""),
                    reference=r["reference"],
                ),
                f"{r['startup_s']:.1f}",
                f"{r['steps']:,.0f}",
                f"{r['overhead_ms']:.1f}",
                fmt_s(r["ttt_s"]),
                "-"
                if r["reference"]
                else fmt_break_even_ms(
                    be, r.get("break_even_low_ms", math.nan), r.get("break_even_high_ms", math.nan)
                ),
                *(fmt_s(r[f"ttt_at_{c:g}ms"]) for c in costs_ms),
            ]
        )
    return out


def break_even_words(rows: pd.DataFrame, kind: str) -> str:
    """The earliest predicted break-even of :func:`break_even_rows` in plain words (``kind``:
    ``"waiting"`` or ``"CPU-bound"``)."""
    words = _earliest_words(rows, kind)
    if "no configuration measured" not in words:
        words = words.removesuffix(".") + ", the earliest of the configurations measured."
    return f"In plain words: {words[0].lower()}{words[1:]}"


def _earliest_words(rows: pd.DataFrame, kind: str) -> str:
    """The configuration with the lowest finite break-even among ``rows`` (of
    :func:`break_even_rows` or :func:`held_out_rows`), as a sentence."""
    dist = rows[~rows["reference"].astype(bool)]
    dist = dist[np.isfinite(dist["break_even_ms"].astype(float))]
    if not len(dist):
        return (
            f"On this machine, with {kind} envs, no configuration measured is predicted to "
            "beat one process at any env cost."
        )
    first = dist.loc[dist["break_even_ms"].astype(float).idxmin()]
    low, high = (
        float(first.get("break_even_low_ms", math.nan)),
        float(first.get("break_even_high_ms", math.nan)),
    )
    interval = ""
    if not math.isnan(low) and not math.isnan(high):
        interval = (
            f" (95 % interval {low:.0f} to "
            + ("never" if high == math.inf else f"{high:.0f} ms")
            + ")"
        )
    return (
        f"On this machine, with {kind} envs, "
        f"{config_phrase(first['algorithm'], first['num_env_runners'], first.get('layout', ''))} is "
        "predicted to beat one process "
        f"from ~{first['break_even_ms']:.0f} ms per env step{interval}."
    )


def run_table(data: Study) -> tuple[list[str], list[list[str]], str] | None:
    """A run's own break-even table, as the report and the pages show it: ``(headers, cells,
    the earliest break-even in plain words)`` with predictions at the run's step cost and
    twice it (at 0 ms for a run without one); None without a reference with parts."""
    cost = step_cost_ms(data)
    costs = [cost, 2 * cost] if cost > 0 else [0.0]
    rows = break_even_rows(data, costs)
    if rows.empty or not rows["reference"].any():
        return None
    return (
        break_even_headers(costs),
        break_even_table_rows(rows, costs),
        break_even_words(rows, cost_kind(data)),
    )


def cost_kind(data: Study) -> str:
    """``"CPU-bound"`` when the run's env steps burn CPU (``step_cpu_ms``), else
    ``"waiting"``."""
    cpu = pd.to_numeric(data.tm.get("step_cpu_ms", pd.Series([0.0])), errors="coerce")
    return "CPU-bound" if cpu.median() > 0 else "waiting"


def held_out_rows(fit: Study, held_out: list[Study]) -> pd.DataFrame:
    """The break-even model checked on runs at other env costs (the held-out cells).

    The parts come from ``fit`` alone; each run in ``held_out`` is the same study at another
    step cost (``python -m sweeps.run FILE --env-config step_latency_ms=C``) and only its
    measured TTT and absolute speedup are read, never its parts.

    Returns:
        One row per held-out run and configuration of ``fit`` that it also ran (matched on
        algorithm and env runner count, its best configuration there), the reference first:
        ``env_cost_ms, algorithm, num_env_runners, reference, predicted_ttt_s,
        ttt_s, ttt_low_s, ttt_high_s`` (measured median and its 95 % interval, seconds;
        ``inf``: not reached by half the seeds), ``n_reached, n`` (seeds), ``ttt_error``
        (predicted / measured - 1; NaN when not reached), ``break_even_ms`` (predicted from
        ``fit``; ``inf`` never, NaN for the reference), ``predicted_abs_speedup`` (the
        reference's predicted TTT over the configuration's), ``abs_speedup,
        abs_speedup_low, abs_speedup_high`` (measured against the held-out run's own
        reference, NaN without one), ``predicted_beats`` (predicted absolute speedup > 1) and
        ``measured_beats`` (``"yes"``: the interval lies above 1, ``"no"``: below,
        ``"undecided"``: it contains 1). Empty when ``fit`` has no reference with parts.
    """
    ref, parts = measured_parts(fit)
    if ref is None:
        return pd.DataFrame()
    rows = []
    for data in held_out:
        cost_ms = step_cost_ms(data)
        s = data.summary
        sp = data.configs
        refs = s[s["is_reference"]]
        measured = {("reference", 0): refs.iloc[0]} if len(refs) else {}
        best = best_configs(s[~s["is_reference"]], _layout_keys(s))
        measured.update(
            {
                (
                    str(r["algorithm"]),
                    int(r["num_env_runners"]),
                    str(r.get("vectorize_mode") or "sync"),
                ): r
                for _, r in best.iterrows()
            }
        )
        ref_ttt = predict_ttt(ref, cost_ms / 1000.0)
        for p in [ref] + parts:
            is_ref = p is ref
            m = measured.get(
                ("reference", 0) if is_ref else (p.algorithm, p.num_env_runners, p.vectorize_mode)
            )
            if m is None:
                continue
            predicted = predict_ttt(p, cost_ms / 1000.0)
            ttt = float(m["ttt_s"])
            row = {
                "env_cost_ms": cost_ms,
                "algorithm": p.algorithm,
                "num_env_runners": p.num_env_runners,
                "layout": p.layout,
                "reference": is_ref,
                "predicted_ttt_s": predicted,
                "ttt_s": ttt,
                "ttt_low_s": float(m["ttt_low_s"]),
                "ttt_high_s": float(m["ttt_high_s"]),
                "n_reached": int(m["n_reached"]),
                "n": int(m["finished_seeds"]),
                "ttt_error": predicted / ttt - 1.0 if math.isfinite(ttt) else math.nan,
                "break_even_ms": math.nan if is_ref else break_even_s(p, ref) * 1000.0,
                "predicted_abs_speedup": math.nan if is_ref else ref_ttt / predicted,
            }
            r = sp.loc[m["config_id"]] if not is_ref and m["config_id"] in sp.index else None
            for key in ("abs_speedup", "abs_speedup_low", "abs_speedup_high"):
                row[key] = float(r[key]) if r is not None and key in r else math.nan
            row["predicted_beats"] = (not is_ref) and row["predicted_abs_speedup"] > 1.0
            low, high = row["abs_speedup_low"], row["abs_speedup_high"]
            row["measured_beats"] = (
                ""
                if is_ref or not math.isfinite(row["abs_speedup"])
                else "yes"
                if low > 1.0
                else "no"
                if high < 1.0
                else "undecided"
            )
            rows.append(row)
    return pd.DataFrame(rows)


#: Column headers of :func:`held_out_table_rows`.
HELD_OUT_HEADERS = [
    "env cost (ms/step)",
    "configuration",
    "reached",
    "predicted TTT",
    "measured TTT [95% CI]",
    "error",
    "predicted absolute speedup",
    "measured absolute speedup [95% CI]",
    "beats one process: predicted / measured",
]


def held_out_table_rows(rows: pd.DataFrame) -> list[list[str]]:
    """:func:`held_out_rows` as table cells under :data:`HELD_OUT_HEADERS` (the terminal, the
    report and the pages print the same cells)."""
    out = []
    for _, r in rows.iterrows():
        name = config_name(
            r["algorithm"], r["num_env_runners"], r.get("layout", ""), reference=r["reference"]
        )
        ttt = (
            fmt_ci(r["ttt_s"], r["ttt_low_s"], r["ttt_high_s"], fmt_s)
            if math.isfinite(r["ttt_s"])
            else f"> budget ({fmt_reached(r, 'n')} reached)"
        )
        err = fmt_error(r["ttt_error"])
        if r["reference"]:
            speed, verdict, predicted = "-", "-", "-"
        else:
            predicted = f"{r['predicted_abs_speedup']:.2f}x"
            speed = (
                f"{r['abs_speedup']:.2f}x"
                + fmt_interval(r["abs_speedup_low"], r["abs_speedup_high"], "{:.2f}".format)
                if math.isfinite(r["abs_speedup"])
                else "n/a"
            )
            verdict = f"{'yes' if r['predicted_beats'] else 'no'} / {r['measured_beats'] or 'n/a'}"
        out.append(
            [
                f"{r['env_cost_ms']:g}",
                name,
                fmt_reached(r, "n"),
                fmt_s(r["predicted_ttt_s"]),
                ttt,
                err,
                predicted,
                speed,
                verdict,
            ]
        )
    return out


def held_out_verdict(rows: pd.DataFrame, kind: str = "waiting") -> str:
    """One paragraph in plain words: where the model puts the break-even, whether the
    held-out cells agree, and the first measured absolute speedup whose interval lies above 1
    (or that none does)."""
    if rows.empty:
        return "No held-out check: the fit run has no single-process reference with parts."
    dist = rows[~rows["reference"]]
    parts = [_earliest_words(rows, kind)]
    decided = dist[dist["measured_beats"].isin(["yes", "no"])]
    agree = int((decided["predicted_beats"] == (decided["measured_beats"] == "yes")).sum())
    parts.append(
        f"Of {len(dist)} held-out cells, {len(decided)} have a measured absolute "
        f"speedup whose interval excludes 1, and the prediction's side of 1 agrees in "
        f"{agree} of them."
    )
    errs = dist["ttt_error"].abs().dropna()
    if len(errs):
        parts.append(
            f"The predicted TTT misses the measured median by {errs.median():.0%} "
            f"(median over cells; at most {errs.max():.0%})."
        )
    yes = dist[dist["measured_beats"] == "yes"].sort_values("env_cost_ms")
    if len(yes):
        y = yes.iloc[0]
        parts.append(
            f"The first measured absolute speedup above 1 whose interval excludes 1: "
            f"{config_phrase(y['algorithm'], y['num_env_runners'])} at "
            f"{y['env_cost_ms']:g} ms per env step, {y['abs_speedup']:.2f}x"
            f"{fmt_interval(y['abs_speedup_low'], y['abs_speedup_high'], '{:.2f}'.format)}."
        )
    else:
        parts.append("No measured absolute speedup has an interval above 1.")
    return " ".join(parts)


def held_out_check(fit: Study, held_out: list[Study]) -> dict[str, Any]:
    """The held-out check as every renderer lays it out (the terminal, the report, the pages):
    ``headers`` (:data:`HELD_OUT_HEADERS`), ``rows`` (:func:`held_out_table_rows`; none when
    there is nothing to check), ``verdict`` (:func:`held_out_verdict`) and ``note``
    (:func:`shared_seed_note`, ``""`` when every held-out run is on fresh seeds)."""
    rows = held_out_rows(fit, held_out)
    return {
        "headers": HELD_OUT_HEADERS,
        "rows": held_out_table_rows(rows) if len(rows) else [],
        "verdict": held_out_verdict(rows, cost_kind(fit)),
        "note": shared_seed_note(fit, held_out),
    }


def plan_at_cost(
    data: Study, cost_ms: float, deadline_s: float | None = None, vms: Sequence[VMSize] = ()
) -> list[str]:
    """The break-even model read for a user at one env cost: per configuration (the reference
    first), its predicted TTT with a seed-bootstrap interval, its CPUs and, given ``vms``,
    the cheapest way to rent them for one run (VM count x size, dollars at pay-as-you-go
    prices for the predicted TTT: :func:`analysis.catalogue.nodes_for`,
    :func:`analysis.catalogue.run_cost_usd`), the predicted absolute speedup, the part that
    limits it and how many env steps per lane it needs against the reference's; then the
    answer (the fastest, or the cheapest in CPUs within ``deadline_s``) and whether it beats
    one process. One line each; empty without parts."""
    ref, parts = measured_parts(data)
    if ref is None and not parts:
        return []
    c = cost_ms / 1000.0
    cpus = _cpus_per_configuration(data)
    lines, options = [], []
    ref_ttt = predict_ttt(ref, c) if ref is not None else math.nan
    for p in ([ref] if ref is not None else []) + parts:
        t = predict_ttt(p, c)
        lo, hi = predict_interval(p, c)
        part, share = limiting_part(p, c)
        name = (
            f"{p.algorithm} (single-process reference)"
            if p is ref
            else config_phrase(p.algorithm, p.num_env_runners, p.layout)
        )
        n_cpu = cpus.get((p.algorithm, p.num_env_runners), math.nan)
        line = (
            f"{name}: predicted TTT {fmt_ci(t, lo, hi, fmt_s)}"
            + (f" on {n_cpu:g} CPU(s)" if math.isfinite(n_cpu) else "")
            + _rent_words(n_cpu, t, vms)
            + f"; limited by {PART_NAMES[part]} ({share:.0%} of it)"
        )
        if p is not ref and ref is not None:
            line += (
                f"; absolute speedup {ref_ttt / t:.2f}x; it needs {p.steps / ref.steps:.1f}x "
                f"the reference's env steps ({p.steps / p.lanes / ref.steps:.2f}x per "
                "concurrent env)"
            )
        lines.append(line)
        options.append((t, n_cpu, name, p is ref, p, lo, hi, part, share))
    ok = [o for o in options if deadline_s is None or o[0] <= deadline_s]
    if not ok:
        lines.append(
            f"Answer: nothing is predicted to reach the target within "
            f"{fmt_s(deadline_s)} at {cost_ms:g} ms per env step (fastest: "
            f"{fmt_s(min(o[0] for o in options))})."
        )
        return lines
    if deadline_s is None:
        pick = min(ok, key=lambda o: o[0])
        how = "fastest"
    else:
        pick = min(ok, key=lambda o: (o[1] if math.isfinite(o[1]) else math.inf, o[0]))
        how = f"fewest CPUs within {fmt_s(deadline_s)}"
    verdict = (
        "it is one process"
        if pick[3]
        else "it beats one process"
        if ref is not None and pick[0] < ref_ttt
        else "one process is faster"
        if ref is not None
        else "no reference measured"
    )
    p, lo, hi, part, share = pick[4:]
    layout = "" if pick[3] else f" ({p.layout_words})"
    lines.append(
        f"Answer at {cost_ms:g} ms per env step ({how}): {pick[2]}{layout}, predicted "
        f"{fmt_ci(pick[0], lo, hi, fmt_s)}, limited by "
        f"{PART_NAMES[part]} ({share:.0%} of it); {verdict}."
    )
    return lines


def _rent_words(cpus: float, ttt_s: float, vms: Sequence[VMSize]) -> str:
    """``" (1 x Standard_D4s_v5, $0.01 a run)"``: the cheapest VM size and count among ``vms``
    (CPU-only sizes first) for ``cpus`` CPUs over ``ttt_s`` seconds; empty without one."""
    if not (math.isfinite(cpus) and math.isfinite(ttt_s)) or not vms:
        return ""
    options = []
    for vm in vms:
        nodes = nodes_for(cpus, 0.0, vm)
        if nodes is not None:
            options.append((vm.gpus > 0, run_cost_usd(ttt_s, nodes, vm), nodes, vm.name))
    if not options:
        return ""
    _, usd, nodes, name = min(options)
    return f" ({nodes} x {name}, {fmt_usd(usd)} a run)"


def _cpus_per_configuration(data: Study) -> dict[tuple[str, int], float]:
    """CPUs a trial of each (algorithm, env runners) asked for (median over its trials)."""
    tm = data.tm
    if "num_cpus" not in tm:
        return {}
    key = tm["algorithm"].astype(str)
    out = {}
    for (alg, n), g in tm.groupby([key, "num_env_runners"]):
        out[(str(alg), int(n))] = float(pd.to_numeric(g["num_cpus"], errors="coerce").median())
    return out

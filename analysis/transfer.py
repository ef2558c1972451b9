"""Plans that transfer to another machine: a roofline of a CPU-bound pipeline, read from the
parts one run measured and the target machine's core count and per-core speed.

Fitting a scaling law on one machine and applying it to another carries the first machine's
contention with it (on 2 cores, the USL's retrograde term is 16 processes sharing 2 cores).
Instead, each configuration's measured parts (:func:`analysis.break_even.measured_parts`) are
turned into costs that do not depend on the machine, and the target machine is predicted
from them:

- **CPU per env step** ``w = min(K0, P) / R0`` core-seconds, from the steady sampling rate
  ``R0`` on the ``K0`` cores the run was measured on, where ``P`` is the configuration's busy
  processes (``N + 1`` for N env runners and the driver with its learner; 1 for the
  single-process reference): everything the pipeline spends per env step (the env's own CPU,
  inference, connectors, learning, Ray), exact when those processes kept their cores busy (a
  CPU-bound pipeline pinned to one core always does).
- **Start-up** ``s(N) = a + b N / min(N, K)``: a serial part ``a`` (the driver: algorithm
  and learner build) and ``b`` per env runner, whose start-ups run side by side on up to
  ``min(N, K)`` cores; ``a`` and ``b`` are fitted per algorithm on the run's N (least
  squares on the median start-ups; with one N, ``b = 0``). The reference: ``s0 / speed``.
- **Env steps to the target** ``S(N)``: sample efficiency, taken as the machine's least
  concern (unchanged);
- **Driver CPU per env step** ``d``: core-seconds the trial's own process (the algorithm's
  driver with its local learner) spends per env step, read from ``driver_cpu_s`` in
  ``progress.parquet`` over the steady window, evaluation time taken out
  (:func:`driver_cpu_per_step`); NaN for runs recorded before it, which leaves out the term
  below that needs it.
- **Learner CPU per env step** ``l``: core-seconds of the learner's gradient updates per env
  step sampled, on the clock of the thread that ran them (``learner_cpu_s``,
  :mod:`sweeps.engine.algorithms.learner_clock`), so the time that thread waited for a core
  is not in it (:func:`learner_cpu_per_step`); a part of ``d``. NaN for runs recorded before
  it, which leaves out the learner ceiling.

On a target with ``K`` cores of relative speed ``v`` (its core's work per second over the
measured machine's), a configuration with ``N`` env runners (``N + 1`` busy processes; the
single-process reference: 1) samples at the lowest of three ceilings, as in a roofline
(Williams, Waterman and Patterson, "Roofline", CACM 2009):

- **cores**: ``min(K, N + 1) / ((w - c0) / v + c)`` (the pipeline's CPU work spread over the
  cores it can use), where ``c0`` is the measured run's own env CPU per step
  (``step_cpu_ms``) and ``c`` the target's (the run's unless given): ``step_cpu_ms`` is
  calibrated to mean milliseconds of a core on whichever machine runs it, so only the rest of
  the work, ``w - c0``, scales with ``v``;
- **env runners**: ``N / ((w - d - c0) / v + c + c_wait)``: each env runner steps its envs
  one after another, each step costing the env (``step_cpu_ms`` burns a core,
  ``step_latency_ms`` waits) and the runner's own work per step besides the env (inference,
  connectors, Ray: ``w - d - c0``, taken as 0 without ``d``);
- **learner**: ``v / l``: one learner updates on one core (RLlib's local learner, torch with
  one thread per driver CPU), so it trains at most ``1 / l`` of the measured machine's env
  steps per second, whatever the env runners could sample; this assumes the env steps
  sampled per update stay as measured (IMPALA and APPO train every sampled env step once: a
  learner that falls behind blocks the driver on its queue, and sampling waits, as RLlib's
  ``_LearnerThread.enqueue`` puts with ``block=True``; DQN's replay ratio is a setting);

and reaches the target at ``TTT = s(N) / v + S(N) / R``. The CPU-bound break-even on the
target (:func:`break_even_on`) is the ``c`` above which a configuration's TTT falls below the
reference's; as ``c`` grows the best absolute speedup tends to ``S_ref min(N, K) / S(N)``, so
there is none where ``S(N) / min(N, K) >= S_ref``. Not modelled: memory and network, and the
stall of a synchronous algorithm (DQN with one env runner samples and learns in turn, so its
rate is not the lower ceiling but the two costs added). Why ``l`` and not ``d`` bounds the
learner: an asynchronous learner (IMPALA's, APPO's) takes what CPU it is given (on one core
the driver's share falls as ``1 / (N + 1)``, and ``d`` with it), so ``d`` says how crowded
the machine was, ``l`` what an update costs. Checked by :func:`check_rows` against the same
study run on the target (on this machine: pinned to one core with ``taskset -c 0``, predicted
for both cores; docs/transfer.md), and where the learner binds by
``benchmarks/bench_learner_ceiling.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.break_even import Parts, measured_parts
from analysis.fmt import config_name, config_phrase, fmt_ci, fmt_error, fmt_interval, fmt_s
from analysis.stats import best_configs, draw_seeds, finite_median
from analysis.study import Study

__all__ = [
    "Machine",
    "Transferred",
    "transfer",
    "check_rows",
    "CHECK_HEADERS",
    "check_table_rows",
    "check_words",
    "source_cores",
    "env_costs_ms",
    "driver_cpu_per_step",
    "learner_cpu_per_step",
    "roofline_rate",
    "driver_cell",
    "learner_cell",
    "break_even_on",
    "break_even_on_words",
    "learner_scaling",
    "learner_rates",
    "learner_scaling_check",
    "sync_learner_rates",
    "sync_learner_scaling",
    "sync_learner_parts",
    "sync_learner_check",
]


@dataclass(frozen=True)
class Machine:
    """A machine to predict: ``cores`` (usable cores, > 0) and ``core_speed`` (its core's work
    per second over the measured machine's, > 0; 1: the same cores)."""

    cores: float
    core_speed: float = 1.0

    def __post_init__(self) -> None:
        if not (self.cores > 0 and self.core_speed > 0):
            raise ValueError(f"a machine needs cores > 0 and core_speed > 0, got {self}")


@dataclass(frozen=True)
class Transferred:
    """One configuration predicted on a target :class:`Machine`.

    Attributes:
        algorithm, num_env_runners, reference: the configuration (the reference: 0 env runners).
        cpu_ms_per_step: ``w`` in core-milliseconds per env step, measured on the source.
        rate: predicted env steps/s on the target; ``ceiling``: which one binds (``"cores"``,
            ``"env runners"`` or ``"learner"``).
        driver_ms_per_step: ``d`` in core-milliseconds per env step on the source (NaN: not
            recorded); learner_ms_per_step: ``l``, likewise.
        startup_s: predicted start-up (seconds); steps: env steps to the target (the source's).
        ttt_s, ttt_low_s, ttt_high_s: predicted TTT and its 95 % seed-bootstrap interval
            (seconds; the source run's seeds resampled, every part re-estimated).
    """

    algorithm: str
    num_env_runners: int
    reference: bool
    cpu_ms_per_step: float
    rate: float
    ceiling: str
    startup_s: float
    steps: float
    ttt_s: float
    ttt_low_s: float = math.nan
    ttt_high_s: float = math.nan
    driver_ms_per_step: float = math.nan
    learner_ms_per_step: float = math.nan


def source_cores(data: Study) -> float:
    """The cores the run could use: environment.json's ``usable_cores`` (the process's CPU
    affinity when it ran), else its ``cpu_count``; NaN when neither was recorded."""
    env = data.res.environment or {}
    for key in ("usable_cores", "cpu_count"):
        value = env.get(key)
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    return math.nan


def env_costs_ms(data: Study) -> tuple[float, float]:
    """``(step_cpu_ms, step_latency_ms)`` of the run: medians over its trials, 0 when absent."""
    out = []
    for col in ("step_cpu_ms", "step_latency_ms"):
        m = (
            finite_median(pd.to_numeric(data.tm[col], errors="coerce"))
            if col in data.tm
            else math.nan
        )
        out.append(m if math.isfinite(m) else 0.0)
    return out[0], out[1]


def _processes(n: int, is_ref: bool) -> int:
    """Busy processes of a configuration: the reference 1, N env runners and the driver N + 1."""
    return 1 if is_ref else n + 1


def _cpu_per_step(data: Study, config_id: str, column: str, less_evaluation: bool) -> float:
    """The median over the trials of ``config_id`` of ``(CPU - evaluation time, when
    ``less_evaluation``) / env steps`` between each trial's first and last measurement with
    ``column`` recorded (seconds per env step); NaN without the column or without a trial
    that has two such measurements with env steps between them."""
    prog = data.res.progress
    if column not in prog or not config_id:
        return math.nan
    tm = data.tm[(data.tm["config_id"] == config_id) & (data.tm["status"] != "error")]
    per_trial = []
    for tid in tm["trial_id"]:
        g = prog[(prog["trial_id"] == tid) & np.isfinite(prog[column])]
        g = g.sort_values("iteration")
        if len(g) < 2:
            continue
        first, last = g.iloc[0], g.iloc[-1]
        steps = float(last["env_steps"] - first["env_steps"])
        cpu = float(last[column] - first[column])
        if less_evaluation:
            cpu -= float(last["eval_time_s"] - first["eval_time_s"])
        if steps > 0:
            per_trial.append(max(cpu, 0.0) / steps)
    return float(np.median(per_trial)) if per_trial else math.nan


def driver_cpu_per_step(data: Study, config_id: str) -> float:
    """``d``: core-seconds the trials of ``config_id`` spent in their own process per env
    step, the median over seeds of ``(driver CPU - evaluation time) / env steps`` between each
    trial's first and last measurement (``progress.parquet``'s ``driver_cpu_s``,
    ``eval_time_s`` and ``env_steps``); NaN when the run did not record ``driver_cpu_s`` or no
    trial has two measurements with env steps between them."""
    return _cpu_per_step(data, config_id, "driver_cpu_s", less_evaluation=True)


def learner_cpu_per_step(data: Study, config_id: str) -> float:
    """``l``: core-seconds of the learner's gradient updates per env step sampled, the
    median over the trials of ``config_id`` of ``learner CPU / env steps`` between each
    trial's first and last measurement with ``learner_cpu_s`` recorded (the updating thread's
    clock, :mod:`sweeps.engine.algorithms.learner_clock`); NaN for the reference and for runs
    recorded before the column."""
    return _cpu_per_step(data, config_id, "learner_cpu_s", less_evaluation=False)


def driver_cell(reference: bool, driver_ms: float) -> str:
    """A table cell for the driver's share of the CPU per env step: ``all`` for the
    single-process reference, else ``driver_ms`` (milliseconds) or ``not recorded``."""
    if reference:
        return "all"
    return f"{driver_ms:.2f}" if math.isfinite(driver_ms) else "not recorded"


def learner_cell(reference: bool, learner_ms: float) -> str:
    """A table cell for the learner's updates' share of the CPU per env step: ``-`` for the
    single-process reference (its updates are not timed apart), else ``learner_ms``
    (milliseconds) or ``not recorded``."""
    if reference:
        return "-"
    return f"{learner_ms:.2f}" if math.isfinite(learner_ms) else "not recorded"


def roofline_rate(
    w: float,
    n: int,
    is_ref: bool,
    cpu_s: float,
    wait_s: float,
    target: Machine,
    run_cpu_s: float | None = None,
    driver_s: float = math.nan,
    learner_s: float = math.nan,
) -> tuple[float, str]:
    """The roofline's sampling rate of one configuration on ``target`` (module docstring).

    Args:
        w: core-seconds per env step on the source machine, everything included.
        n: env runners (0 for the reference); is_ref: the single-process reference.
        cpu_s, wait_s: seconds each env step burns of a core and waits on the target.
        target: the machine predicted.
        run_cpu_s: seconds of a core the env burned per step in the source run (default
            ``cpu_s``).
        driver_s, learner_s: core-seconds per env step of the driver and of the learner's
            updates on the source (NaN: unknown, which leaves out the ceiling needing it).

    Returns:
        ``(env steps/s, binding ceiling)``, the ceiling ``"cores"``, ``"env runners"`` or
        ``"learner"``.
    """
    v = target.core_speed
    c0 = cpu_s if run_cpu_s is None else run_cpu_s
    known = math.isfinite(driver_s) and not is_ref
    ceilings = {"cores": min(target.cores, _processes(n, is_ref)) / ((w - c0) / v + cpu_s)}
    runner_work = max(w - driver_s - c0, 0.0) / v if known else 0.0
    per_step = runner_work + cpu_s + wait_s
    if not is_ref and per_step > 0:
        ceilings["env runners"] = n / per_step
    if not is_ref and math.isfinite(learner_s) and learner_s > 0:
        ceilings["learner"] = v / learner_s
    ceiling = min(ceilings, key=ceilings.get)
    return ceilings[ceiling], ceiling


def learner_scaling(m: int, one_learner_rate: float, server_share: float) -> float:
    """Applied learner updates/s of ``m`` asynchronous learners that share one parameter
    server (Gorila's layout), predicted from one learner's parts: its applied updates/s
    ``one_learner_rate`` (X1, 1/s) and the share of that run's wall-clock the server spent
    applying gradients, ``server_share`` (u1 = D X1, D the server's seconds per update).

    Amdahl's law with the server's apply as the serial part of each update: ``X(m) = m X1 /
    (1 + u1 (m - 1))``, which tends to the server's bound ``1 / D = X1 / u1`` (G. Amdahl, "Validity
    of the single processor approach to achieving large scale computing capabilities", AFIPS
    1967; as the contention term of N. Gunther's universal scalability law without its
    coherency term). It leaves out what grows with ``m`` besides the server's queue (the
    server's own cost per update, the learners' parameter pulls, the cores they share), so it
    is an upper estimate: docs/learners.md checks it on learner counts it was not fitted on.

    Raises:
        ValueError: ``m`` below 1, or ``server_share`` outside [0, 1].
    """
    if m < 1 or not 0.0 <= server_share <= 1.0:
        raise ValueError(
            f"learner_scaling: m={m}, server_share={server_share}: need m >= 1, 0 <= share <= 1"
        )
    return m * one_learner_rate / (1.0 + server_share * (m - 1))


def _iteration_window(progress: pd.DataFrame, trial_id: str) -> tuple | None:
    """``(first, last, dt)``: a trial's first and last recorded iterations (progress rows) and
    the wall-clock seconds between them; None with fewer than two iterations or no time."""
    g = progress[progress["trial_id"] == trial_id].sort_values("iteration")
    if len(g) < 2:
        return None
    a, b = g.iloc[0], g.iloc[-1]
    dt = float(b["wall_time_s"] - a["wall_time_s"])
    return (a, b, dt) if dt > 0 else None


def learner_rates(data: Study) -> pd.DataFrame:
    """Per GORILA trial of a run: ``num_learners``, ``seed``, applied learner updates/s
    (``rate``) and the parameter server's busy share (``server_share``: its apply seconds over
    wall-clock seconds) between the trial's first and last recorded iterations
    (progress.parquet's ``learner_updates`` and ``server_busy_s``; the share is NaN for runs
    recorded before ``server_busy_s``). Trials with fewer than two iterations are left out."""
    trials, progress = data.res.trials, data.res.progress
    rows = []
    gorila = trials[trials["algorithm"] == "GORILA"]
    for _, t in gorila.iterrows():
        if (window := _iteration_window(progress, t["trial_id"])) is None:
            continue
        a, b, dt = window
        busy = (
            float(b["server_busy_s"] - a["server_busy_s"]) / dt
            if "server_busy_s" in progress
            else math.nan
        )
        rows.append(
            {
                "num_learners": int(t["num_learners"]),
                "seed": int(t["seed"]),
                "rate": float(b["learner_updates"] - a["learner_updates"]) / dt,
                "server_share": busy,
            }
        )
    return pd.DataFrame(rows, columns=["num_learners", "seed", "rate", "server_share"])


def one_learner_parts(fit: Study) -> tuple[float, float] | None:
    """``(X1, u1)``: the median applied updates/s (1/s) and the median parameter-server busy
    share of ``fit``'s one-learner GORILA trials (:func:`learner_rates`), the two parts
    :func:`learner_scaling` predicts from; None without such a trial with the share recorded."""
    one = learner_rates(fit)
    one = one[(one["num_learners"] == 1) & one["server_share"].notna()]
    if one.empty:
        return None
    return float(one["rate"].median()), float(one["server_share"].median())


def learner_predictions(fit: Study, counts: list[int]) -> pd.DataFrame:
    """Applied updates/s predicted at each learner count in ``counts`` from ``fit``'s
    one-learner GORILA trials alone (:func:`one_learner_parts`, :func:`learner_scaling`).

    Returns:
        One row per count: ``num_learners``, ``predicted`` (updates/s), ``speedup`` (over one
        learner), ``efficiency`` (speedup / count), ``bound`` (the server's ``X1 / u1``,
        updates/s; inf for a server never busy), ``x1`` and ``u1``. Empty when the run has no
        one-learner part (:func:`one_learner_parts` None).

    Raises:
        ValueError: a count below 1.
    """
    parts = one_learner_parts(fit)
    if parts is None:
        return pd.DataFrame()
    x1, u1 = parts
    rows = []
    for m in counts:
        x = learner_scaling(int(m), x1, u1)
        rows.append(
            {
                "num_learners": int(m),
                "predicted": x,
                "speedup": x / x1,
                "efficiency": x / x1 / m,
                "bound": x1 / u1 if u1 > 0 else math.inf,
                "x1": x1,
                "u1": u1,
            }
        )
    return pd.DataFrame(rows)


def learner_check_table(rows: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Headers and text cells of a learner check's rows, :func:`learner_scaling_check`'s
    (Gorila: applied updates/s) or :func:`sync_learner_check`'s (synchronous learners: env
    steps/s); the page regions and ``python -m analysis.plan learners`` lay out the same."""
    unit = "env steps/s" if "b" in rows else "updates/s"
    headers = ["run", "seeds", "learners", f"predicted {unit}", f"measured {unit} [range]", "error"]
    cells = [
        [
            f"{r.run} ("
            + ("held out" if r.held_out else "the fit's seeds: not a held-out check")
            + ")",
            f"{min(r.seeds)}-{max(r.seeds)}",
            str(r.num_learners),
            f"{r.predicted:,.0f}",
            f"{r.measured:,.0f} [{r.low:,.0f}-{r.high:,.0f}]",
            fmt_error(r.error),
        ]
        for r in rows.itertuples()
    ]
    return headers, cells


def learner_check_words(rows: pd.DataFrame) -> str:
    """One sentence on a learner check's rows (non-empty). Gorila's
    (:func:`learner_scaling_check`): one learner's parts, the server's bound they imply and the
    largest miss; synchronous learners' (:func:`sync_learner_check`): :func:`_sync_words`."""
    if "b" in rows:
        return _sync_words(rows)
    x1, u1 = rows["x1"].iloc[0], rows["u1"].iloc[0]
    worst = rows.loc[rows["error"].abs().idxmax()]
    return (
        f"In plain words: one learner applied {x1:.0f} updates/s with the parameter server "
        f"busy {u1:.0%} of the time, so Amdahl's law bounds any learner count at "
        f"{x1 / u1:.0f} updates/s; the largest miss is {worst.num_learners} learners, "
        f"{fmt_error(worst.error)}."
    )


def _check_row(run: Study, held_out: bool, g: pd.DataFrame, m: int, predicted: float) -> dict:
    """A learner check's row: ``run``'s trials ``g`` at ``m`` learners (their ``rate``s)
    against ``predicted``."""
    measured = float(g["rate"].median())
    return {
        "run": run.res.path.name,
        "held_out": held_out,
        "seeds": sorted(int(s) for s in g["seed"]),
        "num_learners": int(m),
        "predicted": predicted,
        "measured": measured,
        "low": float(g["rate"].min()),
        "high": float(g["rate"].max()),
        "error": predicted / measured - 1.0,
    }


def learner_scaling_check(fit: Study, held_out: list[Study]) -> pd.DataFrame:
    """Every learner count above one, predicted from the fit run's one-learner GORILA trials
    alone (median rate ``X1`` and server share ``u1``, :func:`learner_scaling`) against what
    its own trials measured: the fit run's other counts (not used by the model) and each
    held-out run's.

    Returns:
        One row per (run, learner count): ``run`` (the run's name), ``held_out`` (bool),
        ``seeds`` (its trials' seeds), ``num_learners``, ``predicted`` and ``measured``
        (median applied updates/s), ``low``/``high`` (the measured trials' range), ``error``
        (predicted / measured - 1), ``x1`` and ``u1``. Empty when the fit has no one-learner
        trial with the server's busy share recorded.
    """
    parts = one_learner_parts(fit)
    if parts is None:
        return pd.DataFrame()
    x1, u1 = parts
    rows = []
    for run, is_held_out in [(fit, False), *((h, True) for h in held_out)]:
        rates = learner_rates(run)
        for m, g in rates[rates["num_learners"] > 1].groupby("num_learners"):
            predicted = learner_scaling(int(m), x1, u1)
            rows.append({**_check_row(run, is_held_out, g, m, predicted), "x1": x1, "u1": u1})
    return pd.DataFrame(rows)


def sync_learner_rates(data: Study) -> pd.DataFrame:
    """Per trial of a run whose RLlib algorithm trains with ``num_learners`` >= 1 learner
    actors (RLlib's synchronous data-parallel learners; GORILA's asynchronous ones are
    :func:`learner_rates`): ``algorithm``, ``num_learners``, ``seed`` and the env steps per
    second (``rate``, 1/s) between the trial's first and last recorded iterations, the pace of
    its whole sample-then-learn loop. Env steps, not learner updates: with M learners RLlib
    splits each train batch over them, so one synchronous update trains M minibatches and
    updates per second do not compare across M. Trials with fewer than two iterations are
    left out."""
    trials, progress = data.res.trials, data.res.progress
    rows = []
    sync = trials[(trials["algorithm"] != "GORILA") & (trials["num_learners"] >= 1)]
    for _, t in sync.iterrows():
        if (window := _iteration_window(progress, t["trial_id"])) is None:
            continue
        a, b, dt = window
        rows.append(
            {
                "algorithm": str(t["algorithm"]),
                "num_learners": int(t["num_learners"]),
                "seed": int(t["seed"]),
                "rate": float(b["env_steps"] - a["env_steps"]) / dt,
            }
        )
    return pd.DataFrame(rows, columns=["algorithm", "num_learners", "seed", "rate"])


def sync_learner_scaling(m: int, serial_s: float, parallel_s: float) -> float:
    """Env steps/s of a synchronous learner layout with ``m`` learners: ``1 / (a + b / m)``,
    ``a`` = ``serial_s`` (seconds per env step that do not shrink with more learners: sampling,
    the driver, the gradients' all-reduce) and ``b`` = ``parallel_s`` (seconds per env step
    the learners split: their forward and backward passes). Amdahl's law (G. Amdahl, AFIPS
    1967) on the loop's time per env step; ``b`` < 0 when the second learner cost more than it
    split, and then more learners predict a slower loop.

    Raises:
        ValueError: ``m`` below 1, or ``a + b / m`` not positive (no finite pace).
    """
    per_step = serial_s + parallel_s / m if m >= 1 else math.nan
    if not per_step > 0:
        raise ValueError(
            f"sync_learner_scaling: m={m}, serial {serial_s}, parallel {parallel_s} s per env "
            "step: need m >= 1 and a positive time per env step"
        )
    return 1.0 / per_step


def sync_learner_parts(fit: Study) -> tuple[str, int, int, float, float] | None:
    """``(algorithm, m1, m2, a, b)``: :func:`sync_learner_scaling`'s serial and parallel
    seconds per env step, solved exactly from the median rates (:func:`sync_learner_rates`) of
    ``fit``'s two smallest learner counts ``m1 < m2`` of its first algorithm with synchronous
    learners; None with fewer than two learner counts."""
    rates = sync_learner_rates(fit)
    if rates.empty:
        return None
    algorithm = str(rates["algorithm"].iloc[0])
    med = rates[rates["algorithm"] == algorithm].groupby("num_learners")["rate"].median()
    if len(med) < 2:
        return None
    (m1, x1), (m2, x2) = list(med.items())[:2]
    b = (1.0 / x1 - 1.0 / x2) / (1.0 / m1 - 1.0 / m2)
    return algorithm, int(m1), int(m2), 1.0 / x1 - b / m1, b


def sync_learner_check(fit: Study, held_out: list[Study]) -> pd.DataFrame:
    """Every learner count of ``fit``'s synchronous-learner algorithm besides the two it is
    fitted on (:func:`sync_learner_parts`), in ``fit`` and in each ``held_out`` run, predicted
    (:func:`sync_learner_scaling`) against the env steps/s its trials measured.

    Returns:
        One row per (run, learner count): ``run``, ``held_out`` (bool), ``seeds``,
        ``num_learners``, ``predicted`` and ``measured`` (median env steps/s), ``low``/``high``
        (the measured trials' range), ``error`` (predicted / measured - 1), and the fit's
        ``algorithm``, ``m1``, ``m2``, ``x1``, ``x2`` (its two counts' median env steps/s),
        ``a`` and ``b`` (seconds per env step). Empty when the fit has fewer than two learner
        counts or no run has a third.
    """
    parts = sync_learner_parts(fit)
    if parts is None:
        return pd.DataFrame()
    algorithm, m1, m2, a, b = parts
    rows = []
    for run, is_held_out in [(fit, False), *((h, True) for h in held_out)]:
        rates = sync_learner_rates(run)
        rates = rates[rates["algorithm"] == algorithm]
        for m, g in rates.groupby("num_learners"):
            if not is_held_out and int(m) in (m1, m2):
                continue
            try:
                predicted = sync_learner_scaling(int(m), a, b)
            except ValueError:
                predicted = math.nan
            rows.append(
                {
                    **_check_row(run, is_held_out, g, m, predicted),
                    "algorithm": algorithm,
                    "m1": m1,
                    "m2": m2,
                    "x1": 1.0 / (a + b / m1),
                    "x2": 1.0 / (a + b / m2),
                    "a": a,
                    "b": b,
                }
            )
    return pd.DataFrame(rows)


def _sync_words(rows: pd.DataFrame) -> str:
    """:func:`sync_learner_check`'s rows in a sentence: the fit's two counts, the serial share
    they imply and the largest miss."""
    r = rows.iloc[0]
    worst = rows.loc[rows["error"].abs().idxmax()]
    serial = r.a / (r.a + r.b) if r.a + r.b > 0 else math.nan
    gain = (
        "a second learner's forward and backward passes saved less than it cost"
        if r.b <= 0
        else f"{serial:.0%} of one learner's time per env step does not shrink with more learners"
    )
    return (
        f"In plain words: {r.algorithm} sampled and learned {r.x1:,.0f} env steps/s with "
        f"{r.m1} learner{'s' if r.m1 != 1 else ''} and {r.x2:,.0f} with {r.m2}, so {gain}; "
        f"the largest miss is {worst.num_learners} learners, {fmt_error(worst.error)}."
    )


def _startup_line(points: list[tuple[int, float]], k0: float) -> tuple[float, float]:
    """``(a, b)`` of ``s = a + b N / min(N, k0)`` by least squares over ``(N, start-up)``."""
    if len({n for n, _ in points}) < 2:
        return float(np.mean([s for _, s in points])), 0.0
    x = np.array([n / min(n, k0) for n, _ in points], dtype=float)
    y = np.array([s for _, s in points], dtype=float)
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def _predict(
    parts: list[tuple[Parts, bool]],
    medians: list[tuple[float, float, float]],
    k0: float,
    cpu_s: float,
    wait_s: float,
    target: Machine,
    run_cpu_s: float,
    driver: list[float],
    learner: list[float],
) -> list[tuple[float, str, float, float, float]]:
    """Per configuration ``(rate, ceiling, start-up, TTT, w)`` from its ``(start-up, rate,
    steps)`` medians and its driver's and learner's CPU per env step (``driver``,
    ``learner``, seconds; NaN: unknown) on the source, at ``cpu_s`` env CPU per step on the
    target (``w``: the source's core-seconds per env step)."""
    lines: dict[str, tuple[float, float]] = {}
    for alg in {p.algorithm for p, ref in parts if not ref}:
        pts = [
            (p.num_env_runners, m[0])
            for (p, ref), m in zip(parts, medians, strict=True)
            if not ref and p.algorithm == alg and math.isfinite(m[0])
        ]
        lines[alg] = _startup_line(pts, k0) if pts else (math.nan, 0.0)
    out = []
    for (p, ref), (startup0, rate0, steps), d, lrn in zip(
        parts, medians, driver, learner, strict=True
    ):
        w = min(k0, _processes(p.num_env_runners, ref)) / rate0 if rate0 > 0 else math.inf
        rate, ceiling = roofline_rate(
            w, p.num_env_runners, ref, cpu_s, wait_s, target, run_cpu_s, d, lrn
        )
        if ref:
            startup = startup0 / target.core_speed
        else:
            a, b = lines[p.algorithm]
            n = p.num_env_runners
            startup = max(a + b * n / min(n, target.cores), 0.0) / target.core_speed
        out.append((rate, ceiling, startup, startup + steps / rate, w))
    return out


def transfer(
    data: Study,
    target: Machine,
    *,
    cores: float | None = None,
    cpu_cost_ms: float | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> list[Transferred]:
    """Predict each configuration of ``data`` (the reference first, then each algorithm's
    best configuration per env runner count with measured parts) on ``target``.

    Args:
        data: the source run (a CPU-bound study, measured with its cores saturated).
        target: the machine to predict.
        cores: the cores the source run used (default :func:`source_cores`).
        cpu_cost_ms: the env's CPU per step on the target (milliseconds of a core there;
            default: the run's own ``step_cpu_ms``).
        n_resamples, seed: the seed bootstrap of the intervals.

    Returns:
        One :class:`Transferred` per configuration; empty when none has measured parts.

    Raises:
        ValueError: when the source's cores are unknown.
    """
    return _transfer(_Source.of(data, cores), target, cpu_cost_ms, n_resamples, seed)


@dataclass(frozen=True)
class _Source:
    """What :func:`transfer` reads of the measured run, read once."""

    parts: list[tuple[Parts, bool]]  # (parts, is the reference), the reference first
    medians: list[tuple[float, float, float]]  # (start-up s, env steps/s, env steps)
    cores: float
    cpu_s: float  # the run's env CPU per step (seconds)
    wait_s: float  # the run's env wait per step (seconds)
    driver: list[float]  # per part, the driver's CPU per env step (seconds; NaN: unknown)
    learner: list[float]  # per part, the learner's updates' CPU per env step (likewise)

    @classmethod
    def of(cls, data: Study, cores: float | None) -> _Source:
        k0 = float(cores) if cores is not None else source_cores(data)
        if not (math.isfinite(k0) and k0 > 0):
            raise ValueError("the source run's cores are unknown: pass cores= (--source-cores)")
        ref, found = measured_parts(data)
        parts = ([(ref, True)] if ref is not None else []) + [(p, False) for p in found]
        medians = [
            (p.startup_s, p.lanes / (p.overhead_s + p.run_cost_s), p.steps) for p, _ in parts
        ]
        cpu_ms, wait_ms = env_costs_ms(data)
        driver = [driver_cpu_per_step(data, p.config_id) for p, _ in parts]
        learner = [learner_cpu_per_step(data, p.config_id) for p, _ in parts]
        return cls(parts, medians, k0, cpu_ms / 1000.0, wait_ms / 1000.0, driver, learner)


def _transfer(
    src: _Source, target: Machine, cpu_cost_ms: float | None, n_resamples: int, seed: int
) -> list[Transferred]:
    parts, medians, k0 = src.parts, src.medians, src.cores
    if not parts:
        return []
    run_cpu_s, wait_s = src.cpu_s, src.wait_s
    cpu_s = run_cpu_s if cpu_cost_ms is None else cpu_cost_ms / 1000.0
    point = _predict(parts, medians, k0, cpu_s, wait_s, target, run_cpu_s, src.driver, src.learner)
    rng = np.random.default_rng(seed)
    draws = np.full((n_resamples, len(parts)), np.nan)
    trials = [np.array([t[:3] for t in p.trials], dtype=float) for p, _ in parts]
    reached = [np.array([t[3] for t in p.trials], dtype=bool) for p, _ in parts]
    if all(len(t) >= 2 for t in trials):
        for i in range(n_resamples):
            meds = []
            for t, r in zip(trials, reached, strict=True):
                k = draw_seeds(len(t), rng)
                steps = t[k][r[k], 2]
                meds.append(
                    (
                        float(np.nanmedian(t[k, 0])),
                        float(np.nanmedian(t[k, 1])),
                        float(np.median(steps)) if len(steps) else math.inf,
                    )
                )
            draws[i] = [
                x[3]
                for x in _predict(
                    parts, meds, k0, cpu_s, wait_s, target, run_cpu_s, src.driver, src.learner
                )
            ]
    out = []
    for j, ((p, is_ref), (rate, ceiling, startup, ttt, w), d, lrn) in enumerate(
        zip(parts, point, src.driver, src.learner, strict=True)
    ):
        col = draws[:, j]
        lo, hi = (
            (
                float(np.quantile(col, 0.025, method="inverted_cdf")),
                float(np.quantile(col, 0.975, method="inverted_cdf")),
            )
            if not np.isnan(col).all()
            else (math.nan, math.nan)
        )
        out.append(
            Transferred(
                p.algorithm,
                p.num_env_runners,
                is_ref,
                w * 1000.0,
                rate,
                ceiling,
                startup,
                p.steps,
                ttt,
                lo,
                hi,
                d * 1000.0,
                lrn * 1000.0,
            )
        )
    return out


def break_even_on(data: Study, target: Machine, *, cores: float | None = None) -> pd.DataFrame:
    """The CPU-bound break-even on ``target``: per configuration of ``data`` (each
    algorithm's best per env runner count), the env CPU cost per step above which its
    predicted TTT there (:func:`transfer` at that cost) falls below the reference's.

    Returns:
        One row per distributed configuration: ``algorithm, num_env_runners,
        break_even_ms`` (0: already faster at no env cost; ``inf``: never), ``speedup_bound``
        (the absolute speedup as the env cost grows, ``S_ref min(N, K) / S(N)``) and
        ``steps_ratio`` (``S(N) / S_ref``). Empty without a reference.

    Raises:
        ValueError: when the source's cores are unknown.
    """
    from scipy.optimize import brentq

    src = _Source.of(data, cores)

    def ttt_gap(c_ms: float, j: int) -> float:
        """Configuration ``j``'s predicted TTT minus the reference's at ``c_ms``."""
        got = _transfer(src, target, c_ms, 0, 0)
        return got[j].ttt_s - got[0].ttt_s

    at0 = _transfer(src, target, 0.0, 0, 0)
    if not at0 or not at0[0].reference:
        return pd.DataFrame()
    ref_steps = at0[0].steps
    rows = []
    for j, p in enumerate(at0):
        if p.reference:
            continue
        bound = ref_steps * min(p.num_env_runners, target.cores) / p.steps
        if ttt_gap(0.0, j) <= 0:
            be = 0.0
        elif bound <= 1.0:
            be = math.inf
        else:  # the gap falls with the cost (convex, ending in a negative slope): one root
            hi = 1.0
            while ttt_gap(hi, j) > 0 and hi < 1e7:
                hi *= 2.0
            be = brentq(ttt_gap, 0.0, hi, args=(j,), xtol=1e-3) if hi < 1e7 else math.inf
        rows.append(
            {
                "algorithm": p.algorithm,
                "num_env_runners": p.num_env_runners,
                "break_even_ms": be,
                "speedup_bound": bound,
                "steps_ratio": p.steps / ref_steps,
            }
        )
    return pd.DataFrame(rows)


def break_even_on_words(rows: pd.DataFrame, target: Machine) -> str:
    """:func:`break_even_on` in plain words: the earliest CPU-bound break-even on ``target``,
    or that there is none and the bound that says why."""
    if rows.empty:
        return "No CPU-bound break-even: the run has no single-process reference with parts."
    where = f"On {target.cores:g} core(s) with CPU-bound envs"
    finite = rows[np.isfinite(rows["break_even_ms"].astype(float))]
    if len(finite):
        first = finite.loc[finite["break_even_ms"].astype(float).idxmin()]
        return (
            f"{where}, {config_phrase(first['algorithm'], first['num_env_runners'])} "
            f"is predicted to beat one process from ~{first['break_even_ms']:.0f} "
            f"ms of CPU per env step (its absolute speedup tends to "
            f"{first['speedup_bound']:.2f}x as the cost grows)."
        )
    best = rows.loc[rows["speedup_bound"].astype(float).idxmax()]
    return (
        f"{where}, no configuration measured is predicted to beat one process at any env "
        f"cost: the best, {config_phrase(best['algorithm'], best['num_env_runners'])}, "
        f"needs {best['steps_ratio']:.1f}x the reference's env steps and spreads "
        f"them over {min(int(best['num_env_runners']), target.cores):g} core(s), so its "
        f"absolute speedup tends to {best['speedup_bound']:.2f}x at most."
    )


def check_rows(predicted: list[Transferred], measured: Study) -> pd.DataFrame:
    """Predictions against the same study measured on the target machine.

    Only the measured run's TTT, sampling rate, start-up and absolute speedup are read: none
    of its parts enters a prediction.

    Returns:
        One row per predicted configuration the target run also ran (algorithm and env runner
        count; its best configuration there): ``algorithm, num_env_runners, reference,
        ceiling, cpu_ms_per_step, driver_ms_per_step, learner_ms_per_step, predicted_rate,
        rate`` (env steps/s, measured median),
        ``predicted_startup_s, startup_s, predicted_ttt_s, predicted_low_s,
        predicted_high_s, ttt_s, ttt_low_s, ttt_high_s`` (seconds), ``ttt_error``
        (predicted / measured - 1), ``inside`` (the measured median lies in the prediction's
        interval), ``predicted_abs_speedup, abs_speedup, abs_speedup_low, abs_speedup_high``
        (NaN for the reference or without one).
    """
    from analysis.parts import trial_components

    tm = measured.tm[measured.tm["status"] != "error"]
    comps = trial_components(tm, measured.res.progress).set_index("trial_id")
    t = tm.set_index("trial_id").join(comps[["startup_s", "rate"]])
    s = measured.summary
    refs = s[s["is_reference"]]
    rows_by_key = {("reference", 0): refs.iloc[0]} if len(refs) else {}
    best = best_configs(s[~s["is_reference"]], ("algorithm", "num_env_runners"))
    rows_by_key.update(
        {(str(r["algorithm"]), int(r["num_env_runners"])): r for _, r in best.iterrows()}
    )
    sp = measured.configs
    ref_pred = next((p.ttt_s for p in predicted if p.reference), math.nan)
    rows = []
    for p in predicted:
        m = rows_by_key.get(("reference", 0) if p.reference else (p.algorithm, p.num_env_runners))
        if m is None:
            continue
        g = t[t["config_id"] == m["config_id"]]
        ttt = float(m["ttt_s"])
        row = {
            "algorithm": p.algorithm,
            "num_env_runners": p.num_env_runners,
            "reference": p.reference,
            "ceiling": p.ceiling,
            "cpu_ms_per_step": p.cpu_ms_per_step,
            "driver_ms_per_step": p.driver_ms_per_step,
            "learner_ms_per_step": p.learner_ms_per_step,
            "predicted_rate": p.rate,
            "rate": finite_median(g["rate"]),
            "predicted_startup_s": p.startup_s,
            "startup_s": finite_median(g["startup_s"]),
            "predicted_ttt_s": p.ttt_s,
            "predicted_low_s": p.ttt_low_s,
            "predicted_high_s": p.ttt_high_s,
            "ttt_s": ttt,
            "ttt_low_s": float(m["ttt_low_s"]),
            "ttt_high_s": float(m["ttt_high_s"]),
            "ttt_error": p.ttt_s / ttt - 1.0 if math.isfinite(ttt) else math.nan,
            "inside": bool(p.ttt_low_s <= ttt <= p.ttt_high_s),
            "predicted_abs_speedup": math.nan if p.reference else ref_pred / p.ttt_s,
        }
        r = sp.loc[m["config_id"]] if not p.reference and m["config_id"] in sp.index else None
        for key in ("abs_speedup", "abs_speedup_low", "abs_speedup_high"):
            row[key] = float(r[key]) if r is not None and key in r else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


#: Column headers of :func:`check_table_rows`.
CHECK_HEADERS = [
    "configuration",
    "CPU per env step (ms, source)",
    "of it the driver's (ms, source)",
    "of it the learner's updates (ms, source)",
    "binding ceiling",
    "env steps/s: predicted / measured",
    "start-up: predicted / measured",
    "predicted TTT [95% CI]",
    "measured TTT [95% CI]",
    "error",
    "absolute speedup: predicted / measured [95% CI]",
]


def check_table_rows(rows: pd.DataFrame) -> list[list[str]]:
    """:func:`check_rows` as table cells under :data:`CHECK_HEADERS` (the terminal and the
    pages print the same cells)."""
    out = []
    for _, r in rows.iterrows():
        name = config_name(
            r["algorithm"],
            None if r["reference"] else r["num_env_runners"],
            reference=r["reference"],
        )
        speed = (
            "-"
            if r["reference"]
            else f"{_x(r['predicted_abs_speedup'])}x / {_x(r['abs_speedup'])}x"
            + fmt_interval(r["abs_speedup_low"], r["abs_speedup_high"], _x)
        )
        out.append(
            [
                name,
                f"{r['cpu_ms_per_step']:.1f}",
                driver_cell(r["reference"], r["driver_ms_per_step"]),
                learner_cell(r["reference"], r["learner_ms_per_step"]),
                r["ceiling"],
                f"{r['predicted_rate']:.0f} / {r['rate']:.0f}",
                f"{fmt_s(r['predicted_startup_s'])} / {fmt_s(r['startup_s'])}",
                fmt_ci(r["predicted_ttt_s"], r["predicted_low_s"], r["predicted_high_s"], fmt_s),
                fmt_ci(r["ttt_s"], r["ttt_low_s"], r["ttt_high_s"], fmt_s),
                fmt_error(r["ttt_error"]),
                speed,
            ]
        )
    return out


def _x(value: float) -> str:
    return f"{value:.2f}" if math.isfinite(value) else "n/a"


def check_words(rows: pd.DataFrame, source: float, target: Machine) -> str:
    """The check in plain words: how far the predicted TTT and sampling rate lie from the
    measured ones, and how many measured medians fall inside the predicted intervals."""
    if rows.empty:
        return "No check: the target run ran none of the source run's configurations."
    err = rows["ttt_error"].abs().dropna()
    rate_err = (rows["predicted_rate"] / rows["rate"] - 1.0).abs().dropna()
    inside = int(rows["inside"].sum())
    return (
        f"Predicted from {source:g} core(s) for {target.cores:g} core(s) "
        f"(per-core speed {target.core_speed:g}x, the measured run's env cost): the TTT misses the measured median by "
        f"{err.median():.0%} (median over {len(err)} configurations; at most "
        f"{err.max():.0%}), the sampling rate by {rate_err.median():.0%} (at most "
        f"{rate_err.max():.0%}); {inside} of {len(rows)} measured medians lie inside the "
        "prediction's interval."
    )

"""Write results as trials finish: trials.parquet, progress.parquet, environment.json.

:class:`ResultsRecorder` is a Tune callback living in the driver. Each finished (or errored)
trial appends one row to ``trials.parquet`` and flushes its iterations to
``progress.parquet`` (written to a temporary file, then renamed), so a crash loses at most the
trials that were running. On ``--resume`` it loads what is already recorded and never records
a trial twice. Column meanings: docs/results.md.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from ray.tune import Callback, Stopper
from rich.console import Console
from rich.markup import escape

from sweeps.engine import rundir
from sweeps.engine.capping import AdaptiveCapping
from sweeps.engine.rundir.schema import (
    PROGRESS_COLUMNS,
    TRIAL_COLUMNS,
    VOCAB_COLUMNS,
    as_float,
    concurrent_envs,
    first_crossing,
    ttt_resolution,
)
from sweeps.engine.rundir.schema import read_parquet as _read_parquet
from sweeps.engine.rundir.schema import write_parquet as _write_parquet
from sweeps.engine.search import META_KEYS


def now_iso() -> str:
    """Current UTC time, ISO 8601 with a Z."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: This process's live Tune callbacks and stoppers, by role (:class:`LiveOnRestore`).
_LIVE: dict[str, Any] = {}


class _InertStopper(Stopper):
    def __call__(self, trial_id: str, result: dict) -> bool:
        return False

    def stop_all(self) -> bool:
        return False


def _live(role: str) -> Any:
    """Unpickling a :class:`LiveOnRestore`: this process's live object of ``role``, or an
    inert one (a stopper that never stops, a callback that does nothing) if there is none."""
    obj = _LIVE.get(role)
    if obj is not None:
        return obj
    return _InertStopper() if role.startswith("stopper.") else Callback()


class LiveOnRestore:
    """A Tune callback or stopper that a resumed sweep replaces with this process's own.

    ``tune.Tuner.restore`` unpickles the callbacks and stoppers pickled with the first run
    (its ``tuner.pkl``) and has no public way to pass new ones. An instance registers itself
    as the live object of its :attr:`live_role` in this process and pickles as a reference to
    that role, so unpickling returns the unpickling process's live object: on ``--resume``,
    the one ``sweeps.run`` built for this run (which reads what is already recorded in
    ``setup()``), not a stale copy of the first run's.
    """

    #: one live object per role and process; roles of stoppers start with ``"stopper."``
    live_role = ""

    def _make_live(self) -> None:
        _LIVE[self.live_role] = self

    def __reduce__(self):
        return (_live, (self.live_role,))


class Capper(LiveOnRestore, Stopper):
    """Adaptive capping (:class:`sweeps.engine.capping.AdaptiveCapping`) as a Ray Tune stopper.

    After every reported iteration of a trial, asks ``capping`` whether to stop it, with its
    elapsed wall-clock since the first attempt's start and the incumbent's TTT (both from
    ``recorder``). A stopped trial is recorded as censored with ``censor_reason = "capped"``;
    Optuna gets the censored objective of its last iteration
    (:func:`sweeps.engine.search.censored_objective`, ≥ the budget), so it still learns that the
    configuration is slow.
    """

    live_role = "stopper.capping"

    def __init__(self, capping: AdaptiveCapping, recorder: ResultsRecorder):
        self.capping = capping
        self.recorder = recorder
        self._make_live()

    def __call__(self, trial_id: str, result: dict) -> bool:
        elapsed = float(result.get("wall_time_s", 0.0)) + self.recorder.attempt_offset_s(trial_id)
        return self.capping.check(
            trial_id,
            result.get("config") or {},
            elapsed,
            bool(result.get("reached")),
            self.recorder.incumbent_ttt_s(),
        )

    def stop_all(self) -> bool:
        return False


class StopOnWriteError(LiveOnRestore, Stopper):
    """A Tune stopper that ends the whole sweep once ``recorder`` failed to write its results
    (:attr:`ResultsRecorder.write_error`): trials that could not be recorded are not run."""

    live_role = "stopper.write_error"

    def __init__(self, recorder: ResultsRecorder):
        self.recorder = recorder
        self._make_live()

    def __call__(self, trial_id: str, result: dict) -> bool:
        return False

    def stop_all(self) -> bool:
        return self.recorder.write_error is not None


def _fmt_duration(seconds: float) -> str:
    s = max(0, round(seconds))
    return (
        f"{s // 3600}h{s % 3600 // 60:02d}m"
        if s >= 3600
        else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")
    )


class SweepProgress:
    """The sweep's progress line: trials done / expected, the incumbent's TTT, elapsed time and
    an ETA (printed after every finished trial, and kept live at the bottom of a terminal).

    ETA: the trials still to finish, each taking the median duration of the trials finished so
    far (the running ones minus what they already ran), divided by the trials that run at
    once; "at most": the same with every trial running its whole time budget.

    Args:
        expected: trials the sweep will run in all, before adaptive capping skips any.
        budget_s: time budget per trial (seconds), None if the budget is in env steps only.
        max_concurrent: trials running at once (at least 1).
        start: ``time.time()`` when the command started.
        capping: the run's :class:`sweeps.engine.capping.AdaptiveCapping`, which says which seeds
            the run leaves unrun; None: none are.
    """

    def __init__(
        self,
        expected: int,
        budget_s: float | None,
        max_concurrent: int,
        start: float,
        capping: AdaptiveCapping | None = None,
    ):
        self.expected = int(expected)
        self.budget_s = budget_s
        self.max_concurrent = max(1, int(max_concurrent))
        self.start = start
        self.capping = capping

    def skipped_in(self, trials: list[dict[str, Any]]) -> int:
        """Seeds the sweep will not run, judged from the recorded ``trials`` rows: those
        adaptive capping skipped and those of configurations whose trial raised
        (:meth:`sweeps.engine.capping.AdaptiveCapping.unrun_seeds`)."""
        return sum(self.capping.unrun_seeds(trials).values()) if self.capping else 0

    def line(
        self,
        done: int,
        durations: list[float],
        running: list[float],
        incumbent: float | None,
        now: float | None = None,
        skipped: int = 0,
    ) -> str:
        """One line. ``done``: trials recorded (earlier runs of a resumed sweep included);
        ``durations``: wall-clock seconds of the trials finished by this run (references
        left out: they are no typical trial); ``running``:
        seconds the running trials have run so far; ``incumbent``: TTT (s) or None;
        ``skipped``: seeds adaptive capping skipped (they leave the expected count)."""
        now = time.time() if now is None else now
        expected = self.expected - skipped
        left = max(expected - done - len(running), 0)
        parts = [
            f"{done}/{expected} trials done" + (f" ({skipped} seed(s) skipped)" if skipped else ""),
            f"incumbent TTT {incumbent:.1f} s" if incumbent is not None else "no incumbent yet",
            f"elapsed {_fmt_duration(now - self.start)}",
        ]
        if done < expected:
            eta = []
            if durations:
                typical = statistics.median(durations)
                eta.append(
                    "ETA ~"
                    + _fmt_duration(
                        (left * typical + sum(max(typical - r, 0.0) for r in running))
                        / self.max_concurrent
                    )
                )
            if self.budget_s:
                eta.append(
                    "at most "
                    + _fmt_duration(
                        (left * self.budget_s + sum(max(self.budget_s - r, 0.0) for r in running))
                        / self.max_concurrent
                    )
                )
            parts.append(" ".join(eta) if eta else "ETA after the first trial")
        return " · ".join(parts)


class ResultsRecorder(LiveOnRestore, Callback):
    """Tune callback recording every trial into ``run_dir`` (see module docstring).

    Args:
        run_dir: ``results/<sweep>/<run_id>``.
        target: resolved target ``{"metric", "value"}``.
        budget: ``{"time_s", "env_steps"}`` (None where unset).
        resolved_params: the trial-config keys that are algorithm params (recorded as columns).
        command_start: ``time.time()`` when the command started (for the start-up time).
        capping: the run's :class:`sweeps.engine.capping.AdaptiveCapping` (which trials it capped
            decides their ``censor_reason``); None: capping off.
        progress: the run's progress line (:class:`SweepProgress`); None: no line.
    """

    live_role = "callback.recorder"

    def __init__(
        self,
        run_dir: Path,
        target: dict,
        budget: dict,
        command_start: float,
        mirror=None,
        step_latency_ms: float = 0.0,
        step_cpu_ms: float = 0.0,
        capping: AdaptiveCapping | None = None,
        progress: SweepProgress | None = None,
    ):
        self._make_live()
        self.run_dir = Path(run_dir)
        #: the env's modelled step latency (envs.latency), recorded in every trial row
        self.step_latency_ms = float(step_latency_ms)
        #: the env's modelled CPU cost per step (envs.latency), recorded in every trial row
        self.step_cpu_ms = float(step_cpu_ms)
        #: a :class:`sweeps.engine.rundir.mirror.Mirror` uploading every file written, or None
        self.mirror = mirror
        self.target = target
        self.budget = budget
        self.command_start = command_start
        self._trials: list[dict[str, Any]] = []
        self._progress: list[dict[str, Any]] = []
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._recorded: set[str] = set()
        self._starts: dict[str, list[float]] = {}  # trial id -> time.time() of each attempt
        self.first_iteration_s: float | None = None
        #: The first OSError a write of the results met (disk full, permissions), or None.
        #: Set instead of raising (Tune would log a traceback and go on); ``sweeps.run``
        #: stops the sweep on it (:class:`StopOnWriteError`) and exits 3.
        self.write_error: OSError | None = None
        self.capping = capping if capping is not None else AdaptiveCapping(None, 1)
        self._reconciled = False  # Tune's restored finished trials checked (on_step_begin)
        #: the progress line (:class:`SweepProgress`); None: no line
        self.progress = progress
        self._durations: list[float] = []  # wall-clock seconds of each trial finished here
        self._live_at = 0.0

    def incumbent_ttt_s(self) -> float | None:
        """TTT (seconds) of the fastest configuration recorded so far, or None.

        Per configuration (``config_id``, the reference excluded) whose recorded seeds all
        reached the target: the median of their TTTs; the incumbent is the smallest.
        """
        by_config: dict[str, list[float]] = {}
        for row in self._trials:
            if row.get("is_reference"):
                continue
            ttt = row["time_to_target_s"] if row["status"] == "reached" else math.nan
            by_config.setdefault(row["config_id"], []).append(ttt)
        medians = [
            statistics.median(v)
            for v in by_config.values()
            if v and all(math.isfinite(t) for t in v)
        ]
        return min(medians) if medians else None

    @property
    def trials(self) -> list[dict[str, Any]]:
        """The trial rows recorded so far (``trials.parquet``'s, earlier runs of a resumed
        sweep included), in the order they were recorded."""
        return self._trials

    @property
    def console(self) -> Console:
        if getattr(self, "_console", None) is None:
            self._console = Console(highlight=False)
        return self._console

    # -- state on disk ---------------------------------------------------------------------
    def setup(self, **info):
        trials = self.run_dir / rundir.TRIALS
        progress = self.run_dir / rundir.PROGRESS
        for stray in self.run_dir.glob(".*.tmp"):  # left by a writer that was killed
            stray.unlink(missing_ok=True)
        if trials.exists():
            self._trials = _read_parquet(trials).to_dict("records")
            self._recorded = {r["trial_id"] for r in self._trials}
        if progress.exists():
            df = _read_parquet(progress)
            self._progress = df[df.trial_id.isin(self._recorded)].to_dict("records")

    def _flush(self) -> None:
        # Progress first, the trial's row last: a kill between the two writes leaves progress
        # rows of a trial with no row (ignored, and rewritten when the trial reruns on
        # --resume), never a recorded trial whose learning curve is lost.
        try:
            if self._progress:
                _write_parquet(
                    pd.DataFrame(self._progress, columns=list(PROGRESS_COLUMNS)),
                    self.run_dir / rundir.PROGRESS,
                    PROGRESS_COLUMNS,
                )
                if self.mirror is not None:
                    self.mirror.put(self.run_dir / rundir.PROGRESS)
            if self._trials:
                _write_parquet(
                    pd.DataFrame(self._trials), self.run_dir / rundir.TRIALS, TRIAL_COLUMNS
                )
                if self.mirror is not None:  # progress first, the rows last, there too
                    self.mirror.put(self.run_dir / rundir.TRIALS)
        except OSError as e:
            if self.write_error is None:
                self.write_error = e

    @property
    def num_recorded(self) -> int:
        """Trials recorded so far (this run and, after --resume, earlier ones)."""
        return len(self._trials)

    # -- Tune hooks ------------------------------------------------------------------------
    def on_trial_start(self, iteration, trials, trial, **info):
        """Each start of a trial's actor: the first attempt, and again for every retry Tune
        makes after an error (``FailureConfig(max_failures=...)``)."""
        self._starts.setdefault(trial.trial_id, []).append(time.time())

    @property
    def capped(self) -> dict[str, float]:
        """Trial id -> the cap (seconds) at which adaptive capping stopped it."""
        return self.capping.capped

    def note_write_error(self, error: OSError) -> None:
        """Remember the first write error (the run ends with exit 3 and says so)."""
        if self.write_error is None:
            self.write_error = error

    def attempt_offset_s(self, tid: str) -> float:
        """Seconds from the first attempt's start to this attempt's (0 for the first): a
        retried trial's time-to-target counts from its first attempt, never only the retry."""
        starts = self._starts.get(tid) or [0.0]
        return starts[-1] - starts[0]

    def on_trial_result(self, iteration, trials, trial, result, **info):
        tid = trial.trial_id
        if tid in self._recorded:
            return
        if self.first_iteration_s is None:
            self.first_iteration_s = time.time() - self.command_start
        rows = self._pending.setdefault(tid, [])
        it = int(result.get("training_iteration", len(rows) + 1))
        rows[:] = [r for r in rows if r["iteration"] < it]  # a restarted trial starts over
        rows.append(
            {
                "trial_id": tid,
                "iteration": it,
                "wall_time_s": float(result["wall_time_s"]) + self.attempt_offset_s(tid),
                "env_steps": int(result["env_steps"]),
                "episodes": int(result["episodes"]),
                "episode_return_mean": float(result["episode_return_mean"]),
                "evaluation_return": float(result.get("evaluation_return", math.nan)),
                "eval_time_s": float(result.get("eval_time_s", 0.0)),
                "learner_updates": float(result["learner_updates"]),
                "env_steps_per_s": float(result["env_steps_per_s_iter"]),
                "target_metric_value": float(result["target_metric_value"]),
                **{
                    k: float(result.get(k, math.nan))
                    for k in (
                        "grad_noise_scale",
                        "grad_norm_sq",
                        "grad_trace_cov",
                        "replay_ratio",
                        "driver_cpu_s",
                        "learner_cpu_s",
                        "gradient_staleness",
                        "bytes_per_update",
                        "server_busy_s",
                    )
                },
                **{
                    k: int(result.get(k) or 0)
                    for k in ("env_restarts", "env_runner_restarts", "dropped_gradients")
                },
            }
        )

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._record(trial, error=None)

    def on_step_begin(self, iteration, trials, **info):
        if not self._reconciled:
            self._reconciled = True
            self._reconcile(trials)
        self._live()

    def on_experiment_end(self, trials, **info):
        self._reconcile(trials)
        status = getattr(self, "_status", None)
        if status is not None:
            status.stop()
            self._status = None

    # -- the progress line -------------------------------------------------------------------
    def progress_line(self, now: float | None = None) -> str | None:
        """The current :class:`SweepProgress` line, or None without one."""
        if self.progress is None:
            return None
        now = time.time() if now is None else now
        running = [now - st[0] for tid, st in self._starts.items() if tid not in self._recorded]
        return self.progress.line(
            len(self._trials),
            self._durations,
            running,
            self.incumbent_ttt_s(),
            now,
            skipped=self.progress.skipped_in(self._trials),
        )

    def _live(self) -> None:
        """Keep the progress line at the bottom of a terminal (at most once a second)."""
        if self.progress is None or not self.console.is_terminal:
            return
        now = time.time()
        if now - self._live_at < 1.0:
            return
        self._live_at = now
        line = self.progress_line(now)
        if getattr(self, "_status", None) is None:
            self._status = self.console.status(line, spinner="dots")
            self._status.start()
        else:
            self._status.update(line)

    def _reconcile(self, trials) -> None:
        """Record the trials Tune's restored state calls finished but ``trials.parquet`` lacks.

        That happens when the results could not be written (disk full) or the driver died
        between Tune saving its state and the recorder writing: Tune will not run such a trial
        again on ``--resume``, so its row and learning curve are rebuilt from the results Tune
        kept in the trial's folder (``result.json``, one reported result per line).
        """
        for trial in trials:
            if trial.trial_id in self._recorded or trial.status not in ("TERMINATED", "ERROR"):
                continue
            # the trial's folder in the run's storage (tune/<trial>/), not the driver's staging
            # copy under the old Ray session's temp dir (gone after a restart)
            candidates = [Path(p) / "result.json" for p in (trial.path, trial.local_path) if p]
            path = next((c for c in candidates if c.is_file()), None)
            results = []
            if path is not None:
                for line in path.read_text().splitlines():
                    try:
                        results.append(json.loads(line))
                    except ValueError:  # a line cut short by a kill
                        break
            if (
                trial.status == "TERMINATED"
                and trial.trial_id not in self.capped
                and not (results and results[-1].get("done"))
            ):
                # stopped from outside before it ended (Ctrl-C, SIGTERM: Tune's clean-up marks
                # the running trials TERMINATED): not a censored trial; left unrecorded, it
                # runs again on --resume
                continue
            self._pending.pop(trial.trial_id, None)
            first_iteration_s = self.first_iteration_s  # a replay, not this run's first result
            for result in results:
                if "wall_time_s" in result:
                    self.on_trial_result(0, trials, trial, result)
            self.first_iteration_s = first_iteration_s
            self._starts.setdefault(trial.trial_id, [0.0] * (1 + int(trial.num_failures or 0)))
            self._record(trial, error=_error_line(trial) if trial.status == "ERROR" else None)

    def on_trial_error(self, iteration, trials, trial, **info):
        self._log_traceback(trial)
        self._record(trial, error=_error_line(trial))

    def _log_traceback(self, trial) -> None:
        """Append the trial's whole error (Tune's error file: the traceback) to
        ``errors.log`` in the run directory; the console gets one line per failed trial."""
        text = ""
        path = getattr(trial, "error_file", None)
        if path and os.path.exists(path):
            text = Path(path).read_text(errors="replace")
        if not text:
            text = _error_line(trial)
        try:
            with open(self.run_dir / ERRORS_LOG, "a") as f:
                f.write(
                    f"=== trial {trial.trial_id} {json.dumps(trial.config, default=str)}\n"
                    f"{text.rstrip()}\n\n"
                )
        except OSError:  # the recorder's own write reports a full disk
            pass

    def error_summary(self) -> str | None:
        """When no recorded trial succeeded (every one ended in an error): one line with the
        most common error class, how many trials had it, its first message and the log with
        the tracebacks; None when a trial reached the target or was censored, or none ran."""
        if not self._trials or any(t["status"] != "error" for t in self._trials):
            return None
        classes = [str(t["error"]).split(":")[0].strip() or "error" for t in self._trials]
        top = max(set(classes), key=classes.count)
        first = next(t["error"] for t, c in zip(self._trials, classes, strict=True) if c == top)
        log = self.run_dir / ERRORS_LOG
        return (
            f"no trial succeeded: {classes.count(top)} of {len(self._trials)} ended in "
            f"{top} (first: {first[:200]})" + (f"; tracebacks in {log}" if log.exists() else "")
        )

    def _record(self, trial, error: str | None) -> None:
        tid = trial.trial_id
        if tid in self._recorded:
            return
        rows = self._pending.pop(tid, [])
        last = trial.last_result or {}
        error_kind = "exception" if error is not None else ""
        if error is None and last.get("stalled"):  # the trial ended itself as an error:
            # StallDetector ("stalled") or its env faults ("env_faults")
            error, error_kind = str(last["stalled"]), str(last.get("error_kind") or "stalled")
        row = trial_row(
            tid,
            trial.config,
            rows,
            last,
            self.target,
            self.budget,
            error,
            capped=tid in self.capped,
        )
        row["error_kind"] = error_kind
        row["node_count"] = _node_count()
        row["step_latency_ms"] = self.step_latency_ms
        row["step_cpu_ms"] = self.step_cpu_ms
        row["attempts"] = max(1, len(self._starts.get(tid, [])))
        self._trials.append(row)
        self._progress.extend({**r, "stage": row["stage"]} for r in rows)
        self._recorded.add(tid)
        starts = self._starts.get(tid)
        if not row.get("is_reference"):  # a single-process reference is no typical trial
            # a trial replayed from Tune's state on --resume has no start time here (0.0)
            self._durations.append(
                time.time() - starts[0]
                if starts and starts[0] > 0
                else float(row.get("elapsed_s") or 0.0)
            )
        self._flush()
        self._print(row)

    def _print(self, row: dict[str, Any]) -> None:
        self.console.print(trial_line(row, len(self._trials)), soft_wrap=True)
        line = self.progress_line()
        if line is not None and not self.console.is_terminal:
            self.console.print(f"      {line}", soft_wrap=True, markup=False)


def trial_line(row: dict[str, Any], index: int) -> str:
    """The console line of a finished trial (rich markup): its index, algorithm, layout, seed
    and stage; its outcome (TTT in seconds, or censored with its elapsed seconds and
    ``capped`` when adaptive capping stopped it, or the error); its best return and env
    steps/s, or, when it sampled no env step (stopped while its env runners were starting),
    that and its start-up in seconds; the start-up a warm trial is charged; its env faults.

    Args:
        row: the trial's recorded row (:func:`trial_row`).
        index: the trial's 1-based position among the run's recorded trials.
    """
    if row["status"] == "reached":
        outcome = f"[green]TTT {row['time_to_target_s']:.1f} s[/green]"
    elif row["status"] == "censored":
        capped = ", capped" if row.get("censor_reason") == "capped" else ""
        outcome = f"[yellow]censored (> {row['elapsed_s']:.0f} s{capped})[/yellow]"
    elif row.get("error_kind") in ("stalled", "env_faults"):
        outcome = f"[red]{escape(row['error'][:80])}[/red]"
    else:  # an error's own brackets ("[Errno 28]") are text, not markup
        outcome = f"[red]error: {escape(row['error'][:80])}[/red]"
    batch = row.get("train_batch_size")
    batch = f"{batch:.0f}" if isinstance(batch, float) and math.isfinite(batch) else "-"
    startup = row.get("startup_s")
    if (row.get("total_env_steps") or 0) > 0 or row["is_reference"]:
        sampled = f"best return {row['best_return']:.1f}  {row['env_steps_per_s']:.0f} env steps/s"
    elif isinstance(startup, float) and math.isfinite(startup):
        sampled = f"no env step sampled (start-up {startup:.1f} s)"
    else:
        sampled = "no env step sampled"
    return (
        f"[{index:>3}] {row['algorithm']:<7} env_runners={row['num_env_runners']}"
        + (" (reference)" if row["is_reference"] else "")
        + f" batch={batch} seed={row['seed']}"
        + (" (confirm)" if row.get("stage") == "confirm" else "")
        + f"  {outcome}  {sampled}"
        + ("  [red]oversubscribed[/red]" if row["oversubscribed"] else "")
        + (
            f"  warm: started in {row['startup_s']:.1f} s, charged {row['cold_startup_s']:.1f} s"
            if row.get("start") == "warm"
            else ""
        )
        + (
            f"  env faults: {row['env_restarts']} env restarts, "
            f"{row['env_runner_restarts']} env runner restarts"
            if row.get("env_restarts") or row.get("env_runner_restarts")
            else ""
        )
    )


#: The run directory's log of failed trials' tracebacks (one block per trial).
ERRORS_LOG = rundir.ERRORS_LOG


def _error_line(trial) -> str:
    msg = ""
    try:
        err = trial.get_error()
        msg = f"{type(err).__name__}: {err}" if err is not None else ""
    except Exception:  # noqa: BLE001 - the error file may be gone after a node failure
        pass
    if not msg and getattr(trial, "error_file", None) and os.path.exists(trial.error_file):
        msg = Path(trial.error_file).read_text()
    return error_message(msg)


#: A traceback's exception line with a message: "ValueError: ...", "gymnasium.error.X: ...".
_EXCEPTION_LINE = re.compile(
    r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|"
    r"NotFound|Failure)\w*(\(\w+\))?: \S"
)


def error_message(text: str) -> str:
    """The one line of a trial's error to record (500 characters at most): the last
    exception line of its traceback that carries a message (the root cause, where a wrapper
    re-raises it bare, as RLlib's env runner does with ``raise RuntimeError from e``), else
    its last line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    with_message = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    return ((with_message or lines or ["unknown error"])[-1])[:500]


def _node_count() -> int:
    try:
        import ray

        return sum(1 for n in ray.nodes() if n.get("Alive"))
    except Exception:  # noqa: BLE001
        return 0


def trial_row(
    trial_id: str,
    config: dict,
    progress: list[dict],
    last: dict,
    target: dict,
    budget: dict,
    error: str | None,
    capped: bool = False,
) -> dict[str, Any]:
    """One trials.parquet row from a trial's config, its progress rows and last result.

    ``capped``: adaptive capping stopped the trial (:class:`Capper`); a censored trial's
    ``censor_reason`` is then ``"capped"``, else the last result's (a reference ended at
    its ``total_timesteps``: ``"horizon"``), else ``"budget"`` (empty when not censored).
    """
    nan = math.nan
    times = [r["wall_time_s"] for r in progress]
    _, _, i = first_crossing(
        times,
        [r["env_steps"] for r in progress],
        [r["target_metric_value"] for r in progress],
        target["value"],
        budget.get("time_s"),
    )
    first = progress[i] if i >= 0 else None
    status = "error" if error is not None else ("reached" if first else "censored")
    elapsed = progress[-1]["wall_time_s"] if progress else nan
    steps = progress[-1]["env_steps"] if progress else 0
    values = [r["target_metric_value"] for r in progress if math.isfinite(r["target_metric_value"])]
    row: dict[str, Any] = {
        "trial_id": trial_id,
        "config_id": config.get("config_id", ""),
        "is_baseline": bool(config.get("is_baseline", False)),
        "is_reference": bool(config.get("is_reference", False)),
        "algorithm": config["algorithm"],
        # the reference samples in its own (the trial's) process: 0 env runners
        "num_env_runners": int(
            config.get("num_env_runners", 0 if config.get("is_reference") else -1)
        ),
        "num_envs_per_env_runner": int(config.get("num_envs_per_env_runner", 1)),
        # learner processes as the trial built them (0: the learner in the trial's process)
        "num_learners": int(last.get("num_learners", config.get("num_learners", 0)) or 0),
        "train_batch_size": config.get("train_batch_size"),
        "rollout_fragment_length": config.get("rollout_fragment_length"),
        "lr": config.get("lr"),
        "seed": int(config.get("seed", 0)),
        "status": status,
        "time_to_target_s": first["wall_time_s"] if first and status == "reached" else nan,
        "steps_to_target": float(first["env_steps"]) if first and status == "reached" else nan,
        "ttt_resolution_s": ttt_resolution(times, i) if first and status == "reached" else nan,
        "budget_s": float(budget.get("time_s") or nan),
        "budget_env_steps": float(budget.get("env_steps") or nan),
        "elapsed_s": elapsed,
        "total_env_steps": int(steps),
        "target_metric": target["metric"],
        "target_value": float(target["value"]),
        "final_return": values[-1] if values else nan,
        "best_return": max(values) if values else nan,
        "env_steps_per_s": steps / elapsed if progress and elapsed > 0 else nan,
        "learner_updates": progress[-1]["learner_updates"] if progress else nan,
        "eval_time_s": progress[-1]["eval_time_s"] if progress else nan,
        "num_cpus": float(last.get("num_cpus", nan)),
        "num_gpus": float(last.get("num_gpus", nan)),
        "oversubscribed": bool(last.get("oversubscribed", False)),
        "node_ip": str(last.get("node_ip", "")),
        "nodes_used": str(last.get("nodes_used", "")),
        "error": error or "",
        "objective": float(last.get("objective", nan)) if status != "error" else nan,
        # a reference that ended at a horizon its sweep set says so (sweeps.engine.reference)
        "censor_reason": ("capped" if capped else str(last.get("censor_reason") or "budget"))
        if status == "censored"
        else "",
        "peak_rss_mib": float(last.get("peak_rss_mib", nan)),
        "stage": str(config.get("stage", "search")),
        # the layout as the trial built it (RLlib's default mode where the config is silent)
        "vectorize_mode": str(
            last.get("vectorize_mode") or config.get("gym_env_vectorize_mode", "sync")
        ),
        # env faults recovered (sweeps.engine.env_faults): the last iteration's lifetime counts
        "env_restarts": int(progress[-1].get("env_restarts", 0)) if progress else 0,
        "env_runner_restarts": int(progress[-1].get("env_runner_restarts", 0)) if progress else 0,
        # warm trials (sweeps.engine.warm): how the trial started and what start-up cost it
        "start": str(last.get("start") or "cold"),
        "startup_s": float(last.get("startup_s", nan)),
        "cold_startup_s": float(last.get("cold_startup_s", nan)),
    }
    row["concurrent_envs"] = int(
        last.get("concurrent_envs")
        or concurrent_envs(
            max(row["num_env_runners"], 0),
            row["num_envs_per_env_runner"],
            row["vectorize_mode"],
            row["is_reference"],
        )
    )
    for key, value in config.items():
        if key in META_KEYS or key == "algorithm" or key in VOCAB_COLUMNS:
            continue
        if key == "gym_env_vectorize_mode":  # recorded as vectorize_mode
            continue
        row[f"param_{key}"] = json.dumps(value) if isinstance(value, (list, dict)) else value
    for col in ("train_batch_size", "rollout_fragment_length", "lr"):
        row[col] = as_float(row[col])  # NaN for None or RLlib's "auto"
    return row


def host_cpu_model() -> str:
    """This machine's CPU model (``/proc/cpuinfo``'s first ``model name``, else
    ``platform.processor()``, else "")."""
    cpu_model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu_model


def host_memory_gib() -> float:
    """This machine's physical memory in GiB; NaN when the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        return math.nan


def git_revision(short: bool = False) -> str:
    """The checkout's ``HEAD`` (``short``: abbreviated), with ``-dirty`` when tracked files
    have uncommitted changes; "" when git cannot tell."""
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, cwd=here, timeout=5
        ).stdout.strip()

    try:
        rev = git("rev-parse", *(["--short"] if short else []), "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return ""
    return rev + "-dirty" if rev and dirty else rev


def environment_info(command: list[str], ray_address: str, nodes: list[dict]) -> dict[str, Any]:
    """environment.json: versions, CPU model and count, the cores this process may use (its CPU
    affinity: ``taskset -c 0`` gives 1), memory, nodes, git revision."""
    import importlib.metadata as md

    def version(pkg: str) -> str:
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return "not installed"

    cpu_model, mem_gib, rev = host_cpu_model(), host_memory_gib(), git_revision()
    return {
        "versions": {
            "python": sys.version.split()[0],
            **{
                p: version(p)
                for p in ("ray", "torch", "gymnasium", "optuna", "ale-py", "rl-scaling")
            },
        },
        "platform": platform.platform(),
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "usable_cores": (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        ),
        "memory_gib": round(mem_gib, 1),
        "nodes": nodes,
        "git_revision": rev or "unknown",
        "ray_address": ray_address,
        "command": " ".join(["python", "-m", "sweeps.run", *command]),
        "started_at": now_iso(),
        "finished_at": None,
    }

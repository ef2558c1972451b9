"""Run a sweep with Ray Tune on a connected Ray cluster: the engine behind ``python -m
sweeps.run`` (:mod:`sweeps.run` is the command line: its flags, the checks before Ray starts,
the cluster).

:func:`run_sweep` writes the run's spec.json and environment.json, builds the searcher
(:mod:`sweeps.engine.search`: Optuna through Tune, seeds, the confirmation stage), the recorder and
adaptive capping (:mod:`sweeps.engine.record`, :mod:`sweeps.engine.capping`) and the Tune trainable
(:func:`sweeps.engine.trainable.run_trial`), runs Tune (a new run, ``--resume`` from Tune's saved
state, or ``--confirm-only``'s fixed trials) and says how it ended.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeps.engine import rundir
from sweeps.engine.cli import SpecError
from sweeps.engine.sweep_spec import Sweep

if TYPE_CHECKING:
    from sweeps.engine.trainable import TrialSetup

__all__ = ["count_trials", "reopen_search", "run_sweep", "trial_dirname"]


#: The environment variable that names the Tune callbacks of the platform a sweep runs on:
#: comma-separated ``module:function`` entries, each function returning a list of Tune
#: callbacks. A platform's launcher sets it in its jobs (``cluster.azure_specs``: Azure ML's
#: MLflow logging), so the engine imports nothing of any platform.
CALLBACKS_VAR = "RL_SCALING_TUNE_CALLBACKS"


def platform_callbacks(environ: dict[str, str] | None = None) -> list[Any]:
    """The Tune callbacks :data:`CALLBACKS_VAR` names (none when it is unset or empty).

    Raises:
        SpecError: an entry that is not ``module:function``, or whose module or function
            cannot be loaded (one line naming it).
    """
    value = (os.environ if environ is None else environ).get(CALLBACKS_VAR, "")
    callbacks: list[Any] = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        module, _, name = entry.partition(":")
        try:
            if not module or not name:
                raise ValueError("not module:function")
            factory = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as e:
            raise SpecError(f"{CALLBACKS_VAR}: {entry!r}: {type(e).__name__}: {e}") from None
        callbacks.extend(factory())
    return callbacks


def run_sweep(
    sweep: Sweep,
    spec: dict[str, Any],
    setup: TrialSetup,
    run_dir: Path,
    *,
    file: str,
    cluster_info,
    command_start: float,
    argv: list[str],
    resume: bool = False,
    reconfirm: tuple[list[dict[str, Any]], list[int]] | None = None,
    verbose: bool = False,
    mirror=None,
    callbacks: Sequence[Any] = (),
    write_report: Callable[[Path], None] | None = None,
) -> int:
    """Run ``sweep`` with Ray Tune on the connected Ray cluster and record it in ``run_dir``.

    Args:
        sweep, spec: the sweep and its resolved spec (spec.json's content).
        setup: what every trial shares (:class:`sweeps.engine.trainable.TrialSetup`).
        run_dir: the run directory (:mod:`sweeps.engine.rundir`), locked by the caller.
        file: the sweep file as the user named it (for the messages).
        cluster_info: :func:`cluster.local.ray_session`'s (address, nodes).
        command_start: ``time.time()`` when the command started.
        argv: the command line, recorded in environment.json.
        resume: continue the run in ``run_dir`` (Tune's saved state).
        reconfirm: ``(trials, seeds)`` of ``--confirm-only`` (:func:`sweeps.engine.search.reconfirmation`).
        verbose: Tune's own table and RLlib's logs.
        mirror: the object-storage :class:`sweeps.engine.rundir.mirror.Mirror`, or None.
        callbacks: more Tune callbacks (e.g. Azure ML's MLflow logging).
        write_report: writes the HTML report of a finished run, or None for none.

    Returns:
        The exit status: 0 done; 3 results not written; 4 no trial succeeded; 130 interrupted.
    """
    from ray import tune
    from ray.tune.search import ConcurrencyLimiter

    from sweeps.engine import algorithms
    from sweeps.engine.capping import AdaptiveCapping
    from sweeps.engine.record import (
        Capper,
        ResultsRecorder,
        StopOnWriteError,
        SweepProgress,
        environment_info,
        now_iso,
    )
    from sweeps.engine.rundir import read_json, write_json
    from sweeps.engine.rundir.tune_files import tune_filesystem
    from sweeps.engine.search import (
        FixedSearch,
        confirm_shortfall,
        expected_trials,
        grid_shortfall,
        sweep_search,
    )
    from sweeps.engine.trainable import resources_for, reuse_prestarted_workers, run_trial

    algorithms.register_with_tune()
    reuse_prestarted_workers()
    if reconfirm is not None:  # the run's spec, with the new confirmation seeds
        spec = read_json(run_dir / rundir.SPEC)
        seeds = spec.setdefault("seeds", {"search": [], "confirm": []})
        seeds["confirm"] = [*seeds.get("confirm", []), *reconfirm[1]]
        write_json(run_dir / rundir.SPEC, spec)
    elif not (resume and (run_dir / rundir.SPEC).exists()):  # spec.json keeps what ran
        write_json(run_dir / rundir.SPEC, spec)
        if mirror is not None:
            mirror.put(run_dir / rundir.SPEC)
    env_path = run_dir / rundir.ENVIRONMENT
    env_info = environment_info(argv, cluster_info.address, cluster_info.nodes)
    if resume and env_path.exists():
        env_info["started_at"] = read_json(env_path).get("started_at")
        env_info["resumed_at"] = now_iso()
    write_json(env_path, env_info)
    if mirror is not None:
        mirror.put(env_path)

    import envs

    step_cost = envs.split_step_cost(sweep.env_config)[0]
    capping = AdaptiveCapping(sweep.search.capping, sweep.search.seeds)
    expected = (
        expected_trials(sweep) if reconfirm is None else count_trials(run_dir) + len(reconfirm[0])
    )
    progress = SweepProgress(
        expected,
        setup.budget.time_s,
        sweep.search.max_concurrent or 1,
        command_start,
        capping=capping,
    )
    recorder = ResultsRecorder(
        run_dir,
        target={"metric": setup.target.metric, "value": setup.target.value},
        budget=setup.budget.model_dump(),
        mirror=mirror,
        step_latency_ms=step_cost.latency_ms,
        step_cpu_ms=step_cost.cpu_ms,
        command_start=command_start,
        capping=capping,
        progress=progress,
    )
    callbacks = [recorder, *callbacks]
    from ray.tune.stopper import CombinedStopper

    stopper = CombinedStopper(
        StopOnWriteError(recorder), *([Capper(capping, recorder)] if capping.enabled else [])
    )
    trainable = tune.with_resources(
        tune.with_parameters(run_trial, setup=setup), resources_for(setup)
    )
    tune_dir = run_dir / rundir.TUNE_DIR
    where = mirror.uri_of(run_dir) if mirror is not None else run_dir
    print(f"Sweep {sweep.name}: results in {where}")
    if (short := grid_shortfall(sweep)) is not None:
        print(short)
    if mirror is not None:
        print(f"(staged locally in {run_dir}; each file is uploaded as soon as it is written)")
    search = None  # a resumed run's searcher is Tune's, restored with it
    if reconfirm is not None:
        configs, seeds = reconfirm
        search = FixedSearch(configs)
        print(
            f"Confirming again on seeds {seeds[0]}-{seeds[-1]}: {len(configs)} trials, "
            f"recorded beside the run's {count_trials(run_dir)}"
        )
        tuner = tune.Tuner(
            trainable,
            tune_config=tune.TuneConfig(
                search_alg=search,
                metric="objective",
                mode="min",
                num_samples=len(configs),
                reuse_actors=True,
                trial_dirname_creator=trial_dirname,
            ),
            run_config=tune.RunConfig(
                name=f"{rundir.TUNE_DIR}_confirm_{seeds[0]}",
                storage_path=str(run_dir.resolve()),
                storage_filesystem=tune_filesystem(),  # each state file whole after a kill
                callbacks=callbacks,
                stop=stopper,
                verbose=1 if verbose else 0,
                failure_config=tune.FailureConfig(max_failures=1),
                checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
            ),
        )
    elif resume:
        print(f"Resuming {tune_dir} (finished trials are kept, unfinished ones restart)")
        reopen_search(tune_dir)
        tuner = tune.Tuner.restore(
            str(tune_dir.resolve()),
            trainable=trainable,
            resume_unfinished=True,
            resume_errored=False,
            storage_filesystem=tune_filesystem(),
        )
    else:
        search, _ = sweep_search(
            sweep,
            f"sqlite:///{(run_dir / rundir.OPTUNA_DB).resolve()}",
            recorder=recorder,
            capping=capping,
        )
        # Tune's status table every 60 s (with a driver-artifacts path no user needs) only with
        # --verbose; otherwise the recorder's line per trial and its progress line
        reporter = (
            None
            if not verbose
            else tune.CLIReporter(
                metric_columns={
                    "wall_time_s": "wall s",
                    "env_steps": "env steps",
                    "best_return": "best return",
                    "reached": "reached",
                },
                parameter_columns={
                    "algorithm": "algo",
                    "num_env_runners": "env runners",
                    "train_batch_size": "batch",
                    "seed": "seed",
                },
                max_report_frequency=60,
                sort_by_metric=False,
                max_progress_rows=12,
            )
        )
        tuner = tune.Tuner(
            trainable,
            tune_config=tune.TuneConfig(
                search_alg=ConcurrencyLimiter(search, max_concurrent=sweep.search.max_concurrent),
                metric="objective",
                mode="min",
                num_samples=search.total_trials,
                # a trial with the previous one's resource request runs in its actor process:
                # no process start or imports between them (before the clock either way;
                # sweeps.engine.trainable.begin_trial_in_process)
                reuse_actors=True,
                trial_dirname_creator=trial_dirname,
            ),
            run_config=tune.RunConfig(
                name=rundir.TUNE_DIR,
                storage_path=str(run_dir.resolve()),
                storage_filesystem=tune_filesystem(),  # each state file whole after a kill
                callbacks=callbacks,
                stop=stopper,
                progress_reporter=reporter,
                verbose=1 if verbose else 0,
                failure_config=tune.FailureConfig(max_failures=1),
                checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
            ),
        )
    # On --resume Tune unpickles the first run's callbacks and stopper: they are
    # sweeps.engine.record.LiveOnRestore objects, so it gets this process's (built above).
    interrupted = False
    from sweeps.engine.cli import (
        EXIT_NO_TRIAL_SUCCEEDED,
        EXIT_WRITE_FAILED,
        describe_os_error,
        find_os_error,
        sigterm_as_interrupt,
    )
    from sweeps.engine.record import ERRORS_LOG

    sigterm_as_interrupt()  # again: Ray's core worker replaced the handler when it started
    from sweeps.engine.logs import divert_worker_death_banners

    divert_worker_death_banners(run_dir / ERRORS_LOG, verbose)
    try:
        tuner.fit()  # on Ctrl-C (and SIGTERM) Tune stops the trials, saves its state, returns
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:
        if find_os_error(exc) is None or verbose:
            raise
        recorder.note_write_error(find_os_error(exc))
    if recorder.write_error is not None:
        print(
            f"error: {file}: results: {describe_os_error(recorder.write_error)}; the "
            f"{count_trials(run_dir)} trial(s) recorded before it are kept in {run_dir}; "
            f"continue with: python -m sweeps.run {file} --resume",
            file=sys.stderr,
        )
        return EXIT_WRITE_FAILED
    env_info["finished_at"] = now_iso()
    if recorder.first_iteration_s is not None:
        env_info["startup_to_first_iteration_s"] = round(recorder.first_iteration_s, 2)
    write_json(env_path, env_info)
    if mirror is not None:
        for name in (rundir.ENVIRONMENT, rundir.OPTUNA_DB):
            mirror.put(run_dir / name)
    n = recorder.num_recorded
    # seeds capping made pointless, and confirmation slots no finished configuration filled
    capped = progress.skipped_in(recorder.trials)
    unfilled = confirm_shortfall(sweep, recorder.trials) if reconfirm is None else 0
    # and the seeds of configurations the sampler drew again after capping settled them
    skipped = capped + unfilled + int(getattr(search, "resampled", 0) or 0)
    if interrupted or n < expected - skipped:
        print(
            f"Interrupted: {n} of {expected - skipped} trials finished and are kept in "
            f"{run_dir}; continue with: python -m sweeps.run {file} --resume",
            file=sys.stderr,
        )
        return 130
    why = (
        [
            f"{capped} more seed(s) skipped: adaptive capping had capped most of their "
            "configuration's seeds, or one of them raised an error"
        ]
        if capped
        else []
    ) + (
        [
            f"{unfilled} confirmation trial(s) not needed: fewer distinct configurations to "
            "confirm than the most the sweep allows (a cell measured by the baseline alone, or "
            "the fastest overall also a cell's fastest)"
        ]
        if unfilled
        else []
    )
    print(f"Done: {n} trials recorded in {where}" + (f" ({'; '.join(why)})" if why else ""))
    if mirror is not None and (run_dir / ERRORS_LOG).is_file():
        mirror.put(run_dir / ERRORS_LOG)
    if write_report is not None:
        write_report(run_dir)
        if mirror is not None and (run_dir / rundir.REPORT).is_file():
            mirror.put(run_dir / rundir.REPORT)
    summary = recorder.error_summary()
    if summary is not None:
        print(f"error: {file}: {summary}", file=sys.stderr)
        return EXIT_NO_TRIAL_SUCCEEDED
    return 0


def reopen_search(tune_dir: Path) -> bool:
    """Let a resumed run suggest the trials its first run never started.

    When a run ends early through a stopper (a full disk: :class:`sweeps.engine.record.StopOnWriteError`),
    Tune marks its search as finished (``SearchGenerator.set_finished``) and saves that in the
    experiment's ``search_gen_state-*.json``; restored as is, the run would end with the trials
    never suggested still missing. The searcher itself knows when it is done
    (:class:`sweeps.engine.search.SeededSearch` returns ``FINISHED``), so the flag is cleared in the
    newest state file (atomically): the one Tune restores, the greatest name (its names end in
    the session's start time; ``ray.tune.utils.util._load_newest_checkpoint``). Not the newest
    modification time: Tune copies its whole folder to the storage path at each sync, so every
    state file there has about the same one, in any order. Returns whether it was set.
    """
    import ray.cloudpickle as cloudpickle

    states = sorted(tune_dir.glob(rundir.TUNE_STATE_PATTERNS[1]))
    if not states:
        return False
    state = cloudpickle.loads(states[-1].read_bytes())
    if not (isinstance(state, dict) and state.get("finished")):
        return False
    state["finished"] = False
    tmp = states[-1].with_name(f".{states[-1].name}.tmp")
    tmp.write_bytes(cloudpickle.dumps(state))
    os.replace(tmp, states[-1])
    return True


def trial_dirname(trial) -> str:
    """Short trial folder names under tune/ (Tune's default spells out the whole config)."""
    return f"{trial.config.get('algorithm', 'trial')}_{trial.trial_id}"


def count_trials(run_dir: Path) -> int:
    """Trials recorded in ``run_dir`` so far."""
    from sweeps.engine.rundir.schema import read_parquet

    path = run_dir / rundir.TRIALS
    return len(read_parquet(path)) if path.exists() else 0


def reconfirmation_of(
    run_dir: Path, sweep: Sweep, source: str
) -> tuple[list[dict[str, Any]], list[int]]:
    """The trials and seeds of ``--confirm-only RUN`` (:func:`sweeps.engine.search.reconfirmation`),
    checked before Ray starts: ``run_dir`` is a run of this sweep (its spec.json's name) with
    recorded trials and the Tune state that holds their exact parameters.

    Raises:
        SpecError: one line saying what is missing.
    """
    from sweeps.engine.rundir.schema import read_parquet
    from sweeps.engine.search import META_KEYS, reconfirmation

    def bad(why: str) -> SpecError:
        return SpecError(f"{source}: --confirm-only {run_dir}: {why}")

    try:
        spec = rundir.read_json(run_dir / rundir.SPEC)
        rows = read_parquet(run_dir / rundir.TRIALS).to_dict("records")
    except (OSError, ValueError) as e:
        raise bad(f"not a finished run ({type(e).__name__}: {e})") from None
    if spec.get("name") != sweep.name:
        raise bad(f"a run of sweep {spec.get('name')!r}, not of {sweep.name!r}")
    params_of: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("is_baseline") or row.get("is_reference") or row["config_id"] in params_of:
            continue
        found = list(run_dir.glob(f"{rundir.TUNE_DIR}/*_{row['trial_id']}/params.json"))
        if found:
            params = json.loads(found[0].read_text())
            params_of[row["config_id"]] = {k: v for k, v in params.items() if k not in META_KEYS}
    try:
        return reconfirmation(sweep, rows, params_of)
    except ValueError as e:
        raise bad(str(e)) from None

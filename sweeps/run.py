"""Run a sweep: ``python -m sweeps.run FILE [--address ADDR] [--resume] [--dry-run] ...``.

Loads and validates the sweep file, obtains a Ray cluster (embedded local Ray by default,
``--address``/``RAY_ADDRESS`` for an existing one), and runs the sweep with Ray Tune
(:mod:`sweeps.engine.tuning`), whose searcher is Optuna (:mod:`sweeps.engine.search`): the baseline first,
then every sampled configuration once per seed. Each trial is one RLlib Algorithm timed from before it is built
(:mod:`sweeps.engine.trainable`); results land in ``results/<sweep>/<run_id>/`` as they finish
(docs/results.md), and the HTML report is written at the end.

Exit codes (:mod:`sweeps.engine.cli`): 0 done; 1 internal error (one line; ``--verbose`` for the
traceback); 2 bad input (one line on stderr naming file, field and reason), also a results
directory in use by another ``sweeps.run`` or too damaged to resume; 3 the results could not
be written (disk full: what finished is kept, ``--resume`` continues); 4 no trial succeeded
(every trial ended in an error: a one-line summary, tracebacks in the run's errors.log); 130 interrupted by
Ctrl-C or SIGTERM (what finished is kept; continue with ``--resume``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

#: When this module started executing (``time.time()``, after the standard library's imports,
#: before ours): the command's start for the recorded start-up time. Not the process's creation
#: time: ``bash -c "... && python -m sweeps.run"`` execs python in the shell's process, whose
#: creation time then includes whatever the shell ran before (a pip install).
COMMAND_START = time.time()

from sweeps.engine import rundir  # noqa: E402
from sweeps.engine.cli import EXIT_BAD_INPUT  # noqa: E402
from sweeps.engine.logs import quiet_environment, quiet_logs  # noqa: E402
from sweeps.engine.placement import cluster_shape, feasibility, trial_setup  # noqa: E402
from sweeps.engine.preview import local_gpus, print_dry_run  # noqa: E402
from sweeps.engine.rundir import (  # noqa: E402
    check_resume_dir,
    check_resume_spec,
    lock_run_dir,
    run_dir_for,
)
from sweeps.engine.rundir.mirror import results_root as mirror_results_root  # noqa: E402
from sweeps.engine.sweep_file import (  # noqa: E402
    SpecError,
    check_points,
    load_sweep,
    resolved_spec,
    sweep_target,
)
from sweeps.engine.sweep_spec import Budget, Search, Sweep  # noqa: E402
from sweeps.engine.tuning import count_trials, platform_callbacks, reconfirmation_of  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from sweeps.engine import cli
    from sweeps.engine.cli import OneLineParser

    p = OneLineParser(
        prog="python -m sweeps.run",
        description="Run a sweep file: search its configurations on Ray Tune, record each "
        "trial's time-to-target under results/<sweep>/<run_id>/, confirm the fastest on fresh "
        "seeds and write report.html.",
        epilog=f"Exit codes: 0 done; {cli.EXIT_INTERNAL} internal error; {cli.EXIT_BAD_INPUT} "
        f"bad input (one line naming file, field and reason); {cli.EXIT_WRITE_FAILED} the "
        f"results could not be written; {cli.EXIT_NO_TRIAL_SUCCEEDED} no trial succeeded; "
        f"{cli.EXIT_INTERRUPTED} interrupted (what finished is kept: continue with --resume). "
        "The sweep's env is a registered id ('CartPole-v1'), gymnasium's 'module:EnvId' "
        "(importing module registers EnvId) or 'module:Factory' (called with env_config); "
        "a module beside the sweep file is checked before Ray starts and shipped to "
        "every node. See docs/your_workload.md.",
    )
    p.add_argument("file", nargs="?", help="sweep file (.py declaring SWEEP, or .yaml)")
    p.add_argument(
        "--schema",
        action="store_true",
        help="print the JSON Schema of a YAML sweep file (sweeps/sweep.schema.json "
        "is a copy) and exit",
    )
    p.add_argument(
        "--explain",
        default=None,
        metavar="FIELD",
        help="print the meaning, type, default and units of a sweep field "
        "(dotted: 'budget.time_s', 'search.confirm'; '' for all) and exit",
    )
    p.add_argument(
        "--address",
        default=None,
        help="Ray cluster to connect to (default: $RAY_ADDRESS, else an embedded local Ray)",
    )
    p.add_argument(
        "--confirm-only",
        default=None,
        metavar="RUN",
        help="confirm a finished run of this sweep again on new seeds (its search's "
        "fastest configurations, the baseline and the reference), recorded in "
        "the same run directory",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest interrupted run of this sweep (finished trials are kept)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the resolved spec, the first trials and their resources; train nothing "
        "(with --resume: first the run it would continue, checked as --resume checks it)",
    )
    p.add_argument(
        "--cluster",
        type=cluster_shape,
        default=None,
        metavar="SHAPE",
        help="with --dry-run: check the trials against this cluster instead of this "
        "machine: NODESxCPUS[:GPUS] per node kind, joined by '+', e.g. "
        "'1x6+4x2' (a 6-CPU head and four 2-CPU workers) or '4x16:1'",
    )
    p.add_argument(
        "--results", default=None, help="results root (default: the sweep's results_dir)"
    )
    p.add_argument("--num-samples", type=int, default=None, help="override search.num_samples")
    p.add_argument("--seeds", type=int, default=None, help="override search.seeds")
    p.add_argument(
        "--first-seed",
        type=int,
        default=None,
        help="override search.first_seed: the same study on a seed stream no other run used "
        "(a held-out cell must not share its fit run's seeds)",
    )
    p.add_argument("--budget-s", type=float, default=None, help="override budget.time_s (seconds)")
    p.add_argument(
        "--env-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one env_config key (repeatable; VALUE is read as JSON, else "
        "as a string), e.g. 'step_latency_ms=30': the same study at another "
        "env cost; spec.json records the result",
    )
    p.add_argument("--no-report", action="store_true", help="do not write report.html at the end")
    p.add_argument(
        "--cold",
        action="store_true",
        help="every trial starts its own env runner processes (sets "
        "search.warm_trials=False; default: a trial reuses the previous "
        "trial's of the same shape)",
    )
    p.add_argument(
        "--allow-changed-spec",
        action="store_true",
        help="with --resume: continue even though the sweep file changed (the new "
        "settings apply to the trials still to run; spec.json keeps what ran)",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="show Ray/RLlib warnings and logs of the trials (hidden by default)",
    )
    args = p.parse_args(argv)
    if args.file is None and not args.schema and args.explain is None:
        p.error("the following arguments are required: file")
    if args.cluster is not None and not args.dry_run:
        p.error("--cluster: only with --dry-run (a run uses the cluster it connects to)")
    return args


def parse_env_config(items: list[str], source: str) -> dict:
    """``--env-config KEY=VALUE`` items as a dict; each VALUE is read as JSON (``30``,
    ``0.5``, ``true``), else kept as a string.

    Raises:
        SpecError: an item without ``=`` or with an empty key.
    """
    import json

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"{source}: --env-config: expected KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def apply_overrides(sweep: Sweep, args: argparse.Namespace, source: str) -> Sweep:
    """Apply command-line overrides, re-validated (SpecError on a bad value; an
    ``--env-config`` key is checked against the env as the sweep file's own would be)."""
    import pydantic

    search = sweep.search.model_dump()
    budget = sweep.budget.model_dump()
    if args.num_samples is not None:
        search["num_samples"] = args.num_samples
    if args.seeds is not None:
        search["seeds"] = args.seeds
    if getattr(args, "first_seed", None) is not None:
        search["first_seed"] = args.first_seed
    if getattr(args, "cold", False):
        search["warm_trials"] = False
    if args.budget_s is not None:
        budget["time_s"] = args.budget_s
    try:
        new_search = Search(**search)
    except pydantic.ValidationError as e:
        flag = (
            "--num-samples"
            if args.num_samples is not None
            else "--seeds"
            if args.seeds is not None
            else "--first-seed"
        )
        raise SpecError(f"{source}: {flag}: {_first_msg(e)}") from None
    try:
        new_budget = Budget(**budget)
    except pydantic.ValidationError as e:
        raise SpecError(f"{source}: --budget-s: {_first_msg(e)}") from None
    update = {"search": new_search, "budget": new_budget}
    env_config = parse_env_config(getattr(args, "env_config", None) or [], source)
    if env_config:
        update["env_config"] = {**sweep.env_config, **env_config}
    new = sweep.model_copy(update=update)
    if env_config:
        from envs.forms import search_path
        from sweeps.engine.sweep_file import code_dirs, validate_sweep

        with search_path([Path(source).parent, *code_dirs(new, source)]):
            try:
                validate_sweep(new, source)
            except SpecError as e:
                raise SpecError(
                    str(e).replace(f"{source}: ", f"{source}: --env-config: ", 1)
                ) from None
    return new


def _first_msg(e) -> str:
    return e.errors()[0]["msg"].removeprefix("Value error, ")


def main(argv: list[str] | None = None, command_start: float | None = None) -> int:
    """CLI entry point; returns the process exit code.

    ``command_start`` (``time.time()`` seconds) is when the command started, for the recorded
    start-up time (command start → first trial's first iteration); the ``python -m`` entry
    passes :data:`COMMAND_START`, so the CLI's imports count (the interpreter's own start,
    ~0.1 s, does not). Default: now.
    """
    command_start = time.time() if command_start is None else command_start
    quiet_environment()  # before Ray is imported
    args = parse_args(argv)
    if args.schema or args.explain is not None:
        from sweeps.engine.sweep_schema import explain, schema_text

        try:
            sys.stdout.write(schema_text() if args.schema else explain(args.explain) + "\n")
        except SpecError as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        return 0
    source = args.file
    run_dir = lock = None
    new_run_dir = False
    address = args.address or os.environ.get("RAY_ADDRESS") or None
    try:
        sweep = apply_overrides(load_sweep(args.file), args, source)
        target = sweep_target(sweep, source)
        quiet_logs(args.verbose)  # RLlib is imported from here on (a missing file etc. is instant)
        check_points(sweep, source)  # RLlib's own validation of every point, before Ray
        if address is None or (args.dry_run and args.cluster is not None):
            # the cluster is known before Ray starts (the embedded one is this machine): a
            # trial it cannot place is refused now, by a dry run as by the run itself, and
            # before anything is written
            nodes = args.cluster or [{"CPU": float(os.cpu_count() or 1), "GPU": local_gpus()}]
            setup = trial_setup(sweep, target, nodes)
            placement_lines = feasibility(sweep, setup, source, nodes, strict=True)
        root, mirror = mirror_results_root(args.results or sweep.results_dir, source)
        rundir.check_results_root(root, source)
        spec = resolved_spec(sweep, target, args.file)
        callbacks = platform_callbacks()  # the platform's own (Azure ML's MLflow), if it names any
        args.reconfirm = None
        if args.confirm_only is not None:
            if args.resume or args.dry_run:
                raise SpecError(f"{source}: --confirm-only: not with --resume or --dry-run")
            run_dir = Path(args.confirm_only)
            args.reconfirm = reconfirmation_of(run_dir, sweep, source)
            lock = lock_run_dir(run_dir, source)
        elif args.dry_run and args.resume:  # what --resume would continue: checked, not claimed
            run_dir = run_dir_for(root, sweep.name, args.resume, source)
            check_resume_spec(run_dir, spec, source, args.allow_changed_spec)
            check_resume_dir(run_dir, source)
            resumed = f"--resume would continue {run_dir} ({count_trials(run_dir)} trials recorded)"
        elif not args.dry_run:  # claimed and locked before Ray starts
            run_dir = run_dir_for(root, sweep.name, args.resume, source)
            new_run_dir = not args.resume
            lock = lock_run_dir(run_dir, source)
            if args.resume:
                check_resume_spec(run_dir, spec, source, args.allow_changed_spec)
                check_resume_dir(run_dir, source)
    except SpecError as e:
        if lock is not None:
            lock.release()
        if new_run_dir:
            rundir.discard_unused_run_dir(run_dir)
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    from cluster.local import ClusterError, ray_session

    if args.dry_run and args.resume:
        print(resumed)
    if args.dry_run and (address is None or args.cluster is not None):
        print_dry_run(sweep, target, setup, placement_lines, nodes)
        return 0
    refused = True  # until the run starts: a refusal leaves no empty run directory behind
    try:
        from sweeps.engine.sweep_file import modules_to_ship

        # the user's env module, to every node; a Ray Jobs driver (cluster.jobs, KubeRay) has
        # it in the job's own runtime environment, which a second one would replace
        ship = (
            []
            if os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR")
            else modules_to_ship(sweep, args.file)
        )
        with ray_session(
            address, log_to_driver=args.verbose, runtime_env={"py_modules": ship} if ship else None
        ) as cluster_info:
            from sweeps.engine.placement import cluster_nodes

            nodes = cluster_nodes(cluster_info.nodes)
            setup = trial_setup(sweep, target, nodes, quiet=not args.verbose)
            lines = feasibility(sweep, setup, source, nodes, strict=True)
            if args.dry_run:
                print_dry_run(sweep, target, setup, lines, nodes)
                return 0
            from sweeps.engine.tuning import run_sweep

            refused = False
            return run_sweep(
                sweep,
                spec,
                setup,
                run_dir,
                file=args.file,
                cluster_info=cluster_info,
                command_start=command_start,
                argv=sys.argv[1:] if argv is None else argv,
                resume=args.resume,
                reconfirm=args.reconfirm,
                verbose=args.verbose,
                mirror=mirror,
                callbacks=callbacks,
                write_report=None if args.no_report else _write_report,
            )
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ClusterError as e:
        print(f"error: {source}: --address: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if lock is not None:
            lock.release()
        if refused and new_run_dir:
            rundir.discard_unused_run_dir(run_dir)


def _write_report(run_dir: Path) -> None:
    try:
        from analysis.report import write_report
    except ImportError:
        print("analysis.report is not available; no report written")
        return
    try:
        path = write_report(run_dir)
    except Exception as e:  # noqa: BLE001 - the results are safe; say why the report failed
        print(
            f"Report failed ({type(e).__name__}: {e}); results are in {run_dir}; "
            f"retry with: python -m analysis.report {run_dir}",
            file=sys.stderr,
        )
        return
    print(f"Report: {path}")


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    sys.exit(guard("python -m sweeps.run", lambda: main(command_start=COMMAND_START)))

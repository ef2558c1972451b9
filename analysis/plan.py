"""Capacity plan: what to run, on which Azure VM size, to reach the target by a deadline or
within a budget.

Usage, one subcommand per model (:data:`SUBCOMMANDS`)::

    python -m analysis.plan fit RESULTS_DIR [--deadline 10m] [--budget 5usd] [--vm SIZE]
                                            [--low-priority] [--target VALUE|PCT%]
    python -m analysis.plan holdout RESULTS_DIR 8,16          # check the plan on held-out N
    python -m analysis.plan break-even RESULTS_DIR [--env-cost-ms 40] [--held-out RUN,...]
    python -m analysis.plan transfer RESULTS_DIR --cores 16 [--check RUN]
    python -m analysis.plan learners RESULTS_DIR [--learner-counts 2,4,8] [--held-out RUN,...]

The flags they stand for (``RESULTS_DIR --holdout 8,16``, ``--break-even``, ``--transfer``,
``--learners``; a bare ``RESULTS_DIR`` is ``fit``) are kept as aliases.

The plan's model is :mod:`analysis.plan_model` (documented there, formula by formula), what it
rents :mod:`analysis.catalogue`, its words :mod:`analysis.plan_text`; this module is the
command line and re-exports their public names.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from rich.markup import escape

from analysis.catalogue import (
    DEFAULT_LAUNCHER,
    LAUNCHERS,
    USABLE_MEMORY_FRACTION,
    Launcher,
    VMSize,
    billed_seconds,
    load_vm_sizes,
    nodes_for,
    parse_duration,
    parse_money,
    run_cost_usd,
)
from analysis.fmt import config_name, config_phrase, fmt_ci, fmt_interval, fmt_s, fmt_usd
from analysis.plan_check import check_text, parse_holdout, plan_check
from analysis.plan_model import (
    DEFAULT_CANDIDATE_N,
    AlgorithmModel,
    Plan,
    Resources,
    make_plan,
    model_algorithms,
    per_runner_throughput,
    predict_ttt,
    steps_plan,
    trial_resources,
)
from analysis.plan_text import (
    PlanAnswer,
    describe_row,
    launch_lines,
    plan_answer,
    plan_text,
    sweep_file_of,
)
from sweeps.engine.cli import EXIT_BAD_INPUT, OneLineParser

__all__ = [
    "SUBCOMMANDS",
    "DEFAULT_LAUNCHER",
    "LAUNCHERS",
    "USABLE_MEMORY_FRACTION",
    "AlgorithmModel",
    "Launcher",
    "Plan",
    "PlanAnswer",
    "Resources",
    "VMSize",
    "billed_seconds",
    "describe_row",
    "launch_lines",
    "load_vm_sizes",
    "main",
    "make_plan",
    "model_algorithms",
    "nodes_for",
    "parse_duration",
    "parse_money",
    "per_runner_throughput",
    "plan_answer",
    "plan_text",
    "predict_ttt",
    "run_cost_usd",
    "steps_plan",
    "subcommand_argv",
    "sweep_file_of",
    "trial_resources",
]


class _Unbroken:
    """A terminal table cell that wraps only between its pieces (a value and its interval's
    two ends, :func:`analysis.fmt.interval_pieces`, then the words after them), never inside
    a number and its unit: ``6.0 s`` over ``[5.8 s, 7.4 s]``, not ``[5.8 s, 7.4`` over ``s]``.
    A rich renderable (``__rich_measure__``, ``__rich_console__``)."""

    def __init__(self, pieces: list[str], justify: str) -> None:
        self.pieces, self.justify = pieces, justify

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.cells import cell_len
        from rich.measure import Measurement

        return Measurement(max(map(cell_len, self.pieces)), cell_len(" ".join(self.pieces)))

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.cells import cell_len
        from rich.text import Text

        lines = [""]
        for piece in self.pieces:
            if lines[-1] and cell_len(lines[-1]) + 1 + cell_len(piece) > options.max_width:
                lines.append(piece)
            else:
                lines[-1] = f"{lines[-1]} {piece}" if lines[-1] else piece
        yield Text("\n".join(lines), justify=self.justify)


def _say(console: Any, text: str) -> None:
    """Print a line of the analysis as it is: its brackets (an interval, ``[extrapolated]``,
    a path) are text, not rich markup, and a long line is left to the terminal to wrap."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _print_rows(
    console: Any, headers: list[str], rows: list[list[str]], *, left=("configuration",), title=None
) -> None:
    """A rich table of ``headers`` and text ``rows`` (as text: an interval's "[lo, hi]" is not
    markup), the columns named in ``left`` left-aligned, the rest right-aligned; a cell with an
    interval wraps only between its value and the interval's ends (:class:`_Unbroken`)."""
    from rich.table import Table
    from rich.text import Text

    from analysis.fmt import interval_pieces

    def cell(text: str, justify: str) -> Any:
        split = interval_pieces(text)
        if split is None:
            return Text(text, justify=justify)
        pieces, tail = split
        return _Unbroken(pieces + tail.split(), justify)

    table = Table(title=title)
    justify = ["left" if c in left else "right" for c in headers]
    for c, j in zip(headers, justify, strict=True):
        table.add_column(c, justify=j, no_wrap=c == "configuration")
    for row in rows:
        table.add_row(*(cell(str(c), j) for c, j in zip(row, justify, strict=True)))
    console.print(table)


def _print_assumptions(answer: PlanAnswer, console: Any) -> None:
    _print_rows(
        console,
        ["assumption", "the plan took"],
        [list(a) for a in answer.assumptions],
        left=("assumption", "the plan took"),
        title="What the plan assumes",
    )


def _print_table(plan: Plan, console: Any) -> None:
    headers = ["algorithm", "env runners", "VM size", "nodes", "TTT", "TTT 95%", "cost"]
    front = plan.candidates[plan.candidates["pareto"]].sort_values("cost_usd")
    rows = [
        [
            r["algorithm"],
            str(r["num_env_runners"]),
            r["vm"],
            str(r["nodes"]),
            fmt_s(r["ttt_s"]),
            fmt_interval(r["ttt_low_s"], r["ttt_high_s"], fmt_s).strip() or "n/a",
            fmt_usd(r["cost_usd"]),
            fmt_interval(r["cost_low_usd"], r["cost_high_usd"], fmt_usd).strip() or "n/a",
            r["source"] + (" (extrapolated)" if r["extrapolated"] else ""),
        ]
        for _, r in front.iterrows()
    ]
    _print_rows(
        console,
        [*headers, "cost 95%", "from"],
        rows,
        left=("algorithm", "VM size", "from"),
        title="Pareto front: fastest run for each cost (one run to the target)",
    )


def _launcher(args) -> Launcher:
    """``--launcher``, its start-up and billing unit overridden by ``--startup``/``--billing``.

    Raises:
        ValueError: a duration that does not parse."""
    base = LAUNCHERS[args.launcher]
    return Launcher(
        base.name,
        parse_duration(args.startup, "--startup", zero=True) if args.startup else base.startup_s,
        parse_duration(args.billing, "--billing", zero=True) if args.billing else base.billing_s,
        base.source if not (args.startup or args.billing) else "given on the command line",
    )


def _fit_main(args, res, console) -> int:
    """``fit``: the Pareto front of runs to the target by VM size and env runner count
    (:func:`analysis.plan_model.make_plan`), the answer in words and its launch command."""
    from analysis.batch_size import batch_advice
    from analysis.metrics import judged_metrics
    from analysis.stats import summarize_configs

    with _bad_input():
        deadline = parse_duration(args.deadline, "--deadline") if args.deadline else None
        budget = parse_money(args.budget) if args.budget else None
        launcher = _launcher(args)
        vms = _vms(args)
        if args.max_env_runners < 1:
            raise ValueError(f"--max-env-runners {args.max_env_runners}: must be >= 1")
        for flag in ("steps_to_target", "env_steps_per_s_per_runner"):
            value = getattr(args, flag)
            if value is not None and not value > 0:
                raise ValueError(f"--{flag.replace('_', '-')} {value:g}: must be > 0")
    tm, _, target, warns = judged_metrics(res, args.target)
    if args.steps_to_target is not None:
        with _bad_input():
            return _steps_main(args, tm, res, vms, deadline, launcher, console)
    plan = make_plan(
        tm,
        summarize_configs(tm, seeds=res.seeds),
        deadline_s=deadline,
        budget_usd=budget,
        vms=vms,
        low_priority=args.low_priority,
        max_env_runners=args.max_env_runners,
        cpu_model=str(res.environment.get("cpu_model", "")),
        launcher=launcher,
        progress=res.progress,
    )
    console.print(
        f"[bold]Capacity plan[/bold] for {escape(str(res.path))} -- target "
        f"{escape(target.metric)} >= {target.value:g} ({escape(str(target.source))}); "
        f"{'low-priority' if args.low_priority else 'pay-as-you-go'} prices",
        soft_wrap=True,
    )
    for w in [*res.warnings, *warns]:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}", soft_wrap=True)
    if plan.candidates.empty:
        _say(console, "No recommendation: " + "; ".join(plan.notes))
        return 0
    answer = plan_answer(plan, sweep_file_of(res.environment), vms)
    _say(console, answer.sentence)
    for line in answer.commands:
        _say(console, str(line))
    _print_assumptions(answer, console)
    _print_table(plan, console)
    console.print("[bold]Details[/bold]")
    for line in [*answer.details, *batch_advice(tm, res.progress)]:
        _say(console, f"- {line}")
    return 0


def _steps_main(
    args, tm, res, vms: list[VMSize], deadline: float | None, launcher: Launcher, console
) -> int:
    """``fit --steps-to-target``: the plan from a known sample budget at the run's measured
    (or the given) env steps/s per env runner (:func:`analysis.plan_model.steps_plan`).

    Raises:
        ValueError: the run measured no env steps/s per env runner."""
    median, lo, hi = per_runner_throughput(tm)
    source = f"measured in {res.path.name}: {lo:,.0f}-{hi:,.0f} over its trials"
    if args.env_steps_per_s_per_runner is not None:
        source = f"given; the run measured {median:,.0f}"
        median = args.env_steps_per_s_per_runner
    startup, billing = launcher.startup_s, launcher.billing_s
    gpus = float(tm["num_gpus"].max() or 0.0)
    plan = steps_plan(
        args.steps_to_target,
        median,
        vms,
        startup_s=startup,
        learner_gpus=gpus,
        low_priority=args.low_priority,
        billing_s=billing,
        candidates=tuple(n for n in (*DEFAULT_CANDIDATE_N, 128) if n <= args.max_env_runners),
    )
    console.print(
        f"[bold]Plan from a sample budget[/bold]: {args.steps_to_target:,.0f} env "
        f"steps to the target at {median:,.0f} env steps/s per env runner ({source}), "
        f"start-up "
        f"{fmt_s(startup)}, billing unit {fmt_s(billing) if billing else 'none'}; {'low-priority' if args.low_priority else 'pay-as-you-go'}"
        " prices"
    )
    if plan.empty:
        console.print("No VM size in the table fits these runs.")
        return 0
    fits = plan if deadline is None else plan[plan["ttt_s"] <= deadline]
    console.print(f"{'env runners':>11} {'VM size':<22} {'nodes':>5} {'TTT':>10} {'cost':>9}")
    for _, r in plan.sort_values(["num_env_runners", "cost_usd"]).iterrows():
        mark = "" if deadline is None or r["ttt_s"] <= deadline else "  misses the deadline"
        console.print(
            f"{r['num_env_runners']:>11} {r['vm']:<22} {r['nodes']:>5} "
            f"{fmt_s(r['ttt_s']):>10} {fmt_usd(r['cost_usd']):>9}{mark}",
            highlight=False,
        )
    if len(fits):
        c = fits.sort_values(["cost_usd", "ttt_s"]).iloc[0]
        console.print(
            f"Cheapest{' within the deadline' if deadline else ''}: "
            f"{c['num_env_runners']} env runners on {c['nodes']} x {c['vm']}: "
            f"{fmt_s(c['ttt_s'])}, {fmt_usd(c['cost_usd'])}",
            highlight=False,
        )
    else:
        console.print("No candidate meets the deadline.")
    console.print(
        "Assumes: sampling throughput linear in env runners at the measured rate per "
        "runner, a learner that keeps up, sample efficiency independent of N, a VM "
        "vCPU as fast as the measured machine's. Predicted, not measured.",
        highlight=False,
    )
    return 0


def _check_main(args, res, console) -> int:
    """``holdout``: the plan's models fitted without the held-out env runner counts, their
    predictions there against what was measured (:func:`analysis.plan_check.plan_check`)."""
    from analysis.metrics import judged_metrics
    from analysis.stats import summarize_configs

    with _bad_input():
        holdout = parse_holdout(args.holdout)
    tm, _, target, warns = judged_metrics(res, args.target)
    measured = sorted({int(n) for n in tm.loc[~tm["is_reference"], "num_env_runners"]})
    if not set(holdout) & set(measured):
        raise _BadInput(
            f"holdout N={','.join(map(str, holdout))}: no algorithm measured "
            f"{'it' if len(holdout) == 1 else 'any of them'} (measured N="
            f"{','.join(map(str, measured))}); hold out counts the run measured"
        )
    check = plan_check(tm, summarize_configs(tm, seeds=res.seeds), res.progress, holdout)
    console.print(
        f"[bold]Plan check[/bold] for {escape(str(res.path))} -- target "
        f"{escape(target.metric)} >= {target.value:g}; held out N={','.join(map(str, holdout))}",
        soft_wrap=True,
    )
    for w in [*res.warnings, *warns]:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}", soft_wrap=True)
    for line in check_text(check):
        _say(console, line)
    if check.rows.empty:
        console.print("Nothing could be checked.")
    return 0


PROG = "python -m analysis.plan"

#: Each subcommand: the flag that stands for it in the older spelling (``RUN --transfer``;
#: ``fit`` is what a bare ``RUN`` asks for) and what it answers.
SUBCOMMANDS = {
    "fit": (None, "predicted TTT and cost per env runner count and Azure VM size"),
    "holdout": (
        "--holdout",
        "check the plan: fit without some env runner counts, predict them, compare with what "
        "was measured (analysis.plan_check)",
    ),
    "break-even": (
        "--break-even",
        "per configuration, the env cost per step above which it beats the single-process "
        "reference, from the run's measured parts (analysis.break_even)",
    ),
    "transfer": (
        "--transfer",
        "another machine, predicted from the run's measured parts (CPU per env step, start-up, "
        "env steps to the target) as a roofline (analysis.transfer)",
    ),
    "learners": (
        "--learners",
        "Gorila's applied learner updates/s at more learners (Amdahl's law with the parameter "
        "server's apply as the serial part), or RLlib's synchronous learners' env steps/s "
        "from the run's two smallest learner counts (analysis.transfer)",
    ),
}


def subcommand_argv(argv: list[str]) -> list[str]:
    """``argv`` in the subcommand spelling: the older flags become the subcommand they stand
    for (``RUN --break-even ...`` -> ``break-even RUN ...``, ``RUN --holdout 8,16 ...`` ->
    ``holdout RUN 8,16 ...``), a bare ``RUN ...`` is ``fit RUN ...``; an ``argv`` that starts
    with a subcommand (or asks for help) is returned as given.

    Raises:
        ValueError: two modes at once, or ``--holdout`` without its counts.
    """
    argv = list(argv)
    if not argv or argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help"):
        return argv
    flags = {flag: name for name, (flag, _) in SUBCOMMANDS.items() if flag}
    modes = [i for i, a in enumerate(argv) if a.split("=")[0] in flags]
    if len(modes) > 1:
        raise ValueError(f"{argv[modes[0]]} and {argv[modes[1]]}: choose one")
    if not modes:
        return ["fit", *argv]
    i = modes[0]
    flag, _, value = argv[i].partition("=")
    rest = argv[:i] + argv[i + 1 :]
    if flag == "--holdout":
        if not value:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                raise ValueError("--holdout: expected the env runner counts to hold out, e.g. 8,16")
            value, rest = argv[i + 1], argv[:i] + argv[i + 2 :]
        rest.append(value)
    return [flags[flag], *rest]


def _parser() -> tuple[OneLineParser, dict[str, OneLineParser]]:
    """The command line: one subparser per :data:`SUBCOMMANDS` entry, each with only its
    options (a flag given to the wrong one is named by :func:`_misplaced`)."""
    p = OneLineParser(
        prog=PROG,
        description="Capacity plan and the models behind it, from a results directory; the "
        "older flags (RUN --holdout N,M, --break-even, --transfer, --learners) still work.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    subs = {name: sub.add_parser(name, help=words) for name, (_, words) in SUBCOMMANDS.items()}
    for name, q in subs.items():
        q.prog = f"{PROG} {name}"
        q.add_argument(
            "results_dir", metavar="RESULTS_DIR", help="results/<sweep>/<run_id>/ directory"
        )
        q.add_argument("--target", help="override the target: absolute value or percent of optimum")
    subs["holdout"].add_argument(
        "holdout", metavar="N[,N]", help="env runner counts to hold out, e.g. 8,16"
    )
    for name in ("fit", "break-even"):
        q = subs[name]
        q.add_argument("--deadline", help="wall-clock limit for one run, e.g. 10m, 90s, 1h30m")
        q.add_argument(
            "--vm", action="append", help="VM size to consider (repeatable; default: all)"
        )
        q.add_argument("--vm-table", help="a VM size CSV to use instead of the shipped one")
    fit = subs["fit"]
    fit.add_argument("--budget", help="dollars one run may cost, e.g. 5usd")
    fit.add_argument(
        "--low-priority", action="store_true", help="price low-priority (spot) capacity"
    )
    fit.add_argument(
        "--max-env-runners",
        "--max-workers",
        type=int,
        default=64,
        help="largest env runner count considered (default 64)",
    )
    fit.add_argument(
        "--steps-to-target",
        type=float,
        help="plan from a known sample budget instead of the run's TTTs: env steps a "
        "run needs (e.g. from a published tuned example); the run supplies its "
        "measured env steps/s per env runner",
    )
    fit.add_argument(
        "--env-steps-per-s-per-runner",
        type=float,
        help="with --steps-to-target: the sampling rate per env runner to assume "
        "instead of the run's measured end-to-end rate (e.g. the sampler's own "
        "rate when the measured run was learner-bound)",
    )
    fit.add_argument(
        "--launcher",
        choices=sorted(LAUNCHERS),
        default=DEFAULT_LAUNCHER,
        help="where the run would start: its assumed start-up and billing unit "
        f"(default {DEFAULT_LAUNCHER}: 5 min, per minute)",
    )
    fit.add_argument(
        "--startup",
        help="seconds before the first trial starts, e.g. 5m (node provisioning, image "
        "pull, Ray start-up); overrides the launcher's",
    )
    fit.add_argument(
        "--billing", help="billing granularity, e.g. 1m or 1s; overrides the launcher's"
    )
    for name in ("break-even", "transfer"):
        subs[name].add_argument(
            "--env-cost-ms",
            default="",
            help="env costs (ms per step, comma-separated; transfer: one) at which to "
            "predict every configuration's TTT, e.g. 10,40",
        )
    for name in ("break-even", "learners"):
        subs[name].add_argument(
            "--held-out",
            default="",
            metavar="RUN[,RUN]",
            help="runs of the same study at other env costs (break-even) or learner counts "
            "(learners), each predicted from this run and compared with what was measured",
        )
        subs[name].add_argument(
            "--allow-shared-seeds",
            action="store_true",
            help="with --held-out: check the model on held-out runs that share seeds "
            "with this run (refused by default: a model is checked on seeds it "
            "was not fitted on); the table says so",
        )
    subs["learners"].add_argument(
        "--learner-counts",
        default="2,4,8",
        metavar="M[,M]",
        help="the learner counts to predict (default 2,4,8)",
    )
    transfer = subs["transfer"]
    transfer.add_argument("--cores", type=float, help="the target machine's usable cores")
    transfer.add_argument(
        "--core-speed",
        type=float,
        default=1.0,
        help="the target's per-core speed over the measured machine's (default 1: the same cores)",
    )
    transfer.add_argument(
        "--source-cores",
        type=float,
        help="the cores the run could use (default: its environment.json's usable_cores, "
        "else cpu_count)",
    )
    transfer.add_argument(
        "--check",
        metavar="RUN",
        help="the same study measured on the target machine, compared with the prediction "
        "made at its env CPU cost per step (none of its parts enters it)",
    )
    return p, subs


def _misplaced(argv: list[str], subs: dict[str, OneLineParser]) -> str | None:
    """A one-line error for the first option in ``argv`` (subcommand spelling) that belongs to
    other subcommands than the one asked for, naming them; None when there is none."""
    if not argv or argv[0] not in subs:
        return None
    own = subs[argv[0]]._option_string_actions
    for word in argv[1:]:
        flag = word.split("=")[0]
        if flag.startswith("--") and flag not in own:
            owners = [n for n, q in subs.items() if flag in q._option_string_actions]
            if owners:
                named = [f"{n} ({SUBCOMMANDS[n][0]})" if SUBCOMMANDS[n][0] else n for n in owners]
                return f"{flag}: only with {' or '.join(named)}, not {argv[0]}"
    return None


def _vms(args) -> list[VMSize]:
    """The VM sizes ``--vm`` names (all of ``--vm-table``'s without it).

    Raises:
        ValueError: an unknown size."""
    table = load_vm_sizes(args.vm_table)
    unknown = [v for v in args.vm or () if v not in table]
    if unknown:
        raise ValueError(f"--vm {unknown[0]}: unknown VM size; known: {', '.join(table)}")
    return [table[v] for v in args.vm] if args.vm else list(table.values())


def _held_out(args, res) -> tuple[list, dict[str, list[int]]]:
    """The ``--held-out`` runs, loaded, and the seeds each shares with ``res``.

    Raises:
        ValueError: a held-out run shares seeds with ``res`` without ``--allow-shared-seeds``,
            or ``--allow-shared-seeds`` without ``--held-out``.
        ResultsError: a held-out run cannot be read.
    """
    from analysis.load import load_results

    dirs = [x.strip() for x in args.held_out.split(",") if x.strip()]
    held = [load_results(d) for d in dirs]
    if args.allow_shared_seeds and not held:
        raise ValueError("--allow-shared-seeds: only with --held-out")
    shared = {d: sorted(_run_seeds(res) & _run_seeds(h)) for d, h in zip(dirs, held, strict=True)}
    shared = {d: seeds for d, seeds in shared.items() if seeds}
    if shared and not args.allow_shared_seeds:
        d, seeds = next(iter(shared.items()))
        raise ValueError(
            f"--held-out {d}: shares seeds {', '.join(map(str, seeds))} with "
            f"{args.results_dir}, the run the model is fitted on; a held-out check "
            "needs seeds the fit did not use (re-run it with --first-seed "
            "beyond the fit's, or pass --allow-shared-seeds to check anyway)"
        )
    return held, shared


class _BadInput(Exception):
    """A usage error found after parsing: one line on stderr, exit status 2."""


@contextlib.contextmanager
def _bad_input():
    """Within it, an unreadable run or a bad value (``ResultsError``, ``ValueError``,
    ``OSError``) is the user's input, not the program's fault: :class:`_BadInput`."""
    from analysis.load import ResultsError

    try:
        yield
    except (ResultsError, ValueError, OSError) as exc:
        raise _BadInput(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 2 bad input).

    Each subcommand checks its inputs (every run read, every value parsed) before it prints
    anything."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit 1 (our internal error's code): let the guard end it as
            # every command does when its reader goes away
            raise BrokenPipeError

    from analysis.load import load_results
    from analysis.metrics import resolve_target

    argv = sys.argv[1:] if argv is None else list(argv)
    p, subs = _parser()
    try:
        with _bad_input():
            argv = subcommand_argv(argv)
            misplaced = _misplaced(argv, subs)
            if misplaced:
                raise ValueError(misplaced)
        args = p.parse_args(argv)
        with _bad_input():
            res = load_results(args.results_dir)
            resolve_target(res, args.target)  # a bad --target: one line, whatever the mode
        return _MODES[args.command](args, res, _Console(width=max(Console().width, 120)))
    except _BadInput as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_BAD_INPUT


def _parse_costs(text: str) -> list[float]:
    """``"10,40"`` -> ``[10.0, 40.0]`` (ms per env step, each >= 0).

    Raises:
        ValueError: not a comma-separated list of numbers >= 0.
    """
    costs = []
    for part in filter(None, (x.strip() for x in text.split(","))):
        try:
            value = float(part)
        except ValueError:
            value = -1.0
        if not value >= 0:
            raise ValueError(f"--env-cost-ms {text!r}: expected milliseconds >= 0, e.g. 10,40")
        costs.append(value)
    return costs


def _run_seeds(res) -> set[int]:
    """The seeds of a run's trials (the reference's included)."""
    return {int(x) for x in res.trials["seed"].dropna()}


def _break_even_main(args, res, console) -> int:
    """``break-even``: the measured parts, the break-even env cost per configuration and
    the predicted TTT at each of the ``--env-cost-ms`` costs, then at each cost the plan
    read from its parts (:func:`analysis.break_even.plan_at_cost`, within the deadline,
    rented from the VM sizes); with ``--held-out`` runs of the same study at other env costs,
    each of their configurations' TTT predicted from this run's parts against what was
    measured."""

    from analysis.break_even import (
        break_even_headers,
        break_even_rows,
        break_even_table_rows,
        plan_at_cost,
    )
    from analysis.study import analyse

    with _bad_input():
        costs = _parse_costs(args.env_cost_ms)
        deadline = parse_duration(args.deadline, "--deadline") if args.deadline else None
        vms = _vms(args)
        held, shared = _held_out(args, res)
    fit = analyse(res, args.target)
    rows = break_even_rows(fit, costs)
    console.print(
        f"[bold]Break-even env cost[/bold] for {escape(str(res.path))}: TTT(c) = start-up + env "
        "steps x (overhead + c) / concurrent envs, from the run's measured parts "
        "(analysis/break_even.py)"
    )
    if rows.empty or not rows["reference"].any():
        console.print(
            "No break-even: the run needs a single-process reference and "
            "configurations that reached the target in two iterations or more."
        )
        return 0
    _print_rows(console, break_even_headers(costs), break_even_table_rows(rows, costs))
    for c in costs:
        console.print(f"[bold]At {c:g} ms per env step[/bold]")
        for line in plan_at_cost(fit, c, deadline, vms):
            _say(console, f"- {line}")
    if held:
        _print_held_out(fit, [analyse(h, args.target) for h in held], console)
        for d, seeds in shared.items():
            console.print(
                f"[yellow]Not on fresh seeds: {escape(str(d))} shares seeds "
                f"{', '.join(map(str, seeds))} with the fit run, so its cells check "
                "the model on seeds it was fitted on (--allow-shared-seeds).[/yellow]",
                soft_wrap=True,
            )
    return 0


def _transfer_main(args, res, console) -> int:
    """``transfer``: each configuration predicted on the machine ``--cores`` x
    ``--core-speed`` from the run's parts (:func:`analysis.transfer.transfer`), at the env
    CPU per step given (default the run's own), the CPU-bound break-even there
    (:func:`analysis.transfer.break_even_on`), then, with ``--check`` (the same study
    measured there), the prediction against the measurement.

    Raises:
        _BadInput: ``--cores``, ``--core-speed`` or ``--source-cores`` not > 0, more than one
            env cost, or one beside ``--check`` (which predicts at the checked run's cost); an
            unreadable checked run; the run's cores unknown without ``--source-cores``."""

    from analysis.load import load_results
    from analysis.study import analyse
    from analysis.transfer import (
        CHECK_HEADERS,
        Machine,
        break_even_on,
        break_even_on_words,
        check_rows,
        check_table_rows,
        check_words,
        driver_cell,
        env_costs_ms,
        learner_cell,
        source_cores,
        transfer,
    )

    with _bad_input():
        costs = _parse_costs(args.env_cost_ms)
        if args.cores is None or not args.cores > 0:
            raise ValueError("transfer needs --cores > 0: the target machine's usable cores")
        for flag, value in (
            ("--core-speed", args.core_speed),
            ("--source-cores", args.source_cores),
        ):
            if value is not None and not value > 0:
                raise ValueError(f"{flag} {value:g}: must be > 0")
        if len(costs) > 1:
            raise ValueError(
                f"--env-cost-ms {args.env_cost_ms!r}: transfer predicts at one env cost"
            )
        if args.check and costs:
            raise ValueError(
                "--check predicts at the checked run's own env cost: leave out --env-cost-ms"
            )
        checked = load_results(args.check) if args.check else None
    data = analyse(res, args.target)
    machine = Machine(args.cores, args.core_speed)
    k0 = args.source_cores if args.source_cores is not None else source_cores(data)
    measured = analyse(checked, args.target) if checked is not None else None
    cost_ms = env_costs_ms(measured)[0] if measured is not None else (costs or [None])[0]
    with _bad_input():  # the run's cores unknown: --source-cores says them
        predicted = transfer(data, machine, cores=k0, cpu_cost_ms=cost_ms)
    console.print(
        f"[bold]Transfer[/bold] of {escape(str(res.path))} (measured on {k0:g} core(s)) to "
        f"{machine.cores:g} core(s) at {machine.core_speed:g}x the per-core speed: "
        "a roofline of CPU per env step, start-up and env steps (analysis/transfer.py); "
        f"env CPU per step {env_costs_ms(data)[0] if cost_ms is None else cost_ms:g} ms"
    )
    console.print(
        "From the measured machine: CPU per env step and the driver's and the "
        "learner's updates' shares of it, "
        "start-up (serial part and per env runner), env steps to the "
        "target. From the target: its cores and per-core speed.",
        highlight=False,
        soft_wrap=True,
    )
    if not predicted:
        console.print(
            "No prediction: no configuration reached the target in two iterations or more."
        )
        return 0
    headers = ["configuration", "CPU per env step (ms)", "of it the driver's (ms)"]
    headers += ["of it the learner's updates (ms)", "binding ceiling", "env steps/s"]
    headers += ["start-up", "env steps to target", "predicted TTT [95% CI]"]
    rows = [
        [
            config_name(
                p.algorithm, None if p.reference else p.num_env_runners, reference=p.reference
            ),
            f"{p.cpu_ms_per_step:.1f}",
            driver_cell(p.reference, p.driver_ms_per_step),
            learner_cell(p.reference, p.learner_ms_per_step),
            p.ceiling,
            f"{p.rate:.0f}",
            fmt_s(p.startup_s),
            f"{p.steps:,.0f}",
            fmt_ci(p.ttt_s, p.ttt_low_s, p.ttt_high_s, fmt_s),
        ]
        for p in predicted
    ]
    _print_rows(console, headers, rows)
    be = break_even_on(data, machine, cores=k0)
    for _, r in be.iterrows():
        console.print(
            f"- {config_phrase(r['algorithm'], r['num_env_runners'])}: "
            + (
                "never beats one process"
                if r["break_even_ms"] == float("inf")
                else f"beats one process from ~{r['break_even_ms']:.0f} ms of CPU per env step"
            )
            + f" (absolute speedup bound {r['speedup_bound']:.2f}x; "
            f"{r['steps_ratio']:.1f}x the reference's env steps)",
            highlight=False,
        )
    _say(console, break_even_on_words(be, machine))
    if measured is not None:
        rows = check_rows(predicted, measured)
        console.print(
            f"[bold]Check[/bold] against {escape(str(checked.path))}, measured on the target"
        )
        _print_rows(console, CHECK_HEADERS, check_table_rows(rows))
        _say(console, check_words(rows, k0, machine))
    return 0


def _parse_learner_counts(text: str) -> list[int]:
    """``"2,4,8"`` -> ``[2, 4, 8]``.

    Raises:
        ValueError: a count that is not an integer of at least 1, or none.
    """
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise ValueError(
            f"--learner-counts {text!r}: expected learner counts of at least 1, e.g. 2,4,8"
        )
    return sorted(set(counts))


def _learners_main(args, res, console) -> int:
    """``learners``: applied learner updates/s at ``--learner-counts`` learners predicted from
    the run's one-learner GORILA trials (:func:`analysis.transfer.learner_predictions`), then
    each learner count measured in the run or in the held-out runs against its prediction
    (:func:`analysis.transfer.learner_scaling_check`); a run without GORILA goes to
    :func:`_sync_learners_main`. Exit 0; 2 when there is nothing to predict from."""

    from analysis.study import analyse
    from analysis.transfer import learner_predictions, learner_scaling_check

    target = args.target
    with _bad_input():
        counts = _parse_learner_counts(args.learner_counts)
        held, shared_seeds = _held_out(args, res)
    fit = analyse(res, target)
    pred = learner_predictions(fit, counts)
    if pred.empty:
        return _sync_learners_main(res, fit, counts, held, target, console, shared_seeds)
    x1, u1, bound = pred["x1"].iloc[0], pred["u1"].iloc[0], pred["bound"].iloc[0]
    console.print(
        f"[bold]Learners[/bold] of {escape(str(res.path))}: one learner applied {x1:.0f} updates/s with the "
        f"parameter server busy {u1:.0%} of the time; Amdahl's law with the server's apply as "
        f"the serial part (analysis.transfer.learner_scaling) bounds any learner count at "
        f"{bound:.0f} updates/s. An upper estimate: it leaves out the server's time per update "
        "growing with the learners, their parameter pulls, and cores the learners share.",
        highlight=False,
        soft_wrap=True,
    )
    _print_rows(
        console,
        ["learners", "predicted updates/s", "speedup", "parallel efficiency"],
        [
            [str(r.num_learners), f"{r.predicted:.0f}", f"{r.speedup:.2f}x", f"{r.efficiency:.0%}"]
            for r in pred.itertuples()
        ],
    )
    _print_learner_check(
        learner_scaling_check(fit, [analyse(h, target) for h in held]), console, shared_seeds
    )
    return 0


def _print_learner_check(rows, console, shared_seeds: dict[str, list[int]]) -> None:
    """A learner check's rows (:func:`analysis.transfer.learner_check_table`) as a table and
    its sentence; one line when no other learner count was measured."""

    from analysis.transfer import learner_check_table, learner_check_words

    if rows.empty:
        console.print("No other learner count measured: nothing to check the prediction on.")
        return
    console.print(
        "[bold]Checked[/bold]: each measured learner count against its prediction"
        + (
            f" (held-out runs sharing seeds with the fit: {escape(', '.join(shared_seeds))})"
            if shared_seeds
            else ""
        )
    )
    headers, cells = learner_check_table(rows)
    _print_rows(console, headers, cells, left=("run",))
    _say(console, learner_check_words(rows))


def _sync_learners_main(
    res, fit, counts: list[int], held: list, target, console, shared_seeds: dict[str, list[int]]
) -> int:
    """``learners`` on a run without GORILA: RLlib's synchronous learners' env steps/s at
    ``counts`` learners, from the run's two smallest learner counts
    (:func:`analysis.transfer.sync_learner_parts`), then checked on its other counts and
    ``held`` (:func:`analysis.transfer.sync_learner_check`). Exit 0; 2 when the run has
    neither GORILA's one-learner trials nor two learner counts of synchronous learners."""

    from analysis.study import analyse
    from analysis.transfer import sync_learner_check, sync_learner_parts, sync_learner_scaling

    parts = sync_learner_parts(fit)
    if parts is None:
        sys.stderr.write(
            f"python -m analysis.plan: error: {res.path}: neither a one-learner GORILA trial "
            "with the parameter server's busy share (server_busy_s) recorded nor two learner "
            "counts of RLlib's synchronous learners (num_learners >= 1): nothing to predict "
            "from\n"
        )
        return EXIT_BAD_INPUT
    algorithm, m1, m2, a, b = parts
    # b < 0: the second learner cost more time than it took off; a negative "share" read
    # without that would look like a bug
    slower = (
        f": negative, {m2} learners were slower than {m1}, so more learners predict a slower loop"
        if b < 0
        else ""
    )
    shared = f"one they share ({b * 1e3:.3f} ms{slower})"
    console.print(
        f"[bold]Learners[/bold] of {escape(str(res.path))}: {algorithm}'s synchronous learners, its time "
        f"per env step split into a part that does not shrink with learners ({a * 1e3:.3f} ms) "
        f"and {shared}, solved from {m1} and {m2} learners "
        "(analysis.transfer.sync_learner_scaling).",
        highlight=False,
        soft_wrap=True,
    )

    def pace(m: int) -> str:
        try:
            return f"{sync_learner_scaling(m, a, b):,.0f}"
        except ValueError:
            return "no finite pace"

    _print_rows(console, ["learners", "predicted env steps/s"], [[str(m), pace(m)] for m in counts])
    _print_learner_check(
        sync_learner_check(fit, [analyse(h, target) for h in held]), console, shared_seeds
    )
    return 0


def _print_held_out(fit, held: list, console) -> None:
    """The held-out cells of a break-even study (:func:`analysis.break_even.held_out_rows`)
    as a table, then the verdict in plain words."""

    from analysis.break_even import held_out_check

    c = held_out_check(fit, held)
    console.print(
        "[bold]Held-out env costs[/bold]: each run's TTT predicted from "
        f"{escape(fit.res.path.name)}'s parts alone"
    )
    if c["rows"]:
        _print_rows(console, c["headers"], c["rows"])
    _say(console, c["verdict"])


#: Subcommand -> what it runs.
_MODES = {
    "fit": _fit_main,
    "holdout": _check_main,
    "break-even": _break_even_main,
    "transfer": _transfer_main,
    "learners": _learners_main,
}


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m analysis.plan", main))

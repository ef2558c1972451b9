"""One exit-code convention for every command of the suite (``sweeps.run``, ``analysis.*``,
``cluster.*``): an error is one line on stderr, never a traceback, unless asked for.

Exit codes (documented in README.md and docs/results.md):

==== ==========================================================================================
0    done
1    an internal error (a bug, or a failure of a library the suite calls): one line naming the
     exception; ``--verbose`` or ``RL_SCALING_TRACEBACK=1`` shows the traceback
2    bad input: a sweep file, flag, results directory or address that cannot be used
3    the results could not be written (disk full, permissions): what was recorded before is
     kept, and ``sweeps.run --resume`` continues once there is room
4    ``sweeps.run``: no trial succeeded (every one ended in an error): a summary names the
     error class, how many trials had it, the first message and the log with the tracebacks
130  interrupted (Ctrl-C or SIGTERM): what finished is kept; ``sweeps.run --resume`` continues
==== ==========================================================================================
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Collection, Sequence

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_WRITE_FAILED = 3
EXIT_NO_TRIAL_SUCCEEDED = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141, as a shell reports a process SIGPIPE ended


class SpecError(ValueError):
    """Bad input (exit code 2): a sweep file, flag or results directory that is missing,
    malformed or inconsistent. ``str()`` is one line."""


def want_traceback(argv: Sequence[str] | None = None) -> bool:
    """True when the user asked for tracebacks: ``--verbose`` on the command line or
    ``RL_SCALING_TRACEBACK=1`` in the environment."""
    argv = sys.argv[1:] if argv is None else argv
    return "--verbose" in argv or os.environ.get("RL_SCALING_TRACEBACK", "") not in ("", "0")


def find_os_error(exc: BaseException) -> OSError | None:
    """The first :class:`OSError` in ``exc``'s cause/context chain (Ray Tune wraps what a
    callback raised), or None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def describe_os_error(exc: OSError) -> str:
    """``"No space left on device: results/x/trials.parquet"`` (strerror and file name when
    the error has them, else ``str(exc)``)."""
    what = exc.strerror or str(exc)
    return f"{what}: {exc.filename}" if exc.filename else what


def sigterm_as_interrupt() -> None:
    """Treat SIGTERM (``kill``, a batch scheduler's time limit, ``timeout``) like Ctrl-C: the
    process gets SIGINT, so Ray Tune stops its trials and saves its state, and the command ends
    with its one "interrupted" line and exit 130 instead of a native stack dump.

    Call it after ``ray.init`` too: Ray's core worker installs its own SIGTERM handler (which
    prints a stack trace) when it starts. Main thread only (Python's ``signal`` rule).
    """

    def _handler(signum, frame):  # noqa: ARG001 - signal handler signature
        os.kill(os.getpid(), signal.SIGINT)

    signal.signal(signal.SIGTERM, _handler)


def _stdout_gone() -> bool:
    """True when standard output is a pipe whose reader has closed it (poll reports an error
    on its write end), so a BrokenPipeError came from stdout and not from, say, a socket to a
    Ray job server, which stays an error of its own."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll, or stdout is no file
        return False


def guard(prog: str, main: Callable[[], int]) -> int:
    """Run a CLI ``main`` and map what escapes it to one stderr line and an exit code.

    ``main`` handles the errors it expects (bad input: exit 2) itself; this catches the rest:
    KeyboardInterrupt → 130, an :class:`OSError` → 3, anything else → 1 (re-raised with its
    traceback when :func:`want_traceback`). ``SystemExit`` (argparse) passes through. Standard
    output closed by its reader (``... | head``) ends the command quietly with 141, as SIGPIPE
    ends ``yes | head``'s ``yes`` (Python's docs, "Note on SIGPIPE", in the ``signal`` module).

    Returns:
        The process exit code.
    """
    sigterm_as_interrupt()
    try:
        code = main()
        sys.stdout.flush()  # a pipe closed early raises here, inside the guard
        return code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place that turns a crash into one line
        os_error = find_os_error(exc)
        if isinstance(os_error, BrokenPipeError) and _stdout_gone():
            # what is still buffered can go nowhere: point stdout at devnull so that
            # Python's flush at exit does not print a second error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        if want_traceback():
            raise
        if os_error is not None:
            print(f"{prog}: error: {describe_os_error(os_error)}", file=sys.stderr)
            return EXIT_WRITE_FAILED
        msg = " ".join(str(exc).split()) or "(no message)"
        if len(msg) > 300:
            msg = msg[:297] + "..."
        print(
            f"{prog}: internal error: {type(exc).__name__}: {msg} (rerun with --verbose or "
            "RL_SCALING_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


class OneLineParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors are one stderr line
    (``<prog>: error: <message>``) and exit status 2, without the usage block."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse's hook
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def sweep_argv(file: str, *args: str) -> list[str]:
    """The command that runs a sweep, as words: ``python -m sweeps.run FILE ARGS...``; the one
    spelling every launcher (Ray Jobs, KubeRay, Azure ML) and the plan's suggested commands use."""
    return ["python", "-m", "sweeps.run", str(file), *map(str, args)]


def shell_line(argv: Sequence[str], verbatim: Collection[str] = ()) -> str:
    """``argv`` as one shell line, each word quoted (``shlex.quote``) except those in
    ``verbatim``, which the shell or the platform must see as written (``~/results`` for the
    head's shell to expand, Azure ML's ``${{outputs.results}}``)."""
    import shlex

    return " ".join(a if a in verbatim else shlex.quote(a) for a in argv)


def sweep_file_in(command: str) -> str | None:
    """The sweep file of a recorded ``python -m sweeps.run FILE ...`` command line (the inverse
    of :func:`sweep_argv`), or None when the line runs no sweep."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if "sweeps.run" in words and words.index("sweeps.run") + 1 < len(words):
        return words[words.index("sweeps.run") + 1]
    return None

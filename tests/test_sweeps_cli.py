"""One exit-code convention for every command (sweeps.engine.cli): what escapes a command's main is
one stderr line and a documented exit code, never a traceback unless asked for."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.engine.cli import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_TRIAL_SUCCEEDED,
    EXIT_WRITE_FAILED,
    find_os_error,
    guard,
)

RUN = Path(__file__).parents[1] / "docs" / "data" / "cabs_scaling" / "20261122-203334"


def _raises(exc: BaseException):
    def main() -> int:
        raise exc

    return main


def test_an_internal_error_is_one_line_and_exit_1(capsys, monkeypatch):
    monkeypatch.delenv("RL_SCALING_TRACEBACK", raising=False)
    monkeypatch.setattr(sys, "argv", ["prog"])
    assert (
        guard("prog", _raises(RuntimeError("no such column\n  in a foreign file"))) == EXIT_INTERNAL
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("prog: internal error: RuntimeError: ")
    assert "no such column in a foreign file" in err and "--verbose" in err


def test_the_traceback_is_shown_when_asked_for(monkeypatch):
    monkeypatch.setenv("RL_SCALING_TRACEBACK", "1")
    with pytest.raises(KeyError):
        guard("prog", _raises(KeyError("x")))


def test_a_write_failure_anywhere_in_the_cause_chain_is_exit_3(capsys, monkeypatch):
    monkeypatch.delenv("RL_SCALING_TRACEBACK", raising=False)
    monkeypatch.setattr(sys, "argv", ["prog"])
    disk_full = OSError(errno.ENOSPC, "No space left on device", "results/x/trials.parquet")
    try:
        try:
            raise disk_full
        except OSError as e:
            raise RuntimeError("Tune wrapped it") from e
    except RuntimeError as wrapped:
        assert find_os_error(wrapped) is disk_full
        assert guard("prog", _raises(wrapped)) == EXIT_WRITE_FAILED
    assert (
        capsys.readouterr().err
        == "prog: error: No space left on device: results/x/trials.parquet\n"
    )


def test_an_interrupt_is_exit_130(capsys):
    assert guard("prog", _raises(KeyboardInterrupt())) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "prog: interrupted\n"


def test_a_report_written_to_a_full_disk_is_one_line():
    """The real command and the real kernel: /dev/full refuses every write with ENOSPC."""
    if not Path("/dev/full").exists():
        pytest.fail("/dev/full is part of every Linux system this suite supports")
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.report", str(RUN), "-o", "/dev/full"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_sweep_command_is_spelled_once_and_read_back_from_a_recorded_line():
    from sweeps.engine.cli import shell_line, sweep_argv, sweep_file_in

    argv = sweep_argv("my sweeps/a.py", "--results", "~/results", "--budget-s", "60")
    assert argv[:4] == ["python", "-m", "sweeps.run", "my sweeps/a.py"]
    line = shell_line(argv, verbatim={"~/results"})
    assert line == "python -m sweeps.run 'my sweeps/a.py' --results ~/results --budget-s 60"
    assert sweep_file_in(line) == "my sweeps/a.py"
    assert sweep_file_in("python -m analysis.report results/x/1") is None


@pytest.mark.parametrize(
    "command",
    [
        ["sweeps.run", "sweeps/cabs_scaling.py", "--dry-run"],
        ["analysis.history", "docs/data/cabs_scaling"],
        ["analysis.plan", "fit", "docs/data/cabs_scaling/20261128-001042"],
    ],
    ids=lambda c: c[0],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(command):
    """``python -m sweeps.run FILE --dry-run | head``: the reader closes the pipe early. The
    command used to say "error: Broken pipe" and exit 3 (results not writable),
    or, through rich's console, exit 1 (an internal error's code); it ends quietly with 141,
    as a shell reports a process that SIGPIPE ended."""
    import os

    # the reader is gone before the first write: a pipe read after the command's first line
    # could take all of its few KiB before closing, and the test would pass or fail by timing
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", *command],
            cwd=Path(__file__).parents[1],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == EXIT_BROKEN_PIPE == 141, proc.stderr
    assert proc.stderr == ""


def test_a_broken_pipe_that_is_not_stdout_stays_an_error(capsys):
    """A BrokenPipeError from anything but standard output (a socket to a Ray job server
    whose peer went away) is not a reader that stopped early: one line and exit 3, as any
    OSError."""
    exc = BrokenPipeError(errno.EPIPE, "Broken pipe")
    assert guard("prog", _raises(exc)) == EXIT_WRITE_FAILED
    err = capsys.readouterr().err
    assert err == "prog: error: Broken pipe\n"


def test_the_help_is_plain_text_and_lists_every_exit_code(in_process):
    """``--help`` reads as text in a terminal (no reStructuredText markup) and names each exit
    code the command can end with, from the constants it exits with."""
    from sweeps import run

    out = in_process(run.main, "--help")
    assert out.returncode == 0 and "``" not in out.stdout and ":mod:" not in out.stdout
    text = " ".join(out.stdout.split())
    codes = (EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_WRITE_FAILED, EXIT_NO_TRIAL_SUCCEEDED)
    for code in (0, *codes, EXIT_INTERRUPTED):
        assert f"; {code} " in text or f"Exit codes: {code} " in text, code

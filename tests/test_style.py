"""The code is linted and formatted as pyproject.toml's ``[tool.ruff]`` says (ruff pinned in
the ``dev`` extra: another release would format differently)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_code_passes_the_linter():
    proc = _ruff("check")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]


def test_the_code_is_formatted():
    proc = _ruff("format", "--check")
    assert proc.returncode == 0, "run `ruff format .`: " + proc.stdout[-3000:] + proc.stderr[-1000:]

"""Imports run one way (pyproject.toml's import-linter contracts), checked by import-linter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("envs", "sweeps", "analysis", "cluster")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the packages of cwd, not an installed copy
    cli = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"
    return subprocess.run(
        [sys.executable, "-c", cli, "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_hold():
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "3 kept, 0 broken" in proc.stdout


def test_a_reversed_import_breaks_them(tmp_path):
    """envs importing the engine, the run directory importing the engine's upper part, and
    cluster importing the command line are each reported."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "envs" / "__init__.py", "a") as f:
        f.write("\nfrom sweeps.engine import sweep_spec as _reversed  # noqa: E402\n")
    with open(tmp_path / "sweeps" / "engine" / "rundir.py", "a") as f:
        f.write("\nfrom sweeps.engine import record as _up  # noqa: E402\n")
    with open(tmp_path / "cluster" / "auth.py", "a") as f:
        f.write("\nfrom sweeps import run as _composed  # noqa: E402\n")
    proc = _lint(tmp_path)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "0 kept, 3 broken" in proc.stdout, proc.stdout[-3000:]
    assert (
        "envs.__init__ -> sweeps.engine.sweep_spec" in proc.stdout
        or "envs -> sweeps.engine.sweep_spec" in proc.stdout
    ), proc.stdout[-3000:]
    assert "sweeps.engine.rundir -> sweeps.engine.record" in proc.stdout, proc.stdout[-3000:]
    assert "cluster.auth -> sweeps.run" in proc.stdout, proc.stdout[-3000:]

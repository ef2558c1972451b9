"""Running a real sweep from a test, as a user runs it (not part of the product)."""

from __future__ import annotations

import subprocess
import sys


def run_sweep(path, results, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m sweeps.run PATH --results RESULTS --no-report`` in its own process,
    checked to exit 0 (the assertion shows the output's tails)."""
    proc = subprocess.run(
        [sys.executable, "-m", "sweeps.run", str(path), "--results", str(results), "--no-report"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc

"""Test-session rules.

In CI (``CI=true``, which ``.ci/run`` exports) a skipped test is a failure: a test that
silently skips checks nothing. The one exception is a test marked ``needs_gpu``, for hardware
CI machines lack. ``-ra`` (pyproject.toml) lists every skip and failure at the end.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_gpu: needs a GPU; the only test CI may skip")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if (os.environ.get("CI", "").lower() == "true" and report.skipped
            and not hasattr(report, "wasxfail") and item.get_closest_marker("needs_gpu") is None):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {reason}"


@pytest.fixture(scope="module")
def local_ray():
    """A private 2-CPU Ray for one test module (never a stray cluster), shut down after it;
    yields the ``ray`` module."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()

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


def init_local_ray():
    """Start a private 2-CPU Ray (never a stray cluster) with the project's Ray settings
    (:data:`cluster.nodes.RAY_SYSTEM_CONFIG`: env runners at the test process's priority, so
    a learner built in this process cannot starve them); returns the ``ray`` module."""
    import ray

    from cluster.nodes import RAY_SYSTEM_CONFIG

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             _system_config=dict(RAY_SYSTEM_CONFIG))
    return ray


@pytest.fixture(scope="module")
def local_ray():
    """A private 2-CPU Ray for one test module (:func:`init_local_ray`), shut down after it;
    yields the ``ray`` module."""
    ray = init_local_ray()
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture()
def s3(tmp_path, monkeypatch):
    """A moto S3 server on 127.0.0.1 with one bucket; the env that points clients at it."""
    import boto3
    from moto.server import ThreadedMotoServer

    from cluster.nodes import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
           "RL_SCALING_STAGING": str(tmp_path / "cache")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    client.create_bucket(Bucket="rl-results")
    try:
        yield {"env": {**os.environ, **env}, "client": client}
    finally:
        server.stop()


def s3_keys(client, prefix: str = "") -> set[str]:
    """The keys under ``prefix`` in the :func:`s3` fixture's bucket."""
    out = client.list_objects_v2(Bucket="rl-results", Prefix=prefix)
    return {o["Key"] for o in out.get("Contents", [])}

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first: the tests that train real algorithms (``slow``), then the other tests with
    a real Ray, then the rest, each in collection order. Two at a time (``-n 2``), the many
    short tests without Ray then fill the end of the run instead of one long sweep running
    alone on one core (longest-processing-time-first scheduling)."""

    def rank(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("slow") else 1 if item.get_closest_marker("ray") else 2

    items.sort(key=rank)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if (
        os.environ.get("CI", "").lower() == "true"
        and report.skipped
        and not hasattr(report, "wasxfail")
        and item.get_closest_marker("needs_gpu") is None
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {reason}"


def init_local_ray():
    """Start a private 2-CPU Ray (never a stray cluster) with the project's Ray settings
    (:data:`cluster.nodes.RAY_SYSTEM_CONFIG`: env runners at the test process's priority, so
    a learner built in this process cannot starve them); returns the ``ray`` module."""
    import ray

    from cluster.nodes import RAY_SYSTEM_CONFIG

    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _system_config=dict(RAY_SYSTEM_CONFIG),
    )
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


class AnalysedRuns:
    """``analyse(load_results(path))`` of runs that no test changes (those under docs/data),
    each analysed once per test process: ``runs(path)`` returns a deep copy, so a test that
    changes what it got cannot change another's; ``runs.studies`` is the cache itself, by
    resolved path, for :func:`analysis.pages.stale_regions`, which only reads it."""

    def __init__(self) -> None:
        self.studies: dict = {}

    def __call__(self, path):
        import copy

        from analysis.pages import cached_study

        return copy.deepcopy(cached_study(path, self.studies))


@pytest.fixture(scope="session")
def analysed_runs() -> AnalysedRuns:
    """The test process's :class:`AnalysedRuns` (an analysis of a docs run takes 1-8 s)."""
    return AnalysedRuns()


@pytest.fixture
def in_process(capfd):
    """Call a command line's ``main(argv)`` in the test's process instead of a new Python
    (which pays ~1.5 s of imports for ``analysis.plan``, ~4 s once RLlib is imported): returns
    ``call(main, *args) -> subprocess.CompletedProcess`` with the exit code (an argparse
    ``SystemExit`` included) and the output read at the file descriptors, C-level writes
    included. A traceback escapes as the test's failure, as it would show in a terminal. The
    environment variables ``main`` sets are undone after each call. Python warnings, which
    pytest would otherwise record apart, are written after the output as a new process would
    print them (every category Python shows by default), so a stray warning still breaks a
    one-line error."""
    import subprocess
    import warnings

    hidden = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)

    def call(main, *args: str) -> subprocess.CompletedProcess:
        environ = dict(os.environ)
        capfd.readouterr()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for category in hidden:
                    warnings.simplefilter("ignore", category)
                try:
                    code = main(list(args))
                except SystemExit as e:
                    code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
        finally:
            out, err = capfd.readouterr()
            os.environ.clear()
            os.environ.update(environ)
        err += "".join(
            warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
            for w in caught
        )
        return subprocess.CompletedProcess(
            [getattr(main, "__module__", "main"), *args], code, out, err
        )

    return call


@pytest.fixture
def plan(in_process):
    """``python -m analysis.plan ARGS`` with its ``main`` called in this process
    (:func:`in_process`); returns a ``subprocess.CompletedProcess``."""
    from analysis.plan import main

    return lambda *args: in_process(main, *args)


@pytest.fixture()
def s3(tmp_path, monkeypatch):
    """A moto S3 server on 127.0.0.1 with one bucket; the env that points clients at it."""
    import boto3
    from moto.server import ThreadedMotoServer

    from cluster.nodes import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "RL_SCALING_STAGING": str(tmp_path / "cache"),
    }
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


def _forget_user_modules(base) -> None:
    """Drop from gymnasium's registry the ids whose entry point is a module imported from a
    file under ``base``, then those modules from ``sys.modules`` (ids that installed packages
    registered, Atari's among them, stay)."""
    import inspect
    import sys

    import gymnasium

    def under_base(entry_point) -> bool:
        if callable(entry_point):
            try:
                path = inspect.getfile(entry_point)
            except TypeError:
                return False
        else:
            module = sys.modules.get(str(entry_point).split(":")[0])
            path = getattr(module, "__file__", None) or ""
        return str(path).startswith(str(base))

    for env_id in [i for i, spec in gymnasium.registry.items() if under_base(spec.entry_point)]:
        del gymnasium.registry[env_id]
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(base)):
            del sys.modules[name]


@pytest.fixture
def clean_imports(tmp_path_factory):
    """A test that imports a user's env module from a temporary folder (``corridor_env``) in
    this process: what an earlier test imported from its own temporary folder is forgotten
    first (same module name, another file), and this test's modules and the gymnasium ids they
    registered are forgotten after it."""
    _forget_user_modules(tmp_path_factory.getbasetemp())
    yield
    _forget_user_modules(tmp_path_factory.getbasetemp())

"""The run directory's file names are spelled in one package (sweeps/engine/rundir/)."""

from __future__ import annotations

import re
from pathlib import Path

from sweeps.engine import rundir

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sweeps", "envs", "analysis", "cluster", "benchmarks")


def _literals(names: tuple[str, ...]) -> re.Pattern:
    """A quoted string literal that is exactly one of ``names`` (or starts a path with it)."""
    alt = "|".join(re.escape(n) for n in names)
    return re.compile(rf"""(["'])(?:{alt})(?:\1|/)""")


def test_no_module_but_rundir_spells_a_run_file_name():
    names = (*rundir.RUN_FILES, rundir.ERRORS_LOG, rundir.LOCK, rundir.LOCK + ".pid")
    pattern = _literals(names)
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.parent == ROOT / "sweeps" / "engine" / "rundir":
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "spell these through sweeps.engine.rundir:\n" + "\n".join(found)


def test_the_check_finds_a_spelled_name():
    """The pattern is not vacuous: it matches the spellings it forbids, not prose."""
    pattern = _literals(rundir.RUN_FILES)
    assert pattern.search('path / "trials.parquet"')
    assert pattern.search("f\"{run_dir / 'spec.json'}\"")
    assert not pattern.search("the run's trials.parquet, in prose")
    assert not pattern.search('"""spec.json\'s content"""')
    assert rundir.RUN_FILES == (
        "trials.parquet",
        "progress.parquet",
        "spec.json",
        "environment.json",
        "optuna.db",
        "report.html",
    )


def test_json_files_carry_the_schema_version(tmp_path):
    import json

    import pytest

    from sweeps.engine.rundir.schema import SCHEMA_VERSION, SchemaError

    path = tmp_path / "spec.json"
    rundir.write_json(path, {"name": "x", rundir.JSON_VERSION_KEY: 99, "seeds": [1]})
    raw = json.loads(path.read_text())
    assert (
        list(raw)[0] == rundir.JSON_VERSION_KEY and raw[rundir.JSON_VERSION_KEY] == SCHEMA_VERSION
    )
    assert rundir.read_json(path) == {"name": "x", "seeds": [1]}  # the version is not content
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    path.write_text(json.dumps({"name": "old"}))  # written before versions were recorded
    assert rundir.read_json(path) == {"name": "old"}
    path.write_text(json.dumps({rundir.JSON_VERSION_KEY: SCHEMA_VERSION + 1, "name": "new"}))
    with pytest.raises(
        SchemaError,
        match=f"version {SCHEMA_VERSION + 1}, but this rl-scaling reads version {SCHEMA_VERSION}",
    ) as e:
        rundir.read_json(path)
    assert "\n" not in str(e.value)
    path.write_text("[1, 2]")
    with pytest.raises(SchemaError, match="expected a JSON object, got list"):
        rundir.read_json(path)


def test_concurrent_envs_counts_the_env_steps_that_can_wait_at_once():
    from sweeps.engine.rundir.schema import concurrent_envs

    assert concurrent_envs(16, 8, "sync") == 16  # each env runner steps its envs in turn
    assert concurrent_envs(2, 16, "async") == 32  # each sub-env in its own process
    assert concurrent_envs(0, 4, "async") == 4  # the driver's own env runner
    assert concurrent_envs(0, 4, "sync") == 1
    assert concurrent_envs(0, 1, "sync", is_reference=True) == 1

"""A sweep file's public API: ``from sweeps import ...``, the old import paths that keep working
with a deprecation notice, and the JSON Schema and field help generated from the models."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import jsonschema
import pytest
import yaml

import sweeps
from sweeps.engine.deprecated import OLD_PATHS, SweepAPIDeprecationWarning
from sweeps.engine.sweep_file import load_sweep
from sweeps.engine.sweep_schema import SHIPPED_SCHEMA, explain, schema_text, sweep_json_schema
from sweeps.run import main

ROOT = Path(__file__).parents[1]
PUBLIC = {
    "Sweep",
    "Search",
    "Confirm",
    "Budget",
    "Target",
    "Evaluation",
    "Capping",
    "Stall",
    "choice",
    "uniform",
    "loguniform",
    "randint",
}
SHIPPED_YAML = sorted((ROOT / "sweeps").glob("*.yaml"))


def test_the_public_face_is_what_a_sweep_file_needs_and_nothing_more():
    assert set(sweeps.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(sweeps, name) is getattr(
            importlib.import_module("sweeps.engine.sweep_spec"), name
        )


@pytest.mark.parametrize("old", OLD_PATHS)
def test_an_old_import_path_gives_the_same_objects_with_a_warning_naming_the_new_one(old):
    module = importlib.import_module(old)
    for name in sorted(PUBLIC):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            obj = getattr(module, name)
        assert obj is getattr(sweeps, name)
        (w,) = caught
        assert issubclass(w.category, SweepAPIDeprecationWarning)
        assert issubclass(w.category, DeprecationWarning)
        assert f"'{old}' is deprecated" in str(w.message)
        assert f"from sweeps import {name}" in str(w.message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert module.Param is importlib.import_module("sweeps.engine.sweep_spec").Param
    assert "not part of the sweep-file API" in str(caught[0].message)
    with pytest.raises(ImportError):
        exec(f"from {old} import NoSuchName")


SWEEP_FILE = """\
from {module} import Budget, Search, Sweep, Target, choice

SWEEP = Sweep(name="api", env="CartPole-v1", algorithms=["PPO"],
              search_space={{"num_env_runners": choice([0])}}, target=Target(value=100),
              budget=Budget(time_s=10), search=Search(sampler="grid", num_samples=1, seeds=1),
              baseline={{"algorithm": "PPO", "num_env_runners": 0}})
"""


@pytest.mark.parametrize("module", ["sweeps", *OLD_PATHS])
def test_a_sweep_file_loads_from_the_public_face_and_from_an_old_path_with_one_notice(
    tmp_path, capsys, module
):
    path = tmp_path / "api.py"
    path.write_text(SWEEP_FILE.format(module=module))
    sweep = load_sweep(path)
    assert isinstance(sweep, sweeps.Sweep) and sweep.name == "api"
    err = capsys.readouterr().err
    if module == "sweeps":
        assert "deprecated" not in err
    else:  # one line for the file, not one per imported name
        assert err.strip().splitlines() == [
            f"notice: {path}:1: '{module}' is deprecated; it still works, but import from "
            "'sweeps' (from sweeps import Sweep, Budget, ...)"
        ]


def test_the_shipped_schema_is_the_generated_one():
    """Regenerate with ``python -m sweeps.run --schema > sweeps/sweep.schema.json``."""
    assert (ROOT / SHIPPED_SCHEMA).read_text() == schema_text()


def test_the_schema_command_prints_the_shipped_copy():
    proc = subprocess.run(
        [sys.executable, "-m", "sweeps.run", "--schema"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / SHIPPED_SCHEMA).read_text()


def _validator():
    schema = sweep_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_yaml_sweeps_are_shipped_and_name_the_schema_on_their_first_line():
    assert SHIPPED_YAML
    for path in SHIPPED_YAML:
        first = path.read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=sweep.schema.json", path


@pytest.mark.parametrize("path", SHIPPED_YAML, ids=lambda p: p.name)
def test_the_schema_validates_every_shipped_yaml_sweep(path):
    errors = list(_validator().iter_errors(yaml.safe_load(path.read_text())))
    assert not errors, [e.message for e in errors]


def test_the_yaml_sweep_is_the_python_one():
    """The shipped YAML sanity sweep declares what its Python twin does."""
    assert load_sweep(ROOT / "sweeps/cartpole_quick.yaml") == load_sweep(
        ROOT / "sweeps/cartpole_quick.py"
    )


@pytest.mark.parametrize(
    "change, word",
    [
        (lambda d: d["budget"].update(time_sec=3), "time_sec"),  # a misspelled field
        (lambda d: d.update(serach={"seeds": 2}), "serach"),  # at the top level
        (lambda d: d["search"].update(sampler="tpee"), "tpee"),  # not one of the choices
        (lambda d: d["search_space"].update(lr={"logunifrom": [1e-4, 1e-3]}), "logunifrom"),
        (lambda d: d["search_space"].update(lr={"loguniform": [1e-4]}), "loguniform"),  # one bound
        (lambda d: d.pop("target"), "target"),  # a required field
    ],
)
def test_the_schema_rejects_what_the_loader_rejects(tmp_path, change, word):
    data = yaml.safe_load((ROOT / "sweeps/cartpole_quick.yaml").read_text())
    change(data)
    errors = list(_validator().iter_errors(data))
    assert errors
    best = jsonschema.exceptions.best_match(errors)
    assert word in best.json_path + best.message, (best.json_path, best.message)
    path = tmp_path / "bad.yaml"  # and the loader, which the schema describes, agrees
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(sweeps.engine.cli.SpecError):
        load_sweep(path)


def test_the_schema_accepts_the_long_form_of_a_parameter_and_a_top_level_sweep_key():
    data = yaml.safe_load((ROOT / "sweeps/cartpole_quick.yaml").read_text())
    data["search_space"]["lr"] = {"kind": "loguniform", "low": 1e-4, "high": 1e-3}
    assert not list(_validator().iter_errors({"sweep": data}))


def _properties(schema):
    for name, definition in schema["$defs"].items():
        for key, prop in definition.get("properties", {}).items():
            yield f"{name}.{key}", prop


def test_every_field_in_the_schema_says_what_it_means_and_times_say_their_units():
    for where, prop in _properties(sweep_json_schema()):
        assert prop.get("description"), f"{where} has no description"
        if where.endswith("_s"):
            assert prop.get("units") == "seconds", where
        if where.endswith("env_steps"):
            assert prop.get("units") == "env steps", where


def test_explain_gives_meaning_type_default_and_units(capsys):
    assert main(["--explain", "budget.time_s"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "budget.time_s",
        "  wall-clock seconds per trial, start-up included",
        "  type: number or null",
        "  default: null",
        "  units: seconds",
    ]
    text = explain("search")
    assert "default: Search() with the defaults of its fields" in text
    assert "    confirm: after the search, confirm its best configurations on fresh seeds" in text
    assert "default: 2" in explain("search.confirm.top_k")
    assert "type: 'tpe' | 'random' | 'grid'" in explain("search.sampler")
    assert "default: (required)" in explain("algorithms")


def test_explain_of_an_unknown_field_is_one_line_and_exit_2(capsys):
    assert main(["--explain", "search.seedz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: --explain: 'search.seedz': search has no field 'seedz' (its fields: "
        "sampler, num_samples, seeds, first_seed, max_concurrent, sampler_seed, "
        "capping, confirm, warm_trials, cold_every)"
    ]

"""Bad sweep input → exit code 2 and one line naming the file, the field and the reason."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GOOD = dict(
    name='"t"', env='"CartPole-v1"', algorithms='["PPO"]',
    search_space='{"num_workers": choice([0])}', target="Target(value=100.0)",
    budget="Budget(time_s=10)", extra="",
)


def sweep_file(tmp_path: Path, **overrides) -> Path:
    f = {**GOOD, **overrides}
    text = textwrap.dedent(f"""\
        from sweeps.spec import Budget, Search, Sweep, Target, choice, loguniform, randint
        SWEEP = Sweep(name={f['name']}, env={f['env']}, algorithms={f['algorithms']},
                      search_space={f['search_space']}, target={f['target']},
                      budget={f['budget']}, baseline={{"algorithm": "PPO", "num_workers": 0}}
                      {f['extra']})
        """)
    path = tmp_path / "bad_sweep.py"
    path.write_text(text)
    return path


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sweeps.run", *args], capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])


def test_missing_file(tmp_path):
    assert_one_line_error(run(str(tmp_path / "nope.py")), "nope.py", "no such sweep file")


def test_no_sweep(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("X = 1\n")
    assert_one_line_error(run(str(path)), "empty.py", "no SWEEP")


def test_unknown_algorithm(tmp_path):
    path = sweep_file(tmp_path, algorithms='["PPO", "A9C"]')
    assert_one_line_error(run(str(path), "--dry-run"), "bad_sweep.py", "algorithms[1]", "A9C")


def test_unknown_env(tmp_path):
    path = sweep_file(tmp_path, env='"NoSuchEnv-v9"')
    assert_one_line_error(run(str(path), "--dry-run"), "bad_sweep.py", "env", "NoSuchEnv-v9")


def test_unknown_parameter(tmp_path):
    path = sweep_file(tmp_path, search_space='{"num_workers": choice([0]), "flux": choice([1, 2])}')
    assert_one_line_error(run(str(path), "--dry-run"), "search_space.flux", "PPO")


@pytest.mark.parametrize("space, field", [
    ('{"lr": loguniform(1e-2, 1e-4)}', "search_space.lr"),
    ('{"num_workers": randint(4, 1)}', "search_space.num_workers"),
    ('{"num_workers": choice([])}', "search_space.num_workers"),
])
def test_empty_or_inverted_range(tmp_path, space, field):
    path = sweep_file(tmp_path, search_space=space)
    assert_one_line_error(run(str(path), "--dry-run"), "bad_sweep.py", field)


def test_target_metric_not_produced(tmp_path):
    path = sweep_file(tmp_path, target='Target(metric="custom/laps", value=3.0)')
    assert_one_line_error(run(str(path), "--dry-run"), "target.metric", "custom/laps")


def test_fraction_of_optimal_without_oracle(tmp_path):
    path = sweep_file(tmp_path, target="Target(fraction_of_optimal=0.9)")
    assert_one_line_error(run(str(path), "--dry-run"), "target.fraction_of_optimal", "oracle")


@pytest.mark.parametrize("budget", ["Budget(time_s=0)", "Budget(env_steps=-5)", "Budget()"])
def test_budget_not_positive(tmp_path, budget):
    path = sweep_file(tmp_path, budget=budget)
    assert_one_line_error(run(str(path), "--dry-run"), "budget")


def test_budget_override_not_positive(tmp_path):
    path = sweep_file(tmp_path)
    assert_one_line_error(run(str(path), "--dry-run", "--budget-s", "-1"), "--budget-s")


def test_results_dir_not_writable(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    path = sweep_file(tmp_path)
    assert_one_line_error(run(str(path), "--results", str(blocker / "results")), "results",
                          "cannot write")


def test_yaml_bad_range(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(textwrap.dedent("""\
        name: t
        env: CartPole-v1
        algorithms: [PPO]
        search_space:
          lr: {loguniform: [0.01, 0.0001]}
        target: {value: 100}
        budget: {time_s: 10}
        """))
    assert_one_line_error(run(str(path), "--dry-run"), "bad.yaml", "search_space.lr")


@pytest.mark.ray
def test_unreachable_address(tmp_path):
    path = sweep_file(tmp_path)
    proc = run(str(path), "--address", "127.0.0.1:1", timeout=90)
    assert_one_line_error(proc, "bad_sweep.py", "--address", "127.0.0.1:1")


@pytest.mark.parametrize("reference, fragments", [
    ('{"algorithm": "SB3-A2C"}', ("reference.algorithm", "SB3-A2C")),
    ('{"algorithm": "SB3-DQN", "num_epochs": 3}', ("reference.num_epochs", "unknown parameter")),
    ('{"algorithm": "SB3-DQN", "learning_rate": -1}', ("reference.learning_rate", "positive")),
    ('{"learning_rate": 1e-3}', ("reference", "must name its 'algorithm'")),
])
def test_bad_reference(tmp_path, reference, fragments):
    path = sweep_file(tmp_path, extra=f", reference={reference}")
    assert_one_line_error(run(str(path), "--dry-run"), "bad_sweep.py", *fragments)


def test_reference_needs_a_protocol_metric(tmp_path):
    path = sweep_file(tmp_path, target='Target(metric="env_runners/episode_return_max", value=1.0)',
                      extra=', reference={"algorithm": "SB3-DQN"}')
    assert_one_line_error(run(str(path), "--dry-run"), "reference", "'evaluation' or 'training'")

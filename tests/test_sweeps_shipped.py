"""Every shipped sweep file in sweeps/ loads, builds a valid RLlib config at every point of its
space (every choice value, both bounds of every range, and the baseline) on the env it names,
and passes its dry-run. A sweep file added later is covered without editing this test; a
sweep whose trials do not fit this machine is checked for config validity all the same."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.engine.sweep_file import SpecError, check_points, load_sweep, sweep_points

SWEEPS = Path(__file__).parents[1] / "sweeps"
SHIPPED = sorted(
    [
        *(
            p
            for p in [*SWEEPS.glob("*.py"), *SWEEPS.glob("experiments/*.py")]
            if re.search(r"^SWEEP = Sweep\(", p.read_text(), re.MULTILINE)
        ),
        *SWEEPS.glob("*.yaml"),
    ]
)


def test_the_shipped_sweeps_are_found():
    names = {p.stem for p in SHIPPED}
    assert {"cabs_scaling", "cabs_best", "cartpole_quick", "pong_impala", "pong_quick"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_point_builds_a_valid_rllib_config(path):
    sweep = load_sweep(path)
    points = sweep_points(sweep)
    assert points, "a sweep with no points"
    assert check_points(sweep, str(path)) == len(points)


def _asks_for_gpus(path: Path) -> bool:
    return any(
        float(p.get("num_gpus_per_learner") or 0) > 0 for _, p in sweep_points(load_sweep(path))
    )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_dry_run(path, capsys, monkeypatch):
    """Passes where it fits; a GPU sweep on a machine without GPUs (CI), or one sized for more
    CPUs than this machine has, is refused in one line (as its run would be), and passes when
    checked against a target cluster of its size (``--cluster``). In this
    process (the CLI's own process is tested below): a dry run starts no Ray."""
    from sweeps.engine.placement import trial_requests, trial_setup
    from sweeps.engine.sweep_file import sweep_target
    from sweeps.run import main

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    code = main([str(path), "--dry-run"])
    out, err = capsys.readouterr()
    if _asks_for_gpus(path) and shutil.which("nvidia-smi") is None:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, err[-2000:]
        assert "GPUs and the cluster has 0 in all" in lines[0], lines
        assert main([str(path), "--dry-run", "--cluster", "1x16:1"]) == 0
        out, err = capsys.readouterr()
        assert "Cluster: 1 node(s), 16 CPUs and 1 GPUs in total" in out, err[-2000:]
        return
    sweep = load_sweep(path)
    here = [{"CPU": float(os.cpu_count() or 1), "GPU": 0.0}]
    largest = max(
        r.cpus
        for r in trial_requests(sweep, trial_setup(sweep, sweep_target(sweep, str(path)), here))
    )
    if largest > here[0]["CPU"] and not sweep.allow_oversubscription:
        # a study sized for a larger machine: refused here as its run would be, in one line,
        # and it passes on a node of its size
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, err[-2000:]
        assert "cannot be placed on this cluster" in lines[0], lines
        code = main([str(path), "--dry-run", "--cluster", f"1x{largest:g}"])
        out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    assert "First trials" in out


def test_the_main_command_dry_runs_as_a_command():
    """``python -m sweeps.run`` itself: its own process, its exit code, no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "sweeps.run", str(SWEEPS / "cabs_scaling.py"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "First trials" in proc.stdout
    budget = load_sweep(SWEEPS / "cabs_scaling.py").budget
    (trials,) = [line for line in proc.stdout.splitlines() if line.startswith("Trials: ")]
    assert trials.endswith(f"; budget per trial {budget.describe()}") and "None" not in trials
    # the confirmation runs only the cells the search sampled: its count is a bound
    assert trials.startswith("Trials: at most ")
    (confirmation,) = [line for line in proc.stdout.splitlines() if line.startswith("Confirm")]
    assert confirmation.startswith("Confirmation: at most "), confirmation
    (reference,) = [line for line in proc.stdout.splitlines() if "is_reference" in line]
    assert reference.endswith("-> 1 CPU"), reference


def test_a_budget_is_described_by_what_it_limits():
    """Budget.describe, as the dry run prints it: what is limited, never ``None env steps``."""
    from sweeps import Budget

    assert Budget(time_s=45).describe() == "45 s"
    assert Budget(env_steps=200_000).describe() == "200,000 env steps"
    assert (
        Budget(time_s=30.5, env_steps=5_000).describe()
        == "30.5 s or 5,000 env steps, whichever runs out first"
    )


def test_an_invalid_point_is_one_line_naming_it(tmp_path):
    """The bug the shipped Pong study had: IMPALA's minibatch 128 is not a multiple of a
    rollout fragment of 50, which RLlib rejects. Caught before Ray starts, with the point."""
    path = tmp_path / "bad_pong.py"
    path.write_text(
        "from sweeps import Budget, Sweep, Target, choice\n"
        "SWEEP = Sweep(name='bad_pong', env='PongNoFrameskip-v4', algorithms=['IMPALA'],\n"
        "    search_space={'num_env_runners': choice([1])},\n"
        "    fixed={'rollout_fragment_length': 50, 'minibatch_size': 128},\n"
        "    target=Target(metric='training', value=18.0), budget=Budget(time_s=60),\n"
        "    baseline={'algorithm': 'IMPALA', 'num_env_runners': 1})\n"
    )
    with pytest.raises(
        SpecError,
        match=r"bad_pong.py: IMPALA point \{'num_env_runners': 1\}: "
        r"invalid config: .*minibatch_size",
    ):
        check_points(load_sweep(path), str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "sweeps.run", str(path), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "minibatch_size" in lines[0], proc.stderr

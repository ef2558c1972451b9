"""Bad sweep input → exit code 2 and one line naming the file, the field and the reason."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GOOD = dict(
    name='"t"',
    env='"CartPole-v1"',
    algorithms='["PPO"]',
    search_space='{"num_env_runners": choice([0])}',
    target="Target(value=100.0)",
    budget="Budget(time_s=10)",
    extra="",
    baseline='{"algorithm": "PPO", "num_env_runners": 0}',
)


def sweep_file(tmp_path: Path, **overrides) -> Path:
    f = {**GOOD, **overrides}
    text = textwrap.dedent(f"""\
        from sweeps import Budget, Search, Sweep, Target, choice, loguniform, randint
        SWEEP = Sweep(name={f["name"]}, env={f["env"]}, algorithms={f["algorithms"]},
                      search_space={f["search_space"]}, target={f["target"]},
                      budget={f["budget"]}, baseline={f["baseline"]}
                      {f["extra"]})
        """)
    path = tmp_path / "bad_sweep.py"
    path.write_text(text)
    return path


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m sweeps.run ARGS`` in a real process (~4 s when it imports RLlib)."""
    return subprocess.run(
        [sys.executable, "-m", "sweeps.run", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def cli(in_process):
    """``sweeps.run.main(ARGS)`` in this process (``in_process``): the checks behind a
    one-line error are the command's own, and RLlib, imported once per test process, no longer
    costs ~4 s per case. Ray must not have started (every error here comes before Ray); the
    log levels the CLI sets are restored after each call."""
    import logging

    from sweeps.engine.logs import QUIET_LOGGERS
    from sweeps.run import main

    def _run(*args: str) -> subprocess.CompletedProcess:
        levels = {n: logging.getLogger(n).level for n in QUIET_LOGGERS}
        try:
            proc = in_process(main, *args)
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)
        ray = sys.modules.get("ray")
        assert ray is None or not ray.is_initialized(), "Ray started"
        return proc

    return _run


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])


def test_missing_file(tmp_path):
    assert_one_line_error(run(str(tmp_path / "nope.py")), "nope.py", "no such sweep file")


def test_a_mistyped_path_is_answered_without_importing_rllib(tmp_path):
    """A missing sweep file is answered before RLlib and torch are imported (~5 s here), so
    the answer is immediate."""
    probe = textwrap.dedent(f"""\
        import sys
        from sweeps.run import main
        code = main([{str(tmp_path / "nope.py")!r}])
        print(code, "ray.rllib" in sys.modules, "torch" in sys.modules)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.split() == ["2", "False", "False"], (proc.stdout, proc.stderr[-2000:])
    assert "no such sweep file" in proc.stderr


def test_no_sweep(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("X = 1\n")
    assert_one_line_error(run(str(path)), "empty.py", "no SWEEP")


def test_every_missing_field_is_named_in_the_one_line(tmp_path, cli):
    """A sweep file missing several required fields names each of them in its one line, so
    one run shows everything to fix."""
    path = tmp_path / "bare.py"
    path.write_text(
        'from sweeps import Sweep\nSWEEP = Sweep(name="bare", env="ContosoCabs-v0", '
        'algorithms=["DQN"])\n'
    )
    assert_one_line_error(
        cli(str(path), "--dry-run"),
        "bare.py",
        "target: Field required (also budget: Field required)",
    )


def test_unknown_algorithm(tmp_path, cli):
    path = sweep_file(tmp_path, algorithms='["PPO", "A9C"]')
    assert_one_line_error(cli(str(path), "--dry-run"), "bad_sweep.py", "algorithms[1]", "A9C")


def test_unknown_env(tmp_path, cli):
    path = sweep_file(tmp_path, env='"NoSuchEnv-v9"')
    assert_one_line_error(cli(str(path), "--dry-run"), "bad_sweep.py", "env", "NoSuchEnv-v9")


def test_unknown_parameter(tmp_path, cli):
    path = sweep_file(
        tmp_path, search_space='{"num_env_runners": choice([0]), "flux": choice([1, 2])}'
    )
    assert_one_line_error(cli(str(path), "--dry-run"), "search_space.flux", "PPO")


@pytest.mark.parametrize(
    "space, field",
    [
        ('{"lr": loguniform(1e-2, 1e-4)}', "search_space.lr"),
        ('{"num_env_runners": randint(4, 1)}', "search_space.num_env_runners"),
        ('{"num_env_runners": choice([])}', "search_space.num_env_runners"),
    ],
)
def test_empty_or_inverted_range(tmp_path, space, field, cli):
    path = sweep_file(tmp_path, search_space=space)
    assert_one_line_error(cli(str(path), "--dry-run"), "bad_sweep.py", field)


def test_target_metric_not_produced(tmp_path, cli):
    path = sweep_file(tmp_path, target='Target(metric="custom/laps", value=3.0)')
    assert_one_line_error(cli(str(path), "--dry-run"), "target.metric", "custom/laps")


def test_fraction_of_optimal_without_oracle(tmp_path, cli):
    path = sweep_file(tmp_path, target="Target(fraction_of_optimal=0.9)")
    assert_one_line_error(cli(str(path), "--dry-run"), "target.fraction_of_optimal", "oracle")


@pytest.mark.parametrize("budget", ["Budget(time_s=0)", "Budget(env_steps=-5)", "Budget()"])
def test_budget_not_positive(tmp_path, budget, cli):
    path = sweep_file(tmp_path, budget=budget)
    assert_one_line_error(cli(str(path), "--dry-run"), "budget")


def test_budget_override_not_positive(tmp_path, cli):
    path = sweep_file(tmp_path)
    assert_one_line_error(cli(str(path), "--dry-run", "--budget-s", "-1"), "--budget-s")


def test_first_seed_override(tmp_path, cli):
    """``--first-seed`` moves the study to another seed stream (a held-out cell's own seeds),
    and a negative one is refused in one line before Ray starts."""
    path = sweep_file(tmp_path)
    assert_one_line_error(cli(str(path), "--dry-run", "--first-seed", "-1"), "--first-seed")
    shown = cli(str(path), "--dry-run", "--first-seed", "110")
    assert shown.returncode == 0, shown.stderr
    assert "seed 110" in shown.stdout and "seed 0 " not in shown.stdout


def test_env_config_override_is_checked_like_the_files_own(tmp_path, cli):
    """``--env-config KEY=VALUE`` goes through the env's own checks before Ray starts."""
    path = sweep_file(tmp_path)
    assert_one_line_error(
        cli(str(path), "--dry-run", "--env-config", "no_equals_sign"), "--env-config", "KEY=VALUE"
    )
    assert_one_line_error(
        cli(str(path), "--dry-run", "--env-config", "step_latency_ms=-4"),
        "--env-config",
        "step_latency_ms",
        ">= 0",
    )
    assert_one_line_error(
        cli(str(path), "--dry-run", "--env-config", "no_such_key=1"), "--env-config", "no_such_key"
    )


def test_env_config_override_reaches_the_resolved_spec(tmp_path):
    """The override is what the run records (spec.json is the resolved spec); the rest of the
    file's env_config is kept."""
    import argparse

    from sweeps.engine.sweep_file import load_sweep, resolved_spec, sweep_target
    from sweeps.run import apply_overrides

    path = sweep_file(
        tmp_path,
        env='"ContosoCabs-v0"',
        extra=', env_config={"num_cities": 5, "step_latency_ms": 4}',
    )
    args = argparse.Namespace(
        num_samples=None,
        seeds=None,
        budget_s=None,
        env_config=["step_latency_ms=30", "step_cpu_ms=0.5"],
    )
    sweep = apply_overrides(load_sweep(path), args, str(path))
    spec = resolved_spec(sweep, sweep_target(sweep, str(path)), str(path))
    assert spec["env_config"] == {"num_cities": 5, "step_latency_ms": 30, "step_cpu_ms": 0.5}


def test_results_dir_not_writable(tmp_path, cli):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    path = sweep_file(tmp_path)
    assert_one_line_error(
        cli(str(path), "--results", str(blocker / "results")), "results", "cannot write"
    )


def test_yaml_bad_range(tmp_path, cli):
    path = tmp_path / "bad.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: t
        env: CartPole-v1
        algorithms: [PPO]
        search_space:
          lr: {loguniform: [0.01, 0.0001]}
        target: {value: 100}
        budget: {time_s: 10}
        """)
    )
    assert_one_line_error(cli(str(path), "--dry-run"), "bad.yaml", "search_space.lr")


def test_yaml_duplicate_key(tmp_path, cli):
    """PyYAML keeps the last of two equal keys silently: a second ``budget:`` of 99999 s
    would replace the first unseen. A key given twice is one line, exit 2, naming it and
    where; a key repeated in two different mappings is fine."""
    from sweeps.engine.sweep_file import SpecError, load_sweep

    text = textwrap.dedent("""\
        name: t
        env: CartPole-v1
        algorithms: [PPO]
        search_space:
          num_env_runners: {choice: [0]}
        target: {value: 100}
        budget: {time_s: 10}
        baseline: {algorithm: PPO, num_env_runners: 0}
        """)
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    assert load_sweep(path).budget.time_s == 10  # num_env_runners twice, in two mappings
    path.write_text(text + "budget: {time_s: 99999}\n")
    with pytest.raises(SpecError, match=r"dup.yaml: 'budget' is given twice \(again on line 9\)"):
        load_sweep(path)
    assert_one_line_error(cli(str(path), "--dry-run"), "dup.yaml", "'budget' is given twice")


@pytest.mark.parametrize(
    "cities, what", [(100_000, "travel-time matrix"), (300, "exact optimum's dynamics")]
)
def test_an_env_config_too_big_for_the_machine(tmp_path, cities, what, cli):
    """Contoso Cabs with 100,000 cities would need ~12 TiB (an internal MemoryError, exit 1,
    before): one line, exit 2, before anything is allocated; 300 cities fit as an env but not
    their exact optimum (the fraction-of-optimal target needs it)."""
    path = sweep_file(
        tmp_path,
        env='"ContosoCabs-v0"',
        target="Target(fraction_of_optimal=0.9)",
        extra=f', env_config={{"num_cities": {cities}}}',
    )
    assert_one_line_error(
        cli(str(path), "--dry-run"),
        "bad_sweep.py",
        "num_cities",
        f"{cities} cities need",
        what,
        "of memory",
    )


@pytest.mark.ray
@pytest.mark.parallel
def test_unreachable_address(tmp_path):
    path = sweep_file(tmp_path)
    proc = run(str(path), "--address", "127.0.0.1:1", timeout=90)
    assert_one_line_error(proc, "bad_sweep.py", "--address", "127.0.0.1:1")


@pytest.mark.parametrize(
    "reference, fragments",
    [
        ('{"algorithm": "SB3-A2C"}', ("reference.algorithm", "SB3-A2C")),
        (
            '{"algorithm": "SB3-DQN", "num_epochs": 3}',
            ("reference.num_epochs", "unknown parameter"),
        ),
        ('{"algorithm": "SB3-DQN", "learning_rate": -1}', ("reference.learning_rate", "positive")),
        ('{"learning_rate": 1e-3}', ("reference", "must name its 'algorithm'")),
    ],
)
def test_bad_reference(tmp_path, reference, fragments, cli):
    path = sweep_file(tmp_path, extra=f", reference={reference}")
    assert_one_line_error(cli(str(path), "--dry-run"), "bad_sweep.py", *fragments)


def test_reference_needs_a_protocol_metric(tmp_path, cli):
    path = sweep_file(
        tmp_path,
        target='Target(metric="env_runners/episode_return_max", value=1.0)',
        extra=', reference={"algorithm": "SB3-DQN"}',
    )
    assert_one_line_error(cli(str(path), "--dry-run"), "reference", "'evaluation' or 'training'")


CABS = '"ContosoCabs-v0"'

# One case per class of bad input a user writes (issue: "every bad input rejected before Ray
# starts"): sweep-file overrides, then fragments the one-line error must contain.
BAD_INPUT = {
    "negative env runners in a choice": (
        dict(search_space='{"num_env_runners": choice([-1, 1])}'),
        ("num_env_runners", "-1"),
    ),
    "negative lower bound of a range": (
        dict(search_space='{"num_env_runners": randint(-2, 2)}'),
        ("num_env_runners", "-2"),
    ),
    "fractional env runners": (
        dict(search_space='{"num_env_runners": choice([1.5])}'),
        ("num_env_runners", "integer"),
    ),
    "zero train batch": (
        dict(search_space='{"num_env_runners": choice([0]), "train_batch_size": choice([0, 64])}'),
        ("train_batch_size", "0"),
    ),
    "gamma range beyond 1": (
        dict(search_space='{"num_env_runners": choice([0]), "gamma": uniform(0.9, 1.5)}'),
        ("gamma", "1.5"),
    ),
    "zero envs per env runner": (
        dict(
            search_space='{"num_env_runners": choice([0]), "num_envs_per_env_runner": choice([0])}'
        ),
        ("num_envs_per_env_runner",),
    ),
    "zero rollout fragment": (
        dict(
            search_space='{"num_env_runners": choice([0]), "rollout_fragment_length": choice([0])}'
        ),
        ("rollout_fragment_length",),
    ),
    "zero learning rate in fixed": (dict(extra=', fixed={"lr": 0}'), ("lr", "positive")),
    "bad hidden sizes in fixed": (dict(extra=', fixed={"hidden_sizes": [0]}'), ("hidden_sizes",)),
    "negative lr in per_algorithm_fixed": (
        dict(extra=', per_algorithm_fixed={"PPO": {"lr": -1.0}}'),
        ("lr", "-1"),
    ),
    "minibatch larger than the train batch": (
        dict(extra=', fixed={"train_batch_size": 100, "minibatch_size": 200}'),
        ("minibatch_size",),
    ),
    "negative env runners in the baseline": (
        dict(baseline='{"algorithm": "PPO", "num_env_runners": -1}'),
        ("baseline", "num_env_runners"),
    ),
    "infinite time budget": (dict(budget='Budget(time_s=float("inf"))'), ("budget", "finite")),
    "NaN time budget": (dict(budget='Budget(time_s=float("nan"))'), ("budget",)),
    "fraction of optimal above 1": (
        dict(env=CABS, target="Target(fraction_of_optimal=1.2)"),
        ("target.fraction_of_optimal", "above the env's exact optimum"),
    ),
    "target value above the optimum": (
        dict(env=CABS, target="Target(value=5000.0)"),
        ("target.value", "above the env's exact optimal return 2966.36"),
    ),
    "DQN on a continuous action space": (
        dict(
            env='"Pendulum-v1"',
            algorithms='["DQN"]',
            baseline='{"algorithm": "DQN", "num_env_runners": 0}',
        ),
        ("algorithms", "DQN needs a discrete action space"),
    ),
    "APEX and DQN on a discrete observation space": (
        dict(
            env='"FrozenLake-v1"',
            algorithms='["APEX"]',
            baseline='{"algorithm": "DQN", "num_env_runners": 0}',
        ),
        ("algorithms", "APEX needs a Box observation space"),
    ),
    "unknown env_config key of a gymnasium env": (
        dict(extra=', env_config={"gravity": 9.8}'),
        ("env_config", "'gravity' is not a parameter of CartPole-v1"),
    ),
    "unknown env_config key of Contoso Cabs": (
        dict(env=CABS, extra=', env_config={"num_citys": 5}'),
        ("env_config", "num_citys"),
    ),
    "unknown env_config key of Pong": (
        dict(
            env='"PongNoFrameskip-v4"',
            target='Target(metric="training", value=18.0)',
            extra=', env_config={"frame_siz": 42}',
        ),
        ("env_config", "frame_siz"),
    ),
    "grid sampler over a range": (
        dict(
            search_space='{"num_env_runners": choice([0]), "lr": loguniform(1e-4, 1e-3)}',
            extra=', search=Search(sampler="grid")',
        ),
        ("search_space.lr", "grid sampler needs choice()"),
    ),
    "negative CPUs per env runner": (
        dict(extra=', fixed={"num_cpus_per_env_runner": -1}'),
        ("num_cpus_per_env_runner", "positive number"),
    ),
    "negative step latency": (
        dict(env=CABS, extra=', env_config={"step_latency_ms": -2}'),
        ("env_config", "step_latency_ms: must be a finite number of milliseconds >= 0"),
    ),
    "SB3 configuration with an unknown vec_env": (
        dict(
            algorithms='["SB3-DQN"]',
            search_space="{}",
            extra=', per_algorithm_fixed={"SB3-DQN": {"n_envs": 4, "vec_env": "shm"}}',
        ),
        ("per_algorithm_fixed.SB3-DQN", "vec_env: must be one of 'dummy', 'subproc'"),
    ),
    "SB3 configuration with a shared RLlib parameter": (
        dict(algorithms='["SB3-DQN", "PPO"]'),
        ("search_space.num_env_runners", "SB3-DQN"),
    ),
    "vectorized reference": (
        dict(extra=', reference={"algorithm": "SB3-DQN", "n_envs": 8}'),
        ("reference", "n_envs: the reference steps one env"),
    ),
    "IMPALA with several learners and several passes": (
        dict(
            algorithms='["IMPALA"]',
            search_space='{"num_env_runners": choice([1]), "num_learners": choice([2])}',
            extra=', per_algorithm_fixed={"IMPALA": {"num_epochs": 4}}',
        ),
        ("num_learners=2 and num_epochs=4", "use num_epochs=1 with several learners"),
    ),
    "GORILA without a learner": (
        dict(
            algorithms='["GORILA"]',
            search_space='{"num_env_runners": choice([0]), "num_learners": choice([0])}',
        ),
        ("GORILA needs num_learners >= 1",),
    ),
    "GPU learner on a machine without GPUs": (
        dict(extra=', fixed={"num_gpus_per_learner": 1}'),
        ("GPU", "it asks for 1 GPUs and the cluster has 0 in all"),
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUT), ids=lambda c: c.replace(" ", "-"))
def test_bad_input_is_one_line_before_ray_starts(tmp_path, case, cli):
    overrides, fragments = BAD_INPUT[case]
    text = sweep_file(tmp_path, **overrides).read_text()
    path = tmp_path / "bad_sweep.py"
    path.write_text(
        text.replace("choice, loguniform, randint", "choice, loguniform, randint, uniform, Search")
    )
    proc = cli(str(path), "--dry-run")
    assert_one_line_error(proc, "bad_sweep.py", *fragments)
    assert not (tmp_path / "results").exists()  # nothing written


def test_the_command_itself_answers_a_bad_point_in_one_line(tmp_path):
    """The cases above call the CLI's ``main`` in the test's process; the command itself, in
    its own process, answers a point that only RLlib's validation rejects in the same one
    line, exit 2, with nothing written."""
    path = sweep_file(tmp_path, extra=', fixed={"train_batch_size": 100, "minibatch_size": 200}')
    proc = run(str(path), "--results", str(tmp_path / "results"))
    assert_one_line_error(proc, "bad_sweep.py", "minibatch_size")
    assert not (tmp_path / "results").exists()


def test_old_rllib_names_work_with_a_notice(tmp_path):
    """A sweep file with RLlib's old names (num_workers, num_envs_per_worker) validates, plans
    with the current names and prints one notice per old name (once per process: so a real
    command, not ``cli``, whose process other tests may have notified already)."""
    path = sweep_file(
        tmp_path,
        search_space='{"num_workers": choice([0, 1])}',
        baseline='{"algorithm": "PPO", "num_workers": 0}',
        extra=', fixed={"num_envs_per_worker": 2}',
    )
    proc = run(str(path), "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    notices = [ln for ln in proc.stderr.splitlines() if ln.startswith("notice:")]
    assert len(notices) == 2, proc.stderr
    assert "'num_workers' is RLlib's old name of 'num_env_runners'" in notices[0]
    assert "'num_envs_per_worker'" in notices[1] and "'num_envs_per_env_runner'" in notices[1]
    assert "num_workers" not in proc.stdout and "num_env_runners=1" in proc.stdout, proc.stdout


def test_old_and_current_name_together(tmp_path, cli):
    path = sweep_file(tmp_path, extra=', fixed={"num_workers": 1, "num_env_runners": 1}')
    assert_one_line_error(
        cli(str(path), "--dry-run"),
        "bad_sweep.py",
        "fixed",
        "'num_workers'",
        "'num_env_runners'",
        "give only",
    )


@pytest.mark.parametrize("suffix", [".py", ".yaml"])
def test_a_binary_sweep_file_is_bad_input(tmp_path, suffix, cli):
    """Bytes that are not text (a file copied in binary, or the wrong file): one line, exit 2,
    nothing written; never an internal error."""
    path = tmp_path / f"garbage{suffix}"
    path.write_bytes(bytes(range(128, 256)) * 3)
    results = tmp_path / "results"
    assert_one_line_error(cli(str(path), "--results", str(results)), f"garbage{suffix}")
    assert not results.exists()


def test_a_trial_the_machine_cannot_place_is_refused_by_the_dry_run_as_by_the_run(tmp_path, cli):
    """A dry run used as a check fails where the run would: both exit 2 with the same one line
    before Ray starts, and neither leaves a run directory (nor its lock files) behind."""
    import os

    too_many = (os.cpu_count() or 1) + 1  # env runners: with the driver, 2 more CPUs than here
    path = sweep_file(tmp_path, search_space=f'{{"num_env_runners": choice([0, {too_many}])}}')
    results = tmp_path / "results"
    dry = cli(str(path), "--dry-run", "--results", str(results))
    assert_one_line_error(
        dry,
        "bad_sweep.py",
        f"num_env_runners={too_many}",
        "cannot be placed on this cluster",
        "num_cpus_per_env_runner",  # the fix a user on a small machine most often wants
    )
    real = cli(str(path), "--results", str(results))
    assert real.stderr == dry.stderr
    assert_one_line_error(real)
    assert not results.exists()


def test_a_default_baseline_the_env_cannot_take_says_so_and_how_to_declare_one(tmp_path, cli):
    """A sweep of SAC on Pendulum that names no baseline: the default one (DQN) is the problem,
    and the message says so, not 'algorithms: DQN ...' (the user never named DQN)."""
    text = sweep_file(
        tmp_path,
        env='"Pendulum-v1"',
        algorithms='["SAC"]',
        target="Target(value=-400.0)",
        baseline="None",
    ).read_text()
    path = tmp_path / "sac.py"
    path.write_text(text.replace(", baseline=None", ""))
    assert_one_line_error(
        cli(str(path), "--dry-run"),
        "sac.py: baseline: the default baseline (DQN with 1 env runner",
        "needs a discrete action space",
        "baseline={'algorithm': 'SAC', 'num_env_runners': 1}",
        "baseline=None",
    )
    named = sweep_file(
        tmp_path,
        env='"Pendulum-v1"',
        algorithms='["SAC"]',
        target="Target(value=-400.0)",
        baseline='{"algorithm": "DQN", "num_env_runners": 1}',
    )
    assert_one_line_error(
        cli(str(named), "--dry-run"), "baseline.algorithm: DQN needs a discrete action space"
    )

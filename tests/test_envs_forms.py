"""A user's own env, named in its three forms, checked before Ray and shipped to every process
of every trial; trials placed over several nodes by Ray's rule (a sweep of a user's env on
three nodes: tests/test_cluster_sweep_e2e.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import s3_keys

ROOT = Path(__file__).resolve().parent.parent

#: A user's env module: a corridor walked right to its end (return 1 - 0.01 per extra step),
#: registering ``Corridor-v0`` on import; the class is also a factory of ``env_config``.
CORRIDOR = """\
import gymnasium
import numpy as np


class Corridor(gymnasium.Env):
    def __init__(self, config=None, length=4):
        self.length = int((config or {}).get("length", length))
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (self.length + 1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.pos = 0

    def _obs(self):
        obs = np.zeros(self.length + 1, np.float32)
        obs[self.pos] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = 0
        return self._obs(), {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos == self.length
        return self._obs(), (1.0 if done else -0.01), done, False, {}


def not_an_env(config):
    return "a string"


NOT_CALLABLE = 3

gymnasium.register("Corridor-v0", entry_point=Corridor, max_episode_steps=20)
"""

#: An env that breaks gymnasium's env check: its observation lies outside its space.
BROKEN = """\
import gymnasium
import numpy as np


class OutOfSpace(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, config=None):
        pass

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.full(2, 5.0, np.float32), {}

    def step(self, action):
        return np.full(2, 5.0, np.float32), 0.0, True, False, {}
"""


def user_folder(tmp_path: Path, module: str = "corridor_env", text: str = CORRIDOR) -> Path:
    """A folder outside the project holding the user's module (never importable otherwise)."""
    folder = tmp_path / "user"
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(text)
    return folder


def yaml_sweep(
    folder: Path,
    env: str,
    *,
    runners=(0, 1),
    algorithms=("DQN", "PPO"),
    budget_s: float = 30,
    name: str = "corridor",
    extra: str = "",
) -> Path:
    path = folder / f"{name}.yaml"
    fixed = {"DQN": "{reward_scale: 1.0}", "PPO": "{train_batch_size: 500}"}
    per_algorithm = "".join(f"\n  {a}: {fixed[a]}" for a in algorithms)
    env_config = "{length: 4}" if env.startswith("corridor") else "{}"
    lines = [
        f"name: {name}",
        f'env: "{env}"',
        f"env_config: {env_config}",
        f"algorithms: [{', '.join(algorithms)}]",
        "search_space:",
        f"  num_env_runners: {{choice: [{', '.join(str(n) for n in runners)}]}}",
        f"per_algorithm_fixed:{per_algorithm}",
        "target: {value: 0.9}",
        f"budget: {{time_s: {budget_s}}}",
        f"search: {{sampler: grid, num_samples: {len(algorithms) * len(runners)}, seeds: 1, "
        "max_concurrent: 1, capping: null}",
        "baseline: {algorithm: PPO, num_env_runners: 0}",
    ]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def test_the_three_forms_of_env(tmp_path, clean_imports):
    from envs.forms import modules_to_ship, parse_env, search_path

    folder = user_folder(tmp_path)
    assert parse_env("CartPole-v1").kind == "registered"
    assert parse_env("ContosoCabs-v0").kind == "registered"
    assert modules_to_ship("CartPole-v1") == []
    with search_path([folder]):
        assert parse_env("corridor_env:Corridor-v0").kind == "module_id"
        factory = parse_env("corridor_env:Corridor")
    assert (factory.kind, factory.module, factory.attr) == ("factory", "corridor_env", "Corridor")
    # imported from outside the project: shipped as its file, found after sys.path is restored
    assert modules_to_ship("corridor_env:Corridor") == [str(folder / "corridor_env.py")]
    import envs

    env = envs.make_env("corridor_env:Corridor", {"length": 3})
    assert env.observation_space.shape == (4,)
    env = envs.make_env("corridor_env:Corridor-v0", {"length": 2, "step_latency_ms": 1})
    assert type(env).__name__ == "StepLatency" and env.unwrapped.length == 2


def test_a_python_sweep_file_importing_the_module_ships_it(tmp_path, clean_imports):
    """The registered id of a module the sweep file imports becomes ``module:EnvId`` for the
    trials' processes, and the module is shipped."""
    from sweeps.engine.sweep_file import load_sweep, modules_to_ship
    from sweeps.engine.trainable import TrialSetup

    folder = user_folder(tmp_path)
    path = folder / "mine.py"
    path.write_text(
        textwrap.dedent("""\
        import corridor_env  # noqa: F401 - registers Corridor-v0
        from sweeps import Budget, Sweep, Target
        SWEEP = Sweep(name="mine", env="Corridor-v0", algorithms=["PPO"],
                      target=Target(value=0.9), budget=Budget(time_s=10), baseline=None)
        """)
    )
    sweep = load_sweep(path)
    assert (
        TrialSetup.of(sweep, {"metric": "evaluation", "value": 0.9}, 2.0).env
        == "corridor_env:Corridor-v0"
    )
    assert modules_to_ship(sweep, path) == [str(folder / "corridor_env.py")]


BAD_ENVS = {
    "a module that does not exist": (
        "nosuchmodule_xyz:Env-v0",
        "cannot import module 'nosuchmodule_xyz': ModuleNotFoundError",
    ),
    "an id the module does not register": (
        "corridor_env:Nothing-v0",
        "defines no 'Nothing-v0' and importing it registers",
    ),
    "an attribute that is not callable": ("corridor_env:NOT_CALLABLE", "is a int, not an Env"),
    "a factory returning no Env": (
        "corridor_env:not_an_env",
        "returned a str, not a gymnasium.Env",
    ),
    "an env failing gymnasium's check": (
        "broken_env:OutOfSpace",
        "fails gymnasium's env check: AssertionError",
    ),
    "an unknown id": ("NoSuchEnv-v9", "unknown env 'NoSuchEnv-v9'"),
}


@pytest.mark.parametrize("case", list(BAD_ENVS), ids=lambda c: c.replace(" ", "-"))
def test_a_bad_user_env_is_one_line_and_exit_2_before_ray(
    tmp_path, case, capsys, clean_imports, monkeypatch
):
    from sweeps.run import main

    env, fragment = BAD_ENVS[case]
    folder = user_folder(tmp_path)
    user_folder(tmp_path, "broken_env", BROKEN)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    code = main([str(yaml_sweep(folder, env)), "--dry-run"])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert ": env: " in lines[0] and fragment in lines[0], lines[0]
    assert not (folder / "results").exists()


def test_placement_follows_rays_rule():
    from sweeps.engine.placement import placement_problem

    two_cpu_nodes = [{"CPU": 2.0, "GPU": 0.0}] * 3
    five = [{"CPU": 1.0}] * 5
    assert placement_problem(five, two_cpu_nodes) is None  # over 3 nodes
    assert placement_problem(five, two_cpu_nodes, "SPREAD") is None
    assert "largest node has 2" in placement_problem(five, two_cpu_nodes, "STRICT_PACK")
    assert "cluster has 6 in all" in placement_problem([{"CPU": 1.0}] * 7, two_cpu_nodes)
    assert "no node has that many" in placement_problem([{"CPU": 3.0}], two_cpu_nodes)
    assert "GPUs and the cluster has 0" in placement_problem([{"CPU": 1, "GPU": 1}], two_cpu_nodes)
    # 3 bundles of 1.5 CPUs fit 4.5 < 6 CPUs in all, but only one per 2-CPU node: 3 nodes
    assert placement_problem([{"CPU": 1.5}] * 3, two_cpu_nodes) is None
    assert "do not pack" in placement_problem([{"CPU": 1.5}] * 4, two_cpu_nodes)
    with pytest.raises(ValueError, match="placement_strategy 'STRICT_SPREAD'"):
        placement_problem(five, two_cpu_nodes, "STRICT_SPREAD")


def test_the_dry_run_counts_an_async_layouts_env_processes(tmp_path, capsys, monkeypatch):
    """Each sampling layout is a line of the placement check; an async one names the sub-env
    processes it starts beside Ray's request and their memory, and says their CPU is not
    reserved when the env declares a CPU cost per step."""
    from sweeps.engine.placement import ENV_PROCESS_MIB
    from sweeps.run import main

    path = yaml_sweep(tmp_path, "CartPole-v1", runners=(2,), algorithms=("PPO",))
    text = (
        path.read_text()
        .replace("env_config: {}", "env_config: {step_cpu_ms: 1}")
        .replace("{train_batch_size: 500}", "{train_batch_size: 500, num_cpus_per_env_runner: 0.5}")
        .replace(
            "search_space:\n",
            "search_space:\n  gym_env_vectorize_mode: {choice: [sync, async]}\n"
            "  num_envs_per_env_runner: {choice: [2, 8]}\n",
        )
    )
    path.write_text(text)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main([str(path), "--dry-run"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "  PPO     num_env_runners=2: 2 CPUs, 0 GPUs  " in out
    for k in (2, 8):
        assert (
            f"  PPO     num_env_runners=2 x {k} envs async: 2 CPUs, 0 GPUs, +{2 * k} env "
            f"processes (~{2 * k * ENV_PROCESS_MIB:,.0f} MiB; their env steps' CPU "
            "(step_cpu_ms) is not in Ray's request)"
        ) in out, out


def test_the_dry_run_checks_a_target_cluster_shape(tmp_path, capsys, monkeypatch):
    """A trial of 5 CPUs fits three 2-CPU nodes (PACK over nodes), not one of them, and not
    with STRICT_PACK."""
    from sweeps.run import main

    folder = tmp_path / "s"
    folder.mkdir()
    path = yaml_sweep(folder, "CartPole-v1", runners=(4,), algorithms=("PPO",))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main([str(path), "--dry-run", "--cluster", "3x2"]) == 0
    out, _ = capsys.readouterr()
    assert "Cluster: 3 node(s), 6 CPUs" in out and "num_env_runners=4: 5 CPUs, 0 GPUs  fits" in out
    assert main([str(path), "--dry-run", "--cluster", "1x2"]) == 2
    assert "it asks for 5 CPUs and the cluster has 2 in all" in capsys.readouterr().err
    strict = yaml_sweep(
        folder,
        "CartPole-v1",
        runners=(4,),
        algorithms=("PPO",),
        name="strict",
        extra="placement_strategy: STRICT_PACK\n",
    )
    assert main([str(strict), "--dry-run", "--cluster", "3x2"]) == 2
    assert "STRICT_PACK needs all 5 CPUs on one node" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main([str(path), "--dry-run", "--cluster", "3by2"])
    assert bad.value.code == 2 and "expected NODESxCPUS[:GPUS]" in capsys.readouterr().err


def run_sweep(path: Path, results: Path, env: dict | None = None, timeout: float = 400):
    return subprocess.run(
        [sys.executable, "-m", "sweeps.run", str(path), "--results", str(results), "--no-report"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def reached_rows(results: Path, name: str):
    import pandas as pd

    (run_dir,) = (results / name).iterdir()
    return pd.read_parquet(run_dir / "trials.parquet")


@pytest.mark.ray
@pytest.mark.parallel
def test_a_user_env_outside_the_project_reaches_its_target_on_the_embedded_ray(s3, tmp_path):
    """The module lives in a folder no process has on its path: only Ray's runtime
    environment brings it to the trial actors and their env runners. The run is written to
    object storage (a real S3-compatible server) as it goes, and analysed from there."""
    import pandas as pd

    from sweeps.engine.rundir.mirror import fetch_run

    folder = user_folder(tmp_path)
    # PPO sampling in its trial actor and on an env runner (DQN's two paths run the user's
    # env in the three-node sweep); the slower reached the target in 9 s beside another Ray
    # test: 5x margin
    path = yaml_sweep(folder, "corridor_env:Corridor-v0", algorithms=("PPO",), budget_s=45)
    proc = subprocess.run(
        [sys.executable, "-m", "sweeps.run", str(path), "--results", "s3://rl-results/results"],
        cwd=ROOT,
        env=s3["env"],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    keys = s3_keys(s3["client"], "results/corridor/")
    (run_id,) = {k.split("/")[2] for k in keys}
    uri = f"s3://rl-results/results/corridor/{run_id}"
    assert f"results in {uri}" in proc.stdout
    assert {
        "trials.parquet",
        "progress.parquet",
        "spec.json",
        "environment.json",
        "optuna.db",
        "report.html",
    } <= {k.split("/")[-1] for k in keys}, keys
    again = subprocess.run(
        [sys.executable, "-m", "analysis.report", uri, "-o", str(tmp_path / "again.html")],
        cwd=ROOT,
        env=s3["env"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    local = fetch_run(uri)
    trials = pd.read_parquet(local / "trials.parquet")
    assert set(pd.read_parquet(local / "progress.parquet").trial_id) == set(trials.trial_id)
    table = trials[["algorithm", "num_env_runners", "status", "error"]].to_string()
    assert sorted(zip(trials.algorithm, trials.num_env_runners, strict=True)) == [
        ("PPO", 0),
        ("PPO", 1),
    ], table  # the baseline is PPO, 0
    assert (trials.status == "reached").all(), table
    assert (trials.nodes_used.str.len() == 12).all(), trials.nodes_used  # one node


EXPLODING = (
    CORRIDOR
    + '''

class Exploding(Corridor):
    """Raises after 30 env steps (gymnasium's env check takes fewer)."""

    def __init__(self, config=None):
        super().__init__(config)
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps > 30:
            raise RuntimeError("the simulator lost its licence server")
        return super().step(action)
'''
)


@pytest.mark.ray
@pytest.mark.parallel
def test_a_failing_env_fails_fast_and_loudly(tmp_path):
    """An env that raises in every trial, with fault recovery off (``recover_env_faults``): its
    configuration's other seeds are not run, the console gets one line per failed trial and no
    traceback, the traceback goes to the run's errors.log, and the run exits 4 with a
    summary."""
    folder = user_folder(tmp_path, text=EXPLODING)
    path = yaml_sweep(
        folder,
        "corridor_env:Exploding",
        runners=(0,),
        algorithms=("PPO",),
        name="exploding",
        budget_s=20,
    )
    # the env's error fails its trial, as when a user turns recovery off
    path.write_text(
        path.read_text()
        .replace("seeds: 1", "seeds: 3")
        .replace("{length: 4}", "{}")
        .replace("{train_batch_size: 500}", "{train_batch_size: 500, recover_env_faults: false}")
    )
    proc = run_sweep(path, tmp_path / "results")
    assert proc.returncode == 4, proc.stdout[-3000:] + proc.stderr[-3000:]
    trials = reached_rows(tmp_path / "results", "exploding")
    assert list(trials.status) == ["error"] and list(trials.seed) == [0], trials  # 2 skipped
    assert trials.error[0] == "RuntimeError: the simulator lost its licence server"
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "Tuner.restore" not in proc.stdout + proc.stderr
    assert "error: RuntimeError: the simulator lost its licence server" in proc.stdout
    assert "2 more seed(s) skipped" in proc.stdout
    (run_dir,) = (tmp_path / "results" / "exploding").iterdir()
    summary = [ln for ln in proc.stderr.splitlines() if "no trial succeeded" in ln]
    assert summary == [
        f"error: {path}: no trial succeeded: 1 of 1 ended in RuntimeError "
        "(first: RuntimeError: the simulator lost its licence server); "
        f"tracebacks in {run_dir / 'errors.log'}"
    ], proc.stderr[-3000:]
    log = (run_dir / "errors.log").read_text()
    assert 'raise RuntimeError("the simulator lost its licence server")' in log, log[-3000:]
    assert log.startswith("=== trial ") and "corridor_env.py" in log


def test_help_shows_the_three_forms_of_env(capsys):
    from sweeps.run import parse_args

    with pytest.raises(SystemExit) as done:
        parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0
    assert "registered id ('CartPole-v1')" in out and "'module:EnvId'" in out
    assert "'module:Factory'" in out

"""Load a sweep file (Python or YAML) into a validated :class:`sweeps.engine.sweep_spec.Sweep`.

Every problem becomes a :class:`SpecError` whose message is one line naming the file, the
field and the reason; ``sweeps.run`` prints it and exits with code 2.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import warnings
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pydantic

from sweeps.engine.cli import SpecError
from sweeps.engine.deprecated import SweepAPIDeprecationWarning
from sweeps.engine.sweep_schema import YAML_PARAMS
from sweeps.engine.sweep_spec import (
    EPISODE_RETURN,
    EVALUATION,
    TRAINING,
    Choice,
    IntRange,
    LogUniform,
    Sweep,
    Uniform,
)

# Target metrics: the evaluation protocol's, the exploring return (and its deprecated name),
# and RLlib result keys any algorithm reports on any env.
KNOWN_METRICS = frozenset(
    {
        EVALUATION,
        TRAINING,
        EPISODE_RETURN,
        "env_runners/episode_return_mean",
        "env_runners/episode_return_max",
        "env_runners/episode_return_min",
        "env_runners/episode_len_mean",
    }
)


def load_sweep(path: str | Path) -> Sweep:
    """Read ``path`` (``.py`` declaring ``SWEEP``, or ``.yaml``/``.yml``) and validate it.

    Raises:
        SpecError: missing file, no ``SWEEP``, a schema violation, or an unknown algorithm,
            env, parameter or metric (see :func:`validate_sweep`).
    """
    from envs.forms import search_path

    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: no such sweep file")
    if path.suffix not in (".yaml", ".yml", ".py"):
        raise SpecError(f"{path}: sweep files are .py (declaring SWEEP) or .yaml/.yml")
    # The sweep file's folder is where a user's env module is looked up (as for a script)
    with search_path([path.parent]):
        sweep = _load_yaml(path) if path.suffix in (".yaml", ".yml") else _load_python(path)
        dirs = code_dirs(sweep, path)
        with search_path(dirs):
            validate_sweep(sweep, source=str(path))
    return sweep


def code_dirs(sweep: Sweep, path: str | Path) -> list[Path]:
    """The sweep's ``code_dirs``, resolved against the sweep file's folder.

    Raises:
        SpecError: a folder that does not exist.
    """
    out = []
    for i, d in enumerate(sweep.code_dirs):
        folder = (Path(path).parent / d).resolve()
        if not folder.is_dir():
            raise SpecError(
                f"{path}: code_dirs[{i}]: {d!r} is not a folder (relative to the sweep file's)"
            )
        out.append(folder)
    return out


def modules_to_ship(sweep: Sweep, path: str | Path) -> list[str]:
    """Local paths for Ray's ``runtime_env["py_modules"]``: the env's module when it is the
    user's (:func:`envs.forms.modules_to_ship`) and every module and package at the top of
    the sweep's ``code_dirs``; empty when the env is installed or the suite's own."""
    from envs.forms import modules_to_ship as env_modules

    paths = env_modules(sweep.env)
    for folder in code_dirs(sweep, path):
        for p in sorted(folder.iterdir()):
            if (p.suffix == ".py" or (p / "__init__.py").is_file()) and str(p) not in paths:
                paths.append(str(p))
    return paths


def code_root(sweep: Sweep, path: str | Path, project: str | Path) -> Path:
    """The folder a cluster launcher uploads for the sweep file ``path``: ``project`` when the
    file lies inside it, else the sweep file's own folder. The file, its ``code_dirs`` and the
    user's env module must all lie inside that folder, so that the job's copy finds them at the
    same relative paths.

    Raises:
        SpecError: a ``code_dirs`` entry or the env's module lies outside it (one line naming it).
    """
    path = Path(path).resolve()
    project = Path(project).resolve()
    root = project if path.is_relative_to(project) else path.parent
    for p in [*code_dirs(sweep, path), *(Path(m) for m in modules_to_ship(sweep, path))]:
        if not p.resolve().is_relative_to(root):
            raise SpecError(
                f"{path}: {p} lies outside {root}, the folder uploaded with the sweep file; "
                "move it into that folder (code_dirs are looked up relative to the sweep file)"
            )
    return root


def _load_python(path: Path) -> Sweep:
    name = f"_sweep_file_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        sys.modules[name] = module
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SweepAPIDeprecationWarning)
            spec.loader.exec_module(module)
        _say_deprecations(path, caught)
    except pydantic.ValidationError as e:
        raise SpecError(f"{path}: {_pydantic_line(e)}") from None
    except SpecError:
        raise
    except Exception as e:  # the user's module failed to import: say where, in one line
        raise SpecError(f"{path}: cannot import the sweep file: {type(e).__name__}: {e}") from None
    finally:
        sys.modules.pop(name, None)
    sweep = getattr(module, "SWEEP", None)
    if sweep is None:
        raise SpecError(f"{path}: declares no SWEEP (expected SWEEP = Sweep(...))")
    if not isinstance(sweep, Sweep):
        raise SpecError(f"{path}: SWEEP is a {type(sweep).__name__}, expected a sweeps.Sweep")
    return sweep


def _say_deprecations(path: Path, caught: list[warnings.WarningMessage]) -> None:
    """One ``notice:`` line on stderr per old import path the sweep file used (not one per
    name); other warnings go on to Python's own filters."""
    seen = set()
    for w in caught:
        if not issubclass(w.category, SweepAPIDeprecationWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        old = w.message.old_path
        if old not in seen:
            seen.add(old)
            print(
                f"notice: {path}:{w.lineno}: '{old}' is deprecated; it still works, but "
                f"import from 'sweeps' (from sweeps import Sweep, Budget, ...)",
                file=sys.stderr,
            )


_YAML_MODELS = {m.__name__: m for m in (Choice, IntRange, Uniform, LogUniform)}


def _yaml_param(value: Any) -> Any:
    """A YAML parameter's short form (:data:`sweeps.engine.sweep_schema.YAML_PARAMS`:
    ``{choice: [..]}``, ``{randint: [lo, hi]}``, ``{uniform: [lo, hi]}``,
    ``{loguniform: [lo, hi]}``) as its model's long form; anything else as it is."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, args),) = value.items()
        model = _YAML_MODELS.get(YAML_PARAMS.get(key, ""))
        if model is None:
            return value
        kind = model.model_fields["kind"].default
        if model is Choice:
            return {"kind": kind, "values": args}
        if isinstance(args, list) and len(args) == 2:
            return {"kind": kind, "low": args[0], "high": args[1]}
    return value


class _DuplicateKey(ValueError):
    """A YAML mapping names one key twice (``line`` is 1-based)."""

    def __init__(self, key: Any, line: int):
        super().__init__(f"{key!r} is given twice (again on line {line})")


def _yaml_loader():
    """PyYAML's safe loader, except that a mapping naming one key twice is an error: PyYAML
    keeps the last value silently, so a second ``budget:`` would replace the first unseen."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, Hashable):  # PyYAML's own error follows
                    continue
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return Loader


def _load_yaml(path: Path) -> Sweep:
    import yaml

    try:
        data = yaml.load(path.read_text(), Loader=_yaml_loader())  # noqa: S506 - a SafeLoader
    except UnicodeDecodeError as e:
        raise SpecError(
            f"{path}: not a text file (YAML is UTF-8 text; byte {e.start} is not UTF-8)"
        ) from None
    except _DuplicateKey as e:
        raise SpecError(f"{path}: {e}: a key may appear once per mapping") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of sweep fields at the top level")
    data = dict(data.get("sweep", data))
    for key in ("search_space",):
        if isinstance(data.get(key), dict):
            data[key] = {k: _yaml_param(v) for k, v in data[key].items()}
    if isinstance(data.get("per_algorithm"), dict):
        data["per_algorithm"] = {
            a: {k: _yaml_param(v) for k, v in (ps or {}).items()}
            for a, ps in data["per_algorithm"].items()
        }
    try:
        return Sweep.model_validate(data)
    except pydantic.ValidationError as e:
        raise SpecError(f"{path}: {_pydantic_line(e)}") from None


#: A sweep field's name for each nested model: an error raised while a sweep file builds
#: ``Budget(...)`` itself (before the Sweep exists) still names ``budget``.
_MODEL_FIELD = {
    "Budget": "budget",
    "Target": "target",
    "Search": "search",
    "Evaluation": "evaluation",
}


def _pydantic_line(e: pydantic.ValidationError) -> str:
    """One line for a sweep file's validation error: the first error's field and reason, then
    the others' fields and reasons (at most 3 named), so that one run shows every field to fix.
    """

    def one(err: dict) -> str:
        loc = ".".join(
            str(x) for x in err["loc"] if x not in ("choice", "int", "uniform", "loguniform")
        )
        if e.title in _MODEL_FIELD:
            loc = ".".join(x for x in (_MODEL_FIELD[e.title], loc) if x)
        return f"{loc or 'SWEEP'}: {err['msg'].removeprefix('Value error, ')}"

    errors = e.errors()
    others = [one(err) for err in errors[1:4]]
    if len(errors) > 4:
        others.append(f"{len(errors) - 4} more")
    return one(errors[0]) + (f" (also {'; '.join(others)})" if others else "")


def validate_sweep(sweep: Sweep, source: str = "SWEEP") -> None:
    """Check a sweep against the algorithm registry and the env, before any Ray starts.

    Raises:
        SpecError: naming ``source``, the field and the reason: unknown algorithm, unknown
            parameter for an algorithm, unknown env, bad env config, target metric the env
            does not produce, fraction-of-optimal target on an env without an oracle.
    """
    import envs
    from sweeps.engine import algorithms

    def fail(field: str, reason: str) -> SpecError:
        return SpecError(f"{source}: {field}: {reason}")

    from sweeps.engine import reference

    def known_params(algo: str) -> frozenset[str]:
        if algo in reference.REFERENCE_ALGORITHMS:
            return reference.known_params(algo)
        return algorithms.known_params(algo)

    known_algos = sorted(algorithms.ALGORITHMS) + list(reference.REFERENCE_ALGORITHMS)
    baseline_algo = sweep.baseline["algorithm"] if sweep.baseline else None
    for i, algo in enumerate(sweep.algorithms + ([baseline_algo] if baseline_algo else [])):
        if algo not in algorithms.ALGORITHMS and algo not in reference.REFERENCE_ALGORITHMS:
            field = f"algorithms[{i}]" if i < len(sweep.algorithms) else "baseline.algorithm"
            if algo in algorithms.REFUSED:
                raise fail(field, f"{algo} is {algorithms.REFUSED[algo]}")
            raise fail(field, f"unknown algorithm {algo!r} (known: {', '.join(known_algos)})")

    for algo in sweep.algorithms:
        known = known_params(algo)
        sections = {
            "search_space": sweep.search_space,
            f"per_algorithm.{algo}": sweep.per_algorithm.get(algo, {}),
            "fixed": sweep.fixed,
            f"per_algorithm_fixed.{algo}": sweep.per_algorithm_fixed.get(algo, {}),
        }
        for section, params in sections.items():
            for key in params:
                if key == "algorithm" or key not in known:
                    from sweeps.engine.algorithms import UnknownParameterError

                    reason = str(UnknownParameterError(key, algo, known))
                    raise fail(
                        f"{section}.{key}", reason.replace(f"parameter {key!r} ", "parameter ")
                    )
        if algo in reference.REFERENCE_ALGORITHMS:  # SB3's values, checked as the reference's
            try:
                reference.check_configuration({"algorithm": algo, **sweep.fixed_for(algo)})
            except ValueError as e:
                raise fail(f"per_algorithm_fixed.{algo}", str(e)) from None
    if sweep.baseline:
        known = known_params(baseline_algo)
        for key in sweep.baseline:
            if key != "algorithm" and key not in known:
                raise fail(f"baseline.{key}", f"unknown parameter for algorithm {baseline_algo}")
        if baseline_algo in reference.REFERENCE_ALGORITHMS:
            try:
                reference.check_configuration(sweep.baseline)
            except ValueError as e:
                raise fail("baseline", str(e)) from None

    from envs.forms import EnvError, check_env, parse_env

    try:
        form = parse_env(sweep.env)
    except EnvError as e:
        raise fail("env", str(e)) from None
    try:
        envs.check_env_config(sweep.env, sweep.env_config)
        _, own = envs.latency.split_step_cost(sweep.env_config)
        if form.kind == "module_id":
            check_gym_env_config(form.attr, own)
        elif form.kind == "registered" and sweep.env not in envs.RLLIB_ENVS:
            check_gym_env_config(sweep.env, own)
        elif sweep.env in envs.atari.PONG_IDS:  # the keys that go on to ale-py's constructor
            _, ale_kwargs = envs.atari.check_atari_config(sweep.env, own)
            check_gym_env_config(
                sweep.env, dict(ale_kwargs), also_accepted=set(envs.atari.PREPROCESSING_DEFAULTS)
            )
    except EnvError as e:
        raise fail("env", str(e)) from None
    except ValueError as e:
        raise fail("env_config", str(e)) from None
    checked = None
    if sweep.env not in envs.RLLIB_ENVS:  # the suite's own envs are tested by its tests
        try:
            checked = check_env(sweep.env, sweep.env_config)
        except EnvError as e:
            raise fail("env", str(e)) from None

    if sweep.target.metric not in KNOWN_METRICS:
        raise fail(
            "target.metric",
            f"{sweep.target.metric!r} is not produced by env {sweep.env} "
            f"(known: {', '.join(sorted(KNOWN_METRICS))})",
        )
    if sweep.reference is not None:
        from sweeps.engine.reference import check_reference

        try:
            check_reference(sweep.reference)
        except ValueError as e:  # "key: reason"
            raise SpecError(f"{source}: reference.{e}") from None
        if sweep.target.metric not in (EVALUATION, TRAINING, EPISODE_RETURN):
            raise fail(
                "reference",
                f"a reference is judged on target metric 'evaluation' or "
                f"'training', not the RLlib key {sweep.target.metric!r}",
            )
    optimal = _oracle(sweep, source)
    if sweep.target.fraction_of_optimal is not None:
        if optimal is None:
            raise fail(
                "target.fraction_of_optimal",
                f"env {sweep.env} has no oracle optimum; give target value= instead",
            )
        if sweep.target.fraction_of_optimal > 1 and sweep.target.metric in RETURN_METRICS:
            raise fail(
                "target.fraction_of_optimal",
                f"{sweep.target.fraction_of_optimal:g} is above the env's exact optimum "
                "(1.0): no policy can reach it",
            )
    elif (
        optimal is not None
        and sweep.target.metric in RETURN_METRICS
        and sweep.target.value > optimal
    ):
        raise fail(
            "target.value",
            f"{sweep.target.value:g} is above the env's exact optimal "
            f"return {optimal:.2f}: no policy can reach it",
        )
    if sweep.search.sampler != "grid" and sweep.search.num_samples < len(sweep.algorithms):
        raise fail(
            "search.num_samples",
            f"{sweep.search.num_samples} cannot give each of the "
            f"{len(sweep.algorithms)} algorithms one configuration; "
            f"give at least {len(sweep.algorithms)}",
        )
    confirm = sweep.search.confirm
    if confirm is not None:
        for name in confirm.per_params:
            if not any(name in sweep.params_for(a) for a in sweep.algorithms):
                raise fail(
                    "search.confirm.per_params",
                    f"{name!r} is not searched by any algorithm: it has one value, no cells",
                )
        from sweeps.engine.search import first_points

        cells = len(first_points(sweep)) if sweep.search.sampler != "grid" else 0
        if cells > sweep.search.num_samples:
            raise fail(
                "search.num_samples",
                f"{sweep.search.num_samples} cannot measure each "
                f"of the {cells} cells the confirmation confirms "
                "(each algorithm at each env runner count) once; "
                f"give at least {cells}, or set "
                "confirm=Confirm(per_env_runners=False)",
            )
    if sweep.search.sampler == "grid":
        for algo in sweep.algorithms:
            for name, p in sweep.params_for(algo).items():
                if not isinstance(p, Choice):
                    section = (
                        "search_space" if name in sweep.search_space else f"per_algorithm.{algo}"
                    )
                    raise fail(
                        f"{section}.{name}",
                        f"the grid sampler needs choice() values, got a {p.kind} range",
                    )
    _check_action_space(sweep, fail, checked)


#: Target metrics that are episode returns (compared with an env's exact optimum).
RETURN_METRICS = frozenset(
    {
        EVALUATION,
        TRAINING,
        EPISODE_RETURN,
        "env_runners/episode_return_mean",
        "env_runners/episode_return_max",
    }
)

#: Algorithms that act in a discrete action space only (Q-learning: argmax over actions; SEED's
#: inference server samples categorical actions).
DISCRETE_ONLY = frozenset({"DQN", "APEX", "GORILA", "RLLIB-DQN", "SB3-DQN", "SEED"})

#: Algorithms that act in a continuous (Box) action space only.
CONTINUOUS_ONLY = frozenset({"SB3-SAC"})

#: Algorithms whose replay stores observations as arrays (sweeps.engine.algorithms.apex_replay),
#: or whose inference server batches them as one array (SEED).
BOX_OBSERVATIONS_ONLY = frozenset({"DQN", "APEX", "GORILA", "SEED"})


def _check_action_space(sweep: Sweep, fail, env=None) -> None:
    """DQN, APEX, RLLIB-DQN and SB3-DQN pick actions by argmax over Q-values, SEED samples
    categorical actions: they need a Discrete action space; DQN's and APEX's replay and SEED's
    inference batches need a Box observation space. ``env``: the
    env the validation already built (:func:`envs.forms.check_env`), else it is built once
    (cheap for every env shipped here) to read its spaces."""
    names = list(sweep.algorithms)
    if sweep.baseline:
        names.append(sweep.baseline["algorithm"])
    if sweep.reference:
        names.append(sweep.reference.get("algorithm"))
    q_learners = [a for a in names if a in DISCRETE_ONLY]
    continuous = [a for a in names if a in CONTINUOUS_ONLY]
    if not q_learners and not continuous:
        return
    import gymnasium

    from sweeps.engine.evaluation import evaluation_env

    if env is None:
        try:
            env = evaluation_env(sweep.env, sweep.env_config)
        except Exception as e:  # noqa: BLE001 - the env's own constructor failed: one line
            raise fail(
                "env_config", f"env {sweep.env} cannot be built with it: {type(e).__name__}: {e}"
            ) from None
        env.close()
    space, obs_space = env.action_space, env.observation_space
    if continuous and not isinstance(space, gymnasium.spaces.Box):
        raise fail(
            "reference",
            f"{continuous[0]} needs a continuous (Box) action space, but "
            f"{sweep.env}'s is {space}; SB3-DQN or SB3-PPO take it",
        )
    if not q_learners:
        return
    if not isinstance(space, gymnasium.spaces.Discrete):
        field, who, how = _whose(sweep, q_learners[0])
        raise fail(field, f"{who} needs a discrete action space, but {sweep.env}'s is {space}{how}")
    flat = [a for a in q_learners if a in BOX_OBSERVATIONS_ONLY]
    if flat and not isinstance(obs_space, gymnasium.spaces.Box):
        field, who, how = _whose(sweep, flat[0])
        why, other = (
            ("its inference server batches arrays", "IMPALA")
            if flat[0] == "SEED"
            else ("its replay stores arrays", "RLLIB-DQN")
        )
        raise fail(
            field,
            f"{who} needs a Box observation space ({why}), "
            f"but {sweep.env}'s is {obs_space}{how or f'; {other} takes it'}",
        )


def _whose(sweep: Sweep, algorithm: str) -> tuple[str, str, str]:
    """(field, who, how to mend it) for an algorithm the env cannot take: one the sweep
    declares, the reference, or the baseline; the default baseline (DQN with 1 env runner,
    which the sweep never named) says so and how to declare another."""
    if algorithm in sweep.algorithms:
        return "algorithms", algorithm, ""
    if sweep.reference and sweep.reference.get("algorithm") == algorithm:
        return "reference", algorithm, ""
    if "baseline" in sweep.model_fields_set:
        return "baseline.algorithm", algorithm, ""
    first = sweep.algorithms[0]
    return (
        "baseline",
        f"the default baseline ({algorithm} with 1 env runner, used when a sweep names none)",
        f"; declare one, e.g. baseline={{'algorithm': '{first}', 'num_env_runners': 1}} "
        f"(YAML: 'baseline: {{algorithm: {first}, num_env_runners: 1}}'), or "
        "baseline=None for no relative speedups",
    )


def check_gym_env_config(
    env_id: str, env_config: dict[str, Any], also_accepted: set[str] = frozenset()
) -> None:
    """Reject ``env_config`` keys a gymnasium env's constructor does not take.

    The env is built as ``gymnasium.make(env_id, **env_config)``; keys go to its entry point's
    ``__init__`` (and ``gymnasium.make``'s own keywords). A constructor with ``**kwargs``
    accepts anything.

    ``also_accepted``: keys the suite's own env wrapper takes before the constructor (Pong's
    ``frame_size``, ``framestack``), listed among the accepted ones in the error.

    Raises:
        ValueError: naming the first unknown key and the accepted ones.
    """
    import inspect

    import gymnasium

    import envs  # noqa: F401 - registers ale-py's Atari ids

    spec = gymnasium.spec(env_id)
    entry = spec.entry_point
    if isinstance(entry, str):
        mod, _, attr = entry.partition(":")
        import importlib

        entry = getattr(importlib.import_module(mod), attr)
    try:
        params = inspect.signature(entry).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    make_keys = {
        "max_episode_steps",
        "autoreset",
        "apply_api_compatibility",
        "disable_env_checker",
        "render_mode",
    }
    accepted = (set(params) - {"self"}) | make_keys | set(spec.kwargs) | set(also_accepted)
    for key in env_config:
        if key not in accepted:
            raise ValueError(
                f"{key!r} is not a parameter of {env_id} (accepted: {', '.join(sorted(accepted))})"
            )


def _oracle(sweep: Sweep, source: str) -> float | None:
    """The env's exact optimal return (:func:`envs.oracle_return`), None without an oracle.

    An oracle that cannot solve this config on this machine (too big) is an error only when
    the target is a fraction of the optimum; an absolute target does without it.

    Raises:
        SpecError: one line naming ``source`` and ``env_config``.
    """
    import envs
    from envs.contoso_cabs import ConfigTooLarge

    try:
        return envs.oracle_return(sweep.env, sweep.env_config)
    except ConfigTooLarge as e:
        if sweep.target.fraction_of_optimal is None:
            return None
        raise SpecError(f"{source}: env_config: {e}") from None
    except ValueError as e:
        raise SpecError(f"{source}: env_config: {e}") from None


def sweep_target(sweep: Sweep, source: str = "sweep") -> dict[str, Any]:
    """The target as recorded in spec.json: absolute ``value``, and ``optimal_return`` when the
    env has an oracle.

    Returns:
        ``{"metric", "value", "fraction_of_optimal", "optimal_return"}``; value in episode-return
        units.

    Raises:
        SpecError: the oracle cannot solve the env's config (too big for this machine), one
            line naming ``source`` and ``env_config``.
    """
    optimal = _oracle(sweep, source)
    if sweep.target.fraction_of_optimal is not None:
        assert optimal is not None  # validate_sweep guarantees it
        value = sweep.target.fraction_of_optimal * optimal
    else:
        value = float(sweep.target.value)
    return {
        "metric": sweep.target.metric,
        "value": float(value),
        "fraction_of_optimal": sweep.target.fraction_of_optimal,
        "optimal_return": None if optimal is None or not math.isfinite(optimal) else float(optimal),
    }


#: At most this many points per algorithm are built by :func:`check_points` (a product of
#: many parameters can be huge; the first points of the product are checked).
MAX_CHECKED_POINTS = 512


def sweep_points(sweep: Sweep) -> list[tuple[str, dict[str, Any]]]:
    """Every trial config a sweep can produce, up to the bounds of its ranges.

    Returns:
        ``[(where, params)]``: for each algorithm, the product of every ``choice`` value and
        both bounds of every range (merged over its fixed values), then the baseline; ``where``
        names the point for error messages (``"APEX point {'lr': 0.003}"``, ``"baseline"``).
    """
    import itertools

    from sweeps.engine.search import baseline_params

    points: list[tuple[str, dict[str, Any]]] = []
    for algo in sweep.algorithms:
        names, values = [], []
        for name, p in sweep.params_for(algo).items():
            names.append(name)
            values.append(list(p.values) if isinstance(p, Choice) else [p.low, p.high])
        fixed = sweep.fixed_for(algo)
        for combo in itertools.islice(itertools.product(*values), MAX_CHECKED_POINTS):
            point = dict(zip(names, combo, strict=True))
            points.append((f"{algo} point {point}", {"algorithm": algo, **fixed, **point}))
    base = baseline_params(sweep)
    if base is not None:
        points.append(("baseline", base))
    return points


def check_points(sweep: Sweep, source: str = "SWEEP") -> int:
    """Build and validate the RLlib config of every point of :func:`sweep_points` on the
    sweep's env, with RLlib's own ``AlgorithmConfig.validate()``; no Ray cluster is needed.
    An SB3 configuration's point is checked by
    :func:`sweeps.engine.reference.check_configuration`.

    Returns:
        The number of points checked.

    Raises:
        SpecError: one line naming ``source``, the point and RLlib's (or our vocabulary's)
            reason, e.g. a ``minibatch_size`` that is not a multiple of the
            ``rollout_fragment_length``.
    """
    from sweeps.engine.algorithms import build_config
    from sweeps.engine.reference import REFERENCE_ALGORITHMS, check_configuration

    points = sweep_points(sweep)
    for where, params in points:
        try:
            if params["algorithm"] in REFERENCE_ALGORITHMS:  # SB3 checks its own values
                check_configuration(params)
                continue
            build_config(params, sweep.env, dict(sweep.env_config)).validate()
        except ValueError as e:  # our vocabulary's checks and RLlib's validate()
            msg = " ".join(str(e).split())
            raise SpecError(f"{source}: {where}: invalid config: {msg[:300]}") from None
        except Exception as e:  # noqa: BLE001 - anything else RLlib raises: still one line
            msg = " ".join(str(e).split())
            raise SpecError(
                f"{source}: {where}: invalid config: {type(e).__name__}: {msg[:300]}"
            ) from None
    return len(points)


def resolved_spec(sweep: Sweep, target: dict, file: str) -> dict[str, Any]:
    """spec.json's content: the sweep as resolved (JSON types), with the absolute target, the
    seeds of each stage (``seeds``: ``{"search": [...], "confirm": [...]}``, disjoint) and the
    preset each algorithm took (``presets``: :func:`sweep_presets`)."""
    spec = json.loads(sweep.model_dump_json())
    spec["target"] = target
    spec["baseline"] = sweep.baseline
    spec["source_file"] = Path(file).name
    spec["seeds"] = {"search": sweep.search.search_seeds, "confirm": sweep.search.confirm_seeds}
    spec["presets"] = sweep_presets(sweep)
    return json.loads(json.dumps(spec, default=str))


def sweep_presets(sweep: Sweep) -> dict[str, str | None]:
    """``{algorithm: preset name or None}`` for every algorithm the sweep runs (its
    configurations', the baseline's and the reference's): where its defaults come from on the
    sweep's env (:mod:`sweeps.engine.presets`; None: the library's)."""
    from sweeps.engine.presets import preset_names

    algos = list(sweep.algorithms)
    for extra in (sweep.baseline, sweep.reference):
        if extra and extra.get("algorithm") not in algos:
            algos.append(extra["algorithm"])
    return preset_names(algos, sweep.env)

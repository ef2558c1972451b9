"""Sweep semantics on top of Tune's OptunaSearch: baseline first, every config × every seed.

Tune asks a searcher for one config per trial. A scaling study needs more structure:

1. the single-process **reference** (if the sweep declares one) runs first, once per seed
   (absolute speedups are relative to it), then the **baseline** configuration, once per
   seed (relative speedups are relative to it);
2. each configuration Optuna samples runs once per **seed**; Optuna is told one objective per
   configuration (the mean over its seeds) once all its seeds finished, so model-based search
   (TPE) learns from seed-averaged numbers and is never fed a half-measured config; once
   adaptive capping has capped more than half of a configuration's seeds, its median can no
   longer beat the incumbent and its other seeds are not run
   (:func:`sweeps.engine.rundir.schema.skipped_seeds`); Optuna is told the mean over the seeds that ran;
3. with ``search.confirm`` (:class:`sweeps.engine.sweep_spec.Confirm`), once every search trial has
   ended, the search's ``top_k`` fastest configurations (:func:`sweeps.engine.rundir.schema.confirm_configs`),
   the reference and the baseline run again on the confirmation seeds, disjoint from the
   search's, as the ``confirm`` stage (the ``stage`` of every trial's config and row); Optuna
   is not told their results (the choice is already made);
4. the **objective** is time-to-target; a censored trial scores
   ``budget_s × (1 + shortfall)``, ``shortfall = clip((target − best) / |target|, 0, 1)``, so the
   search still learns from trials that missed the target (closer misses score better) and a
   censored trial always scores worse than any trial that reached the target within the budget.

:class:`SeededSearch` wraps an ``OptunaSearch`` (define-by-run, for per-algorithm conditional
parameters) whose study lives in ``optuna.db`` (SQLite) so ``--resume`` keeps its history.
"""

from __future__ import annotations

import itertools
import json
import math
import pickle
from collections import Counter
from typing import Any

from ray.tune.search import Searcher
from ray.tune.search.optuna import OptunaSearch

from sweeps.engine.capping import AdaptiveCapping
from sweeps.engine.rundir.schema import (  # noqa: F401 - skipped_seeds re-exported
    VOCAB_COLUMNS,
    censored_objective,
    config_id,
    confirm_configs,
    failed_seeds,
    skipped_seeds,
)
from sweeps.engine.sweep_spec import Choice, Confirm, IntRange, LogUniform, Param, Sweep, Uniform

# Keys the runner adds to every trial config (not algorithm parameters).
META_KEYS = ("config_id", "is_baseline", "is_reference", "seed", "stage")

# Vocabulary keys every trial config carries explicitly (the algorithm's default when the sweep
# does not set them), so results tables and Tune's status table always have them: the
# vocabulary columns of trials.parquet.
RECORDED_PARAMS = VOCAB_COLUMNS


def library_defaults(algorithm: str) -> dict[str, Any]:
    """``algorithm``'s own defaults, the library's or the paper's: an RLlib algorithm's
    ``ALGORITHMS[name].defaults``, an SB3 algorithm's
    :data:`sweeps.engine.reference.REFERENCE_DEFAULTS` entry (SB3's names).

    Raises:
        KeyError: an algorithm neither registry knows.
    """
    from sweeps.engine.algorithms import ALGORITHMS
    from sweeps.engine.reference import REFERENCE_ALGORITHMS, REFERENCE_DEFAULTS

    if algorithm in REFERENCE_ALGORITHMS:
        return dict(REFERENCE_DEFAULTS[algorithm])
    return dict(ALGORITHMS[algorithm].defaults)


def defaults_for(algorithm: str, env: str | None) -> dict[str, Any]:
    """What a trial of ``algorithm`` on ``env`` takes where its sweep sets nothing: its library
    defaults (:func:`library_defaults`) overridden by its preset there
    (:mod:`sweeps.engine.presets`), if any.

    Raises:
        KeyError: an algorithm neither registry knows.
    """
    from sweeps.engine.presets import preset_values

    return {**library_defaults(algorithm), **preset_values(algorithm, env)}


def resolve_params(params: dict[str, Any], env: str | None) -> dict[str, Any]:
    """A trial's parameters as it runs: ``{**library defaults, **preset, **params}``, what
    :func:`sweeps.engine.algorithms.build_config` and the SB3 trial apply.

    Args:
        params: ``algorithm`` and what the sweep (or a caller of ``build_config``) set.
        env: the env id the trial runs on, as the sweep names it.

    Raises:
        KeyError: no or an unknown ``algorithm``.
    """
    return {**defaults_for(params["algorithm"], env), **params}


def algorithm_defaults(algorithm: str, env: str | None = None) -> dict[str, Any]:
    """The parameters a trial of ``algorithm`` on ``env`` takes when the sweep sets none: its
    preset there, over its library defaults (:func:`defaults_for`); an
    SB3 algorithm's (SB3's names) with the vocabulary columns it is recorded with
    (:func:`sweeps.engine.reference.recorded_params`).

    Raises:
        KeyError: an algorithm neither registry knows.
    """
    from sweeps.engine.reference import REFERENCE_ALGORITHMS, recorded_params

    if algorithm in REFERENCE_ALGORITHMS:
        return {
            **defaults_for(algorithm, env),
            **recorded_params({"algorithm": algorithm}, env),
        }
    return defaults_for(algorithm, env)


def complete_params(params: dict[str, Any], env: str | None = None) -> dict[str, Any]:
    """``params`` with the defaults of its algorithm on ``env`` (:func:`algorithm_defaults`)
    filled in for :data:`RECORDED_PARAMS`."""
    from sweeps.engine.algorithms import ALGORITHMS

    if params["algorithm"] not in ALGORITHMS:  # SB3 (the reference or a configuration)
        from sweeps.engine.reference import recorded_params

        return {**params, **recorded_params(params, env)}
    defaults = algorithm_defaults(params["algorithm"], env)
    filled = {k: defaults[k] for k in RECORDED_PARAMS if k in defaults and k not in params}
    return {**params, **filled}


def _optuna_name(algorithm: str, name: str, shared: bool) -> str:
    # Per-algorithm parameters get their own Optuna name so TPE models them conditionally.
    return name if shared else f"{algorithm}.{name}"


class DefineByRun:
    """Optuna define-by-run space of a sweep (picklable, for Tune's searcher checkpoints).

    Called with an ``optuna.Trial``; suggests ``algorithm``, the shared parameters and the
    chosen algorithm's own parameters, and returns the fixed parameters as constants.
    """

    def __init__(self, sweep: Sweep):
        self.algorithms = list(sweep.algorithms)
        self.shared = dict(sweep.search_space)
        self.own = {a: dict(sweep.per_algorithm.get(a, {})) for a in self.algorithms}
        self.fixed = {a: sweep.fixed_for(a) for a in self.algorithms}

    def __call__(self, trial) -> dict[str, Any]:
        algo = trial.suggest_categorical("algorithm", self.algorithms)
        for name, p in self.shared.items():
            if name not in self.own[algo]:  # the algorithm's own parameter replaces it
                _suggest(trial, name, p)
        for name, p in self.own[algo].items():
            _suggest(trial, _optuna_name(algo, name, shared=False), p)
        return {"__fixed__": json.dumps(self.fixed[algo])}


def _suggest(trial, name: str, p: Param) -> Any:
    if isinstance(p, Choice):
        return trial.suggest_categorical(name, p.values)
    if isinstance(p, IntRange):
        return trial.suggest_int(name, p.low, p.high, log=p.log)
    if isinstance(p, LogUniform):
        return trial.suggest_float(name, p.low, p.high, log=True)
    if isinstance(p, Uniform):
        return trial.suggest_float(name, p.low, p.high)
    raise TypeError(f"unknown parameter type {type(p).__name__}")


def grid_points(sweep: Sweep) -> list[dict[str, Any]]:
    """Every point of the grid (Optuna parameter names), algorithm by algorithm; an
    algorithm's own parameter replaces the shared one of its name (:meth:`Sweep.params_for`).

    Raises:
        ValueError: a searched parameter is not a ``choice()`` (a grid needs finite values).
    """
    points: list[dict[str, Any]] = []
    for algo in sweep.algorithms:
        names, values = ["algorithm"], [[algo]]
        own = sweep.per_algorithm.get(algo, {})
        # an algorithm's own parameter replaces the shared one of that name: multiplying the
        # two would repeat each of its values once per shared value
        for name, p in sweep.params_for(algo).items():
            if not isinstance(p, Choice):
                raise ValueError(f"grid search needs choice() parameters, {name} is {p.kind}")
            names.append(_optuna_name(algo, name, shared=name not in own))
            values.append(p.values)
        points += [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
    return points


def _default_in(p: Param, default: Any) -> Any:
    """``default`` when the parameter's space holds it, else the space's first choice or
    the middle of its range (geometric for log ranges)."""
    import math

    if isinstance(p, Choice):
        return default if default in p.values else p.values[0]
    ok = isinstance(default, (int, float)) and not isinstance(default, bool)
    if (
        ok
        and p.low <= default <= p.high
        and (not isinstance(p, IntRange) or default == int(default))
    ):
        return int(default) if isinstance(p, IntRange) else float(default)
    if isinstance(p, IntRange):
        return int(round(math.sqrt(p.low * p.high))) if p.log else (p.low + p.high) // 2
    if isinstance(p, LogUniform):
        return math.sqrt(p.low * p.high)
    return (p.low + p.high) / 2


def _values(p: Param) -> list[Any] | None:
    """Every value a searched parameter can take, or None for a continuous (or very wide
    integer) range."""
    if isinstance(p, Choice):
        return list(p.values)
    if isinstance(p, IntRange) and p.high - p.low < 64:
        return list(range(p.low, p.high + 1))
    return None


def _varies(p: Param | None) -> bool:
    if p is None:
        return False
    values = _values(p)
    return values is None or len(set(values)) > 1


def confirm_axes(sweep: Sweep) -> tuple[str, ...]:
    """The parameters whose every value gets its own confirmed configuration, per algorithm
    (:class:`sweeps.engine.sweep_spec.Confirm`'s ``per_env_runners`` and ``per_params``); empty
    without a confirmation stage or cells. ``per_env_runners=None`` means on when some
    algorithm's search varies ``num_env_runners``."""
    confirm = sweep.search.confirm
    if confirm is None:
        return ()
    per = confirm.per_env_runners
    if per is None:
        per = any(_varies(sweep.params_for(a).get("num_env_runners")) for a in sweep.algorithms)
    axes = (["num_env_runners"] if per else []) + [
        n for n in confirm.per_params if n != "num_env_runners"
    ]
    return tuple(axes)


def confirm_cells(sweep: Sweep) -> list[dict[str, Any]] | None:
    """The cells whose fastest configuration a confirmation runs besides its ``top_k``: every
    algorithm with every combination of the values its space gives the
    :func:`confirm_axes` (a parameter it does not search: its fixed value, else its default),
    algorithm by algorithm, in the order of the values. ``[]`` without axes; None when an axis
    is a continuous range (its cells are known only from what the search sampled).

    Returns:
        ``[{"algorithm": ..., axis: value, ...}, ...]``.
    """

    axes = confirm_axes(sweep)
    if not axes:
        return []
    cells: list[dict[str, Any]] = []
    for algo in sweep.algorithms:
        space, fixed = sweep.params_for(algo), sweep.fixed_for(algo)
        values = []
        for name in axes:
            if name in space:
                v = _values(space[name])
                if v is None:
                    return None
            else:
                v = [fixed.get(name, algorithm_defaults(algo, sweep.env).get(name))]
            values.append(v)
        cells += [
            {"algorithm": algo, **dict(zip(axes, combo, strict=True))}
            for combo in itertools.product(*values)
        ]
    return cells


def first_points(sweep: Sweep) -> list[dict[str, Any]]:
    """One configuration per algorithm (Optuna parameter names), enqueued before the sampler
    takes over so that every declared algorithm is measured whatever the sampler would draw:
    each parameter at the algorithm's tuned default when the space holds it, else its first
    choice or the middle of its range; for the baseline's algorithm, another
    ``num_env_runners`` than the baseline's when the space has one (the baseline runs anyway).
    With confirmation cells (:func:`confirm_cells`), one configuration per cell instead, so
    that the confirmation finds a candidate in each.
    """

    cells = confirm_cells(sweep)
    if cells:
        return _cell_points(sweep, cells)
    base = sweep.baseline or {}
    points = []
    for algo in sweep.algorithms:
        defaults = algorithm_defaults(algo, sweep.env)
        point: dict[str, Any] = {"algorithm": algo}
        for shared, params in (
            (True, sweep.search_space),
            (False, sweep.per_algorithm.get(algo, {})),
        ):
            for name, p in params.items():
                value = _default_in(p, defaults.get(name))
                if (
                    name == "num_env_runners"
                    and algo == base.get("algorithm")
                    and isinstance(p, Choice)
                    and value == base.get("num_env_runners")
                ):
                    value = next((v for v in p.values if v != value), value)
                point[_optuna_name(algo, name, shared)] = value
        points.append(point)
    return points


def _cell_points(sweep: Sweep, cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One configuration per confirmation cell (:func:`confirm_cells`): each searched
    parameter at the algorithm's tuned default when the space holds it, the cell's own values
    on its axes; a point that is the baseline's configuration is left out (the baseline runs
    anyway, and stands for its cell)."""

    base = baseline_params(sweep)
    base = complete_params(base, sweep.env) if base is not None else None
    points = []
    for cell in cells:
        algo = cell["algorithm"]
        defaults = algorithm_defaults(algo, sweep.env)
        own = sweep.per_algorithm.get(algo, {})
        point: dict[str, Any] = {"algorithm": algo}
        for name, p in sweep.params_for(algo).items():
            value = cell[name] if name in cell else _default_in(p, defaults.get(name))
            point[_optuna_name(algo, name, shared=name not in own)] = value
        flat = trial_params({**point, "__fixed__": json.dumps(sweep.fixed_for(algo))})
        if base is not None and complete_params(flat, sweep.env) == base:
            continue
        points.append(point)
    return points


def trial_params(optuna_config: dict[str, Any]) -> dict[str, Any]:
    """Turn an OptunaSearch config into the flat trial vocabulary (``algorithm`` + params)."""
    cfg = dict(optuna_config)
    fixed = json.loads(cfg.pop("__fixed__", "{}"))
    algo = cfg["algorithm"]
    out: dict[str, Any] = {"algorithm": algo}
    out.update(fixed)
    for key, value in cfg.items():
        if key == "algorithm":
            continue
        prefix = f"{algo}."
        out[key.removeprefix(prefix) if key.startswith(prefix) else key] = value
    return out


def baseline_params(sweep: Sweep) -> dict[str, Any] | None:
    """The baseline's flat trial params: its fixed values, then what ``baseline`` names."""
    if not sweep.baseline:
        return None
    algo = sweep.baseline["algorithm"]
    fixed = sweep.fixed_for(algo) if algo in sweep.algorithms else dict(sweep.fixed)
    return {"algorithm": algo, **fixed, **sweep.baseline}


def _grid_configs(sweep: Sweep) -> list[dict[str, Any]]:
    """The grid points a ``grid`` sweep samples (the baseline already runs with every seed;
    it is not run again as a grid point)."""
    base = baseline_params(sweep)
    return [
        p
        for p in grid_points(sweep)
        if base is None
        or trial_params({**p, "__fixed__": json.dumps(sweep.fixed_for(p["algorithm"]))}) != base
    ]


def num_configs(sweep: Sweep) -> int:
    """Configurations the sweep samples (the baseline and the reference not counted)."""
    if sweep.search.sampler == "grid":
        return min(sweep.search.num_samples, len(_grid_configs(sweep)))
    return sweep.search.num_samples


def grid_shortfall(sweep: Sweep) -> str | None:
    """For a ``grid`` sweep whose ``num_samples`` is below its number of configurations, a
    one-line notice naming what will not run (the grid is taken algorithm by algorithm, so
    the last algorithms lose their points first); None otherwise."""
    if sweep.search.sampler != "grid":
        return None
    points = _grid_configs(sweep)
    n = sweep.search.num_samples
    if n >= len(points):
        return None
    left = Counter(p["algorithm"] for p in points[n:])
    names = ", ".join(f"{a} ({k})" for a, k in left.items())
    return (
        f"note: the grid has {len(points)} configurations and search.num_samples={n} runs "
        f"the first {n}; not run: {names}"
    )


def confirm_count(sweep: Sweep) -> int:
    """Sampled configurations a confirmation stage runs at most: its ``top_k`` plus one per
    cell (:func:`confirm_cells`), never more than the search samples; 0 without one."""
    if sweep.search.confirm is None:
        return 0
    n, cells = num_configs(sweep), confirm_cells(sweep)
    if cells is None:  # a continuous axis: any sampled configuration may be a cell's fastest
        return n
    return min(sweep.search.confirm.top_k + len(cells), n)


def expected_trials(sweep: Sweep) -> int:
    """Trials a complete run of the sweep records at most: (sampled configurations +
    baseline + reference) × seeds, plus, with a confirmation stage, (:func:`confirm_count`
    of them + baseline + reference) × confirmation seeds."""
    extra = (1 if sweep.baseline else 0) + (1 if sweep.reference else 0)
    search = (num_configs(sweep) + extra) * sweep.search.seeds
    confirm = sweep.search.confirm
    if confirm is None:
        return search
    return search + (confirm_count(sweep) + extra) * confirm.seeds


def confirm_shortfall(sweep: Sweep, trials: Any) -> int:
    """Confirmation trials :func:`expected_trials` counts that a finished search will not run:
    the ``top_k`` slots without a candidate (fewer sampled configurations finished without an
    error) × confirmation seeds; 0 without a confirmation stage."""
    confirm = sweep.search.confirm
    if confirm is None:
        return 0
    found = len(confirm_configs(trials, confirm.top_k, confirm_axes(sweep)))
    return max(confirm_count(sweep) - found, 0) * confirm.seeds


def make_optuna_search(sweep: Sweep, storage_url: str) -> tuple[OptunaSearch, int]:
    """The inner ``OptunaSearch`` for a sweep and the number of configurations to sample.

    Returns:
        (searcher, num_configs): TPE or random sampler seeded with ``search.sampler_seed``,
        its study with one configuration per algorithm enqueued first when the sweep has
        several (:func:`first_points`); for ``grid``, a random sampler whose study has every
        grid point enqueued.
    """
    import optuna

    seed = sweep.search.sampler_seed
    if sweep.search.sampler == "grid":
        points = _grid_configs(sweep)
    else:  # every declared algorithm measured at least once (counted in num_samples)
        points = first_points(sweep) if len(sweep.algorithms) > 1 or confirm_cells(sweep) else None
    n = num_configs(sweep)
    if sweep.search.sampler == "tpe":
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(5, n))
    else:
        sampler = optuna.samplers.RandomSampler(seed=seed)
    storage = optuna.storages.RDBStorage(storage_url)
    searcher = OptunaSearch(
        space=DefineByRun(sweep),
        metric="objective",
        mode="min",
        sampler=sampler,
        study_name=sweep.name,
        storage=storage,
        points_to_evaluate=points,
    )
    return searcher, n


class _PickledState(Searcher):
    """A searcher whose checkpoint (Tune's, for ``--resume``) is its whole state, pickled."""

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.__dict__, f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as f:
            self.__dict__.update(pickle.load(f))


def _shape_order(params: dict[str, Any], first_algorithm: str | None) -> tuple:
    """Sort key that runs ``first_algorithm``'s configurations first (the algorithm whose env
    runners the search's last trial parked), then algorithm by algorithm, each from its most
    env runners down: the first trial of an algorithm starts its processes and every later
    one finds as many parked as it needs (a warm trial, :mod:`sweeps.engine.warm`); a stable
    sort keeps the baseline, then the fastest, first within a count."""
    algo = str(params.get("algorithm"))
    return (algo != first_algorithm, algo, -float(params.get("num_env_runners") or 0))


class SeededSearch(_PickledState):
    """Reference and baseline first, then each sampled configuration once per seed (see module
    docstring).

    Args:
        inner: the searcher that samples configurations (an ``OptunaSearch``).
        seeds: trials per configuration, seeds ``first_seed .. first_seed + seeds - 1``.
        baseline: flat params of the baseline configuration, or None.
        reference: flat params of the single-process reference (``{"algorithm": "SB3-DQN",
            ...}``), or None.
        num_configs: configurations to sample from ``inner`` (the baseline not counted).
        first_seed: the first seed (``Search.first_seed``, default 0).
        recorder: the run's :class:`sweeps.engine.record.ResultsRecorder` (its recorded rows decide
            which seeds are skipped: adaptive capping's and failed configurations', and which
            configurations are confirmed), or None: every seed runs, none is confirmed.
        confirm: the confirmation stage (:class:`sweeps.engine.sweep_spec.Confirm`), or None.
        confirm_seeds: its seeds (:attr:`sweeps.engine.sweep_spec.Search.confirm_seeds`).
        confirm_per: the parameters of its cells (:func:`confirm_axes`), besides ``top_k``.
        confirm_max: sampled configurations it runs at most (:func:`confirm_count`; default
            ``top_k``, or the sampled configurations when fewer).
        capping: the run's :class:`sweeps.engine.capping.AdaptiveCapping` (which seeds capping
            settled), or None: capping's skips are read with ``seeds`` alone.
        metric, mode: the objective the trials report (``objective``, ``min``).
        env: the sweep's env id: the recorded columns a configuration leaves unset take its
            algorithm's preset there (:mod:`sweeps.engine.presets`).
    """

    def __init__(
        self,
        inner: Searcher,
        *,
        seeds: int,
        baseline: dict[str, Any] | None,
        num_configs: int,
        reference: dict[str, Any] | None = None,
        first_seed: int = 0,
        recorder: Any = None,
        confirm: Confirm | None = None,
        confirm_seeds: list[int] | None = None,
        capping: AdaptiveCapping | None = None,
        confirm_per: tuple[str, ...] = (),
        confirm_max: int | None = None,
        metric: str = "objective",
        mode: str = "min",
        env: str | None = None,
    ):
        super().__init__(metric=metric, mode=mode)
        self.inner = inner
        self._env = env  # the sweep's env id: its presets fill the recorded columns
        self.recorder = recorder
        self.capping = capping if capping is not None else AdaptiveCapping(None, seeds)
        self._reference = reference
        self.seeds = seeds
        self.first_seed = int(first_seed)
        self.num_configs = num_configs
        self._queue: list[dict[str, Any]] = []
        self._baseline = baseline
        self._confirm = confirm
        self._confirm_seeds = list(confirm_seeds or [])
        self._confirm_per = tuple(confirm_per)
        self._confirm_max = (
            confirm_max
            if confirm_max is not None or confirm is None
            else min(confirm.top_k, num_configs)
        )
        #: the stage whose trials are being suggested: "search", then "confirm"
        self.stage = "search"
        #: config_id of the configurations the confirmation stage runs, fastest first
        self.confirmed: list[str] = []
        self._reference_params, self._baseline_params = reference, baseline
        self._params_of: dict[str, dict[str, Any]] = {}  # sampled config_id -> its params
        self._sampled = 0
        self._group_of: dict[str, str] = {}  # tune trial id -> inner id
        self._group_results: dict[str, list[float | None]] = {}
        self._group_size: dict[str, int] = {}
        #: seeds of configurations sampled again after capping settled them (or they failed):
        #: none runs, and no recorded row counts them (they leave the expected count)
        self.resampled = 0

    @property
    def total_trials(self) -> int:
        """Trials this search will start at most: (configs + baseline + reference) × seeds,
        plus (confirmed configs + baseline + reference) × confirmation seeds."""
        extra = (1 if self._baseline_params else 0) + (1 if self._reference_params else 0)
        confirm = (
            0
            if self._confirm is None
            else (
                (getattr(self, "_confirm_max", min(self._confirm.top_k, self.num_configs)) + extra)
                * len(self._confirm_seeds)
            )
        )
        return (self.num_configs + extra) * self.seeds + confirm

    def set_search_properties(self, metric, mode, config, **spec) -> bool:
        super().set_search_properties(metric, mode, config, **spec)
        return self.inner.set_search_properties(metric, mode, config, **spec)

    def _enqueue(
        self, group: str, params: dict[str, Any], stage: str = "search", cid: str | None = None
    ) -> None:
        """Queue one configuration once per seed of ``stage``; ``group`` is ``"reference"``,
        ``"baseline"`` (their config ids) or a sampled configuration's (``cid``, else the
        config id of its params), prefixed ``"confirm:"`` in the confirmation stage."""
        role = group.removeprefix("confirm:")
        is_baseline, is_reference = role == "baseline", role == "reference"
        if cid is None:
            cid = role if is_baseline or is_reference else config_id(params["algorithm"], params)
        params = complete_params(params, getattr(self, "_env", None))
        if not (is_baseline or is_reference):
            self._params_of[cid] = params
        seeds = (
            self._confirm_seeds
            if stage == "confirm"
            else range(self.first_seed, self.first_seed + self.seeds)
        )
        self._group_size[group] = len(seeds)
        self._group_results[group] = []
        for seed in seeds:
            self._queue.append(
                {
                    **params,
                    "seed": seed,
                    "config_id": cid,
                    "is_baseline": is_baseline,
                    "is_reference": is_reference,
                    "stage": stage,
                    "__group__": group,
                }
            )

    def _start_confirmation(self) -> None:
        """Queue the confirmation stage: the reference, the baseline and the search's
        ``top_k`` fastest configurations and its fastest of each cell
        (:func:`sweeps.engine.rundir.schema.confirm_configs` on the recorded rows), each once per
        confirmation seed; after the reference, the configurations run grouped by algorithm
        and env runner count in :func:`_shape_order`, so that a trial finds parked processes
        to reuse (a warm trial)."""
        self.stage = "confirm"
        self.confirmed = [
            cid
            for cid in confirm_configs(
                self._recorded(), self._confirm.top_k, getattr(self, "_confirm_per", ())
            )
            if cid in self._params_of
        ]
        if self._reference_params is not None:
            self._enqueue("confirm:reference", self._reference_params, stage="confirm")
        groups = [("confirm:baseline", self._baseline_params, None)] * (
            self._baseline_params is not None
        ) + [(f"confirm:{cid}", self._params_of[cid], cid) for cid in self.confirmed]
        first = getattr(self, "_last_algorithm", None)
        for group, params, cid in sorted(groups, key=lambda g: _shape_order(g[1], first)):
            self._enqueue(group, params, stage="confirm", cid=cid)

    def _skip_dominated(self) -> bool:
        """Drop the queued seeds of the configuration at the head of the queue when adaptive
        capping has capped more than half of its seeds (:func:`sweeps.engine.rundir.schema.skipped_seeds`,
        on the rows recorded so far), or when one of its trials raised an error of the env's
        or the configuration's (:func:`sweeps.engine.rundir.schema.failed_seeds`); Optuna gets its
        objective once its running seeds end.
        Returns whether it dropped any (the queue holds one configuration's seeds at a time)."""
        if not self._queue or self.recorder is None or self._queue[0].get("stage") == "confirm":
            return False  # a confirmation measures every seed of what it confirms
        head = self._queue[0]
        group = head["__group__"]
        failed = failed_seeds(self._recorded(), self.seeds)  # fail fast: an env/config error
        if head["config_id"] not in failed and (
            group in ("baseline", "reference") or head["config_id"] not in self.skipped
        ):
            return False
        dropped = sum(1 for c in self._queue if c["__group__"] == group)
        self._queue = [c for c in self._queue if c["__group__"] != group]
        running = sum(1 for g in self._group_of.values() if g == group)
        if not running and not self._group_results[group]:  # sampled again: nothing of it ran
            self.resampled = getattr(self, "resampled", 0) + dropped
        self._group_size[group] = len(self._group_results[group]) + running
        if not running and group not in ("baseline", "reference"):  # Optuna never sampled those
            self._tell(group, head["config_id"])
        return True

    def _tell(self, group: str, cid: str | None = None) -> None:
        """Give Optuna the configuration's objective: the mean over its seeds that ran (a
        configuration sampled again after it was skipped: its earlier recorded trials')."""
        values = [v for v in self._group_results[group] if v is not None and math.isfinite(v)]
        if not values and cid is not None and self.recorder is not None:
            values = [
                v
                for r in self._recorded()
                if r.get("config_id") == cid
                for v in [float(r.get("objective") or math.nan)]
                if math.isfinite(v)
            ]
        if values:
            self.inner.on_trial_complete(group, {self.metric: sum(values) / len(values)})
        else:
            self.inner.on_trial_complete(group, None, error=True)

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        # a configuration sampled again after capping settled it runs no seed: sample another
        while self._skip_dominated() or not self._queue:
            if self._reference is not None:
                self._enqueue("reference", self._reference)
                self._reference = None
            elif self._baseline is not None:
                self._enqueue("baseline", self._baseline)
                self._baseline = None
            elif self._sampled < self.num_configs:
                group = f"config{self._sampled}"
                suggestion = self.inner.suggest(group)
                if suggestion is None or suggestion == Searcher.FINISHED:
                    return suggestion
                self._sampled += 1
                self._enqueue(group, trial_params(suggestion))
            elif self._confirm is not None and self.stage == "search":
                if self._group_of:  # the search's last trials still run: the choice waits
                    return None
                self._start_confirmation()
                if not self._queue:
                    return Searcher.FINISHED
            else:
                return Searcher.FINISHED
        config = dict(self._queue.pop(0))
        self._group_of[trial_id] = config.pop("__group__")
        if not config.get("is_reference") and config.get("num_env_runners"):
            self._last_algorithm = config.get("algorithm")
        return config

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False):
        group = self._group_of.pop(trial_id, None)
        if group is None:
            return
        value = None if (error or not result) else result.get(self.metric)
        self._group_results[group].append(value)
        done = self._group_results[group]
        if (
            len(done) < self._group_size[group]
            or group in ("baseline", "reference")
            or group.startswith("confirm:")
        ):  # Optuna learns from the search alone
            return
        self._tell(group)

    @property
    def skipped(self) -> dict[str, int]:
        """``{config_id: seeds not run}`` so far (:meth:`AdaptiveCapping.skipped_seeds`)."""
        return self.capping.skipped_seeds(self._recorded())

    def _recorded(self) -> list[dict[str, Any]]:
        # an inert stand-in (unpickled where no sweep runs) has no rows
        return getattr(self.recorder, "trials", None) or []


def sweep_search(
    sweep: Sweep, storage_url: str, recorder: Any = None, capping: AdaptiveCapping | None = None
) -> tuple[SeededSearch, int]:
    """The searcher a run of ``sweep`` uses: :func:`make_optuna_search`'s sampler (its study
    in ``storage_url``, e.g. ``sqlite:///.../optuna.db``) inside a :class:`SeededSearch` with
    the sweep's seeds, baseline and reference; ``recorder`` (the run's
    :class:`sweeps.engine.record.ResultsRecorder`) lets it skip the seeds adaptive capping made
    pointless (when the sweep caps) and those of a configuration whose trial raised.

    Returns:
        (search, num_configs): the searcher and the number of sampled configurations.
    """
    inner, num_configs = make_optuna_search(sweep, storage_url)
    return SeededSearch(
        inner,
        seeds=sweep.search.seeds,
        baseline=baseline_params(sweep),
        num_configs=num_configs,
        reference=sweep.reference,
        first_seed=sweep.search.first_seed,
        recorder=recorder,
        confirm=sweep.search.confirm,
        confirm_seeds=sweep.search.confirm_seeds,
        confirm_per=confirm_axes(sweep),
        confirm_max=confirm_count(sweep),
        capping=capping,
        env=sweep.env,
    ), num_configs


class FixedSearch(_PickledState):
    """Suggest ``configs`` in order, then ``FINISHED`` (a re-confirmation: the trials are
    known before it starts, :func:`reconfirmation`)."""

    def __init__(self, configs: list[dict[str, Any]], metric: str = "objective", mode: str = "min"):
        super().__init__(metric=metric, mode=mode)
        self._queue = [dict(c) for c in configs]
        self.total_trials = len(self._queue)

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        return self._queue.pop(0) if self._queue else Searcher.FINISHED

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False):
        pass


def reconfirmation(
    sweep: Sweep, trials: list[dict[str, Any]], params_of: dict[str, dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[int]]:
    """The trials of a new confirmation of a finished run (``sweeps.run --confirm-only``).

    The search's ``top_k`` fastest configurations (:func:`sweeps.engine.rundir.schema.confirm_configs` on
    the run's rows; ``top_k`` and the number of seeds from ``search.confirm``, else
    :class:`sweeps.engine.sweep_spec.Confirm`'s defaults), the baseline and the reference, each once per new
    seed. The new seeds follow every seed the run has used, and start at 1000 at least: never a
    search seed, never an earlier confirmation's.

    Args:
        sweep: the run's sweep.
        trials: the run's recorded rows (``trials.parquet``).
        params_of: ``config_id`` -> the configuration's trial parameters (as Tune ran them).

    Returns:
        (trial configs in the order they run, the new seeds).

    Raises:
        ValueError: the run's search has no configuration that finished without an error.
    """
    from sweeps.engine.sweep_spec import CONFIRM_FIRST_SEED

    confirm = sweep.search.confirm or Confirm()
    chosen = [
        cid
        for cid in confirm_configs(trials, confirm.top_k, confirm_axes(sweep))
        if cid in params_of
    ]
    if not chosen:
        raise ValueError(
            "no configuration of its search finished without an error: nothing to confirm"
        )
    used = [int(r["seed"]) for r in trials]
    first = max([CONFIRM_FIRST_SEED, *(s + 1 for s in used)])
    seeds = list(range(first, first + confirm.seeds))
    groups = []
    if sweep.reference:
        groups.append(("reference", complete_params(dict(sweep.reference), sweep.env), False, True))
    base = baseline_params(sweep)
    if base is not None:
        groups.append(("baseline", complete_params(base, sweep.env), True, False))
    groups += [(cid, params_of[cid], False, False) for cid in chosen]
    configs = [
        {
            **params,
            "seed": seed,
            "config_id": cid,
            "is_baseline": is_b,
            "is_reference": is_r,
            "stage": "confirm",
        }
        for cid, params, is_b, is_r in groups
        for seed in seeds
    ]
    return configs, seeds

"""The sweep spec: what a sweep file declares, validated by pydantic.

The helpers :func:`choice`, :func:`randint`, :func:`uniform`, :func:`loguniform` build
parameters that are validated when the ``Sweep`` is built, so errors name the field.

A sweep file (``sweeps/<study>.py``) declares one ``SWEEP = Sweep(...)``; a YAML file with the
same fields is accepted too (see :func:`sweeps.engine.sweep_file.load_sweep`). Every field carries its
meaning in its ``description``; ``python -m sweeps.run FILE --dry-run`` prints the resolved spec.

Example::

    from sweeps.engine.sweep_spec import Budget, Search, Sweep, Target, choice, loguniform

    SWEEP = Sweep(
        name="cabs_scaling",
        env="ContosoCabs-v0",
        algorithms=["DQN", "APEX", "IMPALA"],
        search_space={"num_env_runners": choice([1, 2]), "lr": loguniform(1e-4, 3e-3)},
        target=Target(fraction_of_optimal=0.95),
        budget=Budget(time_s=120),
        search=Search(num_samples=6, seeds=2),
        baseline={"algorithm": "DQN", "num_env_runners": 1},
    )
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Target metrics (docs/design.md, *evaluation protocol*). EVALUATION: the mean return of the current
# policy acting greedily on fixed evaluation episodes, measured the same way for every algorithm
# and the reference (sweeps.engine.evaluation). TRAINING: the mean return of the exploring training
# episodes (RLlib's env_runners/episode_return_mean; the reference's last 100 episodes).
EVALUATION = "evaluation"
TRAINING = "training"
#: Deprecated spelling of TRAINING (before the evaluation protocol it meant "as each algorithm
#: defines it"); accepted and read as TRAINING.
EPISODE_RETURN = "episode_return_mean"


class _Strict(BaseModel):
    # Instances are re-validated inside a Sweep, so an error names its field
    # (search_space.lr: ...) even when the helper functions below built the value.
    model_config = ConfigDict(extra="forbid", frozen=True, revalidate_instances="always")


# ---------------------------------------------------------------------------------------------
# Search-space primitives (a small, Tune/Optuna-like vocabulary)
# ---------------------------------------------------------------------------------------------
class Choice(_Strict):
    """One of a finite list of values (categorical)."""

    kind: Literal["choice"] = Field("choice", description="the parameter's kind: 'choice'")
    values: list[Any] = Field(description="the values to choose from (non-empty, distinct)")

    @field_validator("values")
    @classmethod
    def _non_empty(cls, v: list[Any]) -> list[Any]:
        if not v:
            raise ValueError("choice() needs at least one value")
        if len({repr(x) for x in v}) != len(v):
            raise ValueError(f"choice() values must be distinct, got {v}")
        return v


class IntRange(_Strict):
    """An integer in [low, high] (both inclusive), optionally log-scaled."""

    kind: Literal["int"] = Field("int", description="the parameter's kind: 'int'")
    low: int = Field(description="smallest value (inclusive)")
    high: int = Field(description="largest value (inclusive)")
    log: bool = Field(False, description="sample on a log scale (needs low > 0)")

    @model_validator(mode="after")
    def _ordered(self) -> IntRange:
        if self.low > self.high:
            raise ValueError(f"empty range: low {self.low} > high {self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"log range needs low > 0, got {self.low}")
        return self


class Uniform(_Strict):
    """A float uniform in [low, high)."""

    kind: Literal["uniform"] = Field("uniform", description="the parameter's kind: 'uniform'")
    low: float = Field(description="lower end (inclusive)")
    high: float = Field(description="upper end (exclusive)")

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if not self.low < self.high:
            raise ValueError(f"empty or inverted range: low {self.low} >= high {self.high}")
        return self


class LogUniform(_Strict):
    """A float log-uniform in [low, high), both > 0 (learning rates)."""

    kind: Literal["loguniform"] = Field(
        "loguniform", description="the parameter's kind: 'loguniform'"
    )
    low: float = Field(description="lower end (inclusive, > 0)")
    high: float = Field(description="upper end (exclusive)")

    @model_validator(mode="after")
    def _ordered(self) -> LogUniform:
        if self.low <= 0:
            raise ValueError(f"loguniform needs low > 0, got {self.low}")
        if not self.low < self.high:
            raise ValueError(f"empty or inverted range: low {self.low} >= high {self.high}")
        return self


Param = Annotated[Choice | IntRange | Uniform | LogUniform, Field(discriminator="kind")]


def choice(values: list[Any]) -> Choice:
    """A categorical parameter: one of ``values``."""
    return Choice.model_construct(values=list(values))


def randint(low: int, high: int, *, log: bool = False) -> IntRange:
    """An integer parameter in ``[low, high]`` (inclusive)."""
    return IntRange.model_construct(low=low, high=high, log=log)


def uniform(low: float, high: float) -> Uniform:
    """A float parameter uniform in ``[low, high)``."""
    return Uniform.model_construct(low=low, high=high)


def loguniform(low: float, high: float) -> LogUniform:
    """A float parameter log-uniform in ``[low, high)``."""
    return LogUniform.model_construct(low=low, high=high)


# ---------------------------------------------------------------------------------------------
# Target, budget, search
# ---------------------------------------------------------------------------------------------
class Target(_Strict):
    """When a trial counts as converged: ``metric >= value`` at the end of an iteration.

    Give either an absolute ``value`` or ``fraction_of_optimal`` (× the env's exact optimal
    episode return; only for envs with an oracle, e.g. ContosoCabs-v0).
    """

    metric: str = Field(
        EVALUATION,
        description="metric compared with the target: 'evaluation' (default: the greedy "
        "policy's mean return over the sweep's fixed evaluation episodes, the same protocol "
        "for every algorithm), 'training' (the exploring training episodes' mean return), or "
        "an RLlib result key such as 'env_runners/episode_return_mean'",
    )
    value: float | None = Field(
        None,
        description="absolute threshold on the metric, in the metric's units (an "
        "episode return for 'evaluation' and 'training')",
    )
    fraction_of_optimal: float | None = Field(
        None,
        gt=0,
        le=1.5,
        json_schema_extra={"units": "fraction"},
        description="threshold as a fraction of the env's exact optimal return (envs with an "
        "oracle only)",
    )

    @model_validator(mode="after")
    def _one_of(self) -> Target:
        if (self.value is None) == (self.fraction_of_optimal is None):
            raise ValueError("give exactly one of value= or fraction_of_optimal=")
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError(f"value must be finite, got {self.value}")
        return self


class Budget(_Strict):
    """Per-trial budget: a trial that has not reached the target when either runs out is
    censored (its time-to-target is '> budget')."""

    time_s: float | None = Field(
        None,
        json_schema_extra={"units": "seconds"},
        description="wall-clock seconds per trial, start-up included",
    )
    env_steps: int | None = Field(
        None, json_schema_extra={"units": "env steps"}, description="env steps sampled per trial"
    )

    @model_validator(mode="after")
    def _positive(self) -> Budget:
        if self.time_s is None and self.env_steps is None:
            raise ValueError("give time_s and/or env_steps")
        if self.time_s is not None and not (self.time_s > 0 and math.isfinite(self.time_s)):
            raise ValueError(f"time_s must be a finite number > 0, got {self.time_s}")
        if self.env_steps is not None and not self.env_steps > 0:
            raise ValueError(f"env_steps must be > 0, got {self.env_steps}")
        return self

    def describe(self) -> str:
        """The budget in words: ``45 s``, ``200,000 env steps``, or both with "whichever runs
        out first"."""
        parts = ([f"{self.time_s:g} s"] if self.time_s is not None else []) + (
            [f"{self.env_steps:,} env steps"] if self.env_steps is not None else []
        )
        return " or ".join(parts) + (", whichever runs out first" if len(parts) > 1 else "")


class Evaluation(_Strict):
    """The evaluation protocol (:mod:`sweeps.engine.evaluation`): greedy episodes with fixed seeds,
    timed inside the trial.

    When: with neither ``every_s`` nor ``every_env_steps``, at the end of every training
    iteration (``min_time_s_per_iteration``, ~1 s by default), so a time-to-target is known to
    about an iteration. With either, on the protocol's own cadence, checked after every
    training step (RLlib) or env step (the reference): an evaluation falls due once
    ``every_s`` seconds have passed since the previous one ended, or ``every_env_steps``
    env steps were sampled since it, whichever comes first; the initial policy is also
    evaluated as soon as the algorithm is built, so the first crossing's resolution
    (``ttt_resolution_s``) is a gap between two evaluations too. Each evaluation costs the
    trial its seconds (``eval_time_s``): 8-110 ms on the default Contoso Cabs, by policy.
    """

    episodes: int = Field(
        20,
        ge=1,
        le=1000,
        json_schema_extra={"units": "episodes"},
        description="evaluation episodes per evaluation (run as one batch)",
    )
    seed: int = Field(
        10_000, ge=0, description="episode i of every evaluation starts from reset(seed=seed+i)"
    )
    every_s: float | None = Field(
        None,
        gt=0,
        le=86_400,
        json_schema_extra={"units": "seconds"},
        description="seconds of training between two evaluations (None: every iteration)",
    )
    every_env_steps: int | None = Field(
        None,
        ge=1,
        json_schema_extra={"units": "env steps"},
        description="env steps between two evaluations (None: every iteration)",
    )


class Capping(_Strict):
    """Adaptive capping of the time-to-target objective (Hutter, Hoos, Leyton-Brown and
    Stuetzle, "ParamILS: an automatic algorithm configuration framework", JAIR 36, 2009,
    section 5; SMAC's runtime minimisation).

    The *incumbent* is the fastest configuration so far: the smallest median TTT over the
    configurations all of whose recorded seeds reached the target (the reference excluded: it
    is not a candidate). A running trial whose elapsed wall-clock exceeds ``margin`` × the
    incumbent's TTT can no longer make its configuration the fastest by that margin; it is
    stopped and recorded as censored at that time with ``censor_reason = "capped"``
    (``"budget"`` when the budget ran out). Never capped: the baseline, the reference, and the
    trials matching one of ``protect`` (partial configurations, e.g. ``{"algorithm": "APEX"}``
    or ``{"num_env_runners": 8}``: the points a scaling curve needs).
    """

    margin: float = Field(
        2.0,
        ge=1.0,
        le=100.0,
        json_schema_extra={"units": "x the incumbent's TTT"},
        description="cap = margin × the incumbent's TTT (ParamILS's bound multiplier, 2 there)",
    )
    protect: list[dict[str, Any]] = Field(
        default_factory=list,
        description="partial configs never capped, e.g. [{'algorithm': 'APEX'}, {'num_env_runners': 8}]",
    )

    @field_validator("protect", mode="before")
    @classmethod
    def _current_names(cls, v: Any) -> Any:
        from sweeps.engine.algorithms.vocabulary import canonical_params

        if not isinstance(v, list):
            return v
        return [
            canonical_params(p, "search.capping.protect") if isinstance(p, dict) else p for p in v
        ]


class Stall(_Strict):
    """When a trial counts as stalled, not slow (docs/design.md, *stalled trial*).

    After every training iteration the trial checks two lifetime counters: env steps sampled
    and learner updates (the latter only once it has moved: no update during warm-up is
    normal). When either has not moved for ``iterations`` consecutive iterations spanning at
    least ``min_time_s`` seconds of wall-clock, the trial ends as an error with
    ``error_kind = "stalled"`` and a one-line reason naming the counter. A stalled trial is
    never censored evidence: its time says nothing about how fast its configuration learns.
    """

    iterations: int = Field(
        5,
        ge=2,
        le=10_000,
        json_schema_extra={"units": "training iterations"},
        description="consecutive training iterations in which a counter did not move",
    )
    min_time_s: float = Field(
        30.0,
        gt=0,
        le=86_400,
        json_schema_extra={"units": "seconds"},
        description="... spanning at least this many seconds since the counter last moved",
    )


#: The first seed of the confirmation stream when :class:`Confirm` names none: far above any
#: search's seeds, so that a confirmation never reuses a seed a choice was made on.
CONFIRM_FIRST_SEED = 1000


class Confirm(_Strict):
    """The confirmation stage: after the search, its ``top_k`` configurations (by the
    search's censored median TTT), the baseline and the reference run again on ``seeds`` fresh
    seeds, disjoint from the search's; the analysis then judges on these runs only
    (docs/design.md, *stage*). Never capped: a confirmation measures every seed to its end.

    With ``per_env_runners`` (on by default when the search varies ``num_env_runners``), the
    search's fastest configuration of each algorithm at each env runner count is confirmed
    too, so that the scaling curves, their fits, the plan and its check read fresh seeds at
    every count; ``per_params`` splits these *cells* further (e.g. ``["train_batch_size"]``,
    for the batch-size check). The search then measures every cell once before its sampler
    takes over (:func:`sweeps.engine.search.first_points`)."""

    top_k: int = Field(2, ge=1, description="search configurations confirmed (fastest first)")
    seeds: int = Field(5, ge=1, description="confirmation seeds per configuration")
    first_seed: int | None = Field(
        None,
        ge=0,
        description="first confirmation seed (default: 1000, or past the search's "
        "seeds when they reach it); the confirmation seeds never overlap the search's",
    )
    per_env_runners: bool | None = Field(
        None,
        description="also confirm the search's fastest configuration of each algorithm "
        "at each env runner count; None: when the search space varies num_env_runners",
    )
    per_params: list[str] = Field(
        default_factory=list,
        description="further parameters whose every searched value gets "
        "its own fastest configuration confirmed, per algorithm (and env runner count), e.g. "
        "['train_batch_size'] for the batch-size check",
    )


class Search(_Strict):
    """How configurations are sampled (Optuna) and repeated (seeds), and whether the search's
    best are confirmed on fresh seeds (``confirm``)."""

    sampler: Literal["tpe", "random", "grid"] = Field(
        "tpe", description="Optuna sampler: TPE (default), random, or grid (choice() params only)"
    )
    num_samples: int = Field(
        8, ge=1, description="sampled configurations (each runs once per seed); grid: max points"
    )
    seeds: int = Field(2, ge=1, description="seeds per sampled configuration (and the baseline)")
    first_seed: int = Field(
        0,
        ge=0,
        description="seeds are first_seed .. first_seed + seeds - 1 (e.g. a confirmation "
        "run on seeds other than those the defaults were tuned on)",
    )
    max_concurrent: int = Field(
        1, ge=1, description="trials running at once (1 keeps timings clean and TPE model-based)"
    )
    sampler_seed: int = Field(0, description="seed of the Optuna sampler")
    capping: Capping | None = Field(
        default_factory=Capping,
        description="adaptive capping of trials that can no longer be the fastest; None: off",
    )
    confirm: Confirm | None = Field(
        None, description="after the search, confirm its best configurations on fresh seeds"
    )
    warm_trials: bool = Field(
        True,
        description="a trial may reuse the env runner processes of the previous trial of "
        "its shape (algorithm, env runners and their resources) on its actor, everything they "
        "hold re-made from the new trial's config; its time-to-target is charged its shape's "
        "cold start-up. False (or --cold): every trial starts its processes",
    )
    cold_every: int | None = Field(
        None,
        ge=1,
        description="with warm trials: every cold_every-th trial of a shape on a "
        "trial actor starts cold anyway, so that the cold start-up charged to the warm ones is "
        "the median of several measured in this run, not one; None: only the first is cold",
    )

    @property
    def search_seeds(self) -> list[int]:
        """The search stage's seeds."""
        return list(range(self.first_seed, self.first_seed + self.seeds))

    @property
    def confirm_seeds(self) -> list[int]:
        """The confirmation stage's seeds (empty without ``confirm``)."""
        if self.confirm is None:
            return []
        first = self.confirm.first_seed
        if first is None:
            first = max(CONFIRM_FIRST_SEED, self.first_seed + self.seeds)
        return list(range(first, first + self.confirm.seeds))

    @model_validator(mode="after")
    def _disjoint_seeds(self) -> Search:
        overlap = sorted(set(self.search_seeds) & set(self.confirm_seeds))
        if overlap:
            raise ValueError(
                f"confirm.first_seed: the confirmation seeds {self.confirm_seeds[0]}.."
                f"{self.confirm_seeds[-1]} overlap the search's {self.search_seeds[0]}.."
                f"{self.search_seeds[-1]} (a choice is never confirmed on the seeds it was "
                "made on)"
            )
        return self


# ---------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class Sweep(_Strict):
    """A declarative scaling study: algorithms × search space × seeds on one env.

    Parameter names are the vocabulary of :mod:`sweeps.engine.algorithms` (``num_env_runners`` = RLlib
    env runners, ``train_batch_size``, ``lr``, ...). Validation against the algorithms and the
    env happens in :func:`sweeps.engine.sweep_file.validate_sweep`, which names the field that is wrong.
    """

    name: str = Field(description="study name; results go to <results_dir>/<name>/<run_id>/")
    env: str = Field(
        description="a registered gymnasium id or RLlib env name "
        "('ContosoCabs-v0'), 'module:EnvId' (importing module registers EnvId) "
        "or 'module:Factory' (called with env_config); a module beside the sweep "
        "file ships to every process of every trial"
    )
    env_config: dict[str, Any] = Field(default_factory=dict, description="passed to the env")
    code_dirs: list[str] = Field(
        default_factory=list,
        description="folders (relative to the sweep file) whose modules and packages the env "
        "needs besides its own module: searched for it and shipped with it to every node",
    )
    algorithms: list[str] = Field(description="algorithms searched over, e.g. ['DQN', 'APEX']")
    search_space: dict[str, Param] = Field(
        default_factory=dict,
        description="parameters sampled for every algorithm, by RLlib's names: name -> "
        "choice([...]), randint(low, high), uniform(low, high) or loguniform(low, high) "
        "(YAML: {choice: [...]}, {loguniform: [low, high]}, ...)",
    )
    per_algorithm: dict[str, dict[str, Param]] = Field(
        default_factory=dict,
        description="extra parameters sampled only for one algorithm: algorithm -> "
        "{name -> parameter} (they win over search_space)",
    )
    fixed: dict[str, Any] = Field(
        default_factory=dict, description="parameters set for every trial"
    )
    per_algorithm_fixed: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="parameters set for every trial of one algorithm"
    )
    target: Target = Field(description="when a trial counts as converged (metric >= value)")
    budget: Budget = Field(
        description="per trial: a trial out of budget is censored (its TTT is '> budget')"
    )
    search: Search = Field(
        default_factory=Search,
        description="how configurations are sampled and repeated, and the confirmation stage",
    )
    baseline: dict[str, Any] | None = Field(
        default_factory=lambda: {"algorithm": "DQN", "num_env_runners": 1},
        description="configuration speedups are relative to (run first, with every seed); "
        "parameters it does not name take the fixed values, then the algorithm's defaults",
    )
    reference: dict[str, Any] | None = Field(
        None,
        description="single-process reference implementation run on the same env, target, "
        "evaluation protocol, budget and seeds (first, with every seed): {'algorithm': "
        "'SB3-DQN', 'SB3-PPO' or 'SB3-SAC' (Box actions), <Stable-Baselines3 parameters>}; absolute speedups are "
        "relative to it",
    )
    evaluation: Evaluation = Field(
        default_factory=Evaluation, description="the evaluation protocol of target 'evaluation'"
    )
    results_dir: str = Field("results", description="root folder for results")
    stall: Stall | None = Field(
        default_factory=Stall,
        description="when a trial whose env steps or learner updates stopped moving ends as "
        "'stalled' (an error, never censored evidence); None: never",
    )
    allow_oversubscription: bool = Field(
        False,
        description="run trials that ask for more CPUs than the cluster has (their CPU "
        "requests are scaled down to fit, and their timings are flagged 'oversubscribed')",
    )
    placement_strategy: Literal["PACK", "SPREAD", "STRICT_PACK"] = Field(
        "PACK",
        description="how Ray places a trial's bundles (driver, env runners, learners) on the "
        "nodes: PACK (RLlib's default: as few nodes as possible, over several when one is too "
        "small), SPREAD (over as many nodes as possible) or STRICT_PACK (one node)",
    )

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        """RLlib's old parameter names (``num_workers``, ``num_envs_per_worker``) → the current
        ones, with a one-line notice (:func:`sweeps.engine.algorithms.vocabulary.canonical_params`)."""
        if not isinstance(data, dict):
            return data
        from sweeps.engine.algorithms.vocabulary import canonical_params

        data = dict(data)
        for section in ("search_space", "fixed", "baseline"):
            if isinstance(data.get(section), dict):
                data[section] = canonical_params(data[section], section)
        for section in ("per_algorithm", "per_algorithm_fixed"):
            if isinstance(data.get(section), dict):
                data[section] = {
                    a: canonical_params(p, f"{section}.{a}") if isinstance(p, dict) else p
                    for a, p in data[section].items()
                }
        return data

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"name {v!r} must be letters, digits, '_', '-', '.'")
        return v

    @field_validator("algorithms")
    @classmethod
    def _algorithms_ok(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("list at least one algorithm")
        if len(set(v)) != len(v):
            raise ValueError(f"algorithms listed twice: {v}")
        return v

    @model_validator(mode="after")
    def _per_algorithm_known(self) -> Sweep:
        for section in ("per_algorithm", "per_algorithm_fixed"):
            for algo in getattr(self, section):
                if algo not in self.algorithms:
                    raise ValueError(
                        f"{section} names {algo!r}, which is not in algorithms {self.algorithms}"
                    )
        if self.baseline is not None and "algorithm" not in self.baseline:
            raise ValueError("baseline must name its 'algorithm'")
        if self.reference is not None and "algorithm" not in self.reference:
            raise ValueError("reference must name its 'algorithm' (e.g. 'SB3-DQN')")
        return self

    def params_for(self, algorithm: str) -> dict[str, Param]:
        """Searched parameters of one algorithm: shared ones, then its own (which win)."""
        return {**self.search_space, **self.per_algorithm.get(algorithm, {})}

    def fixed_for(self, algorithm: str) -> dict[str, Any]:
        """Fixed parameters of one algorithm: shared ones, then its own (which win)."""
        return {**self.fixed, **self.per_algorithm_fixed.get(algorithm, {})}

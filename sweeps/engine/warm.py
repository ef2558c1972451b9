"""Warm trials: a trial reuses the env runner processes of the previous trial on its actor.

Most of an RLlib trial's start-up is its env runners' processes starting and importing RLlib
and torch (``benchmarks/bench_startup.py``: ~4.3 of a ~4.4 s ``build_algo()`` on 2 cores,
41 s for 16 env runners). Tune already reuses a trial's actor (``reuse_actors=True``) when
the next trial asks for the same resources, but RLlib's Algorithm cannot reset itself
(ray-project/ray#38136), so every trial started its env runners again.

Here a finished trial *parks* its env runner actors in its process instead of killing them
(:func:`park_or_stop`), and the next trial on that actor, when its *shape*
(:func:`shape_key`) is the same, builds its Algorithm as a cold trial does except that each
env runner's actor is the parked one, re-initialised in place: ``EnvRunner.stop()`` (closing
its envs, async sub-env processes included) and then the class's ``__init__`` with the new
trial's config (:func:`build`). Everything a trial learns or samples is therefore built anew
by RLlib's own constructors: RLModule (seeded from the trial's config, then given the
learner's weights), envs (re-made and seeded), connectors and their filters, episodes,
metrics; the learner, its optimizer, the replay buffer and the driver's state belong to the
new Algorithm. Only the processes and their imports are kept.

Time-to-target stays what a user pays on a fresh cluster: a warm trial's clock is charged the
cold start-up its shape paid on this actor (``cold_startup_s``: the median of its cold
start-ups here, several with ``Search(cold_every=k)``, which makes every k-th trial of a shape
cold), so its recorded wall times are those of a cold trial with that start-up
(docs/design.md, *warm trial*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Start kinds recorded per trial (``start`` column of trials.parquet).
COLD, WARM = "cold", "warm"


@dataclass
class _Parked:
    key: tuple
    handles: list[Any]  # env runner actors, by worker index 1..N
    cold_startup_s: float


_parked: _Parked | None = None


class ShapeStarts:
    """Per shape (:func:`shape_key`), the cold start-ups measured in this process and the
    trials since the last cold one: when a trial is due cold (``cold_every``) and what a warm
    one is charged (their median)."""

    def __init__(self) -> None:
        self.cold: dict[tuple, list[float]] = {}
        self.since_cold: dict[tuple, int] = {}

    def cold_due(self, key: tuple, cold_every: int | None) -> bool:
        """True when this shape's next trial must be cold: ``cold_every`` trials (the cold
        one included) since its last cold one."""
        return cold_every is not None and self.since_cold.get(key, 0) >= cold_every

    def started(self, key: tuple, kind: str, startup_s: float) -> float:
        """Record a trial's start; returns the shape's charge (seconds): the median of its
        cold start-ups so far."""
        import statistics

        if kind == COLD:
            self.cold.setdefault(key, []).append(float(startup_s))
            self.since_cold[key] = 1
        else:
            self.since_cold[key] = self.since_cold.get(key, 0) + 1
        return float(statistics.median(self.cold.get(key) or [startup_s]))


_starts = ShapeStarts()


def shape_key(algo_config) -> tuple:
    """What must be equal for a trial to reuse the parked env runners: the algorithm and env
    runner classes, the number of env runners and what each asks Ray for (CPUs, GPUs,
    custom resources, restarts). Everything else (env, envs per env runner, vectorize mode,
    model, hyperparameters, seed) is given to the re-initialised env runners."""
    restarts = (
        algo_config.max_num_env_runner_restarts if algo_config.restart_failed_env_runners else 0
    )
    return (
        algo_config.algo_class.__qualname__,
        algo_config.env_runner_cls,
        int(algo_config.num_env_runners),
        float(algo_config.num_cpus_per_env_runner),
        float(algo_config.num_gpus_per_env_runner),
        tuple(sorted((algo_config.custom_resources_per_env_runner or {}).items())),
        restarts,
    )


def _reinit(runner, **kwargs: Any) -> bool:
    """Run in an env runner's process: close its envs, then construct it again in place."""
    try:
        runner.stop()
    except Exception:  # an env that fails to close must not keep the trial cold
        pass
    type(runner).__init__(runner, **kwargs)
    try:  # the process's peak RSS is the new trial's own from here (Linux: VmHWM reset)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return True


def build(
    algo_config, enabled: bool = True, cold_every: int | None = None
) -> tuple[Any, str, float | None]:
    """Build the trial's Algorithm, warm when the parked env runners fit its shape.

    Returns:
        ``(algo, start, cold_startup_s)``: ``start`` is ``"cold"`` or ``"warm"``;
        ``cold_startup_s`` (seconds) is the cold start-up a warm trial is charged, None when
        cold.

    Raises:
        Whatever ``build_algo()`` raises. A parked env runner that fails to re-initialise
        makes the trial cold (the parked actors are killed), not an error.
    """
    import ray
    from ray.rllib.env.env_runner_group import EnvRunnerGroup

    global _parked
    parked, _parked = _parked, None
    key = shape_key(algo_config)
    if parked is not None and (
        not enabled or parked.key != key or not parked.handles or _starts.cold_due(key, cold_every)
    ):
        _release(parked)
        parked = None
    if parked is None:
        return algo_config.build_algo(), COLD, None

    refs = []
    original = EnvRunnerGroup._make_worker

    def make_worker(
        self,
        *,
        env_creator,
        validate_env,
        worker_index,
        num_workers,
        recreated_worker=False,
        config,
        spaces=None,
    ):
        if worker_index == 0 or recreated_worker or worker_index > len(parked.handles):
            return original(
                self,
                env_creator=env_creator,
                validate_env=validate_env,
                worker_index=worker_index,
                num_workers=num_workers,
                recreated_worker=recreated_worker,
                config=config,
                spaces=spaces,
            )
        # the keyword arguments RLlib's own _make_worker gives a new env runner (Ray 2.60)
        kwargs = dict(
            env_creator=env_creator,
            validate_env=validate_env,
            default_policy_class=self._policy_class,
            config=config,
            worker_index=worker_index,
            num_workers=num_workers,
            recreated_worker=recreated_worker,
            log_dir=self._logdir,
            spaces=spaces,
            dataset_shards=self._ds_shards,
            tune_trial_id=self._tune_trial_id,
        )
        handle = parked.handles[worker_index - 1]
        refs.append(handle.__ray_call__.remote(_reinit, **kwargs))
        return handle

    EnvRunnerGroup._make_worker = make_worker
    try:
        algo = algo_config.build_algo()
    except Exception:
        _release(parked)
        raise
    finally:
        EnvRunnerGroup._make_worker = original
    try:
        ray.get(refs)
    except Exception as e:  # a parked process that cannot be re-initialised: start cold
        import logging

        logging.getLogger(__name__).warning(
            "warm trial: an env runner could not be re-initialised, starting cold: %s", e
        )
        algo.stop()
        _release(parked)
        return algo_config.build_algo(), COLD, None
    # the new group owns the handles; parked.handles keeps them alive until then
    _held[id(algo)] = parked
    return algo, WARM, parked.cold_startup_s


# parked records of the Algorithms built warm, until park_or_stop (the cold start-up they
# are charged travels on)
_held: dict[int, _Parked] = {}


def park_or_stop(algo, algo_config, startup_s: float, enabled: bool = True) -> None:
    """End a trial's Algorithm: park its env runner actors for the next trial of the same
    shape on this actor (``enabled`` and every env runner healthy), else stop it all.

    ``startup_s``: this trial's start-up (seconds); a cold one's joins its shape's cold
    start-ups, whose median (:class:`ShapeStarts`) a later warm trial of the shape is charged.
    """
    global _parked
    previous = _held.pop(id(algo), None)
    key = shape_key(algo_config)
    charge = _starts.started(key, WARM if previous else COLD, startup_s)
    group = getattr(algo, "env_runner_group", None)
    manager = getattr(group, "_worker_manager", None)
    handles = []
    if enabled and manager is not None and algo_config.num_env_runners > 0:
        ids = sorted(manager.actor_ids())
        if len(ids) == algo_config.num_env_runners and all(
            manager.is_actor_healthy(i) for i in ids
        ):
            handles = [manager._actors[i] for i in ids]
            # detach: Algorithm.stop() kills the actors its group still holds
            manager._actors.clear()
            manager._remote_actor_states.clear()
            manager._in_flight_req_to_actor_id.clear()
    try:
        algo.stop()
    finally:
        if handles:
            _parked = _Parked(key, handles, charge)


def _release(parked: _Parked) -> None:
    import ray

    for h in parked.handles:
        try:
            ray.kill(h)
        except Exception:
            pass


def release_parked() -> None:
    """Kill the parked env runners of this process, if any (a trial that is not an RLlib
    trial, or the end of a sweep)."""
    global _parked
    parked, _parked = _parked, None
    if parked is not None:
        _release(parked)


def clock_start(build_started: float, build_ended: float, cold_startup_s: float | None) -> float:
    """The ``time.perf_counter()`` value a trial's wall times count from: when its build
    started (cold), or ``cold_startup_s`` before its build ended (warm), so that a warm trial
    is charged its shape's cold start-up instead of its own."""
    if cold_startup_s is None:
        return build_started
    return build_ended - cold_startup_s

"""Warm trials: a trial reuses env runner processes an earlier trial on its actor parked.

Most of an RLlib trial's start-up is its env runners' processes starting and importing RLlib
and torch (``benchmarks/bench_startup.py``: ~4.3 of a ~4.4 s ``build_algo()`` on 2 cores,
41 s for 16 env runners). Tune already reuses a trial's actor (``reuse_actors=True``) when
the next trial asks for the same resources, but RLlib's Algorithm cannot reset itself
(ray-project/ray#38136), so every trial started its env runners again.

Here a finished trial *parks* its env runner actors in its process instead of killing them
(:func:`park_or_stop`), and a later trial on that actor builds its Algorithm as a cold trial
does except that each env runner's actor is a parked one, re-initialised in place:
``EnvRunner.stop()`` (closing its envs, async sub-env processes included) and then the
class's ``__init__`` with the new trial's config (:func:`build`). Everything a trial learns
or samples is therefore built anew by RLlib's own constructors: RLModule (seeded from the
trial's config, then given the learner's weights), envs (re-made and seeded), connectors and
their filters, episodes, metrics; the learner, its optimizer, the replay buffer and the
driver's state belong to the new Algorithm. Only the processes and their imports are kept.

The parked processes form one pool per actor: any trial whose env runners ask Ray for the
same resources (:func:`slot_key`: env runner family, CPUs, GPUs, custom resources, restarts)
may use them, whatever its algorithm or env runner count: it takes as many as it needs, the
others stay parked, and when fewer are parked than it needs it starts the missing ones (still
a warm trial: its clock is charged its shape's cold start-up). RLlib's
``SingleAgentEnvRunner`` and the suite's subclasses that declare ``WARM_SWAPPABLE`` (DQN's,
APEX's and Gorila's env runners) are one family: a parked process of one is re-initialised
as the class the new trial asks for (:func:`_reinit`), so APEX's processes serve IMPALA or
PPO and back. That is sound because RLlib 2.60 sends every call of its env runner group
through ``FaultAwareApply.apply``, which looks methods up on the instance, and a swappable
class overrides only methods its own algorithm calls that way. A sequential sweep gives
every trial the same placement group (:func:`sweeps.engine.placement.shared_request`), so
Tune keeps one actor, and its pool, from the search's first trial to the confirmation's last.

Time-to-target stays what a user pays on a fresh cluster. A trial is warm only once its
*shape* (:func:`shape_key`: the algorithm and its env runner count besides the slot) has had
a cold trial on this actor; a warm trial's clock is charged that shape's cold start-up
(``cold_startup_s``: the median of its cold start-ups here, several with
``Search(cold_every=k)``, which makes every k-th trial of a shape cold), so its recorded wall
times are those of a cold trial with that start-up (docs/design.md, *warm trial*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Start kinds recorded per trial (``start`` column of trials.parquet).
COLD, WARM = "cold", "warm"


@dataclass
class _Parked:
    slot: tuple  # slot_key of every parked env runner
    handles: list[Any]  # env runner actors; a trial takes them in order as worker 1..N


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

    def charge(self, key: tuple) -> float | None:
        """The cold start-up (seconds) a warm trial of this shape is charged: the median of
        its cold start-ups so far, None when it has had none (its next trial must be cold)."""
        import statistics

        cold = self.cold.get(key)
        return float(statistics.median(cold)) if cold else None


_starts = ShapeStarts()


def env_runner_class(algo_config) -> type | None:
    """The env runner class RLlib's ``EnvRunnerGroup`` builds for ``algo_config``: its
    ``env_runner_cls``, else RLlib 2.60's default (``SingleAgentEnvRunner`` for a single-agent
    env on the new API stack without ``output``), else None (another default: its own
    family)."""
    cls = algo_config.env_runner_cls
    if cls is not None:
        return cls
    if (
        algo_config.enable_env_runner_and_connector_v2
        and not algo_config.output
        and not algo_config.is_multi_agent
    ):
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

        return SingleAgentEnvRunner
    return None


def family(cls: type | None) -> type | None:
    """The env runner class whose parked processes ``cls`` may take: ``SingleAgentEnvRunner``
    for it and for a subclass every class of whose lineage below it declares
    ``WARM_SWAPPABLE = True`` in its own body (a subclass of theirs that does not is its own
    family: it may override what RLlib calls on the actor handle), else ``cls`` itself."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    if cls is None or not isinstance(cls, type) or not issubclass(cls, SingleAgentEnvRunner):
        return cls
    lineage = cls.__mro__[: cls.__mro__.index(SingleAgentEnvRunner)]
    if all(vars(c).get("WARM_SWAPPABLE") is True for c in lineage):
        return SingleAgentEnvRunner
    return cls


def slot_key(algo_config) -> tuple:
    """What must be equal for a trial to run on a parked env runner process: the env runner
    :func:`family` and what each env runner asks Ray for (CPUs, GPUs, custom resources,
    restarts). Everything else (algorithm, env runner class within the family, env, envs per
    env runner, vectorize mode, model, hyperparameters, seed) is given to the re-initialised
    env runner."""
    restarts = (
        algo_config.max_num_env_runner_restarts if algo_config.restart_failed_env_runners else 0
    )
    return (
        family(env_runner_class(algo_config)),
        float(algo_config.num_cpus_per_env_runner),
        float(algo_config.num_gpus_per_env_runner),
        tuple(sorted((algo_config.custom_resources_per_env_runner or {}).items())),
        restarts,
    )


def shape_key(algo_config) -> tuple:
    """A trial's shape, whose cold start-up its warm trials are charged: the algorithm class,
    its number of env runners and of learner processes it starts itself (RLlib's learner
    actors, ``num_learners``, and GORILA's; both started anew by every trial), besides its env
    runners' :func:`slot_key`."""
    return (
        algo_config.algo_class.__qualname__,
        int(algo_config.num_env_runners),
        int(algo_config.num_learners or 0),
        int(getattr(algo_config, "gorila_num_learners", 0)),
        *slot_key(algo_config),
    )


def _reinit(runner, cls: type, **kwargs: Any) -> bool:
    """Run in an env runner's process: close its envs, then construct it again in place as
    ``cls`` (its own class, or another of its :func:`family`: then the instance's attributes
    are dropped first, so it holds only what ``cls.__init__`` builds)."""
    try:
        runner.stop()
    except Exception:  # an env that fails to close must not keep the trial cold
        pass
    if type(runner) is not cls:
        runner.__dict__.clear()
        runner.__class__ = cls
    cls.__init__(runner, **kwargs)
    try:  # the process's peak RSS is the new trial's own from here (Linux: VmHWM reset)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return True


def prepare(algo_config, enabled: bool = True, cold_every: int | None = None) -> str:
    """Decide whether the trial of ``algo_config`` starts warm or cold (:func:`build`'s
    rule), and for a cold one kill the parked env runners now, waiting until their processes
    have exited, so that their teardown stays out of the cold start-up it measures. Call it
    before the trial's clock starts; :func:`build` calls it too (then a no-op).

    Returns:
        ``"warm"`` or ``"cold"``.
    """
    global _parked
    if algo_config.num_env_runners < 1:
        return COLD
    key = shape_key(algo_config)
    if _parked is not None and (
        not enabled
        or _parked.slot != slot_key(algo_config)
        or _starts.charge(key) is None
        or _starts.cold_due(key, cold_every)
    ):
        parked, _parked = _parked, None
        _release(parked, wait=True)
    return COLD if _parked is None else WARM


def build(
    algo_config, enabled: bool = True, cold_every: int | None = None
) -> tuple[Any, str, float | None]:
    """Build the trial's Algorithm: warm when this actor has parked env runners of its
    :func:`slot_key` and its shape has had a cold trial here (and ``cold_every`` does not
    make this one cold); it takes up to N of them as workers 1..N and starts the rest. A cold
    trial first kills the parked ones, so that it starts every env runner afresh.

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
    prepare(algo_config, enabled, cold_every)
    parked, _parked = _parked, None
    if parked is None or algo_config.num_env_runners < 1:
        _parked = parked  # a trial without env runners leaves the pool as it is
        return algo_config.build_algo(), COLD, None
    charge = _starts.charge(shape_key(algo_config))

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
        refs.append(handle.__ray_call__.remote(_reinit, self.env_runner_cls, **kwargs))
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
    # the new group owns the handles it took; the rest stay parked for later trials
    _held[id(algo)] = _Parked(parked.slot, parked.handles[algo_config.num_env_runners :])
    return algo, WARM, charge


# per Algorithm built warm, until park_or_stop: the parked env runners it did not take
_held: dict[int, _Parked] = {}


def park_or_stop(
    algo, algo_config, startup_s: float, enabled: bool = True, kill: bool = False
) -> None:
    """End a trial's Algorithm: park its env runner actors, with those of the pool it did not
    take, for later trials on this actor (``enabled`` and every env runner healthy), else
    stop it all.

    ``startup_s``: this trial's start-up (seconds); a cold one's joins its shape's cold
    start-ups, whose median (:class:`ShapeStarts`) a later warm trial of the shape is charged.
    ``kill``: the trial's env runners may be blocked in an env step (a stalled trial): kill
    their processes instead of stopping them, which would wait for the step to return, and
    park none.
    """
    global _parked
    rest = _held.pop(id(algo), None)
    _starts.started(shape_key(algo_config), COLD if rest is None else WARM, startup_s)
    group = getattr(algo, "env_runner_group", None)
    manager = getattr(group, "_worker_manager", None)
    handles = []
    if kill and manager is not None:
        import ray

        for actor in list(manager._actors.values()):
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass
        # detach: Algorithm.stop() would wait on each killed actor's stop() call
        manager._actors.clear()
        manager._remote_actor_states.clear()
        manager._in_flight_req_to_actor_id.clear()
    elif enabled and manager is not None and algo_config.num_env_runners > 0:
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
            _parked = _Parked(slot_key(algo_config), handles + (rest.handles if rest else []))
        elif rest is not None:
            _release(rest)


def _release(parked: _Parked, wait: bool = False) -> None:
    """Kill the parked env runners; ``wait``: first close their envs (async sub-env
    processes included), then wait, at most :data:`RELEASE_WAIT_S`, until the processes on
    this node have exited."""
    import os
    import time

    import ray

    pids = []
    if wait:
        me = ray.util.get_node_ip_address()

        def close(runner):
            try:
                runner.stop()
            except Exception:  # an env that fails to close is killed with its process
                pass
            return ray.util.get_node_ip_address(), os.getpid()

        try:
            where = ray.get(
                [h.__ray_call__.remote(close) for h in parked.handles], timeout=RELEASE_WAIT_S
            )
            pids = [pid for ip, pid in where if ip == me]
        except Exception:  # a runner that cannot answer is killed all the same
            pass
    for h in parked.handles:
        try:
            ray.kill(h)
        except Exception:
            pass
    deadline = time.monotonic() + RELEASE_WAIT_S
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if _alive(p)]
        if pids:
            time.sleep(0.05)


#: Seconds a cold trial waits, before its clock starts, for the parked processes it kills.
RELEASE_WAIT_S = 30.0


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent, the raylet) has exited
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def release_parked() -> None:
    """Kill the parked env runners of this process, if any (a trial that is not an RLlib
    trial, or the end of a sweep)."""
    global _parked
    parked, _parked = _parked, None
    if parked is not None:
        _release(parked)


def reset() -> None:
    """Kill the parked env runners and forget the cold start-ups measured in this process:
    the next trial of every shape is cold."""
    global _starts
    release_parked()
    _held.clear()
    _starts = ShapeStarts()


def clock_start(build_started: float, build_ended: float, cold_startup_s: float | None) -> float:
    """The ``time.perf_counter()`` value a trial's wall times count from: when its build
    started (cold), or ``cold_startup_s`` before its build ended (warm), so that a warm trial
    is charged its shape's cold start-up instead of its own."""
    if cold_startup_s is None:
        return build_started
    return build_ended - cold_startup_s

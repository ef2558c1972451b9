"""The evaluation protocol: one greedy-policy measurement, identical for every algorithm.

Comparing algorithms on different metrics is a defect (docs/design.md, *evaluation protocol*). The
target metric ``"evaluation"`` is therefore measured here, by our code, the same way for RLlib's
DQN, APEX, IMPALA, PPO and APPO and for the single-process reference (:mod:`sweeps.engine.reference`):

1. **what**: the mean undiscounted episode return of the *current* policy acting greedily
   (argmax Q for DQN/APEX; the action distribution's mode for policy-gradient methods), no
   exploration;
2. **on which episodes**: ``episodes`` evaluation envs of their own (never the training envs),
   episode ``i`` started with ``reset(seed=seed + i)``, so every evaluation of every trial and
   every algorithm starts from the same states;
3. **when**: at the end of every training iteration (an iteration lasts at least
   ``min_time_s_per_iteration`` seconds, 1 s by default, for RLlib and the reference alike),
   or on the protocol's own cadence (``Evaluation(every_s=..., every_env_steps=...)``,
   :class:`Cadence`), with the initial policy evaluated as soon as the algorithm is built;
4. **whose time**: it runs in the trial's own process, inside the timed region (as MLPerf counts
   its evaluations); its seconds are also summed into ``eval_time_s``.

The episodes run as one batch: one forward pass of the policy per step for all episodes
still running, on the trial's CPU. On the default Contoso Cabs (20 episodes of ~40 rides
each; at most 720 one-hour steps) one evaluation of an MLP policy takes ~10-40 ms; in the
published study it was 0.9 % of a trial's wall-clock (docs/cabs_scaling.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["Cadence", "GreedyEvaluator", "evaluation_env", "rllib_greedy_policy", "trial_evaluator"]

#: A batched greedy policy: observations of shape (B, *obs_shape) -> actions of shape (B,).
Policy = Callable[[np.ndarray], np.ndarray]


def evaluation_env(env_id: str, env_config: Mapping[str, Any] | None = None):
    """One env for the evaluation protocol: :func:`envs.make_env` without the step latency
    (:mod:`envs.latency`: the protocol measures the policy, not the simulator)."""
    import envs

    return envs.make_env(env_id, env_config, with_latency=False)


class GreedyEvaluator:
    """Runs the evaluation protocol (module docstring) for one trial.

    Args:
        env_id, env_config: the sweep's env, built with :func:`evaluation_env`.
        episodes: evaluation episodes per evaluation (≥ 1).
        seed: episode ``i`` starts from ``reset(seed=seed + i)``.
        max_steps: safety cap on steps per episode (an episode still running is cut there and
            counted with the return it has).

    Attributes:
        total_time_s: seconds spent in :meth:`evaluate` so far (the trial's ``eval_time_s``).
        evaluations: how many evaluations ran.
        restarts: env faults recovered so far (:mod:`sweeps.engine.env_faults`): an episode
            whose env raised is re-run from its own seed on a re-made env, so every returned
            mean is over whole episodes.
    """

    def __init__(
        self,
        env_id: str,
        env_config: Mapping[str, Any] | None,
        *,
        episodes: int,
        seed: int,
        max_steps: int = 1_000_000,
    ):
        if episodes < 1:
            raise ValueError(f"evaluation episodes must be >= 1, got {episodes}")
        from sweeps.engine.env_faults import RecoveringEnv

        self.envs = [
            RecoveringEnv(lambda: evaluation_env(env_id, env_config)) for _ in range(episodes)
        ]
        self.seed = int(seed)
        self.max_steps = int(max_steps)
        self.total_time_s = 0.0
        self.evaluations = 0

    @property
    def restarts(self) -> int:
        """Env faults recovered since the evaluator was built or handed to a trial."""
        return sum(env.restarts for env in self.envs)

    @restarts.setter
    def restarts(self, value: int) -> None:  # 0: a new trial's count
        for env in self.envs:
            env.restarts = value

    @property
    def recover(self) -> bool:
        """False: an env's error ends the evaluation (the trial's ``recover_env_faults``)."""
        return self.envs[0].recover

    @recover.setter
    def recover(self, value: bool) -> None:
        for env in self.envs:
            env.recover = bool(value)

    @property
    def step_timeout_s(self) -> float | None:
        """Seconds an evaluation env's step or reset may take before it is a fault (the
        trial's ``env_step_timeout_s``; None: no limit)."""
        return self.envs[0].step_timeout_s

    @step_timeout_s.setter
    def step_timeout_s(self, value: float | None) -> None:
        for env in self.envs:
            env.step_timeout_s = None if value is None else float(value)

    @property
    def observation_space(self):
        return self.envs[0].observation_space

    @property
    def action_space(self):
        return self.envs[0].action_space

    def evaluate(self, policy: Policy) -> float:
        """Mean episode return of ``policy`` over the fixed evaluation episodes.

        Args:
            policy: batched greedy policy, (B, *obs_shape) -> (B,) actions.

        Returns:
            The mean undiscounted return (env units, e.g. dollars for Contoso Cabs).
        """
        t0 = time.perf_counter()
        n = len(self.envs)
        obs = [env.reset(seed=self.seed + i)[0] for i, env in enumerate(self.envs)]
        returns = np.zeros(n)
        running = list(range(n))
        steps = 0
        while running and steps < self.max_steps:
            actions = np.asarray(policy(np.stack([obs[i] for i in running])))
            still = []
            for i, a in zip(
                running, actions.reshape(len(running), *actions.shape[1:]), strict=True
            ):
                o, r, terminated, truncated, info = self.envs[i].step(
                    a.item() if a.ndim == 0 else a
                )
                if "env_fault" in info:  # the env was re-made: episode i again, from its seed
                    self._check_faults()
                    obs[i], returns[i] = self.envs[i].reset(seed=self.seed + i)[0], 0.0
                    still.append(i)
                    continue
                returns[i] += float(r)
                obs[i] = o
                if not (terminated or truncated):
                    still.append(i)
            running = still
            steps += 1
        self.total_time_s += time.perf_counter() - t0
        self.evaluations += 1
        return float(returns.mean())

    def _check_faults(self) -> None:
        """An evaluation whose episodes keep faulting ends the trial (``env_faults``)."""
        from sweeps.engine.env_faults import EnvFaultLimit

        if self.restarts > 10 * len(self.envs) * max(1, self.evaluations + 1):
            raise EnvFaultLimit(
                f"evaluation env faults: {self.restarts} restarts in "
                f"{self.evaluations + 1} evaluations"
            )

    def close(self) -> None:
        for env in self.envs:
            env.close()


class Cadence:
    """When the protocol's next evaluation falls due (:class:`sweeps.engine.sweep_spec.Evaluation`).

    An evaluation is due once ``every_s`` seconds of training have passed since the previous
    one ended, or ``every_env_steps`` env steps were sampled since it, whichever comes first:
    an evaluation that takes longer than ``every_s`` (an untrained greedy policy may play
    every episode to its time limit) cannot starve the training. With neither, :attr:`active`
    is False and the caller evaluates once per training iteration.

    Args:
        every_s: seconds of training between two evaluations, or None.
        every_env_steps: env steps between two evaluations, or None.
    """

    def __init__(self, every_s: float | None = None, every_env_steps: int | None = None):
        self.every_s = float(every_s) if every_s is not None else None
        self.every_env_steps = int(every_env_steps) if every_env_steps is not None else None
        self._wall, self._steps = 0.0, 0

    @property
    def active(self) -> bool:
        return self.every_s is not None or self.every_env_steps is not None

    def due(self, wall_s: float, env_steps: int | None = None) -> bool:
        """True when an evaluation is due at ``wall_s`` seconds since the trial started and
        ``env_steps`` lifetime env steps (only read with ``every_env_steps``); always True
        when not :attr:`active`."""
        if not self.active:
            return True
        if self.every_s is not None and wall_s - self._wall >= self.every_s:
            return True
        return (
            self.every_env_steps is not None
            and env_steps is not None
            and env_steps - self._steps >= self.every_env_steps
        )

    def ended(self, wall_s: float, env_steps: int) -> None:
        """An evaluation ended now (``wall_s``, ``env_steps`` as in :meth:`due`)."""
        self._wall, self._steps = float(wall_s), int(env_steps)


_process_evaluator: tuple[tuple, GreedyEvaluator] | None = None


def trial_evaluator(
    env_id: str, env_config: Mapping[str, Any] | None, *, episodes: int, seed: int
) -> GreedyEvaluator:
    """The evaluator of a trial, shared by the trials that run one after another in a process.

    Tune reuses a trial's process for the next trial with the same resource request
    (:func:`sweeps.engine.trainable.begin_trial_in_process`); building the evaluation envs again for
    each costs ~0.15-0.25 s between trials on the default Cabs study (20 envs). An
    evaluation is a function of the policy alone (every episode starts from
    ``reset(seed=seed + i)``), so the process keeps its last evaluator and hands it to the
    next trial with the same arguments, its ``total_time_s`` and ``evaluations`` set back to
    0; other arguments get a new one (the old one is closed). Same arguments and raised
    errors as :class:`GreedyEvaluator`; the caller does not close it.
    """
    import json

    global _process_evaluator
    key = (
        env_id,
        json.dumps(dict(env_config or {}), sort_keys=True, default=repr),
        int(episodes),
        int(seed),
    )
    if _process_evaluator is not None and _process_evaluator[0] == key:
        evaluator = _process_evaluator[1]
        evaluator.total_time_s, evaluator.evaluations, evaluator.restarts = 0.0, 0, 0
        return evaluator
    evaluator = GreedyEvaluator(env_id, env_config, episodes=episodes, seed=seed)
    if _process_evaluator is not None:
        _process_evaluator[1].close()
    _process_evaluator = (key, evaluator)
    return evaluator


def env_actions(space, normalize: bool, clip: bool) -> Callable[[np.ndarray], np.ndarray]:
    """What RLlib's env runner does to a policy's continuous actions before ``env.step``: its
    own ``unsquash_action`` (``AlgorithmConfig.normalize_actions``: the policy acts in
    [-1, 1], mapped linearly to the Box's bounds) or ``clip_action`` (``clip_actions``); the
    identity for other spaces. Shapes: (B, *action_shape) in and out."""
    import gymnasium

    if not isinstance(space, gymnasium.spaces.Box) or not (normalize or clip):
        return lambda a: a
    from ray.rllib.utils.spaces.space_utils import clip_action, unsquash_action

    if normalize:
        return lambda a: unsquash_action(a, space)
    return lambda a: clip_action(a, space)


def rllib_greedy_policy(algo, evaluator: GreedyEvaluator) -> Callable[[], Policy]:
    """A factory of greedy policies holding the RLlib ``algo``'s current learner weights.

    Builds one copy of the algorithm's RLModule (its full, learner-side version) in this
    process; each call of the returned factory loads the learner's newest weights
    (``LearnerGroup.get_weights``) into it and returns the batched greedy policy: the
    module's ``forward_inference`` actions when it outputs them (DQN/APEX: argmax Q), else the
    mode of its inference action distribution (PPO/IMPALA/APPO/SAC:
    ``from_logits(...).to_deterministic()``); continuous actions are mapped to the env's
    bounds as RLlib's env runner maps them (:func:`env_actions`).

    Args:
        algo: a built RLlib ``Algorithm`` (new API stack, one module).
        evaluator: supplies the observation and action spaces.
    """
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.columns import Columns

    spec = algo.config.get_rl_module_spec(
        spaces={DEFAULT_MODULE_ID: (evaluator.observation_space, evaluator.action_space)},
        inference_only=False,
    )
    module = spec.build()
    module.eval()
    dist_cls = module.get_inference_action_dist_cls()
    to_env = env_actions(
        evaluator.action_space, algo.config.normalize_actions, algo.config.clip_actions
    )

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = module.forward_inference({Columns.OBS: torch.as_tensor(obs)})
            if Columns.ACTIONS in out:
                return to_env(out[Columns.ACTIONS].cpu().numpy())
            dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS]).to_deterministic()
            return to_env(dist.sample().cpu().numpy())

    def current() -> Policy:
        weights = algo.learner_group.get_weights(module_ids=[DEFAULT_MODULE_ID])
        module.set_state(weights[DEFAULT_MODULE_ID])
        return act

    return current

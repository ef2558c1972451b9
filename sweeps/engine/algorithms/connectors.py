"""A learner connector piece that scales rewards for learning only.

Contoso Cabs pays rewards in dollars (about ±100 per decision; optimal monthly return ≈ 3000),
so Q-values and value targets are in the thousands. Adam moves each weight by about ``lr`` per
update whatever the loss scale, so a network needs thousands of updates just to *reach* that
scale; multiplying rewards by e.g. 0.01 before the loss removes that delay without changing the
optimal policy (a positive constant scales every return alike). Env runners still report
episode returns in the env's own units: only the learner sees scaled rewards.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.env.single_agent_episode import SingleAgentEpisode


class ScaleRewards(ConnectorV2):
    """Multiply every reward of the episodes a learner trains on by ``scale``.

    It must be the first of our pieces in the learner pipeline (RLlib puts custom pieces
    before its defaults), so that rewards are scaled before they are copied into the train
    batch, n-step summed (the replay buffer already summed them — the sum scales alike) or
    used for GAE/V-trace targets.

    The episodes a learner receives are not always its own: with no remote env runners
    (``num_env_runners=0``) they are the very objects the driver's env runner keeps to sum the
    returns of episodes that span several ``sample()`` calls. So each episode in the list is
    replaced by a shallow copy with a new, scaled reward buffer; the originals, and the episode
    returns the env runners report in the env's own units, are not touched.

    Raises:
        TypeError: an episode that is not a ``SingleAgentEpisode`` (multi-agent is not
            supported by ``reward_scale``).
    """

    def __init__(
        self, input_observation_space=None, input_action_space=None, *, scale: float = 1.0, **kwargs
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"reward_scale must be a positive number, got {scale!r}")
        self.scale = float(scale)

    def __call__(
        self,
        *,
        rl_module,
        batch: dict[str, Any],
        episodes: list,
        explore=None,
        shared_data=None,
        **kwargs,
    ) -> Any:
        if self.scale == 1.0:
            return batch
        for i, episode in enumerate(episodes):
            episodes[i] = scaled_copy(episode, self.scale)
        return batch


def scaled_copy(episode, scale: float):
    """A shallow copy of a ``SingleAgentEpisode`` whose rewards (lookback included) are
    ``scale`` × the original's; every other buffer is shared with the original.

    Raises:
        TypeError: not a ``SingleAgentEpisode``.
    """
    if not isinstance(episode, SingleAgentEpisode):
        raise TypeError(
            f"reward_scale supports single-agent episodes only, got {type(episode).__name__}"
        )
    rewards = copy.copy(episode.rewards)
    if isinstance(rewards.data, list):
        rewards.data = [r * scale for r in rewards.data]
    else:  # finalized: a numpy array, possibly read-only (Ray's object store)
        rewards.data = np.asarray(rewards.data, dtype=np.float32) * np.float32(scale)
    clone = copy.copy(episode)
    clone.rewards = rewards
    return clone


class RewardScaleConnector:
    """Picklable ``learner_connector`` builder for ``AlgorithmConfig.learners``."""

    def __init__(self, scale: float):
        self.scale = float(scale)

    def __call__(self, input_observation_space, input_action_space, *args):
        return ScaleRewards(input_observation_space, input_action_space, scale=self.scale)

"""A learner connector piece that scales rewards for learning only.

Contoso Cabs pays rewards in dollars (about ±100 per decision; optimal monthly return ≈ 3000),
so Q-values and value targets are in the thousands. Adam moves each weight by about ``lr`` per
update whatever the loss scale, so a network needs thousands of updates just to *reach* that
scale; multiplying rewards by e.g. 0.01 before the loss removes that delay without changing the
optimal policy (a positive constant scales every return alike). Env runners still report
episode returns in the env's own units: only the learner sees scaled rewards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2


class ScaleRewards(ConnectorV2):
    """Multiply every reward of the episodes a learner trains on by ``scale``.

    It must be the first piece of the learner pipeline (RLlib puts custom pieces first), so
    that rewards are scaled before they are copied into the train batch, n-step summed (the
    replay buffer already summed them — the sum scales alike) or used for GAE/V-trace targets.
    The episodes are the learner's own copies (replay samples or env-runner results), so the
    env runners' metrics are unaffected.
    """

    def __init__(self, input_observation_space=None, input_action_space=None, *,
                 scale: float = 1.0, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"reward_scale must be a positive number, got {scale!r}")
        self.scale = float(scale)

    def __call__(self, *, rl_module, batch: dict[str, Any], episodes: list, explore=None,
                 shared_data=None, **kwargs) -> Any:
        if self.scale == 1.0:
            return batch
        for episode in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            buffer = episode.rewards
            if isinstance(buffer.data, list):
                buffer.data = [r * self.scale for r in buffer.data]
            else:  # finalized: a numpy array, possibly read-only (Ray's object store)
                buffer.data = np.asarray(buffer.data, dtype=np.float32) * np.float32(self.scale)
        return batch


class RewardScaleConnector:
    """Picklable ``learner_connector`` builder for ``AlgorithmConfig.training``."""

    def __init__(self, scale: float):
        self.scale = float(scale)

    def __call__(self, input_observation_space, input_action_space, *args):
        return ScaleRewards(input_observation_space, input_action_space, scale=self.scale)

"""Ape-X's algorithm settings as the paper gives them, in a module of their own: both the light
sweep-facing spec (:mod:`sweeps.engine.algorithms.apex`) and the algorithm
(:mod:`sweeps.engine.algorithms.apex_dqn`) read them, and neither imports the other at import
time."""

from __future__ import annotations

from typing import Any

__all__ = ["APEX_ALGO_DEFAULTS"]

#: Ape-X's algorithm settings as the paper gives them (Horgan et al. 2018, section 4 and
#: appendix; the replay capacity scaled down from 2 M to 100 k transitions):
#: :class:`~sweeps.engine.algorithms.apex_dqn.ApexDQNConfig`'s defaults. A sweep's APEX trial starts
#: from :data:`sweeps.engine.algorithms.apex.APEX_DEFAULTS`, which takes these as they are.
APEX_ALGO_DEFAULTS: dict[str, Any] = {
    "double_q": True,
    "dueling": True,
    "n_step": 3,
    "epsilon": 0.4,
    "epsilon_alpha": 7.0,
    "weights_sync_period": 10,
    # not the paper's (its learner trains on prefetched batches): several minibatches per call
    # amortise the learner call's fixed cost (docs/benchmarks.md, "Learner updates")
    "updates_per_learner_call": 8,
    "training_intensity": None,
    "min_replay_ratio": None,
    "prioritized_replay": True,
    "buffer_size": 100_000,
    "prioritized_replay_alpha": 0.6,
    "prioritized_replay_beta": 0.4,
}

"""Named trial configs the tests use (not part of the product: sweep files name their own)."""

from __future__ import annotations

from typing import Any

#: The seed article's agent: RLlib's DQN as shipped, 2 hidden FC layers of 36 units, batch 64,
#: γ = 0.98, ε-greedy decaying, 1 env runner, plain DQN (no double/dueling/n-step/prioritized
#: replay).
SEED_BASELINE: dict[str, Any] = {
    "algorithm": "RLLIB-DQN",
    "num_env_runners": 1,
    "hidden_sizes": [36, 36],
    "fcnet_activation": "relu",
    "train_batch_size": 64,
    "gamma": 0.98,
    "lr": 1e-3,
    "epsilon": [[0, 1.0], [20_000, 0.01]],
    "double_q": False,
    "dueling": False,
    "n_step": 1,
    "prioritized_replay": False,
}

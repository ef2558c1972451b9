"""DQN (Mnih et al. 2015) — the baseline — and RLlib's DQN as shipped, on the new API stack.

Double Q (van Hasselt et al. 2016), dueling heads (Wang et al. 2016), n-step returns and
prioritized replay (Schaul et al. 2016) are options, by RLlib's names. Two algorithms a sweep
can name:

- ``DQN``: RLlib's DQN learner, RLModule and env runners with the suite's replay data path
  (n-step transitions in flat prioritized replay, several minibatches per learner call,
  sampling overlapped with learning; :mod:`sweeps.engine.algorithms.replay_dqn`): 4.8-6.0x the learner
  updates/s of RLlib's training step on Contoso Cabs and a shorter time-to-target, measured
  back to back (docs/benchmarks.md, "DQN on the same data path"); its learner is RLlib's with
  the per-update overhead trimmed (:mod:`sweeps.engine.algorithms.dqn_learner`). It is the sweeps' default
  baseline: a slow baseline would inflate every relative speedup.
- ``RLLIB-DQN``: RLlib's ``DQN`` algorithm class unchanged (its episode replay buffer, learner
  connector and training step), for measuring RLlib's DQN as users run it.

The defaults below are RLlib's; the settings tuned for wall-clock speed on Contoso Cabs
(16 envs x 4 steps per round, a replay ratio of 8, rewards x 0.01) are its preset there
(:mod:`sweeps.engine.presets`), which every trial on ``ContosoCabs-v0`` takes.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.algorithms.vocabulary import AlgorithmSpec, OwnParam

#: DQN keys a sweep may set, by their RLlib names (DQNConfig.training) unless "derived".
DQN_PARAMS: dict[str, OwnParam] = {
    "double_q": OwnParam("training", "double Q-learning targets"),
    "dueling": OwnParam("training", "dueling value/advantage heads"),
    "n_step": OwnParam("training", "n-step return length"),
    "epsilon": OwnParam(
        "training",
        "ε-greedy exploration: a constant or a schedule [[env_steps, ε], ...] (linear in between)",
    ),
    "target_network_update_freq": OwnParam(
        "training", "env steps sampled between target-network updates"
    ),
    "tau": OwnParam("training", "target-network update weight (1.0 = hard copy)"),
    "num_steps_sampled_before_learning_starts": OwnParam(
        "training", "env steps in replay before the first learner update"
    ),
    "training_intensity": OwnParam(
        "training",
        "replayed transitions per sampled transition, rounded by RLlib to whole "
        "sample or update calls (None = RLlib's natural ratio)",
    ),
    "td_error_loss_fn": OwnParam("training", "'huber' or 'mse'"),
    "adam_epsilon": OwnParam("training", "Adam's epsilon"),
    "prioritized_replay": OwnParam(
        "derived", "True: PrioritizedEpisodeReplayBuffer; False: uniform EpisodeReplayBuffer"
    ),
    "buffer_size": OwnParam("derived", "replay capacity in transitions"),
    "prioritized_replay_alpha": OwnParam("derived", "priority exponent α of prioritized replay"),
    "prioritized_replay_beta": OwnParam("derived", "importance-sampling exponent β"),
}


def replay_buffer_config(params: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``training.replay_buffer_config`` from the flat keys ``prioritized_replay``,
    ``buffer_size``, ``prioritized_replay_alpha`` and ``prioritized_replay_beta``."""

    def get(key):
        return params.get(key, defaults[key])

    if get("prioritized_replay"):
        return {
            "training.replay_buffer_config": {
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": int(get("buffer_size")),
                "alpha": float(get("prioritized_replay_alpha")),
                "beta": float(get("prioritized_replay_beta")),
            }
        }
    return {
        "training.replay_buffer_config": {
            "type": "EpisodeReplayBuffer",
            "capacity": int(get("buffer_size")),
        }
    }


#: RLLIB-DQN's defaults: RLlib's ``DQNConfig`` as shipped (``ray.rllib.algorithms.dqn``, with
#: ``DefaultModelConfig``'s 256x256 tanh torso), plus what the suite sets for every algorithm:
#: one env runner and the learner in the trial's process (resources are the sweep's axis) and
#: iterations of at least 1 s (the resolution of time-to-target). RLlib's
#: ``rollout_fragment_length="auto"`` samples ``n_step`` env steps per remote call and its
#: training step runs one update per sample call, which is slow on any env (~35 env steps/s on
#: a 2-core machine on Contoso Cabs): the Cabs preset (:mod:`sweeps.engine.presets`) holds the
#: shape tuned there. tests/test_presets.py checks these against RLlib's own config.
RLLIB_DQN_DEFAULTS: dict[str, Any] = {
    "num_env_runners": 1,
    "num_envs_per_env_runner": 1,
    "rollout_fragment_length": "auto",
    "train_batch_size": 32,
    "lr": 5e-4,
    "gamma": 0.99,
    "hidden_sizes": [256, 256],
    "fcnet_activation": "tanh",
    "num_learners": 0,
    "double_q": True,
    "dueling": True,
    "n_step": 1,
    "epsilon": [[0, 1.0], [10_000, 0.05]],
    "target_network_update_freq": 500,
    "num_steps_sampled_before_learning_starts": 1000,
    "training_intensity": None,
    "td_error_loss_fn": "huber",
    "prioritized_replay": True,
    "buffer_size": 50_000,
    "prioritized_replay_alpha": 0.6,
    "prioritized_replay_beta": 0.4,
    "reward_scale": 1.0,
    "min_time_s_per_iteration": 1.0,
}


def _make_config():
    from ray.rllib.algorithms.dqn import DQNConfig

    return DQNConfig()


RLLIB_DQN_SPEC = AlgorithmSpec(
    name="RLLIB-DQN",
    summary="RLlib's DQN as shipped: its episode replay buffer and training step",
    make_config=_make_config,
    own_params=DQN_PARAMS,
    defaults=RLLIB_DQN_DEFAULTS,
    translate=lambda p: replay_buffer_config(p, RLLIB_DQN_DEFAULTS),
)


def _make_replay_config():
    from sweeps.engine.algorithms.replay_dqn import ReplayDQNConfig

    return ReplayDQNConfig()


#: DQN's keys: RLlib's DQN's, with ``training_intensity`` the replay ratio itself.
REPLAY_DQN_PARAMS: dict[str, OwnParam] = {
    **DQN_PARAMS,
    "training_intensity": OwnParam(
        "training",
        "replay ratio: replayed / sampled transitions since learning started "
        "(None = one learner call per sample round)",
    ),
    "updates_per_learner_call": OwnParam(
        "training", "prioritized minibatches trained on per call of the learner"
    ),
}

#: The suite's DQN's defaults: RLlib's DQN's (:data:`RLLIB_DQN_DEFAULTS`) on the suite's data
#: path, one minibatch per learner call as RLlib's training step does (with
#: ``training_intensity`` None: one learner call per sample round).
DQN_DEFAULTS: dict[str, Any] = {**RLLIB_DQN_DEFAULTS, "updates_per_learner_call": 1}

SPEC = AlgorithmSpec(
    name="DQN",
    summary="DQN on RLlib's learner with flat n-step prioritized replay (double, dueling, "
    "n-step as options); the baseline",
    make_config=_make_replay_config,
    own_params=REPLAY_DQN_PARAMS,
    defaults=DQN_DEFAULTS,
    translate=lambda p: replay_buffer_config(p, DQN_DEFAULTS),
)

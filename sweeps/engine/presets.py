"""Presets: hyperparameters per (algorithm, env id), resolved before Ray starts.

An algorithm's own defaults (``ALGORITHMS[name].defaults``, the references'
:data:`sweeps.engine.reference.REFERENCE_DEFAULTS`) are its library's or its paper's: RLlib's
config defaults, Stable-Baselines3's, the Ape-X, Gorila and SEED papers' for what those
algorithms add. Settings tuned for one env live here instead, keyed by the env id, as
rl-baselines3-zoo keeps them (``hyperparams/<algo>.yml``, one entry per env id, each sourced):

- ``contoso-cabs``: the settings this project tuned on Contoso Cabs (``ContosoCabs-v0``), with
  the studies that chose them; the shipped Cabs sweeps and their published numbers use them.
- ``rl-zoo``: rl-baselines3-zoo's published hyperparameters for the classic-control ids the
  suite ships sweeps for (CartPole-v1, Acrobot-v1), SB3's as they are and RLlib's DQN and PPO
  translated to RLlib's names (the translation is stated beside each), and its ``atari``
  entries for the suite's DQN and PPO on the Atari id it ships sweeps for (PongNoFrameskip-v4).

A trial's parameters resolve as ``{**library defaults, **preset, **the sweep's own values}``
(:func:`sweeps.engine.search.resolve_params`): a sweep's values always win; an env without an
entry (a user's env) gets the library defaults. ``spec.json``, the dry-run and the report name the preset each
configuration took (:func:`preset_names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CABS_ENV",
    "PRESETS",
    "Preset",
    "find_preset",
    "preset_names",
    "preset_values",
]

#: Contoso Cabs' gymnasium id (envs.CABS_ID; not imported: this module stays light).
CABS_ENV = "ContosoCabs-v0"


@dataclass(frozen=True)
class Preset:
    """One entry of :data:`PRESETS`.

    Attributes:
        name: the table's name for where the values come from (``"contoso-cabs"``, ``"rl-zoo"``).
        algorithm: the sweep's name of the algorithm (``"DQN"``, ``"SB3-DQN"``, ...).
        env: the env id it applies to (gymnasium's id, exactly as the sweep names it).
        values: parameters by the suite's names (RLlib's, SB3's for ``SB3-*``); they override
            the algorithm's library defaults and are overridden by the sweep's values.
        source: where the values were chosen or published (a study of this project, a file of
            rl-baselines3-zoo at a commit).
    """

    name: str
    algorithm: str
    env: str
    values: Mapping[str, Any]
    source: str


# --- Contoso Cabs: the project's tuning -------------------------------------------------------

#: The network, optimiser step and reward scale every value-based and IMPALA-family algorithm
#: uses on Cabs: a 64x64 ReLU torso, lr 1e-3, rewards x 0.01 for the learner (Q-values and
#: returns of ~30 instead of ~3000 dollars: Adam needs far fewer updates to reach them).
_CABS_NET: dict[str, Any] = {
    "lr": 1e-3,
    "hidden_sizes": [64, 64],
    "fcnet_activation": "relu",
    "reward_scale": 0.01,
}

#: RLlib's DQN on Cabs (the RLLIB-DQN algorithm; before the suite's DQN had its own data path,
#: these were its settings). 16 vectorised envs x 8 steps per sample call = 128 env steps per
#: remote call instead of 1, so the fixed cost of a call and of a vector step through RLlib's
#: connectors is shared by 128 env steps; ``training_intensity`` 2.0 -> ~3.2 replayed
#: transitions per sampled one with 1 env runner (RLlib's ratio arithmetic): DQN needs a roughly
#: fixed number of updates to the target, so more replay per sampled step saves env steps until
#: the updates set the pace (sweeps/experiments/cabs_dqn_training_intensity.py); the Cabs
#: network (:data:`_CABS_NET`), batch 64, target copy every 1000 env steps.
_CABS_RLLIB_DQN: dict[str, Any] = {
    **_CABS_NET,
    "num_envs_per_env_runner": 16,
    "rollout_fragment_length": 8,
    "train_batch_size": 64,
    "n_step": 3,
    "epsilon": [[0, 1.0], [10_000, 0.02]],
    "target_network_update_freq": 1000,
    "training_intensity": 2.0,
}

#: The suite's DQN on Cabs (docs/benchmarks.md, "DQN on the same data path"): RLlib's DQN's Cabs
#: settings with 64 env steps per round in 4 vector steps (RLlib's env runner pays per vector
#: step; docs/benchmarks.md, "APEX's sample call"); a replay ratio of 8 (4 and 8 reached the
#: Cabs target alike, 16, SB3's ratio, mostly did not within the budget:
#: sweeps/experiments/cabs_dqn_training_intensity.py) in calls of 8 minibatches; 1-step
#: returns, not 3: epsilon decays from 1.0 over the first 10 k env steps, so early n-step
#: returns follow an exploring policy (sweeps/experiments/cabs_dqn_n_step.py). These studies ran
#: while the suite's DQN did not advance its ε schedule (ε ≈ 1 throughout; docs/changelog.md,
#: "DQN's and Gorila's ε schedule now advances").
_CABS_DQN: dict[str, Any] = {
    **_CABS_RLLIB_DQN,
    "rollout_fragment_length": 4,
    "training_intensity": 8.0,
    "updates_per_learner_call": 8,
    "n_step": 1,
}

#: APEX on Cabs: the suite's DQN's sample shape, network and optimiser (docs/benchmarks.md,
#: "APEX's sample call"), unbounded replay ratio as the paper, and 1-step returns instead of
#: the paper's 3 (with few env runners the only actors explore at a large epsilon and
#: uncorrected n-step returns follow it; docs/benchmarks.md, "Learning settings: 1-step
#: returns"). The replay capacity is the paper's 2 M scaled to 100 k as in its library default.
_CABS_APEX: dict[str, Any] = {
    **_CABS_NET,
    "num_envs_per_env_runner": 16,
    "rollout_fragment_length": 4,
    "train_batch_size": 64,
    "n_step": 1,
    "target_network_update_freq": 1000,
}

#: Gorila on Cabs: the suite's DQN's Cabs actors, network and replay ratio (uniform replay per
#: learner shard, as the paper).
_CABS_GORILA: dict[str, Any] = {
    k: v for k, v in _CABS_DQN.items() if k != "updates_per_learner_call"
}

#: IMPALA on Cabs (docs/benchmarks.md, section Algorithms): 8 vectorised envs x 32 steps = 256
#: env steps per asynchronous sample call, a 512-step batch in 4 passes of 128, lr 1e-3, a
#: 64x64 ReLU torso and rewards x 0.01.
_CABS_IMPALA: dict[str, Any] = {
    **_CABS_NET,
    "num_envs_per_env_runner": 8,
    "rollout_fragment_length": 32,
    "train_batch_size": 512,
    "num_epochs": 4,
    "minibatch_size": 128,
}

#: PPO on Cabs: faster sampling (8 vectorised envs per env runner), a 2000-step batch with 10
#: epochs (RLlib: 4000 and 30), lr 3e-4, GAE lambda 0.95, no value-loss clipping (RLlib's 10
#: zeroes the value gradient when returns are large), a 64x64 torso and rewards x 0.01.
_CABS_PPO: dict[str, Any] = {
    "num_envs_per_env_runner": 8,
    "train_batch_size": 2000,
    "minibatch_size": 128,
    "num_epochs": 10,
    "lr": 3e-4,
    "lambda_": 0.95,
    "vf_clip_param": 1e6,
    "hidden_sizes": [64, 64],
    "reward_scale": 0.01,
}

#: SB3's DQN on Cabs: the settings that reach 95 % of the Cabs optimum in 2-4 k env steps (MLP
#: 64x64, lr 1e-3, batch 64, train_freq 4, buffer 50 k, learning_starts 1000, target update
#: 1000, rewards x 0.01 for the learner), its schedules over 20 k env steps (docs/cabs_scaling.md).
_CABS_SB3_DQN: dict[str, Any] = {
    "learning_rate": 1e-3,
    "batch_size": 64,
    "buffer_size": 50_000,
    "learning_starts": 1000,
    "target_update_interval": 1000,
    "reward_scale": 0.01,
    "total_timesteps": 20_000,
}

#: SB3's PPO on Cabs: SB3's defaults with rewards x 0.01 and its schedules over 200 k env steps.
_CABS_SB3_PPO: dict[str, Any] = {"reward_scale": 0.01, "total_timesteps": 200_000}

_CABS_SOURCE = "tuned on Contoso Cabs by this project (docs/benchmarks.md; sweeps/experiments/)"

# --- rl-baselines3-zoo ------------------------------------------------------------------------

_ZOO_DQN = (
    "rl-baselines3-zoo hyperparams/dqn.yml at ce95481b041fe5314c1b2f1a53940d169b9253fc "
    "(DLR-RM/rl-baselines3-zoo)"
)
_ZOO_PPO = (
    "rl-baselines3-zoo hyperparams/ppo.yml at 208b6fdf3a9aa24de44b2e068c6e5f6a07d97fcc "
    "(DLR-RM/rl-baselines3-zoo)"
)

#: rl-zoo's SB3 DQN entries, SB3's names as published (``policy_kwargs.net_arch`` ->
#: ``hidden_sizes``, ``n_timesteps`` -> ``total_timesteps``: the schedules' horizon).
_ZOO_SB3_DQN: dict[str, dict[str, Any]] = {
    "CartPole-v1": {
        "total_timesteps": 50_000,
        "learning_rate": 2.3e-3,
        "batch_size": 64,
        "buffer_size": 100_000,
        "learning_starts": 1000,
        "gamma": 0.99,
        "target_update_interval": 10,
        "train_freq": 256,
        "gradient_steps": 128,
        "exploration_fraction": 0.16,
        "exploration_final_eps": 0.04,
        "hidden_sizes": [256, 256],
    },
    "Acrobot-v1": {
        "total_timesteps": 100_000,
        "learning_rate": 6.3e-4,
        "batch_size": 128,
        "buffer_size": 50_000,
        "learning_starts": 0,
        "gamma": 0.99,
        "target_update_interval": 250,
        "train_freq": 4,
        "gradient_steps": -1,
        "exploration_fraction": 0.12,
        "exploration_final_eps": 0.1,
        "hidden_sizes": [256, 256],
    },
}

#: rl-zoo's SB3 PPO entries, for one env: the suite's reference steps one env in its process,
#: so rl-zoo's ``n_envs`` x ``n_steps`` becomes ``n_steps`` (the same env steps per update).
#: CartPole's ``lin_0.001`` and ``lin_0.2`` (linear decay to 0) are taken at their start
#: values, constant: the reference has no schedule keys for them. Acrobot's ``normalize: true``
#: (VecNormalize) is not applied: the reference has no observation normalisation.
_ZOO_SB3_PPO: dict[str, dict[str, Any]] = {
    "CartPole-v1": {
        "total_timesteps": 100_000,
        "n_steps": 8 * 32,
        "batch_size": 256,
        "gae_lambda": 0.8,
        "gamma": 0.98,
        "n_epochs": 20,
        "ent_coef": 0.0,
        "learning_rate": 1e-3,
        "clip_range": 0.2,
    },
    "Acrobot-v1": {
        "total_timesteps": 1_000_000,
        "n_steps": 16 * 256,
        "gae_lambda": 0.94,
        "gamma": 0.99,
        "n_epochs": 4,
        "ent_coef": 0.0,
    },
}

#: rl-zoo's ``n_envs`` per PPO entry (the RLlib translation keeps them as vectorised envs).
_ZOO_PPO_N_ENVS = {"CartPole-v1": 8, "Acrobot-v1": 16}


#: rl-zoo's ``atari`` entries (one for every Atari id; the suite ships Pong sweeps), SB3's names
#: as published. Only the RLlib translations are presets: the suite's SB3 reference has no
#: Atari wrapper or CNN policy. The linear schedules (``lin_2.5e-4``, ``lin_0.1``) are taken at
#: their start values; rl-zoo's AtariWrapper and 4 stacked frames are the env's
#: (``envs.atari``, the sweep's ``env_config``), not the algorithm's.
_ZOO_ATARI_DQN: dict[str, Any] = {
    "total_timesteps": 10_000_000,
    "buffer_size": 10_000,
    "learning_rate": 1e-4,
    "batch_size": 32,
    "learning_starts": 100_000,
    "gamma": 0.99,
    "target_update_interval": 1000,
    "train_freq": 4,
    "gradient_steps": 1,
    "exploration_fraction": 0.1,
    "exploration_final_eps": 0.01,
}
_ZOO_ATARI_PPO: dict[str, Any] = {
    "n_steps": 8 * 128,
    "n_epochs": 4,
    "batch_size": 256,
    "learning_rate": 2.5e-4,
    "clip_range": 0.1,
    "ent_coef": 0.01,
}
_ATARI_IDS = ("PongNoFrameskip-v4",)


def _zoo_dqn_to_rllib(zoo: Mapping[str, Any]) -> dict[str, Any]:
    """rl-zoo's SB3 DQN entry in the suite's DQN's names. SB3's DQN is vanilla (no double Q,
    no dueling heads, uniform replay, 1-step returns, hard target copies); its epsilon decays
    linearly over ``exploration_fraction`` of ``n_timesteps``; ``target_update_interval``
    counts env steps, as RLlib's ``target_network_update_freq``; ``gradient_steps`` per
    ``train_freq`` env steps of ``batch_size`` transitions is a replay ratio (``-1``: one
    gradient step per env step), trained in calls of ``gradient_steps`` minibatches after each
    round of ``train_freq`` env steps."""
    grad = zoo["gradient_steps"] if zoo["gradient_steps"] > 0 else zoo["train_freq"]
    return {
        # one env sampled ``train_freq`` steps per round, then ``gradient_steps`` updates in
        # one learner call, as SB3's train step
        "num_envs_per_env_runner": 1,
        "rollout_fragment_length": zoo["train_freq"],
        "updates_per_learner_call": grad,
        "lr": zoo["learning_rate"],
        "train_batch_size": zoo["batch_size"],
        "buffer_size": zoo["buffer_size"],
        "num_steps_sampled_before_learning_starts": zoo["learning_starts"],
        "gamma": zoo["gamma"],
        "target_network_update_freq": zoo["target_update_interval"],
        "training_intensity": grad * zoo["batch_size"] / zoo["train_freq"],
        "epsilon": [
            [0, 1.0],
            [
                int(zoo["exploration_fraction"] * zoo["total_timesteps"]),
                zoo["exploration_final_eps"],
            ],
        ],
        **(
            {"hidden_sizes": list(zoo["hidden_sizes"]), "fcnet_activation": "relu"}
            if "hidden_sizes" in zoo
            else {}  # an image env: RLlib's CNN encoder, whatever the MLP settings
        ),
        "double_q": False,
        "dueling": False,
        "prioritized_replay": False,
        "n_step": 1,
    }


def _zoo_ppo_to_rllib(zoo: Mapping[str, Any], n_envs: int) -> dict[str, Any]:
    """rl-zoo's SB3 PPO entry in RLlib PPO's names: its ``n_envs`` vectorised envs of
    ``n_steps / n_envs`` steps each per rollout (RLlib's ``"auto"`` fragment, which follows
    a sweep's own ``train_batch_size``) = ``train_batch_size`` (one env runner),
    ``batch_size`` -> ``minibatch_size``, ``n_epochs`` -> ``num_epochs``, ``gae_lambda`` ->
    ``lambda_``, ``clip_range`` ->
    ``clip_param``, ``ent_coef`` -> ``entropy_coeff``; SB3's PPO has no KL penalty, clips no
    value loss, weighs it 0.5 and uses a 64x64 tanh MLP; absent keys are SB3's defaults."""
    n_steps = int(zoo.get("n_steps", 2048))
    return {
        "num_envs_per_env_runner": n_envs,
        "rollout_fragment_length": "auto",  # RLlib: the batch over the envs, n_steps / n_envs
        "train_batch_size": n_steps,
        "minibatch_size": int(zoo.get("batch_size", 64)),
        "num_epochs": int(zoo.get("n_epochs", 10)),
        "lr": float(zoo.get("learning_rate", 3e-4)),
        "gamma": float(zoo.get("gamma", 0.99)),
        "lambda_": float(zoo.get("gae_lambda", 0.95)),
        "clip_param": float(zoo.get("clip_range", 0.2)),
        "entropy_coeff": float(zoo.get("ent_coef", 0.0)),
        "vf_loss_coeff": 0.5,
        "use_kl_loss": False,
        "vf_clip_param": 1e6,
        "hidden_sizes": [64, 64],
        "fcnet_activation": "tanh",
    }


def _table() -> tuple[Preset, ...]:
    cabs = {
        "DQN": _CABS_DQN,
        "RLLIB-DQN": _CABS_RLLIB_DQN,
        "APEX": _CABS_APEX,
        "GORILA": _CABS_GORILA,
        "IMPALA": _CABS_IMPALA,
        "APPO": _CABS_IMPALA,
        "SEED": _CABS_IMPALA,
        "PPO": _CABS_PPO,
        "SB3-DQN": _CABS_SB3_DQN,
        "SB3-PPO": _CABS_SB3_PPO,
    }
    rows = [Preset("contoso-cabs", a, CABS_ENV, v, _CABS_SOURCE) for a, v in cabs.items()]
    for env, zoo in _ZOO_SB3_DQN.items():
        rows.append(Preset("rl-zoo", "SB3-DQN", env, zoo, _ZOO_DQN))
        rows.append(Preset("rl-zoo", "DQN", env, _zoo_dqn_to_rllib(zoo), _ZOO_DQN + ", translated"))
    for env, zoo in _ZOO_SB3_PPO.items():
        rows.append(Preset("rl-zoo", "SB3-PPO", env, zoo, _ZOO_PPO))
        rows.append(
            Preset(
                "rl-zoo",
                "PPO",
                env,
                _zoo_ppo_to_rllib(zoo, _ZOO_PPO_N_ENVS[env]),
                _ZOO_PPO + ", translated",
            )
        )
    for env in _ATARI_IDS:
        rows.append(
            Preset("rl-zoo", "DQN", env, _zoo_dqn_to_rllib(_ZOO_ATARI_DQN), _ZOO_DQN + ", atari")
        )
        rows.append(
            Preset(
                "rl-zoo",
                "PPO",
                env,
                _zoo_ppo_to_rllib(_ZOO_ATARI_PPO, 8),
                _ZOO_PPO + ", atari",
            )
        )
    return tuple(rows)


#: Every preset; at most one per (algorithm, env id).
PRESETS: tuple[Preset, ...] = _table()
_BY_KEY = {(p.algorithm, p.env): p for p in PRESETS}
assert len(_BY_KEY) == len(PRESETS), "one preset per (algorithm, env id)"


def find_preset(algorithm: str, env: str | None) -> Preset | None:
    """The preset of ``algorithm`` on ``env`` (an env id, exactly as the sweep names it), or
    None: a user's env, or an algorithm without one there, takes its library defaults."""
    return _BY_KEY.get((algorithm, env)) if env else None


def preset_values(algorithm: str, env: str | None) -> dict[str, Any]:
    """The values of ``algorithm``'s preset on ``env`` (:func:`find_preset`), ``{}`` without
    one. A trial resolves as ``{**library defaults, **preset_values, **the sweep's values}``
    (:func:`sweeps.engine.search.resolve_params`)."""
    preset = find_preset(algorithm, env)
    return dict(preset.values) if preset is not None else {}


def preset_names(algorithms: list[str], env: str | None) -> dict[str, str | None]:
    """``{algorithm: preset name or None}``: what ``spec.json``, the dry-run and the report
    say each configuration of a sweep on ``env`` resolved from (None: library defaults)."""
    return {a: (p.name if (p := find_preset(a, env)) is not None else None) for a in algorithms}

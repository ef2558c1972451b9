"""Cost of one DQN learner update on Contoso Cabs, learner only: RLlib's ``DQNTorchLearner``
against the suite's :class:`~sweeps.engine.algorithms.dqn_learner.ReplayDQNTorchLearner` (issue 12,
item 4), in one process, interleaved, with the same update written directly in torch as a yardstick.

Both learners are built from the sweeps' DQN defaults (``sweeps.engine.algorithms.build_config``:
64×64 MLP, dueling, double Q, 3-step returns, Huber loss, batch 64, gradient-noise-scale
measurement every 20 updates, as in a sweep), start from the same weights and train on the
same replay-shaped batches: ``--k`` minibatches of ``train_batch_size`` per ``update()`` call,
as the replay data path calls it. Blocks of ``--calls`` calls alternate between the two
learners and the plain-torch update (:class:`PlainTorchDQN`, not used by the suite)
``--blocks`` times, so the machine's drift hits all alike; reported: milliseconds per learner
update (median and range over blocks), learner updates/s, and the per-block ratios RLlib /
suite and suite / plain torch (median and range). No Ray: the learner runs in this process, on ``--threads``
torch threads (1, as in a Ray actor, which gets ``OMP_NUM_THREADS=1``).

    python benchmarks/bench_learner_update.py
    python benchmarks/bench_learner_update.py --blocks 15 --label recheck

Writes ``benchmarks/results/bench_learner_update[_LABEL].json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the checkout being measured

import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
ENV = "ContosoCabs-v0"
ENV_CONFIG = {"num_cities": 5, "time_matrix_seed": 0}


def build_learners(k: int, seed: int = 0):
    """``({"RLlib": learner, "suite": learner, "torch": PlainTorchDQN}, batch_fn, minibatch)``:
    both learners from the sweeps' DQN defaults with RLlib's / the suite's learner class (each
    with the suite's noise-scale measurement mixed in, as in a sweep), the suite's and the
    plain-torch yardstick starting from RLlib's weights, a function returning a fresh
    replay-shaped ``MultiAgentBatch`` of ``k`` × batch rows, and the batch size."""
    import gymnasium as gym
    import numpy as np
    from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    import envs  # noqa: F401  (registers the env ids)
    from sweeps.engine.algorithms import build_config
    from sweeps.engine.algorithms.dqn_learner import ReplayDQNTorchLearner
    from sweeps.engine.algorithms.noise_scale import noise_learner_class

    config = build_config({"algorithm": "DQN"}, ENV, ENV_CONFIG)
    env = gym.make(ENV, **ENV_CONFIG)
    obs_space, act_space = env.observation_space, env.action_space
    spec = config.get_multi_rl_module_spec(spaces={DEFAULT_MODULE_ID: (obs_space, act_space)})
    learners = {}
    for name, base in (("RLlib", DQNTorchLearner), ("suite", ReplayDQNTorchLearner)):
        learner = noise_learner_class(base)(config=config, module_spec=spec)
        learner.build()
        learners[name] = learner
    learners["suite"].module.set_state(learners["RLlib"].module.get_state())
    learners["torch"] = PlainTorchDQN(learners["RLlib"], config.gamma, config.grad_clip, config.lr)

    rows = k * config.total_train_batch_size
    rng = np.random.default_rng(seed)
    n_actions = int(act_space.n)
    low = np.where(np.isfinite(obs_space.low), obs_space.low, 0.0).astype(np.float32)
    high = np.where(np.isfinite(obs_space.high), obs_space.high, 1.0).astype(np.float32)

    def batch():
        shape = (rows,) + obs_space.shape
        data = {
            "obs": rng.uniform(low, high, shape).astype(np.float32),
            "new_obs": rng.uniform(low, high, shape).astype(np.float32),
            "actions": rng.integers(0, n_actions, rows),
            "rewards": rng.normal(0.0, 1.0, rows).astype(np.float32),
            "terminateds": rng.random(rows) < 0.05,
            "n_step": np.full(rows, float(config.n_step), np.float32),
            "weights": rng.uniform(0.5, 1.0, rows).astype(np.float32),
        }
        return MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=rows)

    return learners, batch, config.total_train_batch_size


class PlainTorchDQN:
    """Yardstick, not used by the suite: the same update written directly in torch (double Q,
    dueling head with mean-centred advantages, n-step target, importance-weighted Huber loss,
    global-norm clipping at ``grad_clip``, fused Adam as the suite's learner; foreach until
    70b8e4e) on a copy of the learner module's 64×64 network; one ``update()`` call trains on
    the batch's minibatches in order, as the learners do. What an update costs without a
    framework around it. From the same weights it gives the same online weights as the
    learners (checked: max difference 0.0 after 2 minibatches)."""

    def __init__(self, learner, gamma: float, grad_clip: float, lr: float):
        import copy

        from ray.rllib.core import DEFAULT_MODULE_ID

        module = learner.module[DEFAULT_MODULE_ID]
        self.online = copy.deepcopy(module)
        self.target = copy.deepcopy(module)
        self.gamma, self.grad_clip = gamma, grad_clip
        self.params = [
            p for name, p in self.online.named_parameters() if not name.startswith("_target")
        ]
        self.optimizer = torch.optim.Adam(self.params, lr=lr, fused=True)
        self.mid = DEFAULT_MODULE_ID

    @staticmethod
    def _q(module, obs):
        # The module's own encoder and heads, called directly.
        h = module.encoder({"obs": obs})["encoder_out"]
        adv = module.af(h)
        return adv - adv.mean(dim=-1, keepdim=True) + module.vf(h)

    def update(self, batch, minibatch_size: int):
        data = {k: torch.as_tensor(v) for k, v in batch.policy_batches[self.mid].items()}
        rows = len(data["obs"])
        for lo in range(0, rows, minibatch_size):
            mb = {k: v[lo : lo + minibatch_size] for k, v in data.items()}
            n = len(mb["obs"])
            q_all = self._q(self.online, torch.cat([mb["obs"], mb["new_obs"]]))
            q, q_next = q_all[:n], q_all[n:]
            with torch.no_grad():
                best = q_next.argmax(dim=-1, keepdim=True)
                q_target = self._q(self.target, mb["new_obs"]).gather(1, best).squeeze(1)
                done = mb["terminateds"].float()
                y = mb["rewards"] + self.gamma ** mb["n_step"] * (1.0 - done) * q_target
            q_sel = q.gather(1, mb["actions"].long().unsqueeze(1)).squeeze(1)
            loss = (
                mb["weights"] * torch.nn.functional.huber_loss(q_sel, y, reduction="none")
            ).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip, foreach=True)
            self.optimizer.step()
            td_error = (q_sel - y).detach()  # what the priorities are set from
        return td_error


def update(learner, batch, minibatch: int, sampled: int):
    """One replay-data-path call of ``learner.update`` (k minibatches in order)."""
    if isinstance(learner, PlainTorchDQN):
        return learner.update(batch, minibatch)
    return learner.update(
        batch=batch,
        minibatch_size=minibatch,
        num_epochs=1,
        shuffle_batch_per_epoch=False,
        timesteps={"num_env_steps_sampled_lifetime": sampled},
    )


def samples(out: dict) -> list[dict]:
    """The result's samples (:func:`analysis.benchmarks.sample`): milliseconds per learner
    update of each learner, one value per block."""
    from analysis.benchmarks import sample

    return [
        sample(name, "time per learner update", "ms", xs, "lower")
        for name, xs in out["ms_per_update"].items()
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=8, help="minibatches per update() call")
    ap.add_argument("--calls", type=int, default=10, help="update() calls per block")
    ap.add_argument("--blocks", type=int, default=11, help="blocks per learner, alternating")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--label", default="")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    learners, make_batch, minibatch = build_learners(args.k)
    batches = [make_batch() for _ in range(args.calls)]
    sampled = 10_000
    for learner in learners.values():  # warm-up: first-call allocations, Adam state
        for b in batches[:3]:
            update(learner, b, minibatch, sampled)
    ms = {name: [] for name in learners}
    for block in range(args.blocks):
        order = list(learners) if block % 2 == 0 else list(reversed(learners))
        for name in order:
            t0 = time.perf_counter()
            for b in batches:
                sampled += minibatch
                update(learners[name], b, minibatch, sampled)
            ms[name].append((time.perf_counter() - t0) * 1000 / (args.calls * args.k))
    ratios = [a / b for a, b in zip(ms["RLlib"], ms["suite"], strict=True)]
    over_torch = [a / b for a, b in zip(ms["suite"], ms["torch"], strict=True)]
    result = {
        "benchmark": "bench_learner_update",
        "label": args.label,
        "command": "python benchmarks/bench_learner_update.py " + " ".join(argv or sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": platform.node(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "git_revision": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "k": args.k,
        "minibatch": minibatch,
        "calls_per_block": args.calls,
        "ms_per_update": ms,
        "ratio_rllib_over_suite": ratios,
        "ratio_suite_over_plain_torch": over_torch,
    }
    for name, xs in ms.items():
        med = statistics.median(xs)
        print(
            f"{name:6s} {med:6.2f} ms per learner update [{min(xs):.2f}-{max(xs):.2f}]  "
            f"= {1000 / med:5.0f} learner updates/s"
        )
    for what, xs in (("RLlib / suite", ratios), ("suite / plain torch", over_torch)):
        print(
            f"{what}, per block: median {statistics.median(xs):.2f} "
            f"[{min(xs):.2f}-{max(xs):.2f}] over {len(xs)} blocks"
        )
    out = HERE / "results" / f"bench_learner_update{'_' + args.label if args.label else ''}.json"
    from analysis.benchmarks import save

    save(out, result, samples(result), benchmark="bench_learner_update", label=args.label)
    print(f"wrote {out.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

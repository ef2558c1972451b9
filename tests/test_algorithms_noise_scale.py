"""The gradient noise scale estimators (sweeps.engine.algorithms.noise_scale) on a problem with a known
answer, and the learner mixin inside real RLlib learners (DQN, IMPALA, PPO)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from sweeps.engine.algorithms.noise_scale import (
    NoiseScaleEMA,
    _slice,
    half_batch_norms,
    two_batch_estimates,
)


def test_two_batch_estimates_invert_the_expected_norms() -> None:
    """E|G_B|^2 = |G|^2 + tr(Sigma) / B (McCandlish et al. 2018, eq. A.1): the estimators
    return |G|^2 and tr(Sigma) exactly from exact expectations."""
    g2, trace = 3.0, 120.0
    for b_small, b_big in ((32, 64), (8, 512), (1, 2)):
        small = g2 + trace / b_small
        big = g2 + trace / b_big
        est = two_batch_estimates(small, big, b_small, b_big)
        assert est == pytest.approx((g2, trace))
    with pytest.raises(ValueError, match="0 < b_small < b_big"):
        two_batch_estimates(1.0, 1.0, 64, 64)


def test_half_batch_estimates_on_linear_regression() -> None:
    """Least squares with Gaussian inputs x ~ N(0, I_d) and noise eps ~ N(0, s^2): the
    per-example gradient of 0.5 (x.w - y)^2 at w = w* + delta is g = x (x.delta - eps), so
    G = delta and (Isserlis) tr(Sigma) = (d + 1) |delta|^2 + d s^2. The half-batch estimators,
    averaged over 3,000 batches of 64, recover both within 5 %; their ratio is B_simple."""
    import torch

    torch.manual_seed(0)
    d, s, batch, draws = 10, 0.5, 64, 3000
    w_star = torch.randn(d)
    delta = 0.3 * torch.randn(d)
    w = (w_star + delta).clone().requires_grad_(True)
    g2_true = float(delta @ delta)
    trace_true = (d + 1) * g2_true + d * s * s
    g2s, traces = [], []
    for _ in range(draws):
        x = torch.randn(batch, d)
        y = x @ w_star + s * torch.randn(batch)
        loss = 0.5 * (x @ w - y) ** 2
        half = batch // 2
        small, big = half_batch_norms(loss[:half].mean(), loss[half:].mean(), [w])
        g2, trace = two_batch_estimates(small, big, half, batch)
        g2s.append(g2)
        traces.append(trace)
    assert np.mean(g2s) == pytest.approx(g2_true, rel=0.05)
    assert np.mean(traces) == pytest.approx(trace_true, rel=0.05)
    ema = NoiseScaleEMA(decay=0.999)
    for g2, trace in zip(g2s, traces, strict=True):
        ema.update(g2, trace)
    assert ema.noise_scale == pytest.approx(trace_true / g2_true, rel=0.1)


def test_half_batch_norms_by_hand_and_unused_parameters() -> None:
    import torch

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    unused = torch.tensor([5.0], requires_grad=True)
    # d/da of (a . c) is c: G_1 = (1, 0), G_2 = (0, 3)
    small, big = half_batch_norms(
        a @ torch.tensor([1.0, 0.0]), a @ torch.tensor([0.0, 3.0]), [a, unused]
    )
    assert small == pytest.approx((1.0 + 9.0) / 2)
    assert big == pytest.approx(0.5**2 + 1.5**2)


def test_ema_is_bias_corrected_and_skips_non_finite() -> None:
    ema = NoiseScaleEMA(decay=0.9)
    assert math.isnan(ema.noise_scale) and math.isnan(ema.norm_sq)
    ema.update(2.0, 50.0)
    assert ema.norm_sq == pytest.approx(2.0) and ema.trace == pytest.approx(50.0)
    ema.update(float("nan"), 1.0)
    assert ema.count == 1
    ema.update(2.0, 50.0)
    assert ema.noise_scale == pytest.approx(25.0)
    neg = NoiseScaleEMA()
    neg.update(-1.0, 10.0)
    assert math.isnan(neg.noise_scale)
    with pytest.raises(ValueError):
        NoiseScaleEMA(decay=1.0)


def test_slice_keeps_rows_of_the_batch_only() -> None:
    batch = {
        "obs": np.zeros((8, 3)),
        "n_step": np.arange(8),
        "scalar": np.float32(1.0),
        "nested": {"q": np.ones((8,)), "other": np.ones((4,))},
    }
    half = _slice(batch, 8, 4, 8)
    assert half["obs"].shape == (4, 3) and list(half["n_step"]) == [4, 5, 6, 7]
    assert half["scalar"] == 1.0 and half["nested"]["q"].shape == (4,)
    assert half["nested"]["other"].shape == (4,)  # not a batch-sized array: unchanged


@pytest.mark.ray
@pytest.mark.parallel
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "algorithm, extra",
    [
        ("DQN", {"num_steps_sampled_before_learning_starts": 200}),
        ("IMPALA", {}),
        ("PPO", {"train_batch_size": 512, "minibatch_size": 128, "num_epochs": 2}),
    ],
)
def test_rllib_learners_report_the_noise_scale(local_ray, algorithm, extra) -> None:
    """A real RLlib learner of each family (TD loss, V-trace, clipped surrogate) measures the
    noise scale through the mixin: finite, positive after a few iterations on CartPole, and
    the update itself still trains (learner updates grow). The learner clock is mixed in
    over it, and times the same updates on their thread's CPU clock."""
    from sweeps.engine.algorithms import build_config, extract_metrics

    config = build_config(
        {
            "algorithm": algorithm,
            "num_env_runners": 1,
            "seed": 0,
            "grad_noise_scale_every": 1,
            **extra,
        },
        "CartPole-v1",
    )
    from sweeps.engine.algorithms.learner_clock import UpdateClockMixin
    from sweeps.engine.algorithms.noise_scale import NoiseScaleMixin

    assert issubclass(config.learner_class, NoiseScaleMixin), config.learner_class.__mro__
    assert issubclass(config.learner_class, UpdateClockMixin), config.learner_class.__mro__
    assert config.learner_class.__name__.startswith("ClockedNoiseScale")
    # V-trace reads time-major fragments: its half batches keep whole fragments (the spec says)
    assert config.learner_class._noise_unit_is_fragment == (algorithm == "IMPALA")
    algo = config.build_algo()
    try:
        seen = []
        # Until the first measurement, by time, not by a count of iterations: IMPALA's
        # iterations return empty (no env steps, no updates) until its env runner actor has
        # started and sent a sample, which took over 6 ~1 s iterations on a loaded 2-core
        # machine (a chance failure, 1 run in 4).
        deadline = time.monotonic() + 90.0
        while not seen or time.monotonic() < deadline:
            m = extract_metrics(algorithm, algo.train())
            seen.append(m)
            if math.isfinite(m["grad_noise_scale"]) and m["learner_updates"] > 0:
                break
    finally:
        algo.stop()
    last = seen[-1]
    assert math.isfinite(last["grad_noise_scale"]) and last["grad_noise_scale"] > 0, seen
    assert last["grad_trace_cov"] > 0
    assert last["learner_updates"] > 0
    assert last["learner_cpu_s"] > 0  # the updates' CPU seconds, recorded through RLlib


def test_noise_scale_is_off_with_zero() -> None:
    from sweeps.engine.algorithms import build_config

    off = build_config({"algorithm": "DQN", "grad_noise_scale_every": 0}, "CartPole-v1")
    assert not off.learner_class.__name__.startswith("NoiseScale")
    with pytest.raises(ValueError, match="grad_noise_scale_every"):
        build_config({"algorithm": "DQN", "grad_noise_scale_every": -1}, "CartPole-v1")

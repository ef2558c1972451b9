"""The gradient noise scale, measured in the learner during training.

McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training" (arXiv
1812.06162, 2018): the *simple noise scale* ``B_simple = tr(Sigma) / |G|^2`` (Sigma: the
per-example gradient covariance, G: the true gradient) predicts the critical batch size;
optimisation steps ``S = S_min (1 + B_noise / B)`` and samples ``E = E_min (1 + B / B_noise)``.

Estimators (the paper's appendix A.1): with the gradient of a minibatch of ``B_small`` examples
and of ``B_big`` examples,

    |G|^2  ~  (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
    tr(S)  ~  (|G_small|^2 - |G_big|^2) / (1 / B_small - 1 / B_big)

are unbiased; each is smoothed by an exponential moving average (as the paper does) before the
ratio is taken. Here one learner splits its minibatch of ``B`` into two halves
(``B_small = B/2``; for IMPALA/APPO whole rollout fragments), takes the gradient of the loss on
each half (``G_1, G_2``, one extra backward pass through the forward graph the update already
built), uses ``|G_small|^2 = (|G_1|^2 + |G_2|^2) / 2`` and ``G_big = (G_1 + G_2) / 2``
(exact for losses that are means over the batch, as RLlib's DQN, IMPALA and PPO losses are).

:class:`NoiseScaleMixin` does this inside RLlib's Learner API (``compute_losses``), every
``grad_noise_scale_every`` learner updates, without touching the update itself; the values
reach ``Algorithm.train()``'s result under ``learners/<module>/grad_noise_scale`` (and
``grad_norm_sq``, ``grad_trace_cov``) and ``progress.parquet`` (docs/results.md). The cost is in
docs/benchmarks.md ("Gradient noise scale").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "DEFAULT_EVERY",
    "EMA_DECAY",
    "NoiseScaleEMA",
    "NoiseScaleMixin",
    "half_batch_norms",
    "noise_learner_class",
    "two_batch_estimates",
]

DEFAULT_EVERY = 20
"""Learner updates between two measurements (each costs about one extra backward pass)."""

EMA_DECAY = 0.9
"""Decay of the exponential moving averages of |G|^2 and tr(Sigma), per measurement."""


def two_batch_estimates(
    norm_sq_small: float, norm_sq_big: float, b_small: float, b_big: float
) -> tuple[float, float]:
    """Unbiased estimates of ``(|G|^2, tr(Sigma))`` from two gradient norms.

    Args:
        norm_sq_small: ``|G_small|^2``, squared L2 norm of a gradient over ``b_small`` examples
            (or the mean of several such).
        norm_sq_big: ``|G_big|^2``, over ``b_big`` examples.
        b_small, b_big: the batch sizes, ``0 < b_small < b_big``.

    Returns:
        ``(|G|^2, tr(Sigma))`` in squared gradient units; either can be negative on one
        sample (they are unbiased, not positive): average before taking their ratio.

    Raises:
        ValueError: batch sizes not ``0 < b_small < b_big``.

    Source: McCandlish et al. 2018 (arXiv 1812.06162), appendix A.1, eqs. A.2-A.3.
    """
    if not 0 < b_small < b_big:
        raise ValueError(f"batch sizes must satisfy 0 < b_small < b_big, got {b_small}, {b_big}")
    g2 = (b_big * norm_sq_big - b_small * norm_sq_small) / (b_big - b_small)
    trace = (norm_sq_small - norm_sq_big) / (1.0 / b_small - 1.0 / b_big)
    return g2, trace


class NoiseScaleEMA:
    """Exponential moving averages of ``|G|^2`` and ``tr(Sigma)`` and their ratio.

    Bias-corrected like Adam's moments (divided by ``1 - decay^k`` after ``k`` updates), so the
    first measurements are not pulled towards zero.

    Args:
        decay: weight of the past per update, in [0, 1).
    """

    def __init__(self, decay: float = EMA_DECAY):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        self.decay = decay
        self.count = 0
        self._g2 = 0.0
        self._trace = 0.0

    def update(self, g2: float, trace: float) -> None:
        """Add one measurement (non-finite ones are skipped)."""
        if not (math.isfinite(g2) and math.isfinite(trace)):
            return
        self.count += 1
        self._g2 = self.decay * self._g2 + (1.0 - self.decay) * g2
        self._trace = self.decay * self._trace + (1.0 - self.decay) * trace

    @property
    def norm_sq(self) -> float:
        """Smoothed ``|G|^2`` (NaN before any measurement)."""
        return self._g2 / (1.0 - self.decay**self.count) if self.count else math.nan

    @property
    def trace(self) -> float:
        """Smoothed ``tr(Sigma)`` (NaN before any measurement)."""
        return self._trace / (1.0 - self.decay**self.count) if self.count else math.nan

    @property
    def noise_scale(self) -> float:
        """``B_simple = tr(Sigma) / |G|^2`` (examples); NaN while ``|G|^2 <= 0``."""
        g2 = self.norm_sq
        return self.trace / g2 if g2 > 0 else math.nan


def half_batch_norms(loss_1: Any, loss_2: Any, params: Sequence[Any]) -> tuple[float, float]:
    """``(|G_small|^2, |G_big|^2)`` from the losses of two equal halves of a batch.

    ``G_1, G_2`` are the gradients of ``loss_1`` and ``loss_2`` (torch scalars, each a mean over
    its half) with respect to ``params``; ``|G_small|^2 = (|G_1|^2 + |G_2|^2) / 2`` and
    ``G_big = (G_1 + G_2) / 2``. The forward graph is kept (``retain_graph``), so the update
    that follows can still back-propagate through it; parameters a loss does not use count as
    zero gradient.
    """
    import torch

    params = [p for p in params if p.requires_grad]
    g1 = torch.autograd.grad(loss_1, params, retain_graph=True, allow_unused=True)
    g2 = torch.autograd.grad(loss_2, params, retain_graph=True, allow_unused=True)
    s1 = s2 = big = 0.0
    for a, b, p in zip(g1, g2, params, strict=True):
        a = torch.zeros_like(p) if a is None else a.detach()
        b = torch.zeros_like(p) if b is None else b.detach()
        s1 += float(torch.sum(a * a))
        s2 += float(torch.sum(b * b))
        m = 0.5 * (a + b)
        big += float(torch.sum(m * m))
    return 0.5 * (s1 + s2), big


def _rows(x: Any) -> int | None:
    shape = getattr(x, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) >= 1 else None


def _slice(tree: Any, n: int, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of every array with ``n`` rows in a nested dict (others unchanged)."""
    if isinstance(tree, dict):
        return {k: _slice(v, n, lo, hi) for k, v in tree.items()}
    if _rows(tree) == n:
        return tree[lo:hi]
    return tree


class NoiseScaleMixin:
    """Mix into an RLlib ``TorchLearner`` (before it) to measure the gradient noise scale.

    Every ``learner_config_dict["grad_noise_scale_every"]`` calls of ``compute_losses`` (one per
    minibatch update), the loss of each module is recomputed on two halves of the minibatch
    from the same forward outputs, and :func:`half_batch_norms` gives the two norms; RLlib's
    own metrics logger is swapped out meanwhile, so the extra loss calls log nothing (DQN's
    TD errors, which set the replay priorities, stay those of the update). Logged per module,
    window 1: ``grad_noise_scale`` (examples), ``grad_norm_sq``, ``grad_trace_cov``.

    ``_noise_unit``: rows that must stay together (1; IMPALA/APPO: the rollout fragment, their
    loss reshapes the batch into time-major sequences of that length).
    """

    _noise_unit_is_fragment = False

    def _noise_every(self) -> int:
        d = getattr(self.config, "learner_config_dict", None) or {}
        return int(d.get("grad_noise_scale_every", DEFAULT_EVERY) or 0)

    def compute_losses(self, *, fwd_out, batch):
        losses = super().compute_losses(fwd_out=fwd_out, batch=batch)
        every = self._noise_every()
        if every > 0:
            self._noise_calls = getattr(self, "_noise_calls", 0) + 1
            if self._noise_calls % every == 1 or every == 1:
                self._measure_noise(fwd_out, batch)
        return losses

    def _measure_noise(self, fwd_out, batch) -> None:
        from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

        emas = self.__dict__.setdefault("_noise_emas", {})
        unit = 1
        if self._noise_unit_is_fragment:
            unit = max(1, int(self.config.get_rollout_fragment_length()))
        for module_id in fwd_out:
            mb, mf = batch[module_id], fwd_out[module_id]
            sizes = [_rows(v) for v in mb.values() if _rows(v)]
            if not sizes:
                continue
            n = max(set(sizes), key=sizes.count)  # the batch's row count
            half = (n // 2 // unit) * unit
            if half < 1:
                continue
            parts = [
                (_slice(mb, n, a, b), _slice(mf, n, a, b)) for a, b in ((0, half), (half, 2 * half))
            ]
            real_metrics = self.metrics
            self.metrics = MetricsLogger()  # the extra loss calls must log nothing
            try:
                cfg = self.config.get_config_for_module(module_id)
                l1, l2 = (
                    self.compute_loss_for_module(
                        module_id=module_id, config=cfg, batch=b, fwd_out=f
                    )
                    for b, f in parts
                )
                small, big = half_batch_norms(l1, l2, list(self.module[module_id].parameters()))
            except Exception:  # noqa: BLE001 - a measurement must never break an update
                continue
            finally:
                self.metrics = real_metrics
            g2, trace = two_batch_estimates(small, big, half, 2 * half)
            ema = emas.setdefault(module_id, NoiseScaleEMA())
            ema.update(g2, trace)
            self.metrics.log_dict(
                {
                    "grad_noise_scale": ema.noise_scale,
                    "grad_norm_sq": ema.norm_sq,
                    "grad_trace_cov": ema.trace,
                },
                key=module_id,
                window=1,
            )


_CLASSES: dict[tuple[type, bool], type] = {}


def noise_learner_class(base: type, whole_fragments: bool = False) -> type:
    """``base`` (an RLlib TorchLearner class) with :class:`NoiseScaleMixin` mixed in.

    ``whole_fragments``: the loss reads the batch as time-major sequences of the rollout
    fragment length (the algorithm's ``AlgorithmSpec.sequence_loss``: IMPALA, APPO), so the
    half batches keep whole fragments. One class per (base, whole_fragments), named
    ``NoiseScale<base>``; it is not an attribute of this module, so Ray's cloudpickle sends it
    by value to a learner actor (its bases by reference).
    """
    if issubclass(base, NoiseScaleMixin):
        return base
    cls = _CLASSES.get((base, whole_fragments))
    if cls is None:
        name = f"NoiseScale{base.__name__}"
        cls = type(
            name,
            (NoiseScaleMixin, base),
            {
                "__module__": __name__,
                "__qualname__": name,
                "_noise_unit_is_fragment": whole_fragments,
            },
        )
        _CLASSES[(base, whole_fragments)] = cls
    return cls

"""RLlib's DQN torch learner with the per-update overhead of a small network taken out: the
learner of the sweeps' ``DQN`` and ``APEX`` (:mod:`sweeps.engine.algorithms.replay_dqn`).

On Contoso Cabs a learner update is one minibatch of 64 transitions through a 64×64 MLP; the
arithmetic is well under a millisecond, so what RLlib does around it decides the update rate.
Read in site-packages (``TorchLearner``, ``Learner.update``, ``MiniBatchCyclicIterator``,
``MetricsLogger``; Ray 2.60), per update it

1. steps ``torch.optim.Adam`` built with torch's defaults, which on CPU is the for-loop
   implementation: a handful of small kernels per parameter tensor;
2. checks every gradient tensor with ``torch.isfinite(grad).all()`` twice (once to zero
   non-finite gradients, once before the optimizer step): one Python-level check and one
   tensor→bool sync per tensor, twice;
3. re-enters ``train()`` mode on every submodule (``TorchRLModule.forward_train``);
4. slices the train batch into minibatches with ``MiniBatchCyclicIterator``, which builds a
   ``SampleBatch`` per slice through its generic (sequence-aware) slicing;
5. logs seven statistics that keep one value (``window=1``: the loss, mean/min/max Q, mean TD
   error, the global gradient norm, the weights' sequence number) into its ``MetricsLogger``,
   each a tree walk and a ``Stats`` push, on every minibatch, although only the last
   minibatch's value survives the reduce at the end of the ``update()`` call.

:class:`ReplayDQNTorchLearner` keeps RLlib's module, loss (double Q, dueling, n-step, Huber,
importance weights), gradient clipping, target-network updates and metrics, and changes only
how those five steps are done, each with the same result:

1. Adam with ``fused=True``: torch's fused implementation of the same update rule (torch docs,
   ``torch.optim.Adam``: "The foreach and fused implementations are typically faster than the
   for-loop, single-tensor implementation, with fused being theoretically fastest");
2. one check of the global gradient norm, the one the clipping that RLlib's config already
   asks for computes (``grad_clip_by="global_norm"``; ``torch.nn.utils.get_total_norm``;
   with other clipping, one foreach norm in ``apply_gradients``): finite means every
   gradient is finite, and the step goes ahead as RLlib's would; otherwise RLlib's own
   ``clip_gradients`` and ``apply_gradients`` run, so non-finite gradients are handled exactly
   as RLlib handles them;
3. ``train()`` only when a module is not already in train mode;
4. for the replay data path's call (a batch of exactly k × ``minibatch_size`` rows, one
   epoch, no shuffle, no sequences) the minibatches are row slices of the batch's tensors in
   order, which is what RLlib's iterator yields for such a call; every other call (other
   sizes, where RLlib's iterator wraps around, epochs, shuffling) goes through RLlib's;
5. during an ``update()`` call, ``window=1`` statistics are held (the latest value per key)
   and logged once before the call's reduce (:class:`LastValueLogger`); every other metric
   (the TD errors that set the replay priorities, step counts, sums) is logged as it comes.

The effect, learner only and end to end, is measured in docs/benchmarks.md ("A leaner DQN
learner update", ``benchmarks/bench_learner_update.py``).
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics.stats import StatsBase
from ray.rllib.utils.torch_utils import clip_gradients

__all__ = ["LastValueLogger", "ReplayDQNTorchLearner", "clip_gradients_foreach"]


class ReplayDQNTorchLearner(DQNTorchLearner):
    """RLlib's ``DQNTorchLearner`` with a cheaper update for small networks (module docstring).

    Raises what RLlib's learner raises; nothing of its own.
    """

    # ----------------------------------- 1. the optimizer -----------------------------------
    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        """As ``TorchLearner``'s (Adam, ``config.lr`` as a constant or schedule), with torch's
        fused implementation."""
        params = self.get_parameters(self._module[module_id])
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params, fused=True),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    # ------------------------------- 2. clipping and the finiteness check -------------------------------
    def _get_clip_function(self):
        """:func:`clip_gradients_foreach`, counting the gradient tensors it found finite in
        ``self._grads_known_finite`` (zeroed by :meth:`postprocess_gradients`, read by
        :meth:`apply_gradients`)."""

        def clip(gradients_dict, *, grad_clip=None, grad_clip_by="value"):
            norm, known_finite = _clip_foreach(gradients_dict, grad_clip, grad_clip_by)
            self._grads_known_finite += known_finite
            return norm

        return clip

    def postprocess_gradients(self, gradients_dict):
        """RLlib's (clipping per module), with the count of gradients known finite started
        afresh for this update."""
        self._grads_known_finite = 0
        return super().postprocess_gradients(gradients_dict)

    def apply_gradients(self, gradients_dict) -> None:
        """Sets the gradients and steps every optimizer when every gradient is finite (known
        from the clip's global norm, else one foreach norm here); otherwise RLlib's
        ``TorchLearner.apply_gradients`` (which zeroes non-finite gradients or skips the step,
        per ``torch_skip_nan_gradients``)."""
        grads = [g for g in gradients_dict.values() if g is not None]
        if (
            self._grad_scalers is not None
            or self._lr_scheduler_classes is not None
            or not grads
            or (
                self._grads_known_finite != len(grads)
                and not bool(torch.isfinite(torch.nn.utils.get_total_norm(grads, foreach=True)))
            )
        ):
            return super().apply_gradients(gradients_dict)
        for pid, grad in gradients_dict.items():
            self._params[pid].grad = grad
        for module_id, optimizer_names in self._module_optimizers.items():
            for name in optimizer_names:
                self.get_optimizer(module_id, name).step()

    # ---------------------------------- 3. train() mode ----------------------------------
    def build(self) -> None:
        super().build()
        self._grads_known_finite = 0  # see _get_clip_function
        for module in self.module.values():
            if isinstance(module, TorchRLModule):
                module.train()
                # ``TorchRLModule.forward_train`` calls ``train()`` (a walk over every
                # submodule) each update; this instance's version does it only when needed.
                module.forward_train = _forward_train_in_train_mode.__get__(module)

    # ------------------------------------ 4. minibatches ------------------------------------
    def _create_iterator_if_necessary(
        self,
        *,
        training_data,
        num_total_minibatches=0,
        num_epochs=1,
        minibatch_size=None,
        shuffle_batch_per_epoch=False,
        **kwargs,
    ):
        simple = (
            training_data.batch is not None
            and training_data.episodes is None
            and not training_data.data_iterators
            and minibatch_size
            and num_epochs == 1
            and not shuffle_batch_per_epoch
            and not num_total_minibatches
            and not kwargs
        )
        if simple:
            batch = self._make_batch_if_necessary(training_data=training_data)
            parts = batch.policy_batches
            if (
                all(
                    mid in self.module
                    and self.should_module_be_updated(mid, batch)
                    and not self.module[mid].is_stateful()
                    and sb.get(SampleBatch.SEQ_LENS) is None
                    for mid, sb in parts.items()
                )
                and len(rows := {len(sb) for sb in parts.values()}) == 1
                and next(iter(rows)) % minibatch_size == 0
            ):
                return _row_slices(parts, next(iter(rows)), minibatch_size)
        return super()._create_iterator_if_necessary(
            training_data=training_data,
            num_total_minibatches=num_total_minibatches,
            num_epochs=num_epochs,
            minibatch_size=minibatch_size,
            shuffle_batch_per_epoch=shuffle_batch_per_epoch,
            **kwargs,
        )

    # ------------------------------- 5. window-1 statistics -------------------------------
    def update(self, *args, **kwargs):
        """RLlib's ``Learner.update`` with :class:`LastValueLogger` standing in for
        ``self.metrics`` during the call: the same reduced results."""
        if isinstance(self.metrics, LastValueLogger):  # re-entered: already held
            return super().update(*args, **kwargs)
        held = self.metrics = LastValueLogger(self.metrics)
        try:
            return super().update(*args, **kwargs)
        finally:
            self.metrics = held.logger
            held.flush()


class LastValueLogger:
    """Stands in for an RLlib ``MetricsLogger`` for the length of one ``Learner.update()`` call.

    A ``window=1`` statistic (reduce ``"mean"``, the default; a plain value, not a ``Stats``)
    keeps only its latest value (RLlib's ``MeanStats`` with window 1), so logging the last of
    several values once gives the same reduced result as logging each. Such calls
    (``log_value`` and ``log_dict``, as RLlib's DQN loss, gradient clipping and step counts
    make them per minibatch) are held here, the latest value per key, and logged to the real
    logger by :meth:`flush`, which :meth:`reduce` calls first. Every other call, and every
    other attribute, goes to the real logger at once.

    Args:
        logger: the learner's ``MetricsLogger``.
    """

    def __init__(self, logger):
        self.logger = logger
        self._latest: dict[tuple, Any] = {}

    @staticmethod
    def _holdable(value, reduce, window, kwargs) -> bool:
        return (
            window == 1
            and reduce in (None, "mean")
            and not kwargs
            and not isinstance(value, StatsBase)
        )

    def log_value(self, key, value, *, reduce=None, window=None, **kwargs) -> None:
        """``MetricsLogger.log_value``; held if a window-1 mean of a plain value."""
        if self._holdable(value, reduce, window, kwargs):
            self._latest[key if isinstance(key, tuple) else (key,)] = value
        else:
            self.logger.log_value(key, value, reduce=reduce, window=window, **kwargs)

    def log_dict(self, value_dict, *, key=None, reduce="mean", window=None, **kwargs) -> None:
        """``MetricsLogger.log_dict``; held if a flat dict of window-1 means of plain values."""
        if isinstance(value_dict, dict) and all(
            not isinstance(v, dict) and self._holdable(v, reduce, window, kwargs)
            for v in value_dict.values()
        ):
            prefix = () if key is None else key if isinstance(key, tuple) else (key,)
            for k, v in value_dict.items():
                self._latest[prefix + (k,)] = v
        else:
            self.logger.log_dict(value_dict, key=key, reduce=reduce, window=window, **kwargs)

    def flush(self) -> None:
        """Logs each held key's latest value to the real logger (``window=1``), then forgets
        them."""
        latest, self._latest = self._latest, {}
        for key, value in latest.items():
            self.logger.log_value(key, value, window=1)

    def reduce(self, *args, **kwargs):
        """:meth:`flush`, then the real logger's ``reduce``."""
        self.flush()
        return self.logger.reduce(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.logger, name)


def clip_gradients_foreach(
    gradients_dict: dict, *, grad_clip: float | None = None, grad_clip_by: str = "value"
):
    """RLlib's ``clip_gradients`` (``ray.rllib.utils.torch_utils``) with the global norm and
    the scaling done by torch's multi-tensor (foreach) kernels when that norm is finite:
    coefficient ``min(1, grad_clip / (norm + 1e-6))`` as RLlib's. A non-finite norm, or
    clipping by ``"value"`` or ``"norm"``, goes to RLlib's function (whose per-tensor
    ``nan_to_num`` then applies).

    Returns:
        What RLlib's returns: the global L2 norm (a 0-d tensor) for ``"global_norm"``, else None.
    """
    return _clip_foreach(gradients_dict, grad_clip, grad_clip_by)[0]


def _clip_foreach(gradients_dict: dict, grad_clip, grad_clip_by) -> tuple[Any, int]:
    """:func:`clip_gradients_foreach`'s work: ``(its return value, the number of gradient
    tensors known finite)``: all of them when it took the foreach path (a finite global norm),
    else 0."""
    grads = [g for g in gradients_dict.values() if g is not None]
    if grad_clip is None or grad_clip_by != "global_norm" or not grads:
        return clip_gradients(gradients_dict, grad_clip=grad_clip, grad_clip_by=grad_clip_by), 0
    total = torch.nn.utils.get_total_norm(grads, foreach=True)
    if not bool(torch.isfinite(total)):
        return clip_gradients(gradients_dict, grad_clip=grad_clip, grad_clip_by=grad_clip_by), 0
    coeff = torch.clamp(grad_clip / torch.clamp(total + 1e-6, min=grad_clip), max=1.0)
    torch._foreach_mul_([g.detach() for g in grads], coeff)
    return total, len(grads)


def _forward_train_in_train_mode(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
    """``TorchRLModule.forward_train`` that enters train mode only when not in it."""
    if not self.training:
        self.train()
    return super(TorchRLModule, self).forward_train(batch, **kwargs)


def _row_slices(policy_batches: dict[str, SampleBatch], rows: int, size: int):
    """The ``rows / size`` minibatches of ``size`` rows (``rows`` a multiple of ``size``), in
    row order, as ``MultiAgentBatch`` es of views into the given tensors. Each carries the whole
    batch's ``env_steps``, as RLlib's ``MiniBatchCyclicIterator`` does ("inherited from the
    original multi-agent batch"), so RLlib's ``num_env_steps_trained`` counts alike."""
    columns = {mid: {k: sb[k] for k in sb.keys()} for mid, sb in policy_batches.items()}
    for lo in range(0, rows, size):
        hi = min(rows, lo + size)
        yield MultiAgentBatch(
            {
                mid: SampleBatch({k: v[lo:hi] for k, v in cols.items()})
                for mid, cols in columns.items()
            },
            env_steps=rows,
        )

"""The learner's own CPU time per update, measured in the learner during training.

Wall-clock timers of an update (RLlib's ``learner_thread_update_timer``) count the time the
learner's thread waited for a core: on a machine whose cores the env runners also use, an
update's wall-clock time says how crowded the machine was, not what an update costs. A
machine-independent learning cost, which a plan for another machine needs
(:mod:`analysis.transfer`'s learner ceiling), is the CPU time of the updating thread:
``time.thread_time()`` around each gradient update (forward pass, loss, backward pass,
optimizer step: RLlib's ``Learner._update``), summed over the learner's lifetime.

What it counts besides the update proper: the gradient noise scale's extra loss and backward
passes on the updates that measure it (:mod:`sweeps.engine.algorithms.noise_scale`, every
``grad_noise_scale_every`` updates), a cost the suite's learner pays in every run. What it
does not count: the learner connector's work on a batch before the update (in the
driver's thread for IMPALA and APPO, counted in the trial's ``driver_cpu_s``), and torch's
intra-op worker threads; the suite runs torch with one thread per driver CPU
(``num_cpus_for_main_process``, 1 by default), so with the defaults an update's tensor work
runs on the thread that is timed.

:class:`UpdateClockMixin` logs the sum under ``learners/__all_modules__/update_cpu_s`` (a
lifetime sum, seconds); :func:`sweeps.engine.algorithms.registry.extract_metrics` reads it as
``learner_cpu_s`` into ``progress.parquet`` (docs/results.md).
"""

from __future__ import annotations

import time

__all__ = ["UPDATE_CPU_KEY", "UpdateClockMixin", "clocked_learner_class"]

#: The metric's key under ``learners/__all_modules__`` (CPU seconds, lifetime sum).
UPDATE_CPU_KEY = "update_cpu_s"
#: RLlib's ``ray.rllib.core.ALL_MODULES``, spelled out so that neither importing this module
#: nor each update imports RLlib.
ALL_MODULES = "__all_modules__"


class UpdateClockMixin:
    """Mix into an RLlib ``Learner`` (before it) to sum the CPU seconds of the thread that runs
    each gradient update (``_update``: one call per minibatch), logged per update as a
    lifetime sum under ``(ALL_MODULES, UPDATE_CPU_KEY)``."""

    def _update(self, batch):
        start = time.thread_time()
        try:
            return super()._update(batch)
        finally:
            self.metrics.log_value(
                (ALL_MODULES, UPDATE_CPU_KEY), time.thread_time() - start, reduce="lifetime_sum"
            )


_CLASSES: dict[type, type] = {}


def clocked_learner_class(base: type) -> type:
    """``base`` (an RLlib Learner class) with :class:`UpdateClockMixin` mixed in, named
    ``Clocked<base>``; ``base`` itself when it has it already. Like
    :func:`~sweeps.engine.algorithms.noise_scale.noise_learner_class`, the class is not an
    attribute of this module, so Ray's cloudpickle sends it by value to a learner actor."""
    if issubclass(base, UpdateClockMixin):
        return base
    cls = _CLASSES.get(base)
    if cls is None:
        name = f"Clocked{base.__name__}"
        cls = type(name, (UpdateClockMixin, base), {"__module__": __name__, "__qualname__": name})
        _CLASSES[base] = cls
    return cls

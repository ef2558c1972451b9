"""Adaptive capping as one object: which running trial to stop, and which seeds not to run.

A sweep declares capping with :class:`sweeps.engine.sweep_spec.Capping` (``margin``, ``protect``; ``None``
turns it off). :class:`AdaptiveCapping` is that declaration at work in one run, and the one
place its rules live (docs/design.md, *adaptive capping*; Hutter, Hoos, Leyton-Brown and
Stuetzle, "ParamILS", JAIR 36, 2009, section 5):

- **stop**: a running trial whose elapsed wall-clock exceeds ``margin`` × the incumbent's TTT
  (the fastest configuration so far) cannot make its configuration the fastest by that margin;
  :meth:`AdaptiveCapping.check` stops it and remembers the cap (the recorder then records it as
  censored with ``censor_reason = "capped"``). Never: the baseline, the reference, the
  confirmation stage's trials and configurations matching ``protect``.
- **skip**: a configuration with more than half of its seeds capped runs no more of them
  (:func:`sweeps.engine.rundir.schema.skipped_seeds`); with the fail-fast rule (a trial that raised an error
  of the env's or the configuration's, :func:`sweeps.engine.rundir.schema.failed_seeds`) these are the seeds
  a run leaves unrun (:meth:`AdaptiveCapping.unrun_seeds`).

The run builds one and hands it to the Tune stopper (:class:`sweeps.engine.record.Capper`), the
recorder, the searcher (:class:`sweeps.engine.search.SeededSearch`) and the progress line
(:class:`sweeps.engine.record.SweepProgress`) through their constructors.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.rundir.schema import failed_seeds, skipped_seeds
from sweeps.engine.sweep_spec import Capping

__all__ = ["AdaptiveCapping"]


class AdaptiveCapping:
    """Adaptive capping in one run.

    Args:
        spec: the sweep's ``search.capping``; None: capping is off (no trial is stopped, no
            seed skipped for it; the fail-fast rule still applies).
        seeds: seeds per configuration of the search (``search.seeds``).

    Attributes:
        capped: trial id -> the cap (seconds) at which it was stopped, in this process.
    """

    def __init__(self, spec: Capping | None, seeds: int):
        self.spec = spec
        self.seeds = int(seeds)
        self.capped: dict[str, float] = {}

    @property
    def enabled(self) -> bool:
        """Whether running trials are capped."""
        return self.spec is not None

    def protected(self, config: dict[str, Any]) -> bool:
        """True for the baseline, the reference, a confirmation trial (it measures every seed
        to its end) and configs matching a ``protect`` entry."""
        if config.get("is_baseline") or config.get("is_reference"):
            return True
        if config.get("stage") == "confirm":
            return True
        protect = self.spec.protect if self.spec is not None else []
        return any(all(config.get(k) == v for k, v in entry.items()) for entry in protect)

    def check(
        self,
        trial_id: str,
        config: dict[str, Any],
        elapsed_s: float,
        reached: bool,
        incumbent_ttt_s: float | None,
    ) -> bool:
        """Whether to stop the running trial ``trial_id`` now (and remember its cap).

        Args:
            config: the trial's config (``is_baseline``, ``is_reference``, ``stage``, params).
            elapsed_s: seconds since its first attempt started.
            reached: whether it already reached the target (then it is never stopped).
            incumbent_ttt_s: the fastest configuration's median TTT so far (seconds), or None.
        """
        if not self.enabled or reached or incumbent_ttt_s is None or self.protected(config):
            return False
        cap = self.spec.margin * incumbent_ttt_s
        if elapsed_s > cap:
            self.capped[trial_id] = cap
            return True
        return False

    def skipped_seeds(self, rows: Any) -> dict[str, int]:
        """``{config_id: seeds not run}`` for the configurations capping settled
        (:func:`sweeps.engine.rundir.schema.skipped_seeds` on the recorded ``rows``)."""
        return skipped_seeds(rows, self.seeds)

    def unrun_seeds(self, rows: Any) -> dict[str, int]:
        """Every seed the run leaves unrun: capping's and the fail-fast rule's."""
        return {**self.skipped_seeds(rows), **failed_seeds(rows, self.seeds)}

"""Peak resident set size of a process, read without importing anything heavy.

Both the trial's process (:func:`sweeps.engine.trainable.process_peak_rss_mib`) and SEED's
light actors (:func:`sweeps.engine.algorithms.seed_actor.tree_peak_rss_mib`) read it; the
actors must not import torch or RLlib, so the reader lives here, beside nothing else.
"""

from __future__ import annotations

__all__ = ["vm_hwm_mib"]


def vm_hwm_mib(pid: int | str = "self") -> float | None:
    """Peak RSS of process ``pid`` in MiB: ``VmHWM`` of ``/proc/<pid>/status`` (Linux: the
    memory map's high-water mark, which writing ``5`` to ``/proc/<pid>/clear_refs`` resets).

    Returns None where it cannot be read (not Linux, the process has ended, no permission).
    """
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return None

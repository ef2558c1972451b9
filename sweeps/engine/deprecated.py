"""Old import paths of the sweep-file API, kept working: each re-exports :mod:`sweeps`' public
names with a :class:`DeprecationWarning` that names the new import.

A published README once showed ``from sweeps.spec import ...`` and later
``from sweeps.engine.spec import ...``; sweep files written from either still run. The names are
looked up through the module's ``__getattr__`` (PEP 562), so each import of one warns, not only
the first import of the module in a process: a sweep loader that records warnings while it
executes a sweep file sees them every time.
"""

from __future__ import annotations

import warnings
from typing import Any


class SweepAPIDeprecationWarning(DeprecationWarning):
    """A sweep file imported a name through an old path (:data:`OLD_PATHS`), ``old_path``."""

    def __init__(self, message: str, old_path: str):
        super().__init__(message)
        self.old_path = old_path


#: The old module paths a README showed for sweep files, oldest first.
OLD_PATHS = ("sweeps.spec", "sweeps.engine.spec")


def public_getattr(module: str):
    """A module ``__getattr__`` for the old path ``module``.

    A public name of :mod:`sweeps` is returned with a :class:`SweepAPIDeprecationWarning`
    naming the new import; another name the old module had (``Choice``, ``EVALUATION``: the
    models' internals, now in :mod:`sweeps.engine.sweep_spec`) is returned with a warning that
    it is not part of the sweep-file API; anything else raises :class:`AttributeError`.
    """

    def __getattr__(name: str) -> Any:
        import sweeps
        from sweeps.engine import sweep_spec

        if name == "__all__":
            return list(sweeps.__all__)
        if name in sweeps.__all__:
            warnings.warn(
                SweepAPIDeprecationWarning(
                    f"'{module}' is deprecated and will be removed: import from 'sweeps' instead "
                    f"(from sweeps import {name}, ...)",
                    module,
                ),
                stacklevel=2,
            )
            return getattr(sweeps, name)
        if not name.startswith("__") and hasattr(sweep_spec, name):
            warnings.warn(
                SweepAPIDeprecationWarning(
                    f"'{module}' is deprecated and will be removed, and {name!r} is not part of the "
                    f"sweep-file API (the public names: from sweeps import {', '.join(sweeps.__all__)})",
                    module,
                ),
                stacklevel=2,
            )
            return getattr(sweep_spec, name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__

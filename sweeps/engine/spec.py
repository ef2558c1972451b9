"""Deprecated: import a sweep file's names from :mod:`sweeps` (``from sweeps import Sweep``);
the models live in :mod:`sweeps.engine.sweep_spec`.

Kept so that sweep files written from an older README still run; each name imported from here
warns (:mod:`sweeps.engine.deprecated`).
"""

from sweeps.engine.deprecated import public_getattr

__getattr__ = public_getattr(__name__)

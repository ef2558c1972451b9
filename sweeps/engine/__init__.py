"""The engine that runs a sweep: the spec a sweep file declares (``spec.py``), its loading and
checks (``sweep_file.py``), the algorithms behind one vocabulary (``algorithms/``), the search
and its two stages (``search.py``, ``tuning.py``), a trial (``trainable.py``, ``evaluation.py``,
``reference.py``), what is recorded (``record.py``), the run directory it goes to (``rundir/``: file names,
schema, lock, resume checks, the object-storage mirror) and the exit codes every command
shares (``cli.py``).

The sweep files beside this package (``sweeps/*.py``) are declarations only; the command line
that runs them is ``sweeps/run.py``.
"""

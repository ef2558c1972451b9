"""Sweep declarations (``sweeps/*.py``: published studies and demos; one-off tuning runs in
``sweeps/experiments/``), the command line that runs them (``python -m sweeps.run FILE``) and
the engine behind it (``sweeps.engine``)."""

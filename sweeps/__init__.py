"""Declare a sweep: the public face of a sweep file.

A sweep file imports what it needs from here and nothing else::

    from sweeps import Budget, Search, Sweep, Target, choice, loguniform

    SWEEP = Sweep(name="my_study", env="CartPole-v1", algorithms=["PPO", "DQN"],
                  search_space={"num_env_runners": choice([1, 2])},
                  target=Target(value=450), budget=Budget(time_s=120))

These names are the stable API of a sweep file; everything under ``sweeps.engine`` is the
engine's and may move (an old import path keeps working with a deprecation notice first). The
fields of each model, with their meaning, type, default and units:
``python -m sweeps.run --explain FIELD``; the JSON Schema of a YAML sweep:
``python -m sweeps.run --schema``.

Beside this package's public face live the published sweep files (``sweeps/*.py``, one-off
tuning runs in ``sweeps/experiments/``), the command line that runs them
(``python -m sweeps.run FILE``) and the engine behind it (``sweeps.engine``).
"""

from sweeps.engine.sweep_spec import (
    Budget,
    Capping,
    Confirm,
    Evaluation,
    Search,
    Stall,
    Sweep,
    Target,
    choice,
    loguniform,
    randint,
    uniform,
)

__all__ = [
    "Budget",
    "Capping",
    "Confirm",
    "Evaluation",
    "Search",
    "Stall",
    "Sweep",
    "Target",
    "choice",
    "loguniform",
    "randint",
    "uniform",
]

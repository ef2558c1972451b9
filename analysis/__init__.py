"""analysis: what a finished (or partial) results directory says about scaling.

Reads the files of ``results/<sweep>/<run_id>/`` (schema: ``docs/results.md``) and never Ray:

- :mod:`analysis.load`     -- :func:`~analysis.load.load_results` (trials, progress, spec,
  environment, Optuna study) with one-line errors for bad input;
- :mod:`analysis.metrics`  -- per-trial time-to-target recomputed from ``progress.parquet``
  (so a changed target can be re-analysed without re-running);
- :mod:`analysis.stats`    -- per-configuration statistics across seeds (bootstrap CIs,
  Kaplan-Meier median for censored runs, IQM, olympic mean), speedup, parallel efficiency and
  the throughput x sample-efficiency decomposition;
- :mod:`analysis.scaling`  -- Amdahl and Universal Scalability Law fits;
- :mod:`analysis.plan`     -- capacity plan on Azure VM sizes (``python -m analysis.plan``);
- :mod:`analysis.report`   -- the self-contained HTML report (``python -m analysis.report``);
- :mod:`analysis.synthetic` -- synthetic results directories for tests and demos.
"""

"""Obtain a Ray cluster and hand its address to the sweep runner.

* :mod:`cluster.local` -- ``ray_session``: an embedded local Ray, or an existing cluster;
* :mod:`cluster.local_multinode` -- a real multi-node Ray on 127.0.0.1 (tests, demos);
* :mod:`cluster.bootstrap` -- the processes of an Azure ML MPI job form one Ray cluster;
* :mod:`cluster.azure` -- compute, submit, status, download, cancel on Azure ML;
* :mod:`cluster.azure_logging` -- trial metrics to the Azure ML run through MLflow;
* :mod:`cluster.nodes`, :mod:`cluster.auth` -- Ray node processes we own; the auth token.

See docs/cluster.md.
"""

"""The trial's process set-up: Tune's trainable actors start in Ray's ready worker processes
(no runtime env of Tune's own), and the libraries RLlib loads lazily are loaded before the
trial's clock starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest


@pytest.mark.ray
@pytest.mark.parallel
def test_trial_actor_has_no_runtime_env_of_tunes_own():
    """A trainable actor built by Tune's class cache runs with the job's (empty) runtime env, so
    it and the env runners it creates can take Ray's prestarted worker processes."""
    import ray
    from conftest import init_local_ray
    from ray.tune.execution.class_cache import _ActorClassCache

    from sweeps.engine.trainable import reuse_prestarted_workers

    class Probe:
        def runtime_env(self):
            return ray.get_runtime_context().get_runtime_env_string(), os.getpid()

    reuse_prestarted_workers()
    init_local_ray()
    try:
        actor = _ActorClassCache().get(Probe).options(num_cpus=1).remote()
        env, _ = ray.get(actor.runtime_env.remote(), timeout=60)
    finally:
        ray.shutdown()
    assert "PL_DISABLE_FORK" not in env, env
    assert env in ("{}", ""), env


def test_preload_imports_what_rllib_and_torch_load_lazily():
    """``scipy.signal`` (RLlib's prioritized replay, first ``sample()``) and ``torch._dynamo``
    (torch's first optimizer, ~1.1 s) are imported by ``preload_libraries`` in a fresh
    interpreter, before any trial's clock; building an optimizer afterwards imports nothing."""
    code = textwrap.dedent("""\
        import sys
        from sweeps.engine.trainable import preload_libraries
        assert "scipy.signal" not in sys.modules
        preload_libraries()
        assert {"scipy.signal", "torch", "torch._dynamo",
                "ray.rllib.algorithms.algorithm"} <= set(sys.modules)
        import torch
        before = set(sys.modules)
        torch.optim.Adam(torch.nn.Linear(4, 2).parameters(), lr=1e-3)
        assert set(sys.modules) == before, sorted(set(sys.modules) - before)
        """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_reused_trial_process_starts_like_a_fresh_one():
    """Tune reuses a trial's actor process for the next trial (``reuse_actors=True``):
    ``begin_trial_in_process`` restores torch's thread count that a reference trial set,
    collects the previous trial's garbage (reference cycles included, though the process's
    older objects are frozen out of the collector), and resets the process's peak RSS, so a
    trial's ``peak_rss_mib`` is its own, not the largest of the trials before it in that
    process."""
    code = textwrap.dedent("""\
        import gc
        import os
        import weakref
        import numpy as np
        import torch
        from sweeps.engine.trainable import begin_trial_in_process, process_peak_rss_mib
        begin_trial_in_process()  # the process's first trial
        frozen = gc.get_freeze_count()
        assert frozen > 10_000, frozen  # torch's and the suite's objects, out of collections
        threads = torch.get_num_threads()
        assert os.environ["TUNE_FUNCTION_THREAD_TIMEOUT_S"] == "30"
        torch.set_num_threads(threads + 1)  # what the previous trial left behind
        class Node:
            pass
        cycle = Node()
        cycle.self = cycle  # garbage only a collection frees
        dead = weakref.ref(cycle)
        del cycle
        big = np.ones(400 * 2**20 // 8)  # 400 MiB touched
        del big
        high = process_peak_rss_mib()
        gc.disable()  # no automatic collection: the reset below must free the cycle itself
        begin_trial_in_process()  # the next trial in the same process
        assert dead() is None
        assert torch.get_num_threads() == threads
        assert process_peak_rss_mib() < high - 300, (process_peak_rss_mib(), high)
        """)
    # a parent holding 500 MiB: getrusage's ru_maxrss would start the child at that peak
    ballast = np.ones(500 * 2**20 // 8)
    subprocess.run([sys.executable, "-c", code], check=True)
    del ballast


def test_cold_every_makes_every_kth_trial_of_a_shape_cold_and_charges_the_median():
    """``Search(cold_every=3)``: trials 1, 4, 7 of a shape are cold; a warm trial is charged the
    median of the cold start-ups so far, never its own; another shape counts apart; without
    ``cold_every`` only the first is cold."""
    from sweeps.engine.warm import COLD, WARM, ShapeStarts

    starts, a, b = ShapeStarts(), ("A",), ("B",)
    kinds, charges = [], []
    cold_startups = iter([5.0, 9.0, 6.0])
    for _ in range(7):
        kind = COLD if (not starts.cold.get(a) or starts.cold_due(a, 3)) else WARM
        kinds.append(kind)
        charges.append(starts.started(a, kind, next(cold_startups) if kind == COLD else 0.1))
    assert kinds == [COLD, WARM, WARM, COLD, WARM, WARM, COLD]
    assert charges == [5.0, 5.0, 5.0, 7.0, 7.0, 7.0, 6.0]
    assert starts.started(b, COLD, 2.0) == 2.0 and not starts.cold_due(b, 3)
    for _ in range(10):
        starts.started(b, WARM, 0.1)
    assert not starts.cold_due(b, None) and starts.cold_due(b, 3)


def test_cold_every_is_a_search_field_checked_on_load():
    import pytest
    from pydantic import ValidationError

    from sweeps import Search

    assert Search(cold_every=4).cold_every == 4 and Search().cold_every is None
    with pytest.raises(ValidationError):
        Search(cold_every=0)


def test_a_sequential_sweeps_trials_share_the_largest_placement_group_that_holds_them_all():
    """One placement group for every trial of a sequential sweep on one node (so Tune keeps
    one actor and its parked env runners for the search and the confirmation): the largest
    request, when every other (the reference's one CPU included) fits in it; a trial that
    does not fit keeps its own; concurrent trials, --cold or several nodes keep their own."""
    from sweeps.engine.placement import shared_bundles, trial_setup
    from sweeps.engine.sweep_file import load_sweep, sweep_target
    from sweeps.engine.trainable import bundles_fit, resources_for

    path = "sweeps/cabs_scaling.py"
    sweep = load_sweep(path)
    setup = trial_setup(sweep, sweep_target(sweep, path), [{"CPU": 2.0}])
    assert setup.shared_bundles == [{"CPU": 1.0}] + [{"CPU": 0.125}] * 8
    resources = resources_for(setup)
    fixed = dict(sweep.fixed)  # num_cpus_per_env_runner: 1/8
    for config in (
        {"algorithm": "APEX", "num_env_runners": 1, "seed": 0, **fixed},
        {"algorithm": "IMPALA", "num_env_runners": 4, "train_batch_size": 512, **fixed},
        {"algorithm": "SB3-DQN", "is_reference": True, "seed": 0},
    ):
        assert resources(config).bundles == setup.shared_bundles, config
    # a trial asking for more than the shared group keeps its own request
    bigger = {"algorithm": "APEX", "num_env_runners": 12, "seed": 0, **fixed}
    assert len(resources(bigger).bundles) == 13
    assert bundles_fit([{"CPU": 1.0}], [{"CPU": 1.0}, {"CPU": 0.5}])
    assert not bundles_fit([{"CPU": 1.0}, {"GPU": 1.0}], [{"CPU": 1.0}, {"CPU": 1.0}])
    assert not bundles_fit([{"CPU": 2.0}], [{"CPU": 1.0}, {"CPU": 1.0}])
    # on several nodes each trial keeps its own group: a lost node must not strand them all
    assert trial_setup(sweep, sweep_target(sweep, path), [{"CPU": 2.0}] * 2).shared_bundles is None
    search = sweep.search
    for changed in (
        search.model_copy(update={"max_concurrent": 2}),
        search.model_copy(update={"warm_trials": False}),
    ):
        assert shared_bundles(sweep.model_copy(update={"search": changed}), setup) is None

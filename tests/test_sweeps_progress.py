"""The sweep's progress line (sweeps.engine.record.SweepProgress)."""

from __future__ import annotations

from sweeps.engine.record import SweepProgress


def test_progress_line_counts_incumbent_elapsed_and_eta() -> None:
    p = SweepProgress(expected=10, budget_s=60.0, max_concurrent=1, start=1000.0)
    line = p.line(0, [], [], None, now=1005.0)
    assert line == "0/10 trials done · no incumbent yet · elapsed 5s · at most 10m00s"
    # 4 done (median 20 s), one running for 5 s, 5 waiting:
    # ETA ~ 5 x 20 + (20 - 5) = 115 s; at most 5 x 60 + (60 - 5) = 355 s
    line = p.line(4, [10.0, 20.0, 20.0, 30.0], [5.0], 12.34, now=1090.0)
    assert line == (
        "4/10 trials done · incumbent TTT 12.3 s · elapsed 1m30s · ETA ~1m55s at most 5m55s"
    )
    # two at once halve the ETA; a budget in env steps only has no upper bound
    two = SweepProgress(expected=10, budget_s=None, max_concurrent=2, start=1000.0)
    assert two.line(4, [10.0, 20.0, 20.0, 30.0], [5.0], None, now=1090.0).endswith("ETA ~58s")
    assert p.line(10, [1.0] * 10, [], 3.0, now=4700.0) == (
        "10/10 trials done · incumbent TTT 3.0 s · elapsed 1h01m"
    )


def test_a_resumed_sweep_counts_earlier_trials_as_done() -> None:
    p = SweepProgress(expected=6, budget_s=30.0, max_concurrent=1, start=0.0)
    # 3 recorded by an earlier run, 1 by this one (10 s): 2 left
    assert p.line(4, [10.0], [], None, now=20.0).endswith("ETA ~20s at most 1m00s")


def test_seeds_skipped_by_capping_leave_the_expected_count() -> None:
    """A configuration with 2 of its 3 seeds capped runs no third seed: 9 trials expected,
    not 10, and the line says why."""
    from sweeps import Capping
    from sweeps.engine.capping import AdaptiveCapping

    p = SweepProgress(
        expected=10,
        budget_s=60.0,
        max_concurrent=1,
        start=0.0,
        capping=AdaptiveCapping(Capping(), 3),
    )
    rows = [{"config_id": "a", "censor_reason": "capped"}] * 2 + [
        {"config_id": "base", "censor_reason": "capped", "is_baseline": True}
    ] * 3
    skipped = p.skipped_in(rows)
    assert skipped == 1
    assert p.line(5, [10.0] * 5, [], None, now=60.0, skipped=skipped).startswith(
        "5/9 trials done (1 seed(s) skipped) · no incumbent yet · elapsed 1m00s · ETA ~40s"
    )
    assert (
        SweepProgress(expected=10, budget_s=60.0, max_concurrent=1, start=0.0).skipped_in(rows) == 0
    )  # no capping given: nothing counted as skipped


def test_a_trial_line_says_why_it_was_censored_and_when_it_sampled_nothing() -> None:
    """A trial capped before its env runners sampled (APEX with 8 env runners on 2 cores,
    whose cold start-up outlasted twice the incumbent's TTT) reads as capped in its start-up,
    not as a trial that ran at 0 env steps/s; a trial that used its budget says censored."""
    from rich.text import Text

    from sweeps.engine.record import trial_line

    row = {
        "algorithm": "APEX", "num_env_runners": 8, "is_reference": False, "seed": 0,
        "train_batch_size": 64.0, "stage": "search", "status": "censored",
        "censor_reason": "capped", "elapsed_s": 25.2, "startup_s": 25.196, "start": "cold",
        "total_env_steps": 0, "best_return": -630.9, "env_steps_per_s": 0.0,
        "oversubscribed": False, "env_restarts": 0, "env_runner_restarts": 0,
    }  # fmt: skip

    def plain(r: dict) -> str:
        return Text.from_markup(trial_line(r, 5)).plain

    assert plain(row) == (
        "[  5] APEX    env_runners=8 batch=64 seed=0  censored (> 25 s, capped)  "
        "no env step sampled (start-up 25.2 s)"
    )
    ran = {**row, "censor_reason": "budget", "elapsed_s": 45.1, "startup_s": 1.4}
    ran.update(total_env_steps=66533, best_return=2817.36, env_steps_per_s=1475.4)
    assert plain(ran).endswith("censored (> 45 s)  best return 2817.4  1475 env steps/s")
    reached = {**ran, "status": "reached", "time_to_target_s": 36.58, "stage": "confirm"}
    reached.update(start="warm", startup_s=0.51, cold_startup_s=25.2)
    assert plain(reached) == (
        "[  5] APEX    env_runners=8 batch=64 seed=0 (confirm)  TTT 36.6 s  best return "
        "2817.4  1475 env steps/s  warm: started in 0.5 s, charged 25.2 s"
    )
    # an error's own brackets are its text, not the console's markup
    failed = {**ran, "status": "error", "error": "OSError: [Errno 28] No space left [bold]"}
    assert "error: OSError: [Errno 28] No space left [bold]" in plain(failed), plain(failed)

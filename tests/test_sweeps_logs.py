"""sweeps.engine.logs: what the command line hides of Ray's and Tune's logging."""

from __future__ import annotations

import logging


def test_a_failed_experiment_state_save_is_one_line_without_its_traceback(capsys):
    """Tune's background save of its experiment state can race with its own state files (a
    file renamed between the copy's listing and its read); the user sees one line naming the
    error, no traceback, and other records of that logger keep theirs."""
    from sweeps.engine.logs import _OneLineSyncError

    logger = logging.getLogger("test.experiment_state")
    logger.propagate = False
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    logger.addFilter(_OneLineSyncError())
    try:
        try:
            raise FileNotFoundError(2, "Failed to open local file '.x-tmp-searcher-state'")
        except FileNotFoundError:
            logger.error(
                "Saving experiment state to storage at '%s' failed with exception: ",
                "/runs/x",
                exc_info=True,
            )
            logger.error("something else", exc_info=True)
    finally:
        logger.removeHandler(handler)
    err = capsys.readouterr().err.splitlines()
    first = err[0]
    assert first.startswith("Saving experiment state to storage at '/runs/x' failed")
    assert "FileNotFoundError" in first and "one save behind" in first
    assert err[1] == "something else" and err[2].startswith("Traceback")  # others unchanged

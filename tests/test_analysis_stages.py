"""Two stages in one run: the analysis judges on the confirmation stage alone and shows the
search stage as exploratory (docs/design.md, *stage*)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load import load_results
from analysis.report import write_report
from analysis.study import analyse
from analysis.synthetic import write_synthetic_results
from sweeps.engine import rundir
from sweeps.engine.rundir.schema import write_parquet


def two_stage_run(path, search_speed: float = 10.0):
    """A synthetic run whose every trial is repeated as a confirmation trial on seeds 1000+;
    the search stage's copies reach the target ``search_speed`` times sooner (the search
    flattered itself), the confirmation's keep the synthetic curves."""
    run = write_synthetic_results(path, seeds=3, env_runners=(1, 2, 4), with_optuna=False)
    trials, progress = (
        pd.read_parquet(run / rundir.TRIALS),
        pd.read_parquet(run / rundir.PROGRESS),
    )
    search_t, search_p = trials.copy(), progress.copy()
    search_t["trial_id"] = "s" + search_t["trial_id"].astype(str)
    search_p["trial_id"] = "s" + search_p["trial_id"].astype(str)
    search_p["wall_time_s"] = search_p["wall_time_s"] / search_speed
    search_t["time_to_target_s"] = search_t["time_to_target_s"] / search_speed
    search_t["stage"] = search_p["stage"] = "search"
    trials["stage"], progress["stage"] = "confirm", "confirm"
    trials["seed"] = trials["seed"] + 1000
    write_parquet(pd.concat([search_t, trials], ignore_index=True), run / rundir.TRIALS)
    write_parquet(pd.concat([search_p, progress], ignore_index=True), run / rundir.PROGRESS)
    return run


def test_headline_numbers_come_from_the_confirmation_when_the_stages_disagree(tmp_path):
    plain = analyse(
        load_results(
            write_synthetic_results(
                tmp_path / "plain", seeds=3, env_runners=(1, 2, 4), with_optuna=False
            )
        )
    )
    study = analyse(load_results(two_stage_run(tmp_path / "staged")))
    assert set(study.tm["stage"]) == {"confirm"} and (study.tm["seed"] >= 1000).all()
    # the summary, speedups and plan are the confirmation's: those of the run without a search
    confirm = study.summary.set_index("config_id")["ttt_s"]
    assert np.allclose(confirm, plain.summary.set_index("config_id").loc[confirm.index, "ttt_s"])
    assert np.allclose(
        study.speed["speedup"].astype(float), plain.speed["speedup"].astype(float), equal_nan=True
    )
    assert pd.Series(study.plan.answer).equals(pd.Series(plain.plan.answer))
    # the search stage, 10x faster, is kept apart and labelled exploratory
    explored = study.search_summary.set_index("config_id")["ttt_s"]
    assert np.allclose(explored * 10, confirm.loc[explored.index], rtol=0.2)
    assert "confirmation stage" in study.stage_note and "1000-1002" in study.stage_note
    page = write_report(study.res.path).read_text()
    assert 'id="stage-note"' in page and 'id="search-stage"' in page
    assert "Search stage (exploratory)" in page
    from analysis.publish import publish

    md = publish(study.res.path, tmp_path / "docs", figures=()).markdown
    assert "- **Stages**: Every number below comes from the confirmation stage" in md


def test_a_run_without_a_confirmation_is_judged_on_its_search(tmp_path):
    study = analyse(
        load_results(write_synthetic_results(tmp_path / "r", seeds=3, with_optuna=False))
    )
    assert study.search_summary is None and study.stage_note is None
    assert set(study.tm["stage"]) == {"search"}

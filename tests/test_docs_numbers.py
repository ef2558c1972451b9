"""Study pages quote their runs' numbers only inside generated regions (analysis.pages), and
every region matches a fresh analysis of the run it cites: a number on a page cannot drift
from its data."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.pages import fill_page, regions_of, stale_regions
from analysis.synthetic import write_synthetic_results

ROOT = Path(__file__).resolve().parent.parent
PAGES = [p for p in sorted((ROOT / "docs").glob("*.md")) if regions_of(p)]


def _assert_run_is(sweep, run: Path) -> None:
    """The run's recorded spec.json is ``sweep`` resolved (what the seeds, the resolved
    target and the file's path add left out): the command a page prints beside the run
    reproduces it."""
    import json

    recorded = json.loads((run / "spec.json").read_text())
    resolved = json.loads(sweep.model_dump_json())
    for key in ("target", "schema_version", "source_file", "seeds"):
        recorded.pop(key, None)
        resolved.pop(key, None)
    # runs recorded before warm trials existed ran every trial cold; their spec has no field
    if "warm_trials" not in recorded.get("search", {}):
        resolved.get("search", {}).pop("warm_trials", None)
    # ... and before cold_every existed only a shape's first trial was cold: its default
    if (
        "cold_every" not in recorded.get("search", {})
        and resolved.get("search", {}).get("cold_every") is None
    ):
        resolved.get("search", {}).pop("cold_every", None)
    assert resolved == recorded, run


def test_the_study_pages_quote_their_runs_through_generated_regions():
    names = {p.name for p in PAGES}
    assert {"cabs_scaling.md", "latency_scaling.md"} <= names, names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_generated_number_matches_the_run_it_cites(page, analysed_runs):
    assert stale_regions(page, analysed_runs.studies) == [], (
        f"regenerate with: python -m analysis.pages {page.relative_to(ROOT)}"
    )


def test_a_number_edited_by_hand_is_caught_and_refilled(tmp_path):
    write_synthetic_results(tmp_path / "data" / "run", seeds=3, with_optuna=False)
    page = tmp_path / "study.md"
    page.write_text(
        "# A study\n\nIntro.\n\n<!-- generated: headline from data/run -->\n"
        "<!-- end generated -->\n\nMore prose.\n"
        "<!-- generated: answer from data/run -->\nold\n<!-- end generated -->\n"
    )
    assert fill_page(page) == 2 and stale_regions(page) == []
    text = page.read_text()
    assert text.startswith("# A study\n\nIntro.\n") and "More prose." in text
    assert "| configuration | reached | median TTT [95% CI] | olympic mean |" in text
    # change one digit of one TTT: the check names the region
    i = next(i for i, ch in enumerate(text) if ch.isdigit() and " s [" in text[i : i + 12])
    page.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :])
    assert stale_regions(page) == ["headline from data/run"]


def test_the_device_pages_40_ms_numbers_match_the_log_they_come_from():
    """docs/device_16cpu.md quotes a run whose only raw data is its sweep log (the lease ended
    before its files were packed): the TTTs it quotes are the log's."""
    import re

    log = (ROOT / "docs/data/cabs_cpu_40ms_16cpu/20261126-005923/sweep.log").read_text()
    ttt = {}
    for algo, t in re.findall(r"\] (\S+)\s+env_runners=\d+.*?TTT ([\d.]+) s", log):
        ttt.setdefault(algo, []).append(t)
    page = (ROOT / "docs/device_16cpu.md").read_text()
    assert f"| SB3-DQN reference | {ttt['SB3-DQN'][0]} s, {ttt['SB3-DQN'][1]} s |" in page
    assert f"| IMPALA, 15 env runners | {ttt['IMPALA'][0]} s (one seed) |" in page


def test_the_device_pages_apex_pace_and_seed_numbers_match_their_data():
    """docs/device_16cpu.md's APEX section quotes a benchmark (learner pace at 1 and 15 actors)
    and single trials beside its generated tables: each number is the data's."""
    import json

    import pandas as pd

    page = (ROOT / "docs/device_16cpu.md").read_text()
    bench = json.loads((ROOT / "benchmarks/results/bench_apex_actors_16cpu_gpu.json").read_text())
    assert bench["learner_gpus"] == 1
    for layout in ("driver", "shard"):
        one, many = bench["points"][f"{layout}/1"][0], bench["points"][f"{layout}/15"][0]
        u1, u15 = one["learner_updates_per_s"], many["learner_updates_per_s"]
        row = (
            f"| {u1:.0f} updates/s | {u15:.0f} updates/s | {u15 / u1:.2f}x | "
            f"{one['replay_ratio']:.1f}, {many['replay_ratio']:.1f} |"
        )
        assert row in page, row
    ttt = {}
    for run in (
        "cabs_latency_apex_16cpu/20261126-101051",
        "cabs_latency_apex_16cpu_n15/20261126-101750",
    ):
        t = pd.read_parquet(ROOT / "docs/data" / run / "trials.parquet")
        seed0 = t[(t["num_env_runners"] == 15) & (t["seed"] == 0)]
        ttt[run] = float(seed0["time_to_target_s"].iloc[0])
    first, second = ttt.values()
    assert (
        f"reached at {first:.1f} s in the first command and\n  {second:.1f} s in the second" in page
    )
    p = pd.read_parquet(ROOT / "docs/data/cabs_latency_apex_16cpu/20261126-101051/progress.parquet")
    t = pd.read_parquet(ROOT / "docs/data/cabs_latency_apex_16cpu/20261126-101051/trials.parquet")
    ones = t.loc[t["num_env_runners"] == 1, "trial_id"]
    ratio = p[p["trial_id"].isin(ones)].groupby("trial_id")["replay_ratio"].last().median()
    assert f"replay ratio rose to ~{ratio:.0f}" in page, ratio


def test_the_latency_pages_apex_sentences_match_the_confirmation_run(analysed_runs):
    """docs/latency_scaling.md's sentences on APEX's confirmation run (seeds 3-7) quote the
    run: seeds reached per N, and the start-up and median TTT at 16 env runners."""
    import re

    import pandas as pd

    from analysis.pages import render

    run = "docs/data/cabs_latency_apex_confirm/20261126-103351"
    page = (ROOT / "docs/latency_scaling.md").read_text()
    t = pd.read_parquet(ROOT / run / "trials.parquet")
    reached = t.groupby("num_env_runners")["status"].apply(lambda s: (s == "reached").sum())
    seeds = t.groupby("num_env_runners").size()
    assert reached[8] == seeds[8] == reached[16] == seeds[16] == 5
    assert f"({reached[8]}/{seeds[8]} each)" in page
    assert f"whose median was not reached ({reached[4]}/{seeds[4]})" in page
    row = next(
        line
        for line in render("components", ROOT / run, analysed_runs.studies).splitlines()
        if line.startswith("| APEX, 16 env runner(s)")
    )
    startup = float(row.split("|")[2])
    ttt = re.search(r"\| ([\d.]+) s \[", row).group(1)
    assert f"a median {startup:.0f} s of the {ttt} s" in page, row


def test_the_device_pages_n15_sweep_file_resolves_to_the_run_it_cites():
    """docs/device_16cpu.md gives ``sweeps/cabs_latency_apex_16cpu_n15.py`` as the command of
    a run made from the grid file with overrides: the file resolves to that run's spec.json."""
    from sweeps.cabs_latency_apex_16cpu_n15 import SWEEP

    _assert_run_is(SWEEP, ROOT / "docs/data/cabs_latency_apex_16cpu_n15/20261126-101750")


def test_the_break_even_runs_are_the_sweep_file_at_their_env_costs():
    """docs/break_even.md's three runs are ``sweeps/cabs_break_even.py`` with ``--env-config
    step_latency_ms=C``: each run's spec.json is the file's sweep with that one key changed."""
    from sweeps.cabs_break_even import SWEEP

    for run, cost in (("20261126-131202", 4), ("20261126-131653", 30), ("20261126-132828", 60)):
        at_cost = SWEEP.model_copy(
            update={"env_config": {**SWEEP.env_config, "step_latency_ms": cost}}
        )
        _assert_run_is(at_cost, ROOT / "docs/data/cabs_break_even" / run)


LAYOUT_RUNS = {  # env cost (ms per step) -> run of sweeps/cabs_break_even_layout.py
    4: "20261128-093037",
    30: "20261128-093427",
    60: "20261128-094222",
    120: "20261128-095552",
}


def test_the_layout_break_even_runs_are_the_sweep_file_at_their_costs_on_their_own_seeds():
    """docs/break_even.md's layout study is ``sweeps/cabs_break_even_layout.py`` run with
    ``--env-config step_latency_ms=C --first-seed F``: each run's spec.json is the file's sweep
    with those two changed, and no held-out run shares a seed with the fit (4 ms) run or with
    another held-out run."""
    import pandas as pd

    from sweeps.cabs_break_even_layout import SWEEP

    runs = ROOT / "docs/data/cabs_break_even_layout"
    seeds = {}
    for cost, run in LAYOUT_RUNS.items():
        first = {4: 100, 30: 110, 60: 120, 120: 130}[cost]
        at_cost = SWEEP.model_copy(
            update={
                "env_config": {**SWEEP.env_config, "step_latency_ms": cost},
                "search": SWEEP.search.model_copy(update={"first_seed": first}),
            }
        )
        _assert_run_is(at_cost, runs / run)
        seeds[cost] = set(pd.read_parquet(runs / run / "trials.parquet")["seed"])
        assert seeds[cost] == set(range(first, first + 5)), cost
    costs = sorted(seeds)
    for i, a in enumerate(costs):
        for b in costs[i + 1 :]:
            assert not seeds[a] & seeds[b], (a, b)


def test_the_break_even_pages_layout_sentences_match_its_runs(analysed_runs):
    """The prose of docs/break_even.md's layout study says what its runs show: the best
    layout's break-even interval lies under 10 ms, both 64-env layouts beat one process at
    every held-out cost with intervals above 1 (at 120 ms above 5x, lower ends above 3), the
    reference is predicted slower than measured at every cost (its held-out seeds needed fewer
    env steps), SEED's is the model's largest miss, too slow at 120 ms, where its overhead per
    env step measured lower than at the fit, and IMPALA's is within about 5 %."""
    from analysis.break_even import break_even_rows, held_out_rows, measured_parts

    runs = ROOT / "docs/data/cabs_break_even_layout"
    fit = analysed_runs(runs / LAYOUT_RUNS[4])
    held = [analysed_runs(runs / LAYOUT_RUNS[c]) for c in (30, 60, 120)]
    rows = break_even_rows(fit, [])
    best = rows[~rows["reference"]].sort_values("break_even_ms").iloc[0]
    assert best["algorithm"] == "IMPALA" and best["break_even_high_ms"] < 10
    check = held_out_rows(fit, held)
    dist, ref = check[~check["reference"]], check[check["reference"]]
    assert (dist["abs_speedup_low"] > 1).all() and (dist["measured_beats"] == "yes").all()
    at120 = dist[dist["env_cost_ms"] == 120]
    assert (at120["abs_speedup"] > 5).all() and (at120["abs_speedup_low"] > 3).all()
    assert (ref["ttt_error"] > 0).all()
    ref_fit, parts_fit = measured_parts(fit)
    for h in held:
        assert measured_parts(h)[0].steps < ref_fit.steps
    worst = dist.loc[dist["ttt_error"].abs().idxmax()]
    assert worst["algorithm"] == "SEED" and worst["env_cost_ms"] == 120 and worst["ttt_error"] > 0
    seed_fit = next(p for p in parts_fit if p.algorithm == "SEED")
    seed_120 = next(p for p in measured_parts(held[-1])[1] if p.algorithm == "SEED")
    assert seed_120.overhead_s < seed_fit.overhead_s and seed_120.steps < seed_fit.steps
    assert max(p.overhead_s for p in parts_fit) == seed_fit.overhead_s
    assert (dist[dist["algorithm"] == "IMPALA"]["ttt_error"].abs() < 0.06).all()
    page = " ".join((ROOT / "docs/break_even.md").read_text().split())
    assert "whole interval lies under 10 ms" in page
    assert "predicted within about 5 % at every cost" in page


def test_the_break_even_pages_sentences_match_its_runs(analysed_runs):
    """docs/break_even.md's sentences quote the fit run's parts and the held-out cells: the
    break-even of 8 and 16 env runners, the prediction errors, the 60 ms speedup, the env
    steps against the reference's, the start-up of 16 env runners and the speedup's bound."""
    from analysis.break_even import held_out_rows, measured_parts

    page = " ".join((ROOT / "docs/break_even.md").read_text().split())
    runs = ROOT / "docs/data/cabs_break_even"
    fit = analysed_runs(runs / "20261126-131202")
    held = [analysed_runs(runs / r) for r in ("20261126-131653", "20261126-132828")]
    rows = held_out_rows(fit, held)
    dist = rows[~rows["reference"]].set_index(["env_cost_ms", "num_env_runners"])
    be = dist.groupby(level="num_env_runners")["break_even_ms"].first()
    assert (
        f"break-even at ~{be[16]:.0f} ms per env step and 8 env runners' at ~{be[8]:.0f} ms" in page
    )
    lo, hi = (
        round(100 * e) for e in (rows["ttt_error"].abs().min(), rows["ttt_error"].abs().max())
    )
    assert f"predicts the held-out costs within {hi} %" in page
    assert f"lies {lo}-{hi} % from the measured median" in page
    c60 = dist.loc[(60.0, 16)]
    assert (
        f"measured {c60['abs_speedup']:.2f}x [{c60['abs_speedup_low']:.2f}, "
        f"{c60['abs_speedup_high']:.2f}] against the predicted "
        f"{c60['predicted_abs_speedup']:.2f}x"
    ) in page
    ref, parts = measured_parts(fit)
    p16 = next(p for p in parts if p.num_env_runners == 16)
    assert f"{p16.steps / ref.steps:.1f}x the reference's env steps" in page
    assert f"take {p16.startup_s:.0f} s to start" in page
    bound = 16 * ref.steps / p16.steps
    assert f"16 x {ref.steps:,.0f} / {p16.steps:,.0f} = {bound:.1f}x" in page
    crossover = p16.startup_s * p16.lanes / p16.steps * 1000  # start-up = env cost term
    assert f"start-up up to ~{crossover:.0f} ms per step" in page
    # the cell beyond, on fresh seeds: the first speedup whose interval lies above 1
    far = analysed_runs(ROOT / "docs/data/cabs_break_even_120ms/20261126-140710")
    c120 = held_out_rows(fit, [far]).set_index("num_env_runners")
    assert set(far.tm["seed"]) == {3, 4, 5, 6, 7}
    r16, r0 = c120.loc[16], c120.loc[0]
    assert r16["measured_beats"] == "yes"
    assert (
        f"120 ms per step, {r16['abs_speedup']:.2f}x [{r16['abs_speedup_low']:.2f}, "
        f"{r16['abs_speedup_high']:.2f}]"
    ) in page
    assert f"The model predicted {r16['predicted_abs_speedup']:.2f}x there" in page
    assert (
        r16["ttt_error"] < 0
        and f"missed 16 env runners' TTT by {100 * r16['ttt_error']:.0f} %" in page
    )
    assert f"+{100 * r0['ttt_error']:.0f} % for it" in page


def test_the_transfer_pages_sentences_match_its_runs(analysed_runs):
    """docs/transfer.md's sentences quote the one-core -> two-core check: start-up and sampling
    rate predicted against measured, the CPU per env step of 2 env runners on each machine,
    the reference's env steps per seed set, the TTT error and the absolute speedups; the runs
    are the sweep files at one core and two."""
    import json

    from analysis.break_even import measured_parts
    from analysis.load import load_results
    from analysis.transfer import Machine, _startup_line, check_rows, transfer

    page = " ".join((ROOT / "docs/transfer.md").read_text().split())
    one_dir = ROOT / "docs/data/cabs_transfer/20261126-171605"
    two_dir = ROOT / "docs/data/cabs_transfer_2cores/20261126-172746"
    for run, cores, seeds in ((one_dir, 1, {0, 1, 2}), (two_dir, 2, {3, 4, 5})):
        assert json.loads((run / "environment.json").read_text())["usable_cores"] == cores
        assert set(load_results(run).trials["seed"]) == seeds
    one, two = analysed_runs(one_dir), analysed_runs(two_dir)
    rows = check_rows(transfer(one, Machine(2)), two).set_index("num_env_runners")
    starts = ", ".join(
        f"{r['predicted_startup_s']:.1f} s against {r['startup_s']:.1f} s"
        for _, r in rows.drop(index=0).iterrows()
    )
    assert starts in page
    _, b = _startup_line([(p.num_env_runners, p.startup_s) for p in measured_parts(one)[1]], 1)
    assert f"about {b:.0f} s of the core per env runner" in page
    r1, r2, r4, ref = rows.loc[1], rows.loc[2], rows.loc[4], rows.loc[0]
    assert (
        f"Predicted {r1['predicted_rate']:.0f} and {r4['predicted_rate']:.0f} env steps/s "
        f"on both cores, measured {r1['rate']:.0f} and {r4['rate']:.0f} "
        f"({100 * (r1['predicted_rate'] / r1['rate'] - 1):+.0f} %, "
        f"{100 * (r4['predicted_rate'] / r4['rate'] - 1):+.0f} %)"
    ) in page
    assert (
        f"the roofline predicted {r2['predicted_rate']:.0f} and both cores sampled {r2['rate']:.0f}"
    ) in page
    assert (
        f"took {r2['cpu_ms_per_step']:.1f} ms of the core per env step, on two it took at "
        f"most {2000 / r2['rate']:.1f} (2 cores / {r2['rate']:.0f} per s)"
    ) in page
    assert (
        f"sampled as predicted ({ref['predicted_rate']:.0f} against {ref['rate']:.0f} env "
        f"steps/s) and missed its TTT by +{100 * ref['ttt_error']:.0f} %"
    ) in page
    ref_steps = [measured_parts(d)[0].steps for d in (two, one)]
    assert (
        f"needed {ref_steps[0] / 1000:.1f} k env steps to the target against "
        f"{ref_steps[1] / 1000:.1f} k"
    ) in page
    err = rows["ttt_error"].abs()
    assert (
        f"lies {100 * err.median():.0f} % (median) from the measured one, at most "
        f"{100 * err.max():.0f} %" in page
    )
    dist = rows.drop(index=0)
    assert (
        f"measured {dist['abs_speedup'].min():.2f}-{dist['abs_speedup'].max():.2f}x, and "
        f"the prediction said so ({dist['predicted_abs_speedup'].min():.2f}-"
        f"{dist['predicted_abs_speedup'].max():.2f}x)"
    ) in page
    back = check_rows(transfer(two, Machine(1)), one).set_index("num_env_runners")
    assert f"the other way ({100 * back.loc[2, 'ttt_error']:.0f} % on TTT)" in page
    # the 16-core node at 20 ms per step: the env runner ceiling against what it sampled
    node = analysed_runs(ROOT / "docs/data/cabs_cpu_scaling_16cpu/20261126-005102")
    far = (
        check_rows(transfer(one, Machine(16), cpu_cost_ms=20.0), node)
        .set_index("num_env_runners")
        .loc[4]
    )
    assert far["ceiling"] == "env runners"
    assert (
        f"(4 env runners / 20 ms = {far['predicted_rate']:.0f} env steps/s)" in page
        and f"the node sampled {far['rate']:.0f}." in page
    )


def _fit_study_facts(study) -> dict:
    """What the plan-fit study pages say about a run: per TTT model, the largest held-out
    error and the held-out cells whose measured median its interval holds; the largest
    residual and leave-one-N-out error on the fit range; the throughput models' errors."""
    check = study.check
    rows, fit = check.rows, check.fit
    ttt = rows[rows["quantity"] == "TTT"]
    rate = rows[rows["quantity"] == "env steps/s"]
    facts = {
        "held": sorted(int(n) for n in rows["num_env_runners"].unique()),
        "fit_n": sorted(set(rows["fit_n"])),
        "chosen": check.chosen,
        "ttt_max": round(100 * ttt["error"].abs().max()),
        "residual_max": round(100 * fit["residual"].abs().max()),
        "cv_max": round(100 * fit["cv_error"].abs().max()),
    }
    for model, g in ttt.groupby("model"):
        facts[model] = (sorted(round(100 * e) for e in g["error"]), int(g["inside"].sum()), len(g))
    for (model, n), g in rate.groupby(["model", "num_env_runners"]):
        facts[model, int(n)] = sorted(round(100 * e) for e in g["error"])
    return facts


def _fit_study(analysed_runs, sweep, run: Path):
    """``(study, facts)`` of a plan-fit study's run: the run is ``sweep`` as shipped, on seeds
    10-14, fitted on N = 1-5 with 6 and 8 held out (:func:`_fit_study_facts`)."""
    _assert_run_is(sweep, run)
    study = analysed_runs(run)
    assert set(study.tm["seed"]) == {10, 11, 12, 13, 14}
    f = _fit_study_facts(study)
    assert f["held"] == [6, 8] and f["fit_n"] == ["1,2,3,4,5"]
    return study, f


def test_the_latency_pages_fit_study_sentences_match_its_run(analysed_runs):
    """docs/latency_scaling.md's five-fitted-N section: its run is the sweep file as shipped,
    N = 6 and 8 are held out of every fit, and its sentences quote the check's errors, the
    intervals that held, the model cross-validation chose, the start-up the pipeline
    underestimated and the env steps against the reference's."""

    import numpy as np

    from analysis.parts import fit_pipeline, trial_components
    from sweeps.cabs_fit_latency import SWEEP

    study, f = _fit_study(analysed_runs, SWEEP, ROOT / "docs/data/cabs_fit_latency/20261127-100407")
    assert f["chosen"] == {"APPO": "pipeline", "IMPALA": "pipeline"}
    page = " ".join((ROOT / "docs/latency_scaling.md").read_text().split())
    assert f"predict the held-out N's time-to-target within {f['ttt_max']} %" in page
    assert f"at most {f['residual_max']} % from the measured medians" in page
    assert f"leave-one-N-out errors up to {f['cv_max']} %" in page
    pipe, usl = f["pipeline"], f["USL on 1/TTT"]
    assert (
        f"the pipeline missed by {pipe[0][-1]} to {pipe[0][0]} % and its interval held the "
        f"measured median at {pipe[1]} of {pipe[2]}"
    ) in page
    assert (
        f"the USL on 1/TTT missed by {usl[0][-1]} to {usl[0][0]} % and held it at "
        f"{usl[1]} of {usl[2]}"
    ) in page
    amdahl = f["Amdahl on throughput", 6] + f["Amdahl on throughput", 8]
    assert f"Amdahl within {max(abs(e) for e in amdahl)} %" in page
    usl6, usl8 = f["USL on throughput", 6], f["USL on throughput", 8]
    assert max(usl8) < 0
    assert (
        f"the USL within {max(abs(e) for e in usl6)} % at N = 6 but "
        f"{-usl8[-1]}-{-usl8[0]} % low at N = 8"
    ) in page
    # the pipeline's start-up line, fitted on N <= 5, against 8 env runners' start-up
    comp = trial_components(study.tm, study.res.progress).merge(
        study.tm[["trial_id", "algorithm", "num_env_runners"]], on="trial_id"
    )
    for alg in ("IMPALA", "APPO"):
        g = comp[comp["algorithm"] == alg]
        pipe_fit = fit_pipeline(g[g["num_env_runners"] <= 5])
        measured = g[g["num_env_runners"] == 8]["startup_s"].median()
        line = pipe_fit.startup[0] + 8 * pipe_fit.startup[1]
        assert 1.5 <= measured - line <= 2.5, (alg, measured, line)
        assert f"{measured:.1f} s ({alg})" in page
    # sample efficiency against the reference
    parts = study.summary.set_index(["algorithm", "num_env_runners"])["steps_to_target"]
    ref = parts[("SB3-DQN", 0)]
    for alg in ("IMPALA", "APPO"):
        ratio = parts[alg] / ref
        assert (
            f"{alg} needs {np.min(ratio):.1f}-{np.max(ratio):.1f}x" in page
            or f"{alg} {np.min(ratio):.1f}-{np.max(ratio):.1f}x" in page
        ), alg


def test_the_cpu_pages_sentences_match_its_run(analysed_runs):
    """docs/cpu_scaling.md: its run is ``sweeps/cabs_fit_cpu.py`` as shipped, N = 6 and 8 are
    held out of every fit, and its sentences quote the plateau in throughput, the model
    cross-validation chose and how it did on the held-out N, the throughput models' errors
    and the CPU-bound break-even's bound."""

    from analysis.transfer import Machine, break_even_on, source_cores
    from sweeps.cabs_fit_cpu import SWEEP

    study, f = _fit_study(analysed_runs, SWEEP, ROOT / "docs/data/cabs_fit_cpu/20261127-102958")
    assert f["chosen"] == {"APPO": "USL on 1/TTT", "IMPALA": "USL on 1/TTT"}
    page = " ".join((ROOT / "docs/cpu_scaling.md").read_text().split())
    # the plateau: the measured rate at N = 1 and its range from N = 4 to 8
    check = study.check
    fit_rate = check.fit[check.fit["model"] == "USL on throughput"]
    held_rate = check.rows[check.rows["model"] == "USL on throughput"]
    words = {
        "IMPALA": "IMPALA samples {} env steps/s with 1 env runner and {}-{} from 4 to 8",
        "APPO": "APPO {}, then {}-{}",
    }
    for alg, text in words.items():
        rate = {
            int(r.num_env_runners): r.measured
            for r in fit_rate[fit_rate["algorithm"] == alg].itertuples()
        }
        rate |= {
            int(r.num_env_runners): r.measured
            for r in held_rate[held_rate["algorithm"] == alg].itertuples()
        }
        plateau = [rate[n] for n in (4, 5, 6, 8)]
        assert (
            text.format(f"{rate[1]:,.0f}", f"{min(plateau):,.0f}", f"{max(plateau):,.0f}") in page
        ), alg
    cv = check.fit.groupby(["algorithm", "model"])["cv_error"].apply(
        lambda e: round(100 * e.abs().median())
    )
    assert (
        f"median left-out error {min(cv[:, 'USL on 1/TTT'])}-{max(cv[:, 'USL on 1/TTT'])} % "
        f"against the pipeline's {min(cv[:, 'pipeline'])}-{max(cv[:, 'pipeline'])} %"
    ) in page
    ttt = check.rows[check.rows["quantity"] == "TTT"]
    usl = ttt[ttt["model"] == "USL on 1/TTT"].set_index("algorithm")
    appo = round(100 * usl.loc["APPO", "error"].abs().max())
    impala = sorted(round(100 * e) for e in usl.loc["IMPALA", "error"])
    assert f"it predicted APPO within {appo} % but IMPALA {impala[0]}-{impala[-1]} % high" in page
    assert f"held the measured median at {f['USL on 1/TTT'][1]} of 4 held-out cells" in page
    pipe = f["pipeline"]
    assert (
        f"the pipeline missed by {pipe[0][-1]} to {pipe[0][0]} % and held it at "
        f"{pipe[1]} of {pipe[2]}"
    ) in page
    assert f"lies within {f['ttt_max']} % of the measured median" in page
    usl_rate = f["USL on throughput", 6] + f["USL on throughput", 8]
    amdahl = f["Amdahl on throughput", 6] + f["Amdahl on throughput", 8]
    assert (
        f"the USL within {max(abs(e) for e in usl_rate)} % and Amdahl within "
        f"{max(abs(e) for e in amdahl)} %"
    ) in page
    # the CPU-bound break-even on this machine: never, and the bound that says why
    rows = break_even_on(study, Machine(cores=source_cores(study)))
    assert not rows["break_even_ms"].astype(float).lt(float("inf")).any()
    assert (
        f"needs {rows['steps_ratio'].min():.1f}-{rows['steps_ratio'].max():.1f}x the "
        f"reference's env steps"
    ) in page
    assert f"tends to at most {rows['speedup_bound'].max():.2f}x" in page
    ref = study.summary[study.summary["is_reference"]].iloc[0]
    assert f"reference reached the target in {ref['ttt_s']:.1f} s" in page


def test_the_transfer_pages_driver_cpu_sentences_match_its_runs(analysed_runs):
    """docs/transfer.md's section on the driver's CPU: the new one-core run is the sweep file
    pinned to one core on seeds 0-2; the driver's share of the core and its CPU per env step
    per N, each env runner's own work, the 16-core and two-core predictions it changes, and
    the TTT errors of both one-core runs."""
    import json

    import numpy as np

    from analysis.transfer import Machine, check_rows, transfer

    page = " ".join((ROOT / "docs/transfer.md").read_text().split())
    new_dir = ROOT / "docs/data/cabs_transfer/20261127-111412"
    assert json.loads((new_dir / "environment.json").read_text())["usable_cores"] == 1
    new = analysed_runs(new_dir)
    assert set(new.tm["seed"]) == {0, 1, 2}
    old = analysed_runs(ROOT / "docs/data/cabs_transfer/20261126-171605")
    two = analysed_runs(ROOT / "docs/data/cabs_transfer_2cores/20261126-172746")
    node = analysed_runs(ROOT / "docs/data/cabs_cpu_scaling_16cpu/20261126-005102")
    prog, tm = new.res.progress, new.tm
    shares = []
    for n in (1, 2, 4):
        per_trial = []
        for tid in tm[(tm["algorithm"] == "IMPALA") & (tm["num_env_runners"] == n)]["trial_id"]:
            g = prog[prog["trial_id"] == tid].sort_values("iteration")
            a, b = g.iloc[0], g.iloc[-1]
            per_trial.append(
                (b["driver_cpu_s"] - a["driver_cpu_s"]) / (b["wall_time_s"] - a["wall_time_s"])
            )
        shares.append(round(100 * float(np.median(per_trial))))
    assert f"used {shares[0]} %, {shares[1]} % and {shares[2]} % of the core" in page
    got = {p.num_env_runners: p for p in transfer(new, Machine(2)) if not p.reference}
    d = [got[n].driver_ms_per_step for n in (1, 2, 4)]
    assert f"fell from {d[0]:.2f} to {d[1]:.2f} and {d[2]:.2f} ms" in page
    work = [got[n].cpu_ms_per_step - got[n].driver_ms_per_step - 2.0 for n in (1, 2, 4)]
    assert f"{work[0]:.1f}, {work[1]:.1f} and {work[2]:.1f} ms with 1, 2 and 4 env runners" in page
    far_new = (
        check_rows(transfer(new, Machine(16), cpu_cost_ms=20.0), node)
        .set_index("num_env_runners")
        .loc[4]
    )
    far_old = (
        check_rows(transfer(old, Machine(16), cpu_cost_ms=20.0), node)
        .set_index("num_env_runners")
        .loc[4]
    )
    assert far_new["ceiling"] == far_old["ceiling"] == "env runners"
    assert (
        f"from {far_old['predicted_rate']:.0f} env steps/s (the env's 20 ms alone) to "
        f"{far_new['predicted_rate']:.0f}, against {far_new['rate']:.0f} measured, and the "
        f"TTT error from {100 * far_old['ttt_error']:.0f} % to "
        f"{100 * far_new['ttt_error']:.0f} %"
    ) in page
    rows = check_rows(transfer(new, Machine(2)), two).set_index("num_env_runners")
    old_rows = check_rows(transfer(old, Machine(2)), two).set_index("num_env_runners")
    r1 = rows.loc[1]
    assert r1["ceiling"] == "env runners"
    assert (
        f"predicted {r1['predicted_rate']:.0f} env steps/s, measured {r1['rate']:.0f}, "
        f"which leaves at most {1000 / r1['rate'] - 2.0:.1f} ms per env step"
    ) in page
    assert f"against {work[0]:.1f} ms read on one" in page
    assert (
        f"({rows.loc[2, 'cpu_ms_per_step']:.1f} and {rows.loc[4, 'cpu_ms_per_step']:.1f} ms "
        f"against {old_rows.loc[2, 'cpu_ms_per_step']:.1f} and "
        f"{old_rows.loc[4, 'cpu_ms_per_step']:.1f})"
    ) in page
    miss = [100 * (r.loc[2, "predicted_rate"] / r.loc[2, "rate"] - 1) for r in (rows, old_rows)]
    assert f"({miss[0]:.0f} % on the rate against {miss[1]:.0f} %)" in page
    err, old_err = rows["ttt_error"].abs(), old_rows["ttt_error"].abs()
    assert (
        f"the TTT lies {100 * err.median():.0f} % (median) from the measured one, at most "
        f"{100 * err.max():.0f} %, against {100 * old_err.median():.0f} % and "
        f"{100 * old_err.max():.0f} % from the earlier run"
    ) in page


def test_the_transfer_pages_learner_sentences_match_its_runs(analysed_runs):
    """docs/transfer.md's section on the learner ceiling: the third one-core run is the sweep
    file pinned to one core on seeds 0-2, and the learner-bound check is its two sweep files
    on their seeds; the learner's CPU per env step, its share of the driver's and its ceiling
    per N, the learner-bound prediction with and without the ceiling (recomputed by the
    benchmark's own code and equal to its saved JSON), and the two checks' errors."""
    import importlib.util
    import json

    from analysis.transfer import Machine, check_rows, transfer
    from sweeps.cabs_transfer import SWEEP as TRANSFER
    from sweeps.experiments.cabs_learner_bound import SWEEP as ONE
    from sweeps.experiments.cabs_learner_bound_2cores import SWEEP as TWO

    page = " ".join((ROOT / "docs/transfer.md").read_text().split())
    run = ROOT / "docs/data/cabs_transfer/20261127-124640"
    _assert_run_is(TRANSFER, run)
    assert json.loads((run / "environment.json").read_text())["usable_cores"] == 1
    new = analysed_runs(run)
    assert set(new.tm["seed"]) == {0, 1, 2}
    got = {p.num_env_runners: p for p in transfer(new, Machine(2)) if not p.reference}
    lrn = [got[n].learner_ms_per_step for n in (1, 2, 4)]
    assert f"took {lrn[0]:.2f}, {lrn[1]:.2f} and {lrn[2]:.2f} ms of a core per env step" in page
    share = [round(100 * got[n].learner_ms_per_step / got[n].driver_ms_per_step) for n in (1, 2, 4)]
    assert f"{share[0]} %, {share[1]} % and {share[2]} % of the driver's CPU" in page
    ceil = [f"{round(1000 / x, -1):,.0f}" for x in lrn]
    assert f"the learner ceiling, {ceil[0]}, {ceil[1]} and {ceil[2]} env steps/s" in page
    two = analysed_runs(ROOT / "docs/data/cabs_transfer_2cores/20261126-172746")
    rows = check_rows(transfer(new, Machine(2)), two)
    assert rows["ceiling"].ne("learner").all()
    w = [got[n].cpu_ms_per_step for n in (1, 2, 4)]
    assert f"CPU per env step ({w[0]:.1f}, {w[1]:.1f} and {w[2]:.1f} ms" in page
    err = rows["ttt_error"].abs()
    assert (
        f"miss by {100 * err.median():.0f} % (median over the four configurations), at most "
        f"{100 * err.max():.0f} %" in page
    )
    node = analysed_runs(ROOT / "docs/data/cabs_cpu_scaling_16cpu/20261126-005102")
    far = (
        check_rows(transfer(new, Machine(16), cpu_cost_ms=20.0), node)
        .set_index("num_env_runners")
        .loc[4]
    )
    assert (
        f"{far['predicted_rate']:.0f} env steps/s predicted, {far['rate']:.0f} measured, "
        f"TTT {100 * far['ttt_error']:.0f} %"
    ) in page
    # the learner-bound check, by the benchmark's own code
    one_dir = ROOT / "docs/data/cabs_learner_bound/20261127-131953"
    two_dir = ROOT / "docs/data/cabs_learner_bound_2cores/20261127-132348"
    _assert_run_is(ONE, one_dir)
    _assert_run_is(TWO, two_dir)
    spec = importlib.util.spec_from_file_location(
        "bench_learner_ceiling", ROOT / "benchmarks/bench_learner_ceiling.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    one, both = bench.parts(one_dir), bench.parts(two_dir)
    assert one["seeds"] == [20, 21] and both["seeds"] == [22, 23]
    assert one["cores"] == 1 and both["cores"] == 2
    saved = json.loads((ROOT / "benchmarks/results/bench_learner_ceiling.json").read_text())
    s = saved["summary"]
    assert saved["one_core"]["rate"] == pytest.approx(one["rate"])
    assert saved["two_cores"]["rate"] == pytest.approx(both["rate"])
    assert s["ceiling"] == "learner" and s["ceiling_without_learner"] == "cores"
    assert (
        f"the updates took {1000 * one['l']:.1f} ms of the {1000 * one['w']:.1f} ms of CPU "
        f"per env step"
    ) in page
    assert (
        f"the learner ceiling ({s['predicted_rate']:.1f} env steps/s) binds below the "
        f"cores' ({s['predicted_without_learner']:.1f})"
    ) in page
    lo, hi = sorted(both["rates"])
    assert f"Both cores sampled {both['rate']:.1f} env steps/s ({lo:.1f} and {hi:.1f})" in page
    assert (
        f"with the learner ceiling is {100 * s['error']:.0f} % high, without it "
        f"{100 * s['error_without_learner']:.0f} % high"
    ) in page
    assert (
        f"({1000 * both['l']:.1f} ms on two cores, {s['l_ratio']:.2f} times the one-core figure)"
    ) in page
    assert f"busy only {100 * s['learner_busy_two_cores']:.0f} % of a core" in page


def test_a_benchmark_region_renders_from_its_json_failed_layouts_included(tmp_path):
    import json

    result = {
        "build_s": 5.0,
        "first_step_s": 6.0,
        "env_steps_per_s": 900.0,
        "cpu_busy": 0.9,
        "peak_memory_mib": 2048.0,
        "concurrent_envs": 8,
        "env_processes": 8,
        "env_steps_per_s_ideal": 1000.0,
    }
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "b.json").write_text(
        json.dumps(
            {
                "results": {
                    "IMPALA:1x8:async": result,
                    "IMPALA:64x1:sync": {"error": "timed out after 150 s"},
                }
            }
        )
    )
    page = tmp_path / "p.md"
    page.write_text(
        "<!-- generated: sampling_layout from data/b.json -->\n<!-- end generated -->\n"
    )
    assert fill_page(page) == 1 and stale_regions(page) == []
    text = page.read_text()
    assert "| IMPALA | 1 | 8 | async | 8 | 9 | 6.0 | 900 | 90% | 90% | 2.0 |" in text
    assert "| IMPALA | 64 | 1 | sync | - | - | - | failed |" in text
    assert "the fastest layout is IMPALA:1x8:async at 900 env steps/s" in text


def test_the_sampling_benchmark_refuses_a_malformed_layout_in_one_line():
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_sampling_layout.py"),
            "--layouts",
            "IMPALA:4by2:sync",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "bench_sampling_layout: layout 'IMPALA:4by2:sync' is not ALGORITHM:RUNNERSxENVS:MODE "
        "(e.g. IMPALA:4x16:async)"
    ]

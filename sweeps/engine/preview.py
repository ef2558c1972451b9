"""``python -m sweeps.run FILE --dry-run``: what a sweep would run, printed before anything
runs: the resolved spec, the cluster, each trial's resources and the first trials in the order
the searcher would start them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sweeps.engine.sweep_spec import Sweep

if TYPE_CHECKING:
    from sweeps.engine.trainable import TrialSetup


def local_gpus() -> float:
    """GPUs an embedded Ray would see here (torch's CUDA device count; 0 without CUDA)."""
    try:
        import torch

        return float(torch.cuda.device_count())
    except Exception:  # noqa: BLE001 - no usable torch/CUDA: no GPU
        return 0.0


def print_dry_run(
    sweep: Sweep,
    target: dict,
    setup: TrialSetup,
    lines: list[str],
    nodes: list[dict[str, float]],
    n_show: int = 6,
) -> None:
    """Print the resolved spec, the cluster, the first sampled trials and their resources."""
    from sweeps.engine.placement import describe_cluster

    print("Resolved sweep spec:")
    spec = json.loads(sweep.model_dump_json())
    spec["target"] = target
    print(json.dumps(spec, indent=2))
    from sweeps.engine.sweep_file import sweep_presets

    print(f"\nDefaults on {sweep.env} (sweeps.engine.presets; a sweep's own values win):")
    for algo, preset in sweep_presets(sweep).items():
        print(f"  {algo}: " + (f"preset {preset!r}" if preset else "library defaults"))
    print(f"\nCluster: {describe_cluster(nodes)}")
    print("Resources per trial (driver + env runners + learners):")
    print("\n".join(lines))
    from sweeps.engine.search import sweep_search
    from sweeps.engine.trainable import trial_algorithm_config

    search, num_configs = sweep_search(sweep, "sqlite:///:memory:")
    extra = f"{' + baseline' if sweep.baseline else ''}{' + reference' if sweep.reference else ''}"
    confirm = sweep.search.confirm
    seeds = sweep.search.confirm_seeds
    from sweeps.engine.search import confirm_axes, confirm_cells, confirm_count

    print(
        # a confirmation runs the cells the search sampled: fewer when it left one out
        f"Trials: {'at most ' if confirm else ''}{search.total_trials} = "
        f"({num_configs} sampled config{'s' if num_configs != 1 else ''}{extra}) x "
        f"{sweep.search.seeds} seed{'s' if sweep.search.seeds != 1 else ''}"
        + (
            f", then ({confirm_count(sweep)} confirmed{extra}) x {confirm.seeds} "
            f"confirmation seeds ({seeds[0]}-{seeds[-1]})"
            if confirm
            else ""
        )
        + f"; budget per trial {sweep.budget.describe()}"
    )
    if confirm:
        fixed_groups = bool(sweep.baseline) + bool(sweep.reference)
        n_confirm = (confirm_count(sweep) + fixed_groups) * confirm.seeds
        cells = confirm_cells(sweep)
        axes = " x ".join(confirm_axes(sweep)) or "-"
        what = f"its {min(confirm.top_k, num_configs)} fastest" + (
            f" and the fastest of each of {len(cells)} cells (algorithm x {axes})"
            if cells
            else f" and the fastest at each sampled algorithm x {axes}"
            if cells is None
            else ""
        )
        time_s = n_confirm * sweep.budget.time_s if sweep.budget.time_s else None
        print(
            f"Confirmation: at most {n_confirm} trials, {what}{extra} (a cell the search "
            "did not sample has none), at most "
            + (
                f"{time_s:,.0f} s ({time_s / 60:.1f} min) of trial budget"
                if time_s
                else "their env step budgets"
            )
        )
        for cell in cells or []:
            print("  cell " + ", ".join(f"{k}={v}" for k, v in cell.items()))
    from sweeps.engine.search import grid_shortfall

    if (short := grid_shortfall(sweep)) is not None:
        print(short)
    print(
        f"First trials ({sweep.search.sampler} sampler, seed {sweep.search.sampler_seed}), "
        "in the order they would start:"
    )
    for i in range(min(n_show, search.total_trials)):
        config = search.suggest(f"dry{i}")
        if not isinstance(config, dict):  # the confirmation waits for the search's trials
            break
        meta = {
            k: config.pop(k) for k in ("config_id", "is_baseline", "is_reference", "seed", "stage")
        }
        if meta["is_reference"]:
            config["is_reference"] = True
        _, info = trial_algorithm_config(config, setup)
        print(
            f"  {meta['config_id']:<16} seed {meta['seed']}  {json.dumps(config, default=str)}"
            f"  -> {info['num_cpus']:g} CPU{'' if info['num_cpus'] == 1 else 's'}"
            + ("  oversubscribed" if info["oversubscribed"] else "")
        )

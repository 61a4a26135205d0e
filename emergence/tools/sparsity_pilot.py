"""A budget pilot for the sparsity sweep (claim 4): cells of one state size trained for a
longer budget than the sweep's, read by the sweep's statistics (seeds emerged and solved, with
censoring): whether a longer budget would decide a claim the sweep's leaves to the paper
profile, measured before the budget is spent (docs/pilots.md). Pilot cells go through the cell
cache like any other (a rerun trains nothing).

    python -m emergence.tools.sparsity_pilot --state-size 8 --sparsities 4 6 8 --steps 3000 \
        [--seeds 4] [--profile default]
"""
from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from emergence.analysis.events import analyse, task_analyses
from emergence.analysis.survival import km_median
from emergence.pipeline.config import REPO_ROOT, load_params
from emergence.common.schema import load
from emergence.runs.cells import Setting, load_cell
from emergence.runs.sweeps import sparsity as sweep


def pilot_rows(params: dict, state_size: int, sparsities: list[int], steps: int, n_seeds: int | None,
               scratch) -> list[dict]:
    """One row per sparsity: seeds solved and emerged within `steps`, their KM medians, the mean final loss."""
    grid = load(sweep.SparsitySweepArgs, params["sweeps"][sweep.SWEEP], f"sweeps.{sweep.SWEEP}")
    pilot = replace(grid, steps=steps, **({"n_seeds": n_seeds} if n_seeds else {}))
    setting = Setting.of(params)
    rows = []
    for s in sparsities:
        stats = analyse(load_cell(sweep.cell_config(setting, pilot, state_size, s), scratch),
                        task_analyses(params)["linear_map"])
        row = {"state_size": state_size, "sparsity": s, "steps": steps}
        for what in ("emergence", "solved"):
            t, censored = stats[f"{what}_step"].values, stats[f"{what}_censored"].values.astype(bool)
            row[what] = f"{int((~censored).sum())}/{len(t)}"
            row[f"km_median_{what}"] = km_median(t, censored)
        row["mean_final_loss"] = float(np.nanmean(stats["final_output_loss"].values))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-size", type=int, required=True)
    parser.add_argument("--sparsities", type=int, nargs="+", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    params = load_params(profile=args.profile)
    for row in pilot_rows(params, args.state_size, args.sparsities, args.steps, args.seeds,
                          REPO_ROOT / "data" / ".scratch"):
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()

"""A learning-rate pilot for the architecture comparison (claim 8): each architecture trained
on the comparison's first setting of a task at several learning rates, on a short budget and
few seeds, and read by the same statistics as the sweep (emergence with censoring, final loss).

The comparison is fair when every architecture trains at its own best rate: this prints one
row per (architecture, rate) so that the rate chosen for each can be written, with the pilot's
numbers, into params.yaml (sweeps.mixers.architectures.<name>.lr) before the run that decides.
Pilot cells go through the cell cache like any other (a rerun trains nothing).

    python -m emergence.experiments.lr_pilot --lrs 0.001 0.003 0.01 --steps 1500 --seeds 2 \
        [--task linear_map|cellular_automata] [--architectures transformer static_mixing token_mlp] [--profile default]
"""
from __future__ import annotations

import argparse
import copy

import numpy as np

from emergence.config import REPO_ROOT, load_params
from emergence.experiments import mixer_comparison as mc
from emergence.experiments.cells import load_cell
from emergence.analysis import analyse
from emergence.survival import km_median


def pilot_rows(params: dict, lrs: list[float], steps: int, n_seeds: int, architectures: list[str] | None,
               scratch, task: str = "linear_map") -> list[dict]:
    """One row per (architecture, lr): seeds emerged, KM median emergence, mean final loss."""
    sweep = params["sweeps"][mc.SWEEP]
    task, overrides, label = next(s for s in mc.settings(sweep) if s[0] == task)
    pilot = copy.deepcopy(params)
    pilot["sweeps"][mc.SWEEP][task].update(steps=steps, n_seeds=n_seeds)
    archs = mc.architectures(params)
    rows = []
    for name in architectures or list(archs):
        for lr in lrs:
            config = mc.cell_config(pilot, task, overrides, dict(archs[name], lr={task: lr}))
            stats = analyse(load_cell(config, scratch), params[task]["analysis"])
            t = stats["emergence_step"].values
            censored = stats["emergence_censored"].values.astype(bool)
            rows.append({"architecture": name, "lr": lr, "setting": label, "steps": steps,
                         "emerged": f"{int((~censored).sum())}/{len(t)}",
                         "km_median_emergence": km_median(t, censored),
                         "mean_final_loss": float(np.nanmean(stats["final_output_loss"].values))})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lrs", type=float, nargs="+", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seeds", type=int, required=True)
    parser.add_argument("--task", default="linear_map", choices=mc.TASKS)
    parser.add_argument("--architectures", nargs="*")
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    params = load_params(profile=args.profile)
    for row in pilot_rows(params, args.lrs, args.steps, args.seeds, args.architectures,
                          REPO_ROOT / "data" / ".scratch", args.task):
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()

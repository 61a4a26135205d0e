"""Stage precision_summary: the emergence statistics of both precisions, and the rule that
decides whether bfloat16 autocast may train a task by default (emergence/analysis/precision_agreement.py:
the same seeds compared pair by pair; differ on a sign-flip permutation test, agree when every
ratio's interval lies inside sweeps.precision.margin).

    python -m stages.precision_summary CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import analyse, unstack_cells
from emergence.analysis.precision_agreement import STATISTICS, agreement, precision_statistics, seed_rows
from emergence.common.io import read_netcdf, write_netcdf
from emergence.core.precision import PRECISIONS
from emergence.pipeline.stage import stage_run


def summarize(cell_dir: Path, params: dict) -> xr.Dataset:
    """(task, precision, statistic, bound) table of every compared run, the paired ratios
    bf16 / float32 with their intervals and permutation p, and the verdicts."""
    settings = params["sweeps"]["precision"]
    tasks, n_boot, margin = settings["tasks"], settings["n_boot"], settings["margin"]
    table = np.full((len(tasks), len(PRECISIONS), len(STATISTICS), 3), np.nan)
    ratios = np.full((len(tasks), len(STATISTICS), 3), np.nan)
    p_values = np.full((len(tasks), len(STATISTICS)), np.nan)
    verdicts, reasons = [], []
    for i, task in enumerate(tasks):
        ds = read_netcdf(cell_dir / f"{task}.nc")
        analysis = params[task]["analysis"]
        rows = {}
        for j, (precision, cell) in enumerate(unstack_cells(ds, "precision")):
            analysed = analyse(cell, analysis)
            stats = precision_statistics(analysed, n_boot, 1 - analysis["alpha"])
            table[i, j] = [stats[s] for s in STATISTICS]
            rows[str(precision)] = seed_rows(analysed)
        verdict, why, comparisons = agreement(*(rows[p] for p in PRECISIONS), alpha=analysis["alpha"], margin=margin,
                                              n_perm=n_boot, n_boot=n_boot)
        ratios[i] = [(c.ratio, c.low, c.high) for c in comparisons]
        p_values[i] = [c.p for c in comparisons]
        if "precision" in ds.attrs:  # both cells resolved to one precision: no bfloat16 here
            verdict, why = "undecided", [f"both runs trained in {ds.attrs['precision']} on this machine "
                                         "(no fast bfloat16): nothing to compare"]
        verdicts.append(verdict)
        reasons.append("; ".join(why))
    return xr.Dataset(
        {"value": (("task", "precision", "statistic", "bound"), table,
                   {"long_name": "statistic with its bootstrap interval over seeds (level 1 - alpha)"}),
         "ratio": (("task", "statistic", "bound"), ratios,
                   {"long_name": f"{PRECISIONS[1]} over {PRECISIONS[0]} on the same seeds, with the paired "
                                 "bootstrap interval (level 1 - alpha)"}),
         "p_value": (("task", "statistic"), p_values,
                     {"long_name": "two-sided sign-flip permutation p of the ratio (each seed's pair swapped)"}),
         "verdict": (("task",), np.array(verdicts, dtype=str)),
         "reasons": (("task",), np.array(reasons, dtype=str))},
        coords={"task": np.array(tasks, dtype=str), "precision": np.array(PRECISIONS, dtype=str),
                "statistic": np.array(STATISTICS, dtype=str), "bound": np.array(["value", "low", "high"], dtype=str)},
        attrs={"experiment": "sweep:precision", "n_boot": n_boot, "margin": margin,
               # every section's, compared or not: what this run trains in
               "default_precision": ",".join(f"{name}:{section['train']['precision']}" for name, section in params.items()
                                             if isinstance(section, dict) and "precision" in section.get("train", {}))})


if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("precision_summary") as params:
        write_netcdf(summarize(cells, params), out)

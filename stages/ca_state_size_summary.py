"""Stage ca_state_size_summary: emergence statistics of every (S, strength) cell of the
automata's state-size sweep, with the cellular_automata thresholds (a threshold edit never retrains).

    python -m stages.ca_state_size_summary CELLS_DIR SUMMARY_NC
"""
import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import analyse, summary_dataset, unstack_cells
from emergence.common.io import read_netcdf, write_netcdf
from emergence.pipeline.stage import stage_run

SWEEP, TASK = "ca_state_size", "cellular_automata"


def summarize(cell_dir: Path, analysis: dict) -> xr.Dataset:
    """(cell, seed) Dataset over every (S, c): emergence statistics with censoring."""
    names, S_list, c_list, applied, initial_mass, analysed = [], [], [], [], [], []
    for f in sorted(cell_dir.glob("S*.nc")):
        ds = read_netcdf(f)
        S = int(ds.attrs["state_size"])
        for c, cell in unstack_cells(ds, "strength"):
            analysed.append(analyse(cell, analysis))
            names.append(f"S{S:04d}_c{c:g}")
            S_list.append(S)
            c_list.append(float(c))
            applied.append(float(json.loads(cell.attrs["config"])[TASK]["bias"]["strength"]))
            initial_mass.append(float(np.nanmean(cell["parent_mass"].isel(step=0).values)))
    chance = float(analysed[0].attrs.get("chance_accuracy", 0.25)) if analysed else 0.25
    return summary_dataset(analysed, names, {"state_size": np.array(S_list, dtype=np.int64),
                                             "strength": np.array(c_list, dtype=float),
                                             "applied_strength": np.array(applied, dtype=float),
                                             "initial_parent_mass": np.array(initial_mass, dtype=float)},
                           {"experiment": f"sweep:{SWEEP}", "task": TASK, "analysis": analysis,
                            "chance_accuracy": chance})


if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("ca_state_size_summary") as params:
        write_netcdf(summarize(cells, params[TASK]["analysis"]), out)

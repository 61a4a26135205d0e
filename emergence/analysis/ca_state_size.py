"""The automata's state-size sweep summarised: every (S, c) cell's emergence statistics, with
censoring (claims 4 and 5 on the automata; a threshold edit reanalyses, never retrains)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import analyse, summary_dataset, task_analyses, unstack_cells
from emergence.common.io import read_netcdf

SWEEP, TASK = "ca_state_size", "cellular_automata"


def summarize(params: dict, name: str, cell_dir: Path) -> xr.Dataset:
    """(cell, seed) Dataset over every (S, c): emergence statistics with censoring, with the
    automata's thresholds; the bias strength each cell applied and the attention mass on the
    window at step 0."""
    analysis = task_analyses(params)[TASK]
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
                           {"experiment": f"sweep:{name}", "task": TASK, "analysis": analysis,
                            "chance_accuracy": chance})

"""Experiment 1 (claim 4): the linear map across sparsity s and state size S.

One DVC stage per row of the grid (a state size S) trains the cells of that row the current
profile runs (paper: every s; default and smoke: their subsets), one after another, and
writes them as one Dataset with a `sparsity` dimension. Each finished cell is also kept in a
cell cache keyed by its full configuration and the code version, so when a row's stage
reruns because one s changed, the other cells load instead of retraining. The summary stage
analyses every cell with the linear_map analysis thresholds (changing a threshold never
retrains).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.config import int_list

SWEEP = "sparsity"
NO_CELLS = "no cell of this row runs on this profile"


def cells_for_profile(row: dict, profile: str) -> list[int]:
    return int_list(row["sparsities"] if profile == "paper" else row[profile])


def cell_config(params: dict, state_size: int, sparsity: int) -> dict:
    """The full linear_map parameters of one cell (a params dict with a `linear_map` section)."""
    from emergence.experiments.cells import with_budget

    return with_budget(params, {"state_size": state_size, "sparsity": sparsity}, params["sweeps"][SWEEP])


def run_row(params: dict, row_name: str, row: dict, scratch: Path) -> xr.Dataset:
    """Train (or load from the cell cache) every cell of a row that this profile runs."""
    from emergence.experiments.cells import cached_cells, stack_cells

    S = row["state_size"]
    sparsities = cells_for_profile(row, params["profile"])
    if not sparsities:
        return xr.Dataset(attrs={"experiment": f"sweep:{SWEEP}", "row": row_name, "status": NO_CELLS,
                                 "profile": params["profile"]})
    cells = cached_cells([cell_config(params, S, s) for s in sparsities], scratch, f"{SWEEP}-S{S}")
    return stack_cells(cells, "sparsity", sparsities,
                              {"experiment": f"sweep:{SWEEP}", "row": row_name, "state_size": S, "status": "ran",
                               "profile": params["profile"]})


def summarize(row_files: dict[str, Path], analysis: dict) -> xr.Dataset:
    """One Dataset over (cell, seed): S, s, final loss, plateau end and emergence with censoring."""
    from emergence.experiments.linear_map_analysis import analyse, cell_statistics
    from emergence.io import read_netcdf

    names, S_list, s_list, analysed = [], [], [], []
    for row_name in sorted(row_files):
        ds = read_netcdf(row_files[row_name])
        if ds.attrs.get("status") != "ran":
            continue
        for i, s in enumerate(ds["sparsity"].values):
            cell = ds.isel(sparsity=i).drop_vars("sparsity")
            cell.attrs = dict(ds.attrs, config=json.dumps(json.loads(ds.attrs["configs"])[i]))
            analysed.append(analyse(cell, analysis))
            names.append(f"S{int(ds.attrs['state_size']):02d}_s{int(s):02d}")
            S_list.append(int(ds.attrs["state_size"]))
            s_list.append(int(s))
    data, n_seed = cell_statistics(analysed)
    S_arr, s_arr = np.array(S_list, dtype=np.int64), np.array(s_list, dtype=np.int64)
    data.update({"state_size": (("cell",), S_arr), "sparsity": (("cell",), s_arr),
                 "density": (("cell",), s_arr / np.maximum(S_arr, 1))})
    return xr.Dataset(data, coords={"cell": np.array(names, dtype=str), "seed": np.arange(n_seed)},
                      attrs={"experiment": f"sweep:{SWEEP}", "analysis": json.dumps(analysis, sort_keys=True),
                             "chance_loss": float(np.log(2.0))})

"""The linear map across sparsity s and state size S (claim 4).

One DVC stage per row of the grid (a state size S) trains the cells of that row the current
profile runs (paper: every s; default and smoke: their subsets) and writes them as one
Dataset with a `sparsity` dimension. Cells go through the cell cache, so when a row's stage
reruns because one s changed, the other cells load instead of retraining. The summary
analyses every cell with the linear_map thresholds (changing a threshold never retrains).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.experiments.cells import Budget, SweepFile, trained_file, unstack_cells, with_budget
from emergence.experiments.run_statistics import analyse, summary_dataset
from emergence.io import read_netcdf
from emergence.params import sparsities_on
from emergence.schema import ConfigError, number

SWEEP = "sparsity"
NO_CELLS = "no cell of this row runs on this profile"


@dataclass(frozen=True, kw_only=True)
class GridRow:
    """One state size S of the grid: the paper's sparsities, and the subsets the default and
    smoke profiles run (the paper profile runs them all)."""
    state_size: int = number(1, 4096)
    sparsities: list[int] = number(1, 4096)
    default: list[int] = number(1, 4096)
    smoke: list[int] = number(1, 4096)

    def check(self, key: str) -> None:
        bad = [x for x in self.sparsities if x > self.state_size]
        if bad:
            raise ConfigError(f"{key}.sparsities: each must be in [1, state_size={self.state_size}], got {bad}")
        for name in ("default", "smoke"):
            extra = sorted(set(getattr(self, name)) - set(self.sparsities))
            if extra:
                raise ConfigError(f"{key}.{name}: must be a subset of {key}.sparsities, got extra {extra}")


@dataclass(frozen=True, kw_only=True)
class SparsitySweepArgs(Budget):
    batch_size: int = number(1, 1_000_000)
    grid: dict[str, GridRow]


def cell_config(params: dict, state_size: int, sparsity: int) -> dict:
    """The full linear_map parameters of one cell (a params dict with a `linear_map` section)."""
    return with_budget(params, {"state_size": state_size, "sparsity": sparsity}, params["sweeps"][SWEEP])


def row_file(params: dict, row_name: str, row: dict) -> SweepFile:
    S, sparsities = row["state_size"], sparsities_on(row, params["profile"])
    return SweepFile(row_name, [cell_config(params, S, s) for s in sparsities],
                     {"experiment": f"sweep:{SWEEP}", "row": row_name, "state_size": S, "status": "ran",
                      "profile": params["profile"]}, dim="sparsity", values=sparsities)


def run_row(params: dict, row_name: str, row: dict, scratch: Path) -> xr.Dataset:
    """Train (or load from the cell cache) every cell of a row that this profile runs."""
    spec = row_file(params, row_name, row)
    if not spec.cells:
        return xr.Dataset(attrs={"experiment": f"sweep:{SWEEP}", "row": row_name, "status": NO_CELLS,
                                 "profile": params["profile"]})
    return trained_file(spec, scratch, params["execution"])


def summarize(row_files: dict[str, Path], analysis: dict) -> xr.Dataset:
    """One Dataset over (cell, seed): S, s, final loss, plateau end and emergence with censoring."""
    names, S_list, s_list, analysed = [], [], [], []
    for row_name in sorted(row_files):
        ds = read_netcdf(row_files[row_name])
        if ds.attrs.get("status") != "ran":
            continue
        S = int(ds.attrs["state_size"])
        for s, cell in unstack_cells(ds, "sparsity"):
            analysed.append(analyse(cell, analysis))
            names.append(f"S{S:02d}_s{int(s):02d}")
            S_list.append(S)
            s_list.append(int(s))
    S_arr, s_arr = np.array(S_list, dtype=np.int64), np.array(s_list, dtype=np.int64)
    return summary_dataset(analysed, names, {"state_size": S_arr, "sparsity": s_arr,
                                             "density": s_arr / np.maximum(S_arr, 1)},
                           {"experiment": f"sweep:{SWEEP}", "analysis": analysis, "chance_loss": float(np.log(2.0))})

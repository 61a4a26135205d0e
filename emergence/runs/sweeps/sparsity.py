"""The linear map across sparsity s and state size S (claim 4).

One DVC stage per row of the grid (a state size S) trains the cells of that row the current
profile runs (paper: every s; default and smoke: their subsets) and writes them as one
Dataset with a `sparsity` dimension. Cells go through the cell cache, so when a row's stage
reruns because one s changed, the other cells load instead of retraining. The summary stage
(stages/sparsity_summary.py) analyses every cell with the linear_map thresholds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import xarray as xr

from emergence.common.params import sparsities_on
from emergence.common.schema import ConfigError, number, to_params
from emergence.runs.cells import Budget, Cell, Setting, SweepFile, trained_file, with_budget
from emergence.runs.executor import ExecutionArgs

SWEEP = "sparsity"
NO_CELLS = "no cell of this row runs on this profile"


@dataclass(frozen=True, kw_only=True)
class GridRow:
    """One state size S of the grid: the paper's sparsities, and the subsets the default and
    smoke profiles run (the paper profile runs them all)."""
    state_size: int = number(1, 4096)              # S of this row
    sparsities: list[int] = number(1, 4096)        # every s the paper plots at this S (the paper profile's)
    default: list[int] = number(1, 4096)           # the subset the default profile runs
    smoke: list[int] = number(1, 4096)             # the subset the smoke profile runs

    def check(self, key: str) -> None:
        bad = [x for x in self.sparsities if x > self.state_size]
        if bad:
            raise ConfigError(f"{key}.sparsities: each must be in [1, state_size={self.state_size}], got {bad}")
        for name in ("default", "smoke"):
            extra = sorted(set(getattr(self, name)) - set(self.sparsities))
            if extra:
                raise ConfigError(f"{key}.{name}: must be a subset of {key}.sparsities, got extra {extra}")

    def on(self, profile: str) -> list[int]:
        """The sparsities this row runs on `profile` (`sparsities_on`, the rule the report reads too)."""
        return sparsities_on(to_params(self), profile)


@dataclass(frozen=True, kw_only=True)
class SparsitySweepArgs(Budget):
    """sweeps.sparsity: the budget of every cell and the grid's rows (one DVC stage each)."""
    batch_size: int = number(1, 1_000_000)         # sequences per step
    grid: dict[str, GridRow]                       # row name (S08, ...) -> its state size and sparsities


def cell_config(setting: Setting, sweep: SparsitySweepArgs, state_size: int, sparsity: int) -> Cell:
    """One cell: the linear map's section at this S and s, with the sweep's budget."""
    return with_budget(setting.linear_map, {"state_size": state_size, "sparsity": sparsity}, sweep)


def row_file(setting: Setting, sweep: SparsitySweepArgs, row_name: str) -> SweepFile:
    row = sweep.grid[row_name]
    sparsities = row.on(setting.profile)
    return SweepFile(row_name, [cell_config(setting, sweep, row.state_size, s) for s in sparsities],
                     {"experiment": f"sweep:{SWEEP}", "row": row_name, "state_size": row.state_size, "status": "ran",
                      "profile": setting.profile}, dim="sparsity", values=sparsities)


def planned_cells(setting: Setting, sweep: SparsitySweepArgs, name: str = SWEEP) -> list[tuple[Cell, bool]]:
    """Every cell this profile trains, across the rows (one DVC stage each)."""
    return [(c, False) for row_name in sweep.grid for c in row_file(setting, sweep, row_name).cells]


def run_row(setting: Setting, sweep: SparsitySweepArgs, row_name: str, scratch: Path,
            execution: ExecutionArgs) -> xr.Dataset:
    """Train (or load from the cell cache) every cell of a row that this profile runs."""
    spec = row_file(setting, sweep, row_name)
    if not spec.cells:
        return xr.Dataset(attrs={"experiment": f"sweep:{SWEEP}", "row": row_name, "status": NO_CELLS,
                                 "profile": setting.profile})
    return trained_file(spec, scratch, execution)

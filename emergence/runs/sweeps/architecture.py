"""Heads, head size, width and depth, on either synthetic task (claims 6, 7).

Each cell of `sweeps.<sweep>.cells` is a model shape (n_head, d_head, n_layer) with
d_model = n_head * d_head and d_mlp = mlp_ratio * d_model; task, optimiser and budget come
from the sweep and the task's section (`architecture` runs the linear map, `ca_architecture`
the cellular automata). One stage per sweep writes one NetCDF per cell this profile runs;
its summary (emergence/analysis/architecture.py) analyses them with the task's
thresholds.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from emergence.common.schema import ConfigError, number
from emergence.runs.cells import Budget, Cell, Setting, SweepFile, with_budget

SWEEPS = {"architecture": "linear_map", "ca_architecture": "cellular_automata"}
Profile = Literal["default", "smoke", "paper"]


@dataclass(frozen=True, kw_only=True)
class ShapeCell:
    """A model shape: d_model = n_head * d_head. `families`: the comparisons it belongs to
    (heads at fixed d_head, width at fixed n_head * d_head, depth); `profiles`: where it runs."""
    n_head: int = number(1, 1024)                  # attention heads
    d_head: int = number(1, 1024)                  # width of each head
    n_layer: int = number(1, 64)                   # blocks
    families: list[Literal["heads", "width", "depth", "stacked"]]  # the comparisons it belongs to
    profiles: list[Profile]                        # the profiles that run it


@dataclass(frozen=True, kw_only=True)
class ArchitectureSweepArgs(Budget):
    """sweeps.architecture (the linear map: `sparsity` is set) or sweeps.ca_architecture."""
    state_size: int = number(1, 4096)              # the task's S
    mlp_ratio: int = number(0, 64)                 # d_mlp over d_model in every shape
    batch_size: int = number(1, 1_000_000)         # sequences per step
    cells: dict[str, ShapeCell]                    # the shapes, by name
    sparsity: int | None = number(1, 4096, default=None)  # the linear map's s (None: the automata)

    def check(self, key: str) -> None:
        if self.sparsity is not None and self.sparsity > self.state_size:
            raise ConfigError(f"{key}.sparsity: must be <= state_size ({self.state_size}), got {self.sparsity}")


def task_overrides(sweep_name: str, sweep: ArchitectureSweepArgs) -> dict:
    if SWEEPS[sweep_name] == "linear_map":
        return {"state_size": sweep.state_size, "sparsity": sweep.sparsity}
    return {"state_size": sweep.state_size}


def cell_config(setting: Setting, sweep: ArchitectureSweepArgs, cell: ShapeCell,
                sweep_name: str = "architecture") -> Cell:
    config = with_budget(setting.section(SWEEPS[sweep_name]), task_overrides(sweep_name, sweep), sweep)
    d_model = cell.n_head * cell.d_head
    return replace(config, model=replace(config.model, n_layer=cell.n_layer, n_head=cell.n_head, d_model=d_model,
                                         d_mlp=sweep.mlp_ratio * d_model))


def sweep_files(setting: Setting, sweep: ArchitectureSweepArgs, sweep_name: str = "architecture") -> list[SweepFile]:
    return [SweepFile(name, [cell_config(setting, sweep, cell, sweep_name)],
                      {"cell": name, "families": "+".join(cell.families)})
            for name, cell in sorted(sweep.cells.items()) if setting.profile in cell.profiles]

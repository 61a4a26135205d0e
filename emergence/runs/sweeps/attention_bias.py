"""The attention-bias intervention on the linear map (claim 5).

The same task is trained once per bias strength c (0 is the control), c * M added to the
pre-softmax scores, M the ground-truth pattern; which layers and heads, and whether the
bias stays on at evaluation, come from linear_map.bias. Runs are stacked along `strength`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import xarray as xr

from emergence.common.schema import ConfigError, number
from emergence.runs.cells import Budget, Cell, Setting, SweepFile, trained_file, with_budget
from emergence.runs.executor import ExecutionArgs

NAME = "attention_bias"


@dataclass(frozen=True, kw_only=True)
class AttentionBiasArgs(Budget):
    """interventions.attention_bias: the linear map trained at each bias strength c."""
    state_size: int = number(1, 4096)           # S
    sparsity: int = number(1, 4096)             # s
    strengths: list[float] = number(-1e4, 1e4)  # c values; 0 is the control
    batch_size: int = number(1, 1_000_000)      # sequences per step

    def check(self, key: str) -> None:
        if self.sparsity > self.state_size:
            raise ConfigError(f"{key}.sparsity: must be <= {key}.state_size ({self.state_size}), got {self.sparsity}")
        if 0 not in self.strengths:
            raise ConfigError(f"{key}.strengths: must include 0 (the control), got {self.strengths}")


def strengths(intervention: AttentionBiasArgs) -> list[float]:
    return [float(x) for x in intervention.strengths]


def run_config(setting: Setting, intervention: AttentionBiasArgs, strength: float) -> Cell:
    config = with_budget(setting.linear_map, {"state_size": intervention.state_size,
                                              "sparsity": intervention.sparsity}, intervention)
    return replace(config, bias=replace(config.bias, strength=strength))


def planned_cells(setting: Setting, intervention: AttentionBiasArgs, name: str = NAME) -> list[tuple[Cell, bool]]:
    return [(run_config(setting, intervention, s), False) for s in strengths(intervention)]


def run(setting: Setting, intervention: AttentionBiasArgs, scratch: Path, execution: ExecutionArgs) -> xr.Dataset:
    values = strengths(intervention)
    return trained_file(SweepFile(NAME, [run_config(setting, intervention, c) for c in values],
                                  {"experiment": f"intervention:{NAME}", "state_size": intervention.state_size,
                                   "sparsity": intervention.sparsity, "profile": setting.profile},
                                  dim="strength", values=values), scratch, execution)

"""The attention-bias intervention on the linear map (claim 5).

The same task is trained once per bias strength c (0 is the control), c * M added to the
pre-softmax scores, M the ground-truth pattern; which layers and heads, and whether the
bias stays on at evaluation, come from linear_map.bias. Runs are stacked along `strength`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import xarray as xr

from emergence.common.schema import ConfigError, number
from emergence.runs.cells import Budget, SweepFile, trained_file, with_budget

NAME = "attention_bias"


@dataclass(frozen=True, kw_only=True)
class AttentionBiasArgs(Budget):
    state_size: int = number(1, 4096)
    sparsity: int = number(1, 4096)
    strengths: list[float] = number(-1e4, 1e4)  # c values; 0 is the control
    batch_size: int = number(1, 1_000_000)

    def check(self, key: str) -> None:
        if self.sparsity > self.state_size:
            raise ConfigError(f"{key}.sparsity: must be <= {key}.state_size ({self.state_size}), got {self.sparsity}")
        if 0 not in self.strengths:
            raise ConfigError(f"{key}.strengths: must include 0 (the control), got {self.strengths}")


def strengths(params: dict) -> list[float]:
    return [float(x) for x in params["interventions"][NAME]["strengths"]]


def run_config(params: dict, strength: float) -> dict:
    b = params["interventions"][NAME]
    config = with_budget(params, {"state_size": b["state_size"], "sparsity": b["sparsity"]}, b)
    config["linear_map"]["bias"]["strength"] = strength
    return config


def planned_cells(params: dict, name: str = NAME) -> list[tuple[dict, bool]]:
    return [(run_config(params, s), False) for s in strengths(params)]


def run(params: dict, scratch: Path) -> xr.Dataset:
    b, values = params["interventions"][NAME], strengths(params)
    return trained_file(SweepFile(NAME, [run_config(params, c) for c in values],
                                   {"experiment": f"intervention:{NAME}", "state_size": b["state_size"],
                                    "sparsity": b["sparsity"], "profile": params["profile"]},
                                   dim="strength", values=values), scratch, params["execution"])

"""Plateau length against the state size S on the cellular automata, with and without the
attention bias (claims 4, 5).

For each S of `sweeps.ca_state_size.state_sizes` and each bias strength c (0 is the
control), the cellular_automata section is trained with S cells per state and a token batch
held fixed across S (batch_tokens // (S * n_states) sequences per step). One NetCDF per S
stacks its cells along `strength`. Its summary (emergence/analysis/ca_state_size.py)
analyses every cell with the cellular_automata thresholds (changing one never retrains).

An additive bias c on the 3-cell window puts less and less attention mass on it as the
number of visible keys grows with S (at initialisation, scores near 0: mass ~ 3e^c / (3e^c + n)
for n other keys), so a constant c is a weaker intervention at larger S. With
`bias_scaling: log_length` the strength applied at S is c + ln(S / reference_state_size),
which keeps e^c / n, and so the initial window mass, the same at every S; `strength` stays
the nominal c (the arm) and `applied_strength` records what each cell trained with, and
`initial_parent_mass` the window mass measured at step 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from emergence.common.schema import ConfigError, number
from emergence.runs.cells import Budget, Cell, Setting, SweepFile, with_budget

SWEEP = "ca_state_size"
TASK = "cellular_automata"


@dataclass(frozen=True, kw_only=True)
class StateSizeSweepArgs(Budget):
    state_sizes: list[int] = number(1, 4096)     # distinct, increasing
    strengths: list[float] = number(-1e4, 1e4)  # bias strengths c; 0 is the control
    batch_tokens: int = number(1, 100_000_000)   # tokens per step: batch = batch_tokens // (S * n_states), at least 1
    bias_scaling: Literal["constant", "log_length"] = "constant"  # log_length: c + ln(S / S0), same initial window mass
    reference_state_size: int = number(1, 4096, default=4)  # S at which the applied strength is c

    def check(self, key: str) -> None:
        if not self.state_sizes or self.state_sizes != sorted(set(self.state_sizes)):
            raise ConfigError(f"{key}.state_sizes: distinct, increasing, at least one, got {self.state_sizes}")
        if 0 not in self.strengths:
            raise ConfigError(f"{key}.strengths: must include 0 (the control), got {self.strengths}")


def strengths(sweep: StateSizeSweepArgs) -> list[float]:
    return [float(x) for x in sweep.strengths]


def batch_size(sweep: StateSizeSweepArgs, state_size: int, n_states: int) -> int:
    return max(1, sweep.batch_tokens // (state_size * n_states))


def applied_strength(sweep: StateSizeSweepArgs, state_size: int, strength: float) -> float:
    """The bias strength a cell trains with: c, or c + ln(S / S0) under log_length scaling
    (the control, c = 0, stays unbiased)."""
    if strength == 0 or sweep.bias_scaling == "constant":
        return float(strength)
    return float(strength + math.log(state_size / sweep.reference_state_size))


def cell_config(setting: Setting, sweep: StateSizeSweepArgs, state_size: int, strength: float) -> Cell:
    section = setting.section(TASK)
    config = with_budget(section, {"state_size": state_size}, sweep,
                         batch_size=batch_size(sweep, state_size, section.task.n_states))
    return replace(config, bias=replace(config.bias, strength=applied_strength(sweep, state_size, strength)))


def sweep_files(setting: Setting, sweep: StateSizeSweepArgs, name: str = SWEEP) -> list[SweepFile]:
    values = strengths(sweep)
    n_states = setting.section(TASK).task.n_states
    return [SweepFile(f"S{S:04d}", [cell_config(setting, sweep, S, c) for c in values],
                      {"experiment": f"sweep:{SWEEP}", "state_size": S, "profile": setting.profile,
                       "batch_size": batch_size(sweep, S, n_states),
                       "bias_scaling": sweep.bias_scaling, "reference_state_size": sweep.reference_state_size},
                      dim="strength", values=values)
            for S in sweep.state_sizes]

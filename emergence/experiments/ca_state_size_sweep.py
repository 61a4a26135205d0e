"""Experiments 2 and 3 on the cellular automata: plateau length against the state size S,
with and without the attention bias.

For each S of `sweeps.ca_state_size.state_sizes` and each bias strength c (0 is the
control), the cellular_automata section is trained with S cells per state and a token batch
held fixed across S (batch_tokens // (S * n_states) sequences per step). Every (S, c) cell is
kept in the cell cache; one NetCDF per S stacks its cells along `strength`. The summary
analyses every cell with the cellular_automata thresholds (changing one never retrains).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.config import int_list

SWEEP = "ca_state_size"
TASK = "cellular_automata"


def strengths(sweep: dict) -> list[float]:
    return [float(x) for x in sweep["strengths"].split()]


def batch_size(sweep: dict, state_size: int, n_states: int) -> int:
    return max(1, sweep["batch_tokens"] // (state_size * n_states))


def cell_config(params: dict, state_size: int, strength: float) -> dict:
    from emergence.experiments.cells import with_budget

    sweep = params["sweeps"][SWEEP]
    budget = dict(sweep, batch_size=batch_size(sweep, state_size, params[TASK]["task"]["n_states"]))
    config = with_budget(params, {"state_size": state_size}, budget, TASK)
    config[TASK]["bias"]["strength"] = strength
    return config


def run(params: dict, out_dir: Path, scratch: Path) -> list[int]:
    """Train (or load) every (S, c) cell; write out_dir/S<S>.nc (cells along `strength`) as one folder."""
    from emergence.experiments.cells import cached_cells, stack_cells
    from emergence.io import write_netcdf

    sweep = params["sweeps"][SWEEP]
    sizes, values = int_list(sweep["state_sizes"]), strengths(sweep)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for S in sizes:
        cells = cached_cells([cell_config(params, S, c) for c in values], scratch, f"{SWEEP}-S{S}")
        ds = stack_cells(cells, "strength", values,
                         {"experiment": f"sweep:{SWEEP}", "state_size": S, "profile": params["profile"],
                          "batch_size": batch_size(sweep, S, params[TASK]["task"]["n_states"])})
        write_netcdf(ds, tmp / f"S{S:04d}.nc")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return sizes


def summarize(cell_dir: Path, analysis: dict) -> xr.Dataset:
    """(cell, seed) Dataset over every (S, c): emergence statistics with censoring."""
    from emergence.experiments.linear_map_analysis import analyse, cell_statistics
    from emergence.io import read_netcdf

    names, S_list, c_list, analysed = [], [], [], []
    for f in sorted(cell_dir.glob("S*.nc")):
        ds = read_netcdf(f)
        S = int(ds.attrs["state_size"])
        for i, c in enumerate(ds["strength"].values):
            cell = ds.isel(strength=i).drop_vars("strength")
            cell.attrs = dict(ds.attrs, config=json.dumps(json.loads(ds.attrs["configs"])[i]))
            analysed.append(analyse(cell, analysis))
            names.append(f"S{S:04d}_c{c:g}")
            S_list.append(S)
            c_list.append(float(c))
    data, n_seed = cell_statistics(analysed)
    data.update({"state_size": (("cell",), np.array(S_list, dtype=np.int64)),
                 "strength": (("cell",), np.array(c_list, dtype=float))})
    chance = float(analysed[0].attrs.get("chance_accuracy", 0.25)) if analysed else 0.25
    return xr.Dataset(data, coords={"cell": np.array(names, dtype=str), "seed": np.arange(n_seed)},
                      attrs={"experiment": f"sweep:{SWEEP}", "task": TASK,
                             "analysis": json.dumps(analysis, sort_keys=True), "chance_accuracy": chance})

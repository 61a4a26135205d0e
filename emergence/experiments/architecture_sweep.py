"""Experiments 4 and 5 (claims 6, 7): heads, head size, width and depth, on either task.

Each cell of `sweeps.<sweep>.cells` is a model shape (n_head, d_head, n_layer) with
d_model = n_head * d_head and d_mlp = mlp_ratio * d_model; task, optimiser and budget come
from the sweep and the task's section (`architecture` runs the linear map, `ca_architecture`
the cellular automata). One stage per sweep trains the cells this profile runs (from the
cell cache where unchanged) and writes one NetCDF per cell; the summary stage analyses them
with the task's thresholds.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import xarray as xr

SWEEPS = {"architecture": "linear_map", "ca_architecture": "cellular_automata"}


def runs_on(cell: dict, profile: str) -> bool:
    return profile in cell["profiles"].split("+")


def task_overrides(sweep_name: str, sweep: dict) -> dict:
    if SWEEPS[sweep_name] == "linear_map":
        return {"state_size": sweep["state_size"], "sparsity": sweep["sparsity"]}
    return {"state_size": sweep["state_size"]}


def cell_config(params: dict, cell: dict, sweep_name: str = "architecture") -> dict:
    from emergence.experiments.cells import with_budget

    sweep, task = params["sweeps"][sweep_name], SWEEPS[sweep_name]
    config = with_budget(params, task_overrides(sweep_name, sweep), sweep, task)
    d_model = cell["n_head"] * cell["d_head"]
    config[task]["model"].update(n_layer=cell["n_layer"], n_head=cell["n_head"], d_model=d_model,
                                 d_mlp=sweep["mlp_ratio"] * d_model)
    return config


def run(params: dict, out_dir: Path, scratch: Path, sweep_name: str = "architecture") -> list[str]:
    """Train (or load) every cell this profile runs; write out_dir/<cell>.nc atomically as a folder."""
    from emergence.experiments.cells import cached_cells
    from emergence.io import write_netcdf

    cells = {name: c for name, c in params["sweeps"][sweep_name]["cells"].items() if runs_on(c, params["profile"])}
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, cell in sorted(cells.items()):
        (ds,) = cached_cells([cell_config(params, cell, sweep_name)], scratch, f"{sweep_name}-{name}")
        ds.attrs.update(cell=name, families=cell["families"])
        write_netcdf(ds, tmp / f"{name}.nc")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return sorted(cells)


def summarize(cell_dir: Path, analysis: dict, sweep_name: str = "architecture") -> xr.Dataset:
    """(cell, seed) Dataset: the shape of each cell, its parameter count and emergence statistics."""
    from emergence.experiments.linear_map_analysis import analyse, cell_statistics
    from emergence.io import read_netcdf
    from emergence.model import ModelConfig, parameter_count

    names, shape, analysed, families = [], [], [], []
    for f in sorted(cell_dir.glob("*.nc")):
        ds = read_netcdf(f)
        analysed.append(analyse(ds, analysis))
        cfg = ModelConfig(**json.loads(ds.attrs["model_config"]))
        names.append(ds.attrs["cell"])
        families.append(ds.attrs["families"])
        shape.append((cfg.n_head, cfg.d_head, cfg.n_layer, cfg.d_model, parameter_count(cfg)))
    data, n_seed = cell_statistics(analysed)
    shape_arr = np.array(shape, dtype=np.int64).reshape(-1, 5)
    for j, k in enumerate(("n_head", "d_head", "n_layer", "d_model", "n_params")):
        data[k] = (("cell",), shape_arr[:, j])
    data["families"] = (("cell",), np.array(families, dtype=str))
    return xr.Dataset(data, coords={"cell": np.array(names, dtype=str), "seed": np.arange(n_seed)},
                      attrs={"experiment": f"sweep:{sweep_name}", "task": SWEEPS[sweep_name], "analysis": json.dumps(analysis, sort_keys=True)})

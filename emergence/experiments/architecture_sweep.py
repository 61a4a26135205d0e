"""Experiments 4 and 5 (claims 6, 7): heads, head size, width and depth on the linear map.

Each cell of `sweeps.architecture.cells` is a model shape (n_head, d_head, n_layer) with
d_model = n_head * d_head and d_mlp = mlp_ratio * d_model; task, optimiser and budget come
from the sweep and linear_map sections. One stage trains the cells this profile runs (from
the cell cache where unchanged) and writes one NetCDF per cell; the summary stage analyses
them with the linear_map thresholds.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import xarray as xr

SWEEP = "architecture"


def runs_on(cell: dict, profile: str) -> bool:
    return profile in cell["profiles"].split("+")


def cell_config(params: dict, cell: dict) -> dict:
    from emergence.experiments.linear_map import with_budget

    sweep = params["sweeps"][SWEEP]
    config = with_budget(params, {"state_size": sweep["state_size"], "sparsity": sweep["sparsity"]}, sweep)
    d_model = cell["n_head"] * cell["d_head"]
    config["linear_map"]["model"].update(n_layer=cell["n_layer"], n_head=cell["n_head"], d_model=d_model,
                                         d_mlp=sweep["mlp_ratio"] * d_model)
    return config


def run(params: dict, out_dir: Path, scratch: Path) -> list[str]:
    """Train (or load) every cell this profile runs; write out_dir/<cell>.nc atomically as a folder."""
    from emergence.experiments import linear_map as lm_exp
    from emergence.io import write_netcdf

    cells = {name: c for name, c in params["sweeps"][SWEEP]["cells"].items() if runs_on(c, params["profile"])}
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, cell in sorted(cells.items()):
        (ds,) = lm_exp.cached_cells([cell_config(params, cell)], scratch, f"{SWEEP}-{name}")
        ds.attrs.update(cell=name, families=cell["families"])
        write_netcdf(ds, tmp / f"{name}.nc")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return sorted(cells)


def summarize(cell_dir: Path, analysis: dict) -> xr.Dataset:
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
                      attrs={"experiment": f"sweep:{SWEEP}", "analysis": json.dumps(analysis, sort_keys=True)})

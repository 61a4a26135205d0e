"""Sweep cells shared by every synthetic task: a budget override, a cell cache and stacking.

A cell is a params dict holding `profile` and one task section (`linear_map` or
`cellular_automata`) with task, model, train and bias. `cached_cells` trains each cell with
its task's experiment module, or loads it from data/.scratch/cells, keyed by the cell's
configuration and the code version, so editing one sweep value retrains only its cells.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import xarray as xr

TASKS = ("linear_map", "cellular_automata")


def experiment_module(task: str):
    if task == "linear_map":
        from emergence.experiments import linear_map as module
    elif task == "cellular_automata":
        from emergence.experiments import cellular_automata as module
    else:
        raise ValueError(f"unknown task section {task!r}; expected one of {TASKS}")
    return module


def task_of(cell: dict) -> str:
    (task,) = [k for k in cell if k in TASKS]
    return task


def with_budget(params: dict, task_overrides: dict, budget: dict, task: str = "linear_map") -> dict:
    """`params[task]` with a sweep's task overrides and training budget (n_seeds, steps,
    batch_size, eval_every, eval_sequences); checkpoints only at the start and end."""
    section = copy.deepcopy(params[task])
    section["task"].update(task_overrides, eval_sequences=budget["eval_sequences"])
    section["train"].update(n_seeds=budget["n_seeds"], steps=budget["steps"], batch_size=budget["batch_size"],
                            eval_every=budget["eval_every"],
                            seeds_per_group=min(section["train"]["seeds_per_group"], budget["n_seeds"]),
                            checkpoint_every=budget["steps"], resume_every=max(1, budget["steps"] // 4))
    return {"profile": params["profile"], task: section}


def cached_cells(cells: list[dict], scratch: Path, prefix: str) -> list[xr.Dataset]:
    """Train each cell (or load it from scratch/cells) and return its results Dataset.
    `prefix` names the cell's temporary files (the cache itself is keyed by configuration only)."""
    from emergence.config import config_hash
    from emergence.io import read_netcdf, write_netcdf
    from emergence.provenance import code_version

    out = []
    for cell in cells:
        task = task_of(cell)
        module = experiment_module(task)
        section = cell[task]
        run_cfg = {k: section[k] for k in ("task", "model", "train", "bias")}
        key = config_hash({"task": task, "c": run_cfg, "code": code_version()})
        cached = scratch / "cells" / f"{task}-{key}.nc"  # shared by every sweep that runs this cell
        if not cached.exists():
            task_path = scratch / f"{prefix}-{key}-task.nc"
            write_netcdf(module.build_task(section["task"]), task_path)
            module.run_training(cell, task_path, cached, None, scratch)
            task_path.unlink()
        out.append(read_netcdf(cached))
    return out


def stack_cells(cells: list[xr.Dataset], dim: str, values: list, attrs: dict) -> xr.Dataset:
    """Cells of one shape stacked along a new leading dimension, with each cell's config kept."""
    configs = [json.loads(c.attrs["config"]) for c in cells]
    keep = {k: cells[0].attrs[k] for k in ("model_config", "code_version", "chance_loss", "eval_sequences")}
    keep.update({k: cells[0].attrs[k] for k in ("chance_accuracy",) if k in cells[0].attrs})
    ds = xr.concat([c.drop_attrs() for c in cells], dim=xr.DataArray(values, dims=dim, name=dim),
                   coords="minimal", compat="override", join="exact")
    ds.attrs = {**attrs, "configs": json.dumps(configs, sort_keys=True), **keep}
    if all("loss_floor" in c.attrs for c in cells):
        ds.attrs["loss_floors"] = json.dumps([float(c.attrs["loss_floor"]) for c in cells])
    return ds

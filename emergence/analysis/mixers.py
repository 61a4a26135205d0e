"""The mixer comparison summarised (claim 8): every cell's task, setting, architecture and
parameter count beside its emergence statistics, each task's cells with that task's thresholds."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import analyse, summary_dataset, task_analyses
from emergence.common.io import read_netcdf
from emergence.core.model import ModelConfig, parameter_count

TASKS = ("linear_map", "cellular_automata")


def summarize(params: dict, name: str, cell_dir: Path) -> xr.Dataset:
    """(cell, seed) Dataset: task, setting, architecture, parameter count, emergence statistics
    (each task's cells analysed with that task's thresholds)."""
    rows, analysed, analyses = [], [], task_analyses(params)
    for f in sorted(cell_dir.glob("*.nc")):
        ds = read_netcdf(f)
        task = ds.attrs["task"]
        analysed.append(analyse(ds, analyses[task]))
        cfg = ModelConfig(**json.loads(ds.attrs["model_config"]))
        chance = float(ds.attrs.get("chance_accuracy", 0.5))
        rows.append((ds.attrs["cell"], task, ds.attrs["setting"], ds.attrs["architecture"], cfg.mixer,
                     parameter_count(cfg), cfg.d_mlp, cfg.n_head, chance,
                     json.dumps(json.loads(ds.attrs["config"])[task]["task"], sort_keys=True)))
    columns = list(zip(*rows)) if rows else [[] for _ in range(10)]
    data = {key: np.array(values, dtype=str) for key, values in zip(("task", "setting", "architecture", "mixer"),
                                                                     columns[1:5])}
    data.update({key: np.array(values, dtype=np.int64) for key, values in zip(("n_params", "d_mlp", "n_head"),
                                                                              columns[5:8])})
    data["chance_accuracy"] = np.array(columns[8], dtype=float)
    data["task_config"] = np.array(columns[9], dtype=str)  # the cell's task section: which setting a rule read
    sweep = params["sweeps"][name]
    return summary_dataset(analysed, list(columns[0]), data,
                           {"experiment": f"sweep:{name}", "analysis": {t: analyses[t] for t in TASKS},
                            "match_parameters": int(sweep["match_parameters"])})

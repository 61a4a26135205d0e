"""An architecture sweep's summary: each cell's shape and parameter count beside its emergence
statistics (the linear map's sweep and the automata's share it)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import AnalysisArgs, analyse, summary_dataset, task_analyses
from emergence.common.io import read_netcdf
from emergence.core.model import ModelConfig, parameter_count


def summarize_architecture(cell_dir: Path, analysis: AnalysisArgs, sweep_name: str, task: str) -> xr.Dataset:
    """An architecture sweep's cells (the linear map's or the automata's) as a (cell, seed) Dataset: the shape of each cell, its parameter count and emergence statistics."""
    names, shape, analysed, families = [], [], [], []
    for f in sorted(cell_dir.glob("*.nc")):
        ds = read_netcdf(f)
        analysed.append(analyse(ds, analysis))
        cfg = ModelConfig(**json.loads(ds.attrs["model_config"]))
        names.append(ds.attrs["cell"])
        families.append(ds.attrs["families"])
        shape.append((cfg.n_head, cfg.d_head, cfg.n_layer, cfg.d_model, parameter_count(cfg)))
    shape_arr = np.array(shape, dtype=np.int64).reshape(-1, 5)
    columns = {k: shape_arr[:, j] for j, k in enumerate(("n_head", "d_head", "n_layer", "d_model", "n_params"))}
    columns["families"] = np.array(families, dtype=str)
    return summary_dataset(analysed, names, columns, {"experiment": f"sweep:{sweep_name}", "task": task,
                                                      "analysis": analysis})


def summarize(params: dict, name: str, cell_dir: Path) -> xr.Dataset:
    """The experiment `name`'s summary, with the thresholds of the one task whose analysis its
    stage reads (architecture: the linear map's, ca_architecture: the automata's)."""
    ((task, analysis),) = task_analyses(params).items()
    return summarize_architecture(cell_dir, analysis, name, task)

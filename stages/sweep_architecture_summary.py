"""Stage sweep_architecture_summary: emergence statistics of every cell of the linear map's
architecture sweep, with the linear_map thresholds; `summarize` serves the automata's sweep too.

    python -m stages.sweep_architecture_summary CELLS_DIR SUMMARY_NC
"""
import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis import analyse, summary_dataset
from emergence.io import read_netcdf, write_netcdf
from emergence.model import ModelConfig, parameter_count
from emergence.stage import stage_run


def summarize(cell_dir: Path, analysis: dict, sweep_name: str, task: str) -> xr.Dataset:
    """(cell, seed) Dataset: the shape of each cell, its parameter count and emergence statistics."""
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


if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("sweep_architecture_summary") as params:
        write_netcdf(summarize(cells, params["linear_map"]["analysis"], "architecture", "linear_map"), out)

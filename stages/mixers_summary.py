"""Stage mixers_summary: emergence statistics of every mixer cell, each task's cells with
that task's thresholds, and each cell's parameter count.

    python -m stages.mixers_summary CELLS_DIR SUMMARY_NC
"""
import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import analyse, summary_dataset
from emergence.common.io import read_netcdf, write_netcdf
from emergence.core.model import ModelConfig, parameter_count
from emergence.pipeline.stage import stage_run

SWEEP, TASKS = "mixers", ("linear_map", "cellular_automata")


def summarize(cell_dir: Path, params: dict) -> xr.Dataset:
    """(cell, seed) Dataset: task, setting, architecture, parameter count, emergence statistics
    (each task's cells analysed with that task's thresholds)."""
    rows, analysed = [], []
    for f in sorted(cell_dir.glob("*.nc")):
        ds = read_netcdf(f)
        task = ds.attrs["task"]
        analysed.append(analyse(ds, params[task]["analysis"]))
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
    sweep = params["sweeps"][SWEEP]
    return summary_dataset(analysed, list(columns[0]), data,
                           {"experiment": f"sweep:{SWEEP}", "analysis": {t: params[t]["analysis"] for t in TASKS},
                            "match_parameters": int(sweep["match_parameters"])})


if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("mixers_summary") as params:
        write_netcdf(summarize(cells, params), out)

"""Stage sparsity_summary: every cell of the sparsity sweep analysed into one Dataset, with
the linear_map thresholds (a threshold edit never retrains).

    python -m stages.sparsity_summary ROWS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import AnalysisArgs, analyse, summary_dataset, task_analyses, unstack_cells
from emergence.common.io import read_netcdf, write_netcdf
from emergence.pipeline.stage import stage_run

SWEEP = "sparsity"


def summarize(row_files: dict[str, Path], analysis: AnalysisArgs) -> xr.Dataset:
    """One Dataset over (cell, seed): S, s, final loss, plateau end and emergence with censoring."""
    names, S_list, s_list, analysed = [], [], [], []
    for row_name in sorted(row_files):
        ds = read_netcdf(row_files[row_name])
        if ds.attrs.get("status") != "ran":
            continue
        S = int(ds.attrs["state_size"])
        for s, cell in unstack_cells(ds, "sparsity"):
            analysed.append(analyse(cell, analysis))
            names.append(f"S{S:02d}_s{int(s):02d}")
            S_list.append(S)
            s_list.append(int(s))
    S_arr, s_arr = np.array(S_list, dtype=np.int64), np.array(s_list, dtype=np.int64)
    return summary_dataset(analysed, names, {"state_size": S_arr, "sparsity": s_arr,
                                             "density": s_arr / np.maximum(S_arr, 1)},
                           {"experiment": f"sweep:{SWEEP}", "analysis": analysis, "chance_loss": float(np.log(2.0))})


if __name__ == "__main__":
    rows, out = map(Path, sys.argv[1:])
    with stage_run("sparsity_summary") as params:
        files = {name: rows / f"{name}.nc" for name in params["sweeps"][SWEEP]["grid"]}
        missing = [str(f) for f in files.values() if not f.exists()]
        if missing:
            raise SystemExit(f"missing sweep rows (run dvc repro): {missing}")
        write_netcdf(summarize(files, task_analyses(params)["linear_map"]), out)

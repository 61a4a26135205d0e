"""Stage attention_bias_summary: emergence statistics of every bias strength, with the linear
map's thresholds (changing a threshold reanalyses, never retrains).

    python -m stages.attention_bias_summary RESULTS_NC SUMMARY_NC
"""
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import AnalysisArgs, analyse, summary_dataset, task_analyses, unstack_cells
from emergence.common.io import read_netcdf, write_netcdf
from emergence.pipeline.stage import stage_run

NAME = "attention_bias"


def summarize(results: xr.Dataset, analysis: AnalysisArgs) -> xr.Dataset:
    """(cell, seed) Dataset, one cell per strength: emergence statistics with censoring, and
    the mean attention mass on the true parents at step 0 (what the bias does at initialisation)."""
    values, analysed, initial_mass = [], [], []
    for c, cell in unstack_cells(results, "strength"):
        values.append(float(c))
        analysed.append(analyse(cell, analysis))
        initial_mass.append(float(np.nanmean(cell["parent_mass"].isel(step=0).values)))
    names = [f"c{c:g}" for c in values]
    return summary_dataset(analysed, names, {"strength": np.array(values, dtype=float),
                                             "initial_parent_mass": np.array(initial_mass, dtype=float)},
                           {"experiment": f"intervention:{NAME}", "state_size": results.attrs["state_size"],
                            "sparsity": results.attrs["sparsity"], "analysis": analysis,
                            "chance_loss": results.attrs["chance_loss"]})


if __name__ == "__main__":
    results, out = map(Path, sys.argv[1:])
    with stage_run("attention_bias_summary") as params:
        write_netcdf(summarize(read_netcdf(results), task_analyses(params)["linear_map"]), out)

"""Stage sweep_architecture_summary: emergence statistics of every cell, with the linear map thresholds.

    python -m stages.sweep_architecture_summary CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.experiments.architecture_sweep import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("sweep_architecture_summary") as params:
        write_netcdf(summarize(cells, params["linear_map"]["analysis"], "architecture"), out)

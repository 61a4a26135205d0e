"""Stage sweep_mixers_summary: emergence statistics of every mixer cell, with each task's thresholds.

    python -m stages.sweep_mixers_summary CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.experiments.mixer_comparison import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("sweep_mixers_summary") as params:
        write_netcdf(summarize(cells, params), out)

"""Stage sweep_precision_summary: the emergence statistics of both precisions, and the verdicts.

    python -m stages.sweep_precision_summary CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.experiments.precision_check import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("sweep_precision_summary") as params:
        write_netcdf(summarize(cells, params), out)

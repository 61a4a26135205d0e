"""Stage sweep_ca_state_size_summary: emergence statistics of every (S, strength) cell.

    python -m stages.sweep_ca_state_size_summary CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.experiments.ca_state_size_sweep import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("sweep_ca_state_size_summary") as params:
        write_netcdf(summarize(cells, params["cellular_automata"]["analysis"]), out)

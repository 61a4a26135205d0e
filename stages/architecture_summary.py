"""Stage architecture_summary: emergence statistics of every cell of the linear map's
architecture sweep, with the linear_map thresholds.

    python -m stages.architecture_summary CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.analysis.architecture import summarize_architecture
from emergence.common.io import write_netcdf
from emergence.pipeline.stage import stage_run

if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("architecture_summary") as params:
        write_netcdf(summarize_architecture(cells, params["linear_map"]["analysis"], "architecture", "linear_map"), out)

"""Stage sweep_mixers_summary: emergence statistics of every mixer cell, with each task's thresholds.

    python -m stages.sweep_mixers_summary
"""
from pathlib import Path

from emergence.experiments.mixer_comparison import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    with stage_run("sweep_mixers_summary") as params:
        write_netcdf(summarize(Path("data/sweeps/mixers"), params), Path("data/sweeps/mixers_summary.nc"))

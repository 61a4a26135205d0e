"""Stage pythia: the paper's analysis on real Pythia / PolyPythia checkpoints, when enabled.

Disabled (the default) it writes a results file that says so, so the DAG and the report are
the same everywhere; enabled it downloads checkpoints from the Hugging Face hub.
"""
from pathlib import Path

import xarray as xr

from emergence.io import write_netcdf
from emergence.stage import stage_run

OUT = Path("data/pythia/results.nc")

if __name__ == "__main__":
    with stage_run("pythia") as params:
        section = params["pythia"]
        if not section["enabled"]:
            write_netcdf(xr.Dataset(attrs={"experiment": "pythia", "status": "not enabled"}), OUT)
        else:
            from emergence.pythia import run

            write_netcdf(run(section), OUT)

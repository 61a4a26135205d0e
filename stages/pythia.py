"""Stage pythia: the paper's analysis on real Pythia / PolyPythia checkpoints, when enabled.

    python -m stages.pythia RESULTS_NC

Disabled (the default) it writes a results file that says so, so the DAG and the report are
the same everywhere; enabled it downloads checkpoints from the Hugging Face hub.
"""
import sys
from pathlib import Path

import xarray as xr

from emergence.common.io import write_netcdf
from emergence.common.schema import load
from emergence.pipeline.stage import stage_run
from emergence.runs import pythia

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("pythia") as params:
        section = load(pythia.PythiaArgs, params["pythia"], "pythia", declared_only=True)
        if not section.enabled:
            write_netcdf(xr.Dataset(attrs={"experiment": "pythia", "status": "not enabled"}), out)
        else:
            write_netcdf(pythia.run(section), out)

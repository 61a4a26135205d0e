"""Stage sweep_architecture_summary: emergence statistics of every architecture cell."""
from pathlib import Path

from emergence.experiments.architecture_sweep import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    with stage_run("sweep_architecture_summary") as params:
        write_netcdf(summarize(Path("data/sweeps/architecture"), params["linear_map"]["analysis"]),
                     Path("data/sweeps/architecture_summary.nc"))

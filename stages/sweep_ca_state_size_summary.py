"""Stage sweep_ca_state_size_summary: emergence statistics of every (S, strength) cell."""
from pathlib import Path

from emergence.experiments.ca_state_size_sweep import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    with stage_run("sweep_ca_state_size_summary") as params:
        write_netcdf(summarize(Path("data/sweeps/ca_state_size"), params["cellular_automata"]["analysis"]),
                     Path("data/sweeps/ca_state_size_summary.nc"))

"""Stage lm_probe: held-out probes at every checkpoint, and emergence brackets by binary search."""
from pathlib import Path

from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    with stage_run("lm_probe") as params:
        from emergence.experiments.language_model import probe_sizes

        write_netcdf(probe_sizes(params, Path("data/lm/models")), Path("data/lm/probes.nc"))

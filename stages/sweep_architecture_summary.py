"""Stage sweep_architecture_summary / sweep_ca_architecture_summary: emergence statistics of
every cell, with the task's analysis thresholds.

    python -m stages.sweep_architecture_summary [architecture | ca_architecture]
"""
import sys
from pathlib import Path

from emergence.experiments.architecture_sweep import SWEEPS, summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    sweep = sys.argv[1] if len(sys.argv) > 1 else "architecture"
    stage = "sweep_architecture_summary" if sweep == "architecture" else f"sweep_{sweep}_summary"
    with stage_run(stage) as params:
        write_netcdf(summarize(Path("data/sweeps") / sweep, params[SWEEPS[sweep]]["analysis"], sweep),
                     Path("data/sweeps") / f"{sweep}_summary.nc")

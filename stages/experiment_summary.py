"""Stage <name>_summary of an experiment whose stages are generated (emergence/common/experiments.py):
its cells analysed into one Dataset by the experiment's `summarize`.

    python -m stages.experiment_summary NAME CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.common.experiments import experiment, resolve
from emergence.common.io import write_netcdf
from emergence.pipeline.stage import stage_run

if __name__ == "__main__":
    name, cells, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    summarize = resolve(experiment(name).summarize)
    with stage_run(f"{name}_summary") as params:
        write_netcdf(summarize(params, name, cells), out)

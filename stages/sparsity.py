"""Stage sparsity@<row>: the cells of one state size S of the sparsity sweep.

    python -m stages.sparsity ROW ROW_NC

DVC runs one stage per row of `sweeps.sparsity.grid` and each declares only its own row, so
editing one row reruns only that row; inside a row, unchanged cells load from the cell cache.
"""
import sys
from pathlib import Path

from emergence.common.io import write_netcdf
from emergence.common.schema import load
from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.cells import Setting
from emergence.runs.sweeps.sparsity import SparsitySweepArgs, run_row

if __name__ == "__main__":
    row, out = sys.argv[1], Path(sys.argv[2])
    with stage_run("sparsity", key=row) as params:
        setting = Setting.of(params)
        sweep = load(SparsitySweepArgs, params["sweeps"]["sparsity"], "sweeps.sparsity", declared_only=True)
        write_netcdf(run_row(setting, sweep, row, SCRATCH, setting.execution), out)

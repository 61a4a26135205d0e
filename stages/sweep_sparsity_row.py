"""Stage sweep_sparsity@<row>: the cells of one state size S of experiment 1.

Usage: python -m stages.sweep_sparsity_row ROW STATE_SIZE "SPARSITIES" "DEFAULT" "SMOKE"
dvc.yaml fills these in from params.yaml, so DVC reruns exactly the rows whose grid changes;
inside a row, unchanged cells load from the cell cache in data/.scratch/cells.
"""
import sys
from pathlib import Path

from emergence.io import write_netcdf
from emergence.stage import stage_run

SCRATCH = Path("data/.scratch")

if __name__ == "__main__":
    name = sys.argv[1]
    row = {"state_size": int(sys.argv[2]), "sparsities": sys.argv[3], "default": sys.argv[4], "smoke": sys.argv[5]}
    with stage_run("sweep_sparsity", timing_name=f"sweep_sparsity@{name}") as params:
        from emergence.experiments.sparsity_sweep import run_row

        write_netcdf(run_row(params, name, row, SCRATCH), Path("data/sweeps/sparsity") / f"{name}.nc")

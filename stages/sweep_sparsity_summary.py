"""Stage sweep_sparsity_summary: analyse every cell of experiment 1 into one Dataset."""
from pathlib import Path

from emergence.experiments.sparsity_sweep import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

CELLS = Path("data/sweeps/sparsity")
OUT = Path("data/sweeps/sparsity_summary.nc")

if __name__ == "__main__":
    with stage_run("sweep_sparsity_summary") as params:
        files = {name: CELLS / f"{name}.nc" for name in params["sweeps"]["sparsity"]["grid"]}
        missing = [str(f) for f in files.values() if not f.exists()]
        if missing:
            raise SystemExit(f"missing sweep rows (run dvc repro): {missing}")
        write_netcdf(summarize(files, params["linear_map"]["analysis"]), OUT)

"""Stage sweep_sparsity_summary: every cell of the sparsity sweep analysed into one Dataset.

    python -m stages.sweep_sparsity_summary ROWS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.experiments.sparsity_sweep import summarize
from emergence.io import write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    rows, out = map(Path, sys.argv[1:])
    with stage_run("sweep_sparsity_summary") as params:
        files = {name: rows / f"{name}.nc" for name in params["sweeps"]["sparsity"]["grid"]}
        missing = [str(f) for f in files.values() if not f.exists()]
        if missing:
            raise SystemExit(f"missing sweep rows (run dvc repro): {missing}")
        write_netcdf(summarize(files, params["linear_map"]["analysis"]), out)

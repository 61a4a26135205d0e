"""Stage linear_map_analyse: plateau end, emergence step and transition width per seed and bit."""
import csv
from pathlib import Path

from emergence.experiments.linear_map_analysis import analyse, plot_table, summary_metrics
from emergence.io import atomic_path, read_netcdf, write_json, write_netcdf
from emergence.stage import stage_run

RESULTS = Path("data/linear_map/train.nc")
ANALYSIS = Path("data/linear_map/analysis.nc")
METRICS = Path("data/linear_map/metrics.json")
PLOT = Path("data/linear_map/plots/accuracy.csv")

if __name__ == "__main__":
    with stage_run("linear_map_analyse") as params:
        results = read_netcdf(RESULTS)
        analysed = analyse(results, params["linear_map"]["analysis"])
        write_netcdf(analysed, ANALYSIS)
        write_json(summary_metrics(analysed), METRICS)
        rows = plot_table(results)
        with atomic_path(PLOT) as tmp, tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

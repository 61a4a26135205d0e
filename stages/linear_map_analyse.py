"""Stage linear_map_analyse: plateau end, emergence step and transition width per seed and bit.

    python -m stages.linear_map_analyse RESULTS_NC ANALYSIS_NC METRICS_JSON PLOT_CSV
"""
import csv
import sys
from pathlib import Path

from emergence.analysis.events import analyse, plot_table, summary_metrics, task_analyses
from emergence.common.io import atomic_path, read_netcdf, write_json, write_netcdf
from emergence.pipeline.stage import stage_run

if __name__ == "__main__":
    results_path, analysis_path, metrics_path, plot_path = map(Path, sys.argv[1:])
    with stage_run("linear_map_analyse") as params:
        results = read_netcdf(results_path)
        analysed = analyse(results, task_analyses(params)["linear_map"])
        write_netcdf(analysed, analysis_path)
        write_json(summary_metrics(analysed), metrics_path)
        rows = plot_table(results)
        with atomic_path(plot_path) as tmp, tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

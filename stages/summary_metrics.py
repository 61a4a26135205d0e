"""Stage summary_metrics: every chapter's summary as one flat DVC metrics file.

    python -m stages.summary_metrics METRICS_JSON PLOTS_DIR

Reads the summaries through dvc.yaml's `paths` (emergence/analysis/summary_metrics.py) and writes,
atomically, a JSON committed with the code, so `dvc metrics diff A B` compares whole reports.
"""
import json
import sys
from pathlib import Path

from emergence.analysis.summary_metrics import plot_tables, summary_metrics
from emergence.claims.scorecard import json_safe
from emergence.common.io import atomic_dir, atomic_path, read_netcdf
from emergence.pipeline.stage import pipeline_paths, stage_run

SUMMARIES = {"sparsity": "sparsity_summary", "attention_bias": "attention_bias_summary",
             "architecture": "architecture_summary", "ca_architecture": "ca_architecture_summary",
             "automata": "ca_state_size_summary", "mixers": "mixers_summary"}

if __name__ == "__main__":
    out, plots = map(Path, sys.argv[1:])
    with stage_run("summary_metrics"):
        paths = pipeline_paths()
        summaries = {k: read_netcdf(paths[v]) for k, v in SUMMARIES.items()}
        probes = read_netcdf(paths["lm_probes"])
        metrics = summary_metrics(summaries, probes, read_netcdf(paths["precision_summary"]),
                                  {f.stem: read_netcdf(f) for f in sorted(Path(paths["mirage"]).glob("*.nc"))})
        with atomic_path(out) as tmp:
            tmp.write_text(json.dumps(json_safe(metrics), indent=1, sort_keys=True) + "\n")
        with atomic_dir(plots) as tmp:
            for name, table in plot_tables(summaries, probes).items():
                table.to_csv(tmp / f"{name}.csv", index=False, float_format="%.6g")

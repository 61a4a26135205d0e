"""Stage summary_metrics: every experiment's summary as one flat DVC metrics file.

    python -m stages.summary_metrics METRICS_JSON PLOTS_DIR

Each experiment declares its metrics and the results they read (emergence/experiments/); this
stage reads those through dvc.yaml's `paths` and writes, atomically, a JSON committed with the
code, so `dvc metrics diff A B` compares whole reports, and the key curves as DVC plots.
"""
import json
import sys
from pathlib import Path

from emergence.analysis.summary_metrics import plot_tables, summary_metrics
from emergence.claims.scorecard import json_safe, read_result
from emergence.common.io import atomic_dir, atomic_path
from emergence.common.experiments import entry_points
from emergence.pipeline.stage import pipeline_paths, stage_run

if __name__ == "__main__":
    out, plots = map(Path, sys.argv[1:])
    with stage_run("summary_metrics"):
        paths = pipeline_paths()
        metrics = summary_metrics({e.name: compute(*(read_result(paths[r]) for r in e.metrics_read))
                                   for e, compute in entry_points("metrics")})
        with atomic_path(out) as tmp:
            tmp.write_text(json.dumps(json_safe(metrics), indent=1, sort_keys=True) + "\n")
        tables = plot_tables(*(read_result(paths[r]) for r in ("sparsity_summary", "ca_state_size_summary", "lm_probes")))
        with atomic_dir(plots) as tmp:
            for name, table in tables.items():
                table.to_csv(tmp / f"{name}.csv", index=False, float_format="%.6g")

"""Stage claims_scorecard: every claim decided by its rule on this run's results.

    python -m stages.claims_scorecard PAPER_CLAIMS_YAML SCORECARD_JSON VERDICTS_JSON

Reads the summaries through dvc.yaml's `paths`, applies the rules (emergence/scorecard.py,
emergence/verdicts.py) with the `claims` thresholds and writes, atomically, the scorecard
(every record with its texts, for the report) and the verdicts (a DVC metric, so
`dvc metrics diff` shows a verdict that changed between commits).
"""
import sys
from pathlib import Path

from emergence.io import atomic_path, read_netcdf
from emergence.scorecard import read_paper_claims, scorecard, scorecard_json, verdicts_json
from emergence.stage import pipeline_paths, stage_run

RESULTS = ("linear_map_analysis", "sparsity_summary", "attention_bias_summary", "architecture_summary",
           "ca_architecture_summary", "ca_state_size_summary", "lm_probes", "mixers_summary")

if __name__ == "__main__":
    paper, out, metric = map(Path, sys.argv[1:])
    with stage_run("claims_scorecard") as params:
        paths = pipeline_paths()
        results = {name: read_netcdf(paths[name]) for name in RESULTS}
        results["lm_patching"] = {f.stem: read_netcdf(f) for f in sorted(Path(paths["lm_patching"]).glob("*.nc"))}
        results["mirage"] = {f.stem: read_netcdf(f) for f in sorted(Path(paths["mirage"]).glob("*.nc"))}
        rows = scorecard(results, params["claims"], read_paper_claims(paper))
        with atomic_path(out) as tmp:
            tmp.write_text(scorecard_json(rows, params["claims"]))
        with atomic_path(metric) as tmp:
            tmp.write_text(verdicts_json(rows))

"""Stage claims_scorecard: every claim decided by its rule on this run's results.

    python -m stages.claims_scorecard PAPER_CLAIMS_YAML SCORECARD_JSON VERDICTS_JSON

Reads the summaries through dvc.yaml's `paths`, applies the rules (emergence/claims/scorecard.py,
emergence/claims/verdicts.py) with the `claims` thresholds (and the paper profile's seed counts, for
what this run leaves undecided), decides every claim again on resamples of the seeds (each
verdict's stability, emergence/claims/stability.py) and with each threshold moved both ways (the
verdicts that hinge on it), on every core, and writes, atomically, the scorecard
(every record with its texts, for the report) and the verdicts (a DVC metric, so
`dvc metrics diff` shows a verdict that changed between commits).
"""
import sys
from pathlib import Path

from emergence.claims.scorecard import (read_paper_claims, read_result, scorecard, scorecard_json,
                                  rule_sections, threshold_sensitivity, thresholds_read, verdicts_json)
from emergence.claims.thresholds import ClaimsArgs
from emergence.common.io import atomic_path
from emergence.common.params import merged_params
from emergence.common.schema import load
from emergence.pipeline.stage import pipeline_paths, stage_run
from emergence.runs.cores import usable_cores

RESULTS = [name for _, _, inputs in rule_sections() for name in inputs]

if __name__ == "__main__":
    paper, out, metric = map(Path, sys.argv[1:])
    with stage_run("claims_scorecard") as params:
        paths = pipeline_paths()
        results = {name: read_result(paths[name]) for name in RESULTS}
        claims = load(ClaimsArgs, params["claims"], "claims", declared_only=True)
        paper_claims, paper_profile = read_paper_claims(paper), merged_params(profile="paper")
        decided = thresholds_read(results, claims, paper_claims, paper_profile)  # each rule once, at the thresholds
        rows = scorecard(results, claims, paper_claims, paper_profile, progress=True, workers=usable_cores(),
                         decided=decided)
        moved = threshold_sensitivity(rows, results, claims, paper_claims, paper_profile, workers=usable_cores(),
                                      progress=True, decided=decided)
        with atomic_path(out) as tmp:
            tmp.write_text(scorecard_json(rows, claims, moved))
        with atomic_path(metric) as tmp:
            tmp.write_text(verdicts_json(rows))

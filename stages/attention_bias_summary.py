"""Stage attention_bias_summary: emergence statistics of every bias strength, with the linear
map's thresholds (changing a threshold reanalyses, never retrains).

    python -m stages.attention_bias_summary RESULTS_NC SUMMARY_NC
"""
import sys
from pathlib import Path

from emergence.experiments.bias_intervention import summarize
from emergence.io import read_netcdf, write_netcdf
from emergence.stage import stage_run

if __name__ == "__main__":
    results, out = map(Path, sys.argv[1:])
    with stage_run("attention_bias_summary") as params:
        write_netcdf(summarize(read_netcdf(results), params["linear_map"]["analysis"]), out)

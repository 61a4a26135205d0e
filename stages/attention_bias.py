"""Stage attention_bias: the linear map trained with and without the ground-truth attention bias.

    python -m stages.attention_bias RESULTS_NC
"""
import sys
from pathlib import Path

from emergence.common.io import write_netcdf
from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.sweeps.attention_bias import run

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("attention_bias") as params:
        write_netcdf(run(params, SCRATCH), out)

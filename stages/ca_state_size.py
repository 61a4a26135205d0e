"""Stage ca_state_size: the cellular automata across state sizes, with and without the bias.

    python -m stages.ca_state_size CELLS_DIR
"""
import sys
from pathlib import Path

from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.sweeps.ca_state_size import run

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("ca_state_size") as params:
        run(params, out, SCRATCH)

"""Stage precision: the default cells of the linear map and the automata in both precisions.

    python -m stages.precision CELLS_DIR
"""
import sys
from pathlib import Path

from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.sweeps.precision import run

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("precision") as params:
        run(params, out, SCRATCH)

"""Stage mixers: the transformer and the other sequence mixers on both synthetic tasks (claim 8).

    python -m stages.mixers CELLS_DIR
"""
import sys
from pathlib import Path

from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.sweeps.mixers import run

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("mixers") as params:
        run(params, out, SCRATCH)

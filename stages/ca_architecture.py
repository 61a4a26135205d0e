"""Stage ca_architecture: other head counts, head sizes and depths on the cellular automata (claims 6, 7).

    python -m stages.ca_architecture CELLS_DIR
"""
import sys
from pathlib import Path

from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.sweeps.architecture import run

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("ca_architecture") as params:
        run(params, out, SCRATCH, "ca_architecture")

"""Stage <name> of an experiment whose stages are generated (emergence/common/experiments.py):
the cells of the files it declares, trained or loaded from the cell cache.

    python -m stages.experiment NAME CELLS_DIR

Writes CELLS_DIR/<file>.nc, one per declared file, the folder replaced atomically.
"""
import sys
from pathlib import Path

from emergence.common.experiments import experiment, resolve
from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.cells import write_sweep

if __name__ == "__main__":
    name, out = sys.argv[1], Path(sys.argv[2])
    files = resolve(experiment(name).files)
    with stage_run(name) as params:
        write_sweep(files(params, name), out, SCRATCH, params["execution"])

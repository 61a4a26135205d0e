"""Stage <name> of an experiment whose stages are generated (emergence/common/experiments.py):
the cells of the files it declares, trained or loaded from the cell cache.

    python -m stages.experiment NAME CELLS_DIR

Writes CELLS_DIR/<file>.nc, one per declared file, the folder replaced atomically.
"""
import sys
from pathlib import Path

from emergence.common.experiments import experiment, resolve
from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.cells import Setting, write_sweep

if __name__ == "__main__":
    name, out = sys.argv[1], Path(sys.argv[2])
    declared = experiment(name)
    files = resolve(declared.files)
    with stage_run(name) as params:
        setting = Setting.of(params)
        write_sweep(files(setting, declared.section(params), name), out, SCRATCH, setting.execution)

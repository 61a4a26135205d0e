"""Stage linear_map_train: every seed on the linear map, with metrics and checkpoints.

    python -m stages.linear_map_train TASK_NC RESULTS_NC CHECKPOINTS_DIR

Through the cell cache (a rerun with the same configuration and training code copies the
results instead of retraining); an interrupted run resumes from data/.scratch/. Where the
executor expects it to finish sooner (emergence/runs/cache.py's `splits`: on 2 cores,
the default run's 4 seed groups on two one-thread workers), the cell's seed groups train in
worker processes first; the bytes are the same.
"""
import shutil
import sys
from pathlib import Path

from emergence.common.io import atomic_dir, atomic_path
from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.cache import RECORDS
from emergence.runs.cells import RESULTS, Setting, build_cells, trained_cell

if __name__ == "__main__":
    task_path, results_path, checkpoints = map(Path, sys.argv[1:])
    with stage_run("linear_map_train") as params:
        setting = Setting.of(params)
        build_cells([(setting.linear_map, True)], SCRATCH, setting.execution)
        entry = trained_cell(setting.linear_map, SCRATCH, with_checkpoints=True, task_path=task_path)
        with atomic_path(results_path, ".nc") as tmp:
            shutil.copyfile(entry / RESULTS, tmp)
        with atomic_dir(checkpoints) as tmp:
            shutil.copytree(entry / "checkpoints", tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*RECORDS))

"""Stage linear_map_train: train every seed on the linear map, record metrics, keep checkpoints.

Resumable: an interrupted run leaves its state in data/.scratch/ and a rerun continues it.
"""
from pathlib import Path

from emergence.experiments.linear_map import run_training
from emergence.stage import stage_run

TASK = Path("data/linear_map/task.nc")
RESULTS = Path("data/linear_map/train.nc")
CHECKPOINTS = Path("data/linear_map/checkpoints")
SCRATCH = Path("data/.scratch")

if __name__ == "__main__":
    with stage_run("linear_map_train") as params:
        run_training(params, TASK, RESULTS, CHECKPOINTS, SCRATCH)

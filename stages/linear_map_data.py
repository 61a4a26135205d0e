"""Stage linear_map_data: the fixed sparse map A and the evaluation set.

    python -m stages.linear_map_data TASK_NC
"""
import sys
from pathlib import Path

from emergence.common.io import write_netcdf
from emergence.common.schema import load
from emergence.core.tasks import linear_map
from emergence.pipeline.stage import stage_run

if __name__ == "__main__":
    (task_path,) = map(Path, sys.argv[1:])
    with stage_run("linear_map_data") as params:
        write_netcdf(linear_map.build_task(load(linear_map.TaskArgs, params["linear_map"]["task"], "linear_map.task", declared_only=True)),
                     task_path)

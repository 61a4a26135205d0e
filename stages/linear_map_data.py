"""Stage linear_map_data: the fixed sparse map A and the evaluation set."""
from pathlib import Path

from emergence.experiments.linear_map import build_task
from emergence.io import write_netcdf
from emergence.stage import stage_run

OUT = Path("data/linear_map/task.nc")

if __name__ == "__main__":
    with stage_run("linear_map_data") as params:
        write_netcdf(build_task(params["linear_map"]["task"]), OUT)

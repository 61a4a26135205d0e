"""Stage sweep_architecture: the linear map with other head counts, head sizes and depths."""
from pathlib import Path

from emergence.stage import stage_run

OUT = Path("data/sweeps/architecture")

if __name__ == "__main__":
    with stage_run("sweep_architecture") as params:
        from emergence.experiments.architecture_sweep import run

        run(params, OUT, Path("data/.scratch"))

"""Stage sweep_architecture / sweep_ca_architecture: other head counts, head sizes and depths.

    python -m stages.sweep_architecture [architecture | ca_architecture]
"""
import sys
from pathlib import Path

from emergence.stage import stage_run

if __name__ == "__main__":
    sweep = sys.argv[1] if len(sys.argv) > 1 else "architecture"
    stage = "sweep_architecture" if sweep == "architecture" else f"sweep_{sweep}"
    with stage_run(stage) as params:
        from emergence.experiments.architecture_sweep import run

        run(params, Path("data/sweeps") / sweep, Path("data/.scratch"), sweep)

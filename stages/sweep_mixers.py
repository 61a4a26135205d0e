"""Stage sweep_mixers: the transformer and the other sequence mixers on both synthetic tasks (claim 8).

    python -m stages.sweep_mixers
"""
from pathlib import Path

from emergence.stage import stage_run

if __name__ == "__main__":
    with stage_run("sweep_mixers") as params:
        from emergence.experiments.mixer_comparison import run

        run(params, Path("data/sweeps/mixers"), Path("data/.scratch"))

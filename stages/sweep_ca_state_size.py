"""Stage sweep_ca_state_size: the cellular automata across state sizes, with and without the bias."""
from pathlib import Path

from emergence.stage import stage_run

if __name__ == "__main__":
    with stage_run("sweep_ca_state_size") as params:
        from emergence.experiments.ca_state_size_sweep import run

        run(params, Path("data/sweeps/ca_state_size"), Path("data/.scratch"))

"""Stage attention_bias: the linear map trained with and without the ground-truth attention bias."""
from pathlib import Path

from emergence.io import write_netcdf
from emergence.stage import stage_run

OUT = Path("data/interventions/attention_bias.nc")

if __name__ == "__main__":
    with stage_run("attention_bias") as params:
        from emergence.experiments.bias_intervention import run

        write_netcdf(run(params, Path("data/.scratch")), OUT)

"""Stage attention_bias: the linear map trained with and without the ground-truth attention bias.

    python -m stages.attention_bias RESULTS_NC
"""
import sys
from pathlib import Path

from emergence.common.io import write_netcdf
from emergence.common.schema import load
from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.cells import Setting
from emergence.runs.sweeps.attention_bias import AttentionBiasArgs, run

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("attention_bias") as params:
        setting = Setting.of(params)
        intervention = load(AttentionBiasArgs, params["interventions"]["attention_bias"], "interventions.attention_bias",
                            declared_only=True)
        write_netcdf(run(setting, intervention, SCRATCH, setting.execution), out)

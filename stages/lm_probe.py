"""Stage lm_probe: held-out probes at every checkpoint, and emergence brackets by binary search.

    python -m stages.lm_probe MODELS_DIR PROBES_NC
"""
import sys
from pathlib import Path

from emergence.common.io import write_netcdf
from emergence.common.schema import load
from emergence.pipeline.stage import stage_run
from emergence.runs.lm_probes import LanguageModelArgs, probe_sizes

if __name__ == "__main__":
    models, out = map(Path, sys.argv[1:])
    with stage_run("lm_probe") as params:
        section = load(LanguageModelArgs, params["language_model"], "language_model", declared_only=True)
        write_netcdf(probe_sizes(section, models), out)

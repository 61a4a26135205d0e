"""Stage lm_probe: held-out probes at every checkpoint, and emergence brackets by binary search.

    python -m stages.lm_probe MODELS_DIR PROBES_NC
"""
import sys
from pathlib import Path

from emergence.common.io import write_netcdf
from emergence.pipeline.stage import stage_run
from emergence.runs.lm_probes import probe_sizes

if __name__ == "__main__":
    models, out = map(Path, sys.argv[1:])
    with stage_run("lm_probe") as params:
        write_netcdf(probe_sizes(params, models), out)

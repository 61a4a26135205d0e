"""Stage lm_patch: head-level attention patching across each emergence bracket, per size.

    python -m stages.lm_patch MODELS_DIR PROBES_NC PATCHING_DIR
"""
import sys
from pathlib import Path

from emergence.common.io import atomic_dir, read_netcdf, write_netcdf
from emergence.common.schema import load
from emergence.pipeline.stage import stage_run
from emergence.runs.language_model import variants
from emergence.runs.lm_probes import LanguageModelArgs, patch_size

if __name__ == "__main__":
    models, probes_path, out = map(Path, sys.argv[1:])
    with stage_run("lm_patch") as params:
        section = load(LanguageModelArgs, params["language_model"], "language_model", declared_only=True)
        probes = read_netcdf(probes_path)
        with atomic_dir(out) as tmp:
            for name in variants(section):
                write_netcdf(patch_size(section, models, name, probes), tmp / f"{name}.nc")

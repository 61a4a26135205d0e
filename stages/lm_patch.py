"""Stage lm_patch: head-level attention patching across each emergence bracket, per size."""
import shutil
from pathlib import Path

from emergence.io import read_netcdf, write_netcdf
from emergence.stage import stage_run

OUT = Path("data/lm/patching")

if __name__ == "__main__":
    with stage_run("lm_patch") as params:
        from emergence.experiments.language_model import patch_size, variants

        probes = read_netcdf(Path("data/lm/probes.nc"))
        tmp = OUT.with_name(OUT.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in variants(params["language_model"]):
            write_netcdf(patch_size(params, Path("data/lm/models"), name, probes), tmp / f"{name}.nc")
        shutil.rmtree(OUT, ignore_errors=True)
        tmp.rename(OUT)

"""Stage lm_train: every size of the small-language-model family, all seeds, with checkpoints.

    python -m stages.lm_train MODELS_DIR
"""
import shutil
import sys
from pathlib import Path

from emergence.experiments.cache import RECORDS, cached
from emergence.experiments.language_model import train_size, variant_key, variants
from emergence.io import atomic_dir
from emergence.stage import SCRATCH, stage_run


def train_variants(params: dict, out_dir: Path, scratch: Path) -> list[str]:
    """Every variant of `variants` (from the cell cache where trained before) into
    out_dir/<variant>/ (train.nc, checkpoints/); the folder replaced atomically."""
    names = variants(params["language_model"])
    with atomic_dir(out_dir) as tmp:
        for name, (size, kind) in names.items():
            def build(folder: Path, size: str = size, kind: str | None = kind) -> None:
                train_size(params, size, folder, scratch, kind)

            entry = cached(scratch, "language_model", variant_key(params, size, kind), build)
            shutil.copytree(entry, tmp / name, ignore=shutil.ignore_patterns(*RECORDS))
    return list(names)


if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("lm_train") as params:
        train_variants(params, out, SCRATCH)

"""Stage lm_train: every variant of the small-language-model family, all seeds, with checkpoints.

    python -m stages.lm_train MODELS_DIR

Each variant (a size, or a size's pre-pretrained twin) goes through the cell cache, keyed by
what training it executes (language_model.training_key), so a variant trained before is copied,
not retrained; the folder of all variants replaces the old one atomically.
"""
import shutil
import sys
from pathlib import Path

from emergence.experiments import language_model as lm
from emergence.experiments.cache import RECORDS, cached
from emergence.io import atomic_dir
from emergence.stage import SCRATCH, stage_run


def train_variants(params: dict, out_dir: Path, scratch: Path) -> list[str]:
    """Every variant into out_dir/<variant>/ (train.nc, checkpoints/)."""
    names = lm.variants(params["language_model"])
    with atomic_dir(out_dir) as tmp:
        for name, (size, kind) in names.items():
            def build(folder: Path, size: str = size, kind: str | None = kind) -> None:
                lm.train_size(params, size, folder, scratch, kind)

            entry = cached(scratch, lm.NAME, lm.training_key(params, size, kind), build)
            shutil.copytree(entry, tmp / name, ignore=shutil.ignore_patterns(*RECORDS))
    return list(names)


if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("lm_train") as params:
        train_variants(params, out, SCRATCH)

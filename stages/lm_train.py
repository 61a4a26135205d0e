"""Stage lm_train: every variant of the small-language-model family, all seeds, with checkpoints.

    python -m stages.lm_train MODELS_DIR

Each variant (a size, or a size's pre-pretrained twin) goes through the cell cache, keyed by
what training it executes (language_model.training_key), so a variant trained before is copied,
not retrained; the missing ones are built in parallel where `execution` allows
(emergence/executor.py); the folder of all variants replaces the old one atomically.
"""
import shutil
import sys
from functools import partial
from pathlib import Path

from emergence.experiments import language_model as lm
from emergence.experiments.cache import RECORDS, build_missing, cached
from emergence.io import atomic_dir
from emergence.model import parameter_count
from emergence.stage import SCRATCH, stage_run


def _cost(section: dict, size: str, kind: str | None) -> float:
    """Relative cost, to start the longest builds first: parameters, and a twin's pre-pretraining."""
    steps = section["train"]["steps"] + (section["pretraining"]["steps"] if kind else 0)
    return float(parameter_count(lm.model_config(section["sizes"][size], lm.layout_of(section))) * steps)


def train_variants(params: dict, out_dir: Path, scratch: Path) -> list[str]:
    """Every variant into out_dir/<variant>/ (train.nc, checkpoints/); the missing ones built
    through the `execution` workers, the costliest (most parameters, then the twins) first."""
    section = params["language_model"]
    names, train = lm.variants(section), section["train"]
    requests = {name: (lm.NAME, lm.training_key(params, size, kind),
                       partial(lm.train_size, params, size, scratch=scratch, pretraining=kind),
                       _cost(section, size, kind))
                for name, (size, kind) in names.items()}
    build_missing(scratch, list(requests.values()), params["execution"], [train], desc="language models")
    with atomic_dir(out_dir) as tmp:
        for name, (_, key, build, _) in requests.items():
            entry = cached(scratch, lm.NAME, key, build)
            shutil.copytree(entry, tmp / name, ignore=shutil.ignore_patterns(*RECORDS))
    return list(names)


if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("lm_train") as params:
        train_variants(params, out, SCRATCH)

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
from emergence.experiments.cache import RECORDS, Request, build_missing, cached
from emergence.experiments.cells import build_seconds
from emergence.io import atomic_dir
from emergence.stage import SCRATCH, stage_run


def variant_seconds(section: dict, size: str, kind: str | None) -> float:
    """Expected build seconds on one core (the sweeps' cost model), a twin's pre-pretraining
    included: the longest builds start first, and workers start only where they save time."""
    layout, train = lm.layout_of(section), section["train"]
    steps = train["steps"] + (section["pretraining"]["steps"] if kind else 0)
    return build_seconds(lm.model_config(section["sizes"][size], layout), layout["seq_len"],
                         float(steps * train["batch_size"] * train["n_seeds"]))


def variant_requests(params: dict, scratch: Path) -> dict[str, Request]:
    """Variant name -> its cell-cache request (whole: a twin's pre-pretraining feeds all its seeds)."""
    section = params["language_model"]
    return {name: Request(lm.NAME, lm.training_key(params, size, kind),
                          partial(lm.train_size, params, size, scratch=scratch, pretraining=kind),
                          variant_seconds(section, size, kind))
            for name, (size, kind) in lm.variants(section).items()}


def train_variants(params: dict, out_dir: Path, scratch: Path) -> list[str]:
    """Every variant into out_dir/<variant>/ (train.nc, checkpoints/); the missing ones built
    through the `execution` workers, the costliest first."""
    requests = variant_requests(params, scratch)
    build_missing(scratch, list(requests.values()), params["execution"], [params["language_model"]["train"]],
                  desc="language models")
    with atomic_dir(out_dir) as tmp:
        for name, request in requests.items():
            entry = cached(scratch, lm.NAME, request.key, request.build)
            shutil.copytree(entry, tmp / name, ignore=shutil.ignore_patterns(*RECORDS))
    return list(requests)


if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("lm_train") as params:
        train_variants(params, out, SCRATCH)

"""Stage lm_train: every variant of the small-language-model family, all seeds, with checkpoints.

    python -m stages.lm_train MODELS_DIR

Each variant (a size, or a size's pre-pretrained twin) goes through the cell cache, keyed by
what training it executes (language_model.training_key), so a variant trained before is copied,
not retrained; the missing ones are built in parallel where `execution` allows
(emergence/executor.py); the folder of all variants replaces the old one atomically.
"""
import shutil
import sys
import time
from functools import partial
from pathlib import Path

from emergence.experiments import language_model as lm
from emergence.experiments.cache import RECORDS, Part, Request, build_missing, cached
from emergence.experiments.cells import build_seconds, group_shares
from emergence.experiments.runner import prepare_device, seed_groups
from emergence.import_closure import module_code_version
from emergence.io import atomic_dir, config_hash
from emergence.stage import SCRATCH, stage_run
from emergence.train import train_group


def variant_seconds(section: dict, size: str, kind: str | None) -> float:
    """Expected build seconds on one core (the sweeps' cost model), a twin's pre-pretraining
    included: the longest builds start first, and workers start only where they save time."""
    layout, train = lm.layout_of(section), section["train"]
    steps = train["steps"] + (section["pretraining"]["steps"] if kind else 0)
    return build_seconds(lm.model_config(section["sizes"][size], layout), layout["seq_len"],
                         float(steps * train["batch_size"] * train["n_seeds"]))


def train_variant_group(params: dict, size_name: str, scratch: Path, group: int) -> float:
    """Train one seed group of a from-scratch variant to its end in the resume scratch that
    `lm.train_size` reads (whose set-up this repeats: that module is part of the variants' code
    version, so sharing it would retrain them), so that the variant's build then finds the group
    finished and trains nothing (tested against the whole build). Returns its seconds."""
    start = time.perf_counter()
    section = params["language_model"]
    train, size = section["train"], section["sizes"][size_name]
    device = prepare_device(train)
    task_ds = lm.build_task(section)
    task = lm.task_tensors(task_ds, section).to(device)
    cfg = lm.model_config(size, lm.layout_of(section))
    run_config = {"language_model": {"corpus": section["corpus"], "seq_len": section["seq_len"], "size": size,
                                     "train": train, "pretraining": lm.pretraining_of(section, None)}}
    key = config_hash({"key": {**run_config, **lm.identity(task_ds)}, "code": module_code_version(lm.__name__)})
    groups = seed_groups(train)
    train_group(groups[group], cfg, task, train, scratch / f"lm-{size_name}-{key}" / f"group{group}", group,
                len(groups), device)
    return time.perf_counter() - start


def variant_requests(params: dict, scratch: Path) -> dict[str, Request]:
    """Variant name -> its cell-cache request; a from-scratch variant of several seed groups has
    one part per group (`train_variant_group`), a pre-pretrained twin none (its pre-pretraining
    trains every seed before the corpus does)."""
    section = params["language_model"]
    out = {}
    for name, (size, kind) in lm.variants(section).items():
        key, cost = lm.training_key(params, size, kind), variant_seconds(section, size, kind)
        parts = () if kind else tuple(
            Part(f"lm-{config_hash(key)}-group{g}", partial(train_variant_group, params, size, scratch, g), cost * share)
            for g, share in enumerate(group_shares(section["train"])))
        out[name] = Request(lm.NAME, key, partial(lm.train_size, params, size, scratch=scratch, pretraining=kind),
                            cost, parts)
    return out


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

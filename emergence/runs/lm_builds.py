"""The language models' cell-cache requests: each variant (a size, or a size's pre-pretrained
twin) keyed by what training it executes (language_model.training_key), so a variant trained
before is copied, not retrained; a from-scratch variant's seed groups are kept in the group store,
so more seeds train only the groups they add. The plan (emergence/pipeline/cost.py) prices these
requests and the prebuild pool builds them; the stage lm_train copies them into place.
"""
import shutil
import time
from functools import partial
from pathlib import Path

from emergence.runs import language_model as lm
from emergence.runs.cache import RECORDS, Part, Request, build_missing, cached
from emergence.runs.executor import ExecutionArgs
from emergence.runs.language_model import LanguageModelTraining
from emergence.runs.cells import build_seconds, finish_groups, group_shares, groups_left, seedless
from emergence.runs.runner import seed_groups
from emergence.common.io import atomic_dir, config_hash


def variant_seconds(section: LanguageModelTraining, size: str, kind: str | None) -> float:
    """Expected build seconds on one core (the sweeps' cost model), a twin's pre-pretraining
    included: the longest builds start first, and workers start only where they save time."""
    layout, train = lm.layout_of(section), section.train
    steps = train.steps + lm.pretraining_steps(section, kind)
    return build_seconds(lm.model_config(section.sizes[size], layout), layout.seq_len,
                         float(steps * train.batch_size * train.n_seeds))


def group_key(section: LanguageModelTraining, size_name: str, group: int, corpus: str | None = None) -> dict:
    """A from-scratch variant's seed group in the group store: the variant's key without its seed
    count, first seed or group size, with the group's seeds (emergence/runs/cells.group_key)."""
    key = lm.training_key(section, size_name, None, corpus)
    return {**key, "train": seedless(key["train"]), "seeds": seed_groups(section.train)[group]}


def _finish_groups(section: LanguageModelTraining, variant: lm.Variant, scratch: Path, groups: list[int]) -> float:
    """Leave `groups` of a from-scratch variant trained to their end for `lm.train_size`
    (emergence/runs/cells.finish_groups). Returns the seconds of the groups copied."""
    n_groups = len(seed_groups(section.train))
    return finish_groups(lm.prepare_size(section, variant.size, corpus=variant.corpus), scratch,
                         [group_key(section, variant.size, g, variant.corpus) for g in range(n_groups)], groups)


def train_variant_group(section: LanguageModelTraining, variant: lm.Variant, scratch: Path, group: int) -> float:
    """Train one seed group of a from-scratch variant to its end and store it, so that the
    variant's build then finds it finished and trains nothing (tested against the whole build).
    Returns its seconds."""
    start = time.perf_counter()
    _finish_groups(section, variant, scratch, [group])
    return time.perf_counter() - start


def build_variant(section: LanguageModelTraining, variant: lm.Variant, scratch: Path, folder: Path) -> float:
    """A variant's cache entry (train.nc, checkpoints/); a from-scratch variant's seed groups come
    from the group store where it has them. Returns the seconds of the groups copied."""
    groups = range(len(seed_groups(section.train)))
    copied = 0.0 if variant.pretraining else _finish_groups(section, variant, scratch, list(groups))
    lm.train_size(section, variant.size, folder, scratch, pretraining=variant.pretraining, corpus=variant.corpus)
    return copied


def variant_requests(section: LanguageModelTraining, scratch: Path) -> dict[str, Request]:
    """Variant name -> its cell-cache request; a from-scratch variant has one part per seed group
    (`train_variant_group`) and is priced at the groups the group store lacks; a pre-pretrained
    twin has none and is keyed by all its seeds (its pre-pretraining trains every seed before the
    corpus does)."""
    train = section.train
    out = {}
    for name, variant in lm.variants(section).items():
        size, kind, corpus = variant
        key, cost = lm.training_key(section, size, kind, corpus), variant_seconds(section, size, kind)
        keys = [group_key(section, size, g, corpus) for g in range(len(seed_groups(train)))]
        stored, todo = ([False], 1.0) if kind else groups_left(scratch, lm.NAME, keys, train)
        parts = () if kind else tuple(
            Part(f"{lm.NAME}-{config_hash(keys[g])}", partial(train_variant_group, section, variant, scratch, g),
                 cost * share, stored[g])
            for g, share in enumerate(group_shares(train)))
        out[name] = Request(lm.NAME, key, partial(build_variant, section, variant, scratch), cost, parts, todo)
    return out


def train_variants(section: LanguageModelTraining, execution: ExecutionArgs, out_dir: Path,
                   scratch: Path) -> list[str]:
    """Every variant into out_dir/<variant>/ (train.nc, checkpoints/); the missing ones built
    through the `execution` workers, the costliest first."""
    requests = variant_requests(section, scratch)
    build_missing(scratch, list(requests.values()), execution, [section.train], desc="language models")
    with atomic_dir(out_dir) as tmp:
        for name, request in requests.items():
            entry = cached(scratch, lm.NAME, request.key, request.build)
            shutil.copytree(entry, tmp / name, ignore=shutil.ignore_patterns(*RECORDS))
    return list(requests)

"""What every DVC stage script shares: its declared params, validation first, timing.

    with stage_run("linear_map_train") as params:
        ...  # params holds only the sections dvc.yaml declares for this stage

Parameters are validated (whole file, selected profile merged) before the body runs, so a
bad value stops the stage with a message naming the key and nothing is written. The
stage's wall time goes to data/timings/<stage>.json (kept out of the results, which must be
byte-stable).
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import yaml

from emergence.allocator import keep_freed_memory
from emergence.config import REPO_ROOT, ConfigError, load_params
from emergence.io import write_json

TIMINGS_DIR = Path("data/timings")


def declared_params(stage: str, root: Path = REPO_ROOT) -> list[str]:
    dvc = yaml.safe_load((root / "dvc.yaml").read_text())
    try:
        definition = dvc["stages"][stage]
    except KeyError:
        raise ConfigError(f"dvc.yaml has no stage {stage!r}") from None
    entries = definition.get("do", definition).get("params", [])  # foreach stages keep theirs under `do`
    keys: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            keys.append(entry)
        elif isinstance(entry, dict):  # {file: [keys]}: only params.yaml is read here
            for file, names in entry.items():
                if file == "params.yaml":
                    keys.extend(names)
    return keys


def stage_params(stage: str, root: Path = REPO_ROOT) -> dict:
    """The validated, profile-merged params restricted to the keys `stage` declares in dvc.yaml."""
    full = load_params(root)
    out: dict = {}
    for key in declared_params(stage, root):
        node, target = full, out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node[part]
            target = target.setdefault(part, {})
        target[parts[-1]] = node[parts[-1]]
    return out


@contextmanager
def stage_run(stage: str, root: Path = REPO_ROOT, timing_name: str | None = None,
              timing_path: Path | None = None) -> Iterator[dict]:
    """Validated params of `stage`; on success the wall time goes to data/timings/<timing_name>.json
    (or `timing_path`). `timing_name` tells apart the cells of a foreach stage."""
    try:
        params = stage_params(stage, root)
    except ConfigError as err:
        sys.exit(f"[{stage}] invalid parameters: {err}")
    keep_freed_memory()
    start = time.perf_counter()
    yield params
    name = timing_name or stage
    write_json({"stage": name, "profile": params.get("profile"), "seconds": round(time.perf_counter() - start, 2)},
               timing_path or root / TIMINGS_DIR / f"{name}.json")

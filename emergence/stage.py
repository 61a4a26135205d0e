"""What every DVC stage script shares: its declared params, validation first, timing.

    with stage_run("linear_map_train") as params:
        ...  # params holds only the sections dvc.yaml declares for this stage

Parameters are validated (whole file, selected profile merged) before the body runs, so a
bad value stops the stage with a message naming the key and nothing is written. The schema
is imported by name at run time, not at module level: validation decides whether a stage
runs, never what it computes, so it stays out of the stage's import closure (its DVC deps);
dvc.yaml's first stage, validate_params, reruns whenever params or a schema change and
stops `dvc repro` before any other stage. The
stage's wall time (and what its cached cells cost to build, with the workers that built them:
the stage's cold cost; data/SCHEMA.md lists the fields) goes to data/timings/<stage>.json,
which no stage declares: a rerun that reproduces the results leaves dvc.lock unchanged (the
entry page reads the timings).
Output paths come on the command line from dvc.yaml's `paths` (written once there).
"""
from __future__ import annotations

import importlib
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import yaml

from emergence.allocator import keep_freed_memory
from emergence.params import REPO_ROOT, merged_params
from emergence.schema import ConfigError
from emergence import build_log
from emergence.io import write_json

TIMINGS_DIR = Path("data/timings")
SCRATCH = Path("data/.scratch")  # resume snapshots and the cell cache (not a DVC output)


def pipeline_paths(root: Path = REPO_ROOT) -> dict[str, str]:
    """The `paths` of dvc.yaml's vars: every result's location, written once."""
    dvc = yaml.safe_load((root / "dvc.yaml").read_text())
    for entry in dvc.get("vars", []):
        if isinstance(entry, dict) and "paths" in entry:
            return dict(entry["paths"])
    raise ConfigError("dvc.yaml: no `paths` under vars")


def declared_params(stage: str, root: Path = REPO_ROOT, key: str | None = None) -> list[str]:
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
    if key is not None:  # a foreach stage's entries name its item as ${key}
        keys = [k.replace("${key}", key) for k in keys]
    return keys


def stage_params(stage: str, root: Path = REPO_ROOT, key: str | None = None) -> dict:
    """The validated, profile-merged params restricted to the keys `stage` declares in dvc.yaml."""
    full = importlib.import_module("emergence.config").validate(merged_params(root))
    out: dict = {}
    for dotted in declared_params(stage, root, key):
        node, target = full, out
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node[part]
            target = target.setdefault(part, {})
        target[parts[-1]] = node[parts[-1]]
    return out


@contextmanager
def stage_run(stage: str, root: Path = REPO_ROOT, key: str | None = None) -> Iterator[dict]:
    """Validated params of `stage`; on success the wall time goes to data/timings/<stage>.json.
    `key` names the item of a foreach stage (data/timings/<stage>@<key>.json)."""
    try:
        params = stage_params(stage, root, key)
    except ConfigError as err:
        sys.exit(f"[{stage}] invalid parameters: {err}")
    keep_freed_memory()
    name = stage if key is None else f"{stage}@{key}"
    build_log.STAGE = name
    start = time.perf_counter()
    yield params
    write_json({"stage": name, "profile": params.get("profile"), "seconds": round(time.perf_counter() - start, 2),
                **build_log.usage()}, root / TIMINGS_DIR / f"{name}.json")

"""What every DVC stage script shares: its declared params, validation first, timing.

    with stage_run("linear_map_train") as params:
        ...  # params holds only the keys dvc.yaml declares for this stage

Every stage declares in dvc.yaml the keys of params.yaml it reads and gets their effective
values alone (params.yaml with the selected profile's overlay merged in), so DVC reruns it
exactly when one of them changes. Validation comes first in every stage: validate_params
checks the whole file and writes the result to data/params.json, and a stage that finds that
file out of date (DVC may run it first, or it runs by hand after an edit) validates the merge
itself, so a bad value stops it before any compute with the key named. The schema is imported
by name, only where validation has to run here: it decides whether a stage runs, never what it
computes, so it stays out of the stage's import closure (its DVC deps). The stage's wall time, from its process's start (and what its cached cells cost to build, with
the workers that built them: the stage's cold cost; data/SCHEMA.md lists the fields) goes to
data/timings/<stage>.json, which no stage declares: a rerun that reproduces the results
leaves dvc.lock unchanged (the entry page reads the timings).
Output paths come on the command line from dvc.yaml's `paths` (written once there).
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import yaml

from emergence.common.io import write_json
from emergence.common.params import REPO_ROOT, flatten, merged_params
from emergence.common.schema import ConfigError
from emergence.runs import build_log
from emergence.runs.allocator import keep_freed_memory

TIMINGS_DIR = Path("data/timings")
PREBUILD = "prebuild"  # `make report`'s build of every stage's cells before `dvc repro` (emergence/pipeline/prebuild.py)
SCRATCH_ENV = "EMERGENCE_SCRATCH"  # the cell cache's runs/cache.py names it in its errors


def scratch_dir(env: dict | None = None, root: Path = REPO_ROOT) -> Path:
    """Where the cell cache and the resume snapshots live (not a DVC output): $EMERGENCE_SCRATCH
    where set (relative to the repository), else data/.scratch of the repository DVC runs the
    stage for. DVC names it in $DVC_ROOT, and for a queued or `--temp` experiment, which runs in
    a copy under .dvc/tmp/exps/, that is the repository that queued it: every experiment of one
    repository reads and writes the one cell cache, and trains only the cells its change touches.
    Clones that share a cache (a cluster's file system) set $EMERGENCE_SCRATCH to one folder."""
    env = os.environ if env is None else env
    if env.get(SCRATCH_ENV):
        return Path(root, env[SCRATCH_ENV]).resolve()
    return Path(env.get("DVC_ROOT") or root).resolve() / "data" / ".scratch"


SCRATCH = scratch_dir()  # the cell cache and resume snapshots of every stage this process runs


def read_pipeline(root: Path = REPO_ROOT) -> dict:
    """dvc.yaml as written (stages in pipeline order, `${...}` left unfilled)."""
    return yaml.safe_load((root / "dvc.yaml").read_text())


def pipeline_paths(root: Path = REPO_ROOT) -> dict[str, str]:
    """The `paths` of dvc.yaml's vars: every result's location, written once."""
    dvc = read_pipeline(root)
    for entry in dvc.get("vars", []):
        if isinstance(entry, dict) and "paths" in entry:
            return dict(entry["paths"])
    raise ConfigError("dvc.yaml: no `paths` under vars")


def _declared(definition: dict, key: str | None = None) -> list[str]:
    entries = definition.get("do", definition).get("params", [])  # foreach stages keep theirs under `do`
    keys = [entry for entry in entries if isinstance(entry, str)]  # keys of params.yaml
    if key is not None:  # a foreach stage's entries name its item as ${key}
        keys = [k.replace("${key}", key) for k in keys]
    return keys


def declared_params(stage: str, root: Path = REPO_ROOT, key: str | None = None) -> list[str]:
    """The keys of params.yaml `stage` declares in dvc.yaml (it reads their effective values)."""
    dvc = read_pipeline(root)
    try:
        return _declared(dvc["stages"][stage], key)
    except KeyError:
        raise ConfigError(f"dvc.yaml has no stage {stage!r}") from None


def keys_by_stage(params: dict, root: Path = REPO_ROOT) -> dict[str, list[str]]:
    """Every stage's declared keys, a foreach stage's once per item (as DVC names it, stage@item)."""
    dvc = read_pipeline(root)
    out = {}
    for name, definition in dvc["stages"].items():
        if "foreach" not in definition:
            out[name] = _declared(definition)
            continue
        node = params
        for part in definition["foreach"].strip("${}").split("."):
            node = node[part]
        out.update({f"{name}@{item}": _declared(definition, str(item)) for item in node})
    return out


def changed_keys(old: dict, new: dict) -> list[str]:
    """The dotted keys whose value differs between two params trees (added and removed ones too)."""
    a, b = flatten(old), flatten(new)
    return sorted(k for k in a.keys() | b.keys() if k not in a or k not in b or a[k] != b[k])


def stages_reading(keys: list[str], declared: dict[str, list[str]]) -> dict[str, list[str]]:
    """Stage -> the keys among `keys` it declares: a declared section covers the keys under it,
    and a changed section (added or removed whole) every declared key under it."""
    def reads(decl: str, key: str) -> bool:
        return key == decl or key.startswith(decl + ".") or decl.startswith(key + ".")
    out = {}
    for stage, decls in declared.items():
        hit = [k for k in keys if any(reads(d, k) for d in decls)]
        if hit:
            out[stage] = hit
    return out


def rerun_plan(written: dict | None, params: dict, root: Path = REPO_ROOT) -> str:
    """Which stages read the effective keys that changed since validation last wrote them: what
    `dvc status` says of a params.yaml edit, and on a profile with an overlay the stages whose
    values an overlay edit really changed (DVC reruns every stage for one, a file dep of each)."""
    if written is None:
        return "no effective params written yet: every stage runs"
    keys = changed_keys(written, params)
    if not keys:
        return "no effective param changed since the last validation"
    readers = stages_reading(keys, keys_by_stage(params, root))
    lines = [f"changed since the last validation: {', '.join(keys)}",
             "stages that read them (they rerun; the stages after them rerun where their inputs change):"]
    lines += [f"  {stage}: {', '.join(found)}" for stage, found in readers.items()] or ["  none"]
    return "\n".join(lines)


def written_params(root: Path = REPO_ROOT) -> dict | None:
    """The params validate_params last wrote; None where there are none to trust (never written,
    or unreadable, as after a git merge that left conflict markers in it)."""
    try:
        return json.loads((root / pipeline_paths(root)["params"]).read_text())
    except (FileNotFoundError, ValueError):
        return None


def effective_params(root: Path = REPO_ROOT) -> dict:
    """params.yaml with the active overlay merged in, validated. validate_params wrote them to
    the params file, which DVC runs first; a stage run by hand after an edit finds that file
    out of date and validates the merge itself (importing every schema, which the usual path
    skips), so a bad value still stops it with the key named."""
    merged = merged_params(root)
    if written_params(root) != merged:
        importlib.import_module("emergence.pipeline.config").validate(merged)
    return merged


def stage_params(stage: str, root: Path = REPO_ROOT, key: str | None = None) -> dict:
    """The effective params restricted to the keys `stage` declares in dvc.yaml."""
    full = effective_params(root)
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
    start = stage_started()
    yield params
    record_time(name, params.get("profile"), time.perf_counter() - start, root)


def process_seconds() -> float | None:
    """Seconds since this process started, from Linux's /proc (its start time in clock ticks
    since boot against the uptime); None where there is no /proc."""
    try:
        stat = Path("/proc/self/stat").read_text()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    # the fields after the command name, which may hold spaces and parentheses; the start time
    # is field 22 of proc(5), the 20th after the name
    return uptime - int(stat.rsplit(")", 1)[1].split()[19]) / ticks


def stage_started() -> float:
    """time.perf_counter() when this stage began: its process's start where the process is the
    stage's own (`python -m stages.<stage>`, `emergence.pipeline.config check`, or `emergence.pipeline.prebuild`,
    which builds the stages' cells before them) and /proc tells it,
    so that the Python and torch imports before the stage's body (2-4 s a stage on 2 cores)
    count; otherwise now."""
    now = time.perf_counter()
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    own = spec is not None and (spec.name.startswith("stages.") or spec.name in ("emergence.pipeline.config", "emergence.pipeline.prebuild"))
    since = process_seconds() if own else None
    return now - since if since is not None and since >= 0 else now


def record_time(stage: str, profile: str | None, seconds: float, root: Path = REPO_ROOT) -> None:
    """data/timings/<stage>.json: the stage's wall time and its cells' build record, where no
    stage declares it (a rerun that reproduces the results leaves dvc.lock unchanged)."""
    write_json({"stage": stage, "profile": profile, "seconds": round(seconds, 2), **build_log.usage()},
               root / TIMINGS_DIR / f"{stage}.json")

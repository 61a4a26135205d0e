"""The cell cache: one folder per trained thing under data/.scratch/cells/, keyed by a hash of
its configuration and the code version of what trained it.

Each entry carries a manifest of its files' SHA-256. An entry whose files do not match (a
kill during a copy, a full disk, an edit by hand) is deleted and rebuilt, never read; a new
entry is built in a temporary folder and moved into place only when complete.

Each entry also records how long it took to build (`build.json`), and every lookup in this
process is tallied (`usage()`), so a stage can say what it cost cold even when every cell
came from the cache: the entry page's time table reads that.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Callable

from emergence.executor import plan, run_jobs
from emergence.io import atomic_dir, config_hash, file_digest, write_json

MANIFEST = "manifest.json"
BUILD_RECORD = "build.json"
RECORDS = (MANIFEST, BUILD_RECORD)  # the cache's own files: never copied into results
_usage: list[dict] = []  # this process's lookups: {"entry", "built", "seconds"}
_parallel: list[dict] = []  # this process's pooled builds: {"workers", "wall", "cell_seconds"}


def _intact(entry: Path) -> bool:
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return all((entry / rel).is_file() and file_digest(entry / rel) == digest for rel, digest in manifest.items())


def entry_of(scratch: Path, name: str, key: object) -> Path:
    return scratch / "cells" / f"{name}-{config_hash(key)}"


def cached(scratch: Path, name: str, key: object, build: Callable[[Path], None]) -> Path:
    """The cache entry `name-<hash of key>`: built into a temporary folder by `build(folder)`
    when missing or damaged, then checksummed and moved into place. Returns its folder."""
    entry = entry_of(scratch, name, key)
    if entry.exists() and _intact(entry):
        _usage.append({"entry": entry.name, "built": False, "seconds": _build_seconds(entry)})
        return entry
    shutil.rmtree(entry, ignore_errors=True)
    start = time.perf_counter()
    with atomic_dir(entry) as tmp:
        build(tmp)
        seconds = round(time.perf_counter() - start, 2)
        write_json({"seconds": seconds}, tmp / BUILD_RECORD)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        write_json({str(p.relative_to(tmp)): file_digest(p) for p in files}, tmp / MANIFEST)
    _usage.append({"entry": entry.name, "built": True, "seconds": seconds})
    return entry


def _build_in_worker(scratch: Path, name: str, key: object, build: Callable[[Path], None]) -> list[dict]:
    del _usage[:]
    cached(scratch, name, key, build)
    return list(_usage)


def build_missing(scratch: Path, requests: list[tuple[str, object, Callable[[Path], None], float]],
                  execution: dict, cell_threads: int = 0, device: str = "cpu", thread_dependent: bool = False,
                  desc: str = "cells") -> None:
    """Build every requested entry (name, key, build, cost) that is missing or damaged, through
    worker processes where `execution` expects them to finish sooner (emergence/executor.py;
    the other arguments go to its `plan`); `build` must be picklable (a partial of a
    module-level function). Each is built once however often it is requested; the entries'
    build records join this process's usage, so the stage's timing counts them as built.
    Entries left to this process are built by the stage's own lookups."""
    todo: dict[Path, tuple] = {}
    for name, key, build, cost in requests:
        entry = entry_of(scratch, name, key)
        if entry not in todo and not (entry.exists() and _intact(entry)):
            todo[entry] = ((scratch, name, key, build), cost)
    jobs = list(todo.values())
    p = plan(execution, [cost for _, cost in jobs], cell_threads, device, thread_dependent)
    if p.workers == 1:
        return
    start = time.perf_counter()
    records = [r for rs in run_jobs(_build_in_worker, [j for j, _ in jobs], p, [c for _, c in jobs], desc)
               for r in rs]
    _usage.extend(records)
    _parallel.append({"workers": p.workers, "wall": time.perf_counter() - start,
                      "cell_seconds": sum(r["seconds"] for r in records if r["built"])})


def _build_seconds(entry: Path) -> float | None:
    """The recorded build time of an entry; None for entries older than the record."""
    try:
        return float(json.loads((entry / BUILD_RECORD).read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def usage() -> dict:
    """What this process's cache lookups cost: cells built now and their seconds, cells reused
    and the seconds their builds took (None when an entry predates the record), each entry's
    build seconds (so that an entry two stages share counts once in a run's total), and the
    wall time the builds took with the most workers they had (pooled builds overlap)."""
    entries: dict[str, dict] = {}
    for u in _usage:  # an entry built here (or by this process's workers) counts as built
        if not entries.get(u["entry"], {}).get("built"):
            entries[u["entry"]] = u
    built = [u["seconds"] for u in entries.values() if u["built"]]
    reused = [u["seconds"] for u in entries.values() if not u["built"]]
    return {"cells_built": len(built), "cells_reused": len(reused), "built_seconds": round(sum(built), 2),
            "reused_build_seconds": None if any(s is None for s in reused) else round(sum(reused), 2),
            "entries": {name: u["seconds"] for name, u in entries.items()},
            "build_wall_seconds": round(sum(built) - sum(p["cell_seconds"] for p in _parallel)
                                        + sum(p["wall"] for p in _parallel), 2),
            "workers": max([1] + [p["workers"] for p in _parallel])}

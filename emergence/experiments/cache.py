"""The cell cache: one folder per trained thing under data/.scratch/cells/, keyed by a hash of
its configuration and the code version of what trained it.

Each entry carries a manifest of its files' SHA-256. An entry whose files do not match (a
kill during a copy, a full disk, an edit by hand) is deleted and rebuilt, never read; a new
entry is built in a temporary folder and moved into place only when complete.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

from emergence.io import atomic_dir, config_hash, file_digest, write_json

MANIFEST = "manifest.json"


def _intact(entry: Path) -> bool:
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return all((entry / rel).is_file() and file_digest(entry / rel) == digest for rel, digest in manifest.items())


def cached(scratch: Path, name: str, key: object, build: Callable[[Path], None]) -> Path:
    """The cache entry `name-<hash of key>`: built into a temporary folder by `build(folder)`
    when missing or damaged, then checksummed and moved into place. Returns its folder."""
    entry = scratch / "cells" / f"{name}-{config_hash(key)}"
    if entry.exists() and _intact(entry):
        return entry
    shutil.rmtree(entry, ignore_errors=True)
    with atomic_dir(entry) as tmp:
        build(tmp)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        write_json({str(p.relative_to(tmp)): file_digest(p) for p in files}, tmp / MANIFEST)
    return entry

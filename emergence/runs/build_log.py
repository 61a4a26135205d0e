"""What this process's cell-cache lookups built and reused (emergence/runs/cache.py
writes it; the stage's timing record reads it), kept apart from the cache so that a stage which
trains nothing does not depend on the cache's code.

`usage()` is the stage's cold cost: cells built now and their seconds, cells reused and the
seconds their builds took, so the entry page can say what a run costs from scratch even when
every cell came from the cache.
"""
from __future__ import annotations

STAGE = "stage"           # the DVC stage this process runs (emergence/pipeline/stage.py sets it)
LOOKUPS: list[dict] = []  # {"entry", "built", "seconds", "cpu", "reused"}, one per lookup
POOLS: list[dict] = []    # {"workers", "wall", "cell_seconds"}, one per pooled build
COLD_WORKERS: list[int] = []  # workers a build of every requested entry would use, one per request
PIECES: dict[str, int] = {}   # entry -> the seed groups it goes out as where that build would split it


def usage() -> dict:
    """Cells built now and their seconds, cells reused and the seconds their builds took (None
    when an entry predates the record), each entry's build seconds (so that an entry two stages
    share counts once in a run's total), and the wall time the builds took with the most
    workers they had (pooled builds overlap), and the CPU each entry was built on (None where
    its record predates it)."""
    entries: dict[str, dict] = {}
    for u in LOOKUPS:  # an entry built here (or by this process's workers) counts as built
        if not entries.get(u["entry"], {}).get("built"):
            entries[u["entry"]] = u
    built = [u["seconds"] for u in entries.values() if u["built"]]
    fresh = [u["seconds"] - u.get("reused", 0.0) for u in entries.values() if u["built"]]  # less stored groups'
    reused = [u["seconds"] for u in entries.values() if not u["built"]]
    return {"cells_built": len(built), "cells_reused": len(reused), "built_seconds": round(sum(built), 2),
            "reused_build_seconds": None if any(s is None for s in reused) else round(sum(reused), 2),
            "entries": {name: u["seconds"] for name, u in entries.items()},
            "cpus": {name: u.get("cpu") for name, u in entries.items()},
            "build_wall_seconds": round(sum(fresh) - sum(p["cell_seconds"] for p in POOLS)
                                        + sum(p["wall"] for p in POOLS), 2),
            "workers": max([1] + [p["workers"] for p in POOLS] + COLD_WORKERS),
            **({"pieces": {name: PIECES[name] for name in entries if name in PIECES}}
               if any(name in PIECES for name in entries) else {})}

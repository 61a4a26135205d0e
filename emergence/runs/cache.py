"""The cell cache: one folder per trained thing under data/.scratch/cells/, keyed by a hash of
its configuration and the code version of what trained it.

Each entry carries a manifest of its files' SHA-256. An entry whose files do not match (a
kill during a copy, a full disk, an edit by hand) is deleted and rebuilt, never read; a new
entry is built in a temporary folder and moved into place only when complete.

Each entry also records how long it took to build (`build.json`), and every lookup in this
process is tallied (emergence/runs/build_log.py), so a stage can say what it cost cold even when
every cell came from the cache: the entry page's time table reads that.

Several processes may share one cache (the executor's workers, queued DVC experiments, clones
on a cluster's file system): a builder holds the entry's lock (`cell-locks/`, an advisory
flock), so a second builder of the same entry waits and then reads the first one's, and a
reader only ever sees whole entries.
"""
from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from emergence.common.io import atomic_dir, config_hash, file_digest, write_json
from emergence.common.provenance import cpu_model
from emergence.runs import build_log
from emergence.core.train import TrainArgs
from emergence.runs.executor import (ExecutionArgs, Plan, expected_seconds, makespan, plan, run_jobs, run_slurm,
                                     sharing_cores)
from emergence.runs.runner import runs_on

MANIFEST = "manifest.json"
BUILD_RECORD = "build.json"
RECORDS = (MANIFEST, BUILD_RECORD)  # the cache's own files: never copied into results


def _intact(entry: Path) -> bool:
    if not entry.exists():
        return False
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return all((entry / rel).is_file() and file_digest(entry / rel) == digest for rel, digest in manifest.items())


def thread_dependent(runs: dict) -> bool:
    """Whether a build's bytes depend on its thread count (CPU bfloat16: `runs_on` then records
    the threads, and they are part of its key); a CPU float32 build's never do (tested)."""
    return "threads" in runs


def bound_to_process(train: TrainArgs) -> bool:
    """Whether an entry trained with this `train` section must be built in the stage's own
    process: its bytes depend on the thread count and the section leaves that count to the
    process (`threads: 0`), so its key records this process's threads. One whose section sets
    `threads` gives the same bytes in any process that builds it (each sets that many), so
    workers and SLURM tasks may take it."""
    return thread_dependent(runs_on(train)) and not train.threads


class Part(NamedTuple):
    """Work an entry's build can leave done beforehand, in another process: `run()` trains it
    (one seed group of a cell) and returns its seconds; the build then only assembles."""
    key: str                   # one piece of work: two entries (a cell with and without
    run: Callable[[], float]   # checkpoints, or with more seeds) may list the same part
    cost: float                # expected seconds in this process, as a Request's
    stored: bool = False       # its seed group is in the group store: nothing to train


class Request(NamedTuple):
    """An entry to build: `build(folder)` fills it (see `cached`); `cost` is its expected seconds
    in this process with every core (emergence/runs/cells.build_seconds), from nothing, of
    which the share `todo` is still to train; `parts`, if any, may be built apart first (`splits`)."""
    name: str
    key: object
    build: Callable[[Path], float | None]
    cost: float
    parts: tuple[Part, ...] = ()
    todo: float = 1.0  # the share of `cost` still to train (its seed groups the group store lacks)

    def pieces(self, cold: bool = False) -> tuple[float, tuple[float, ...]]:
        """(its cost, its parts' costs) as the executor prices them: what is left to train, or
        with `cold` all of it (the entry page's estimate of a run from empty caches)."""
        if cold:
            return self.cost, tuple(p.cost for p in self.parts)
        return self.cost * self.todo, tuple(p.cost for p in self.parts if not p.stored)


# Parts go out in place of whole entries only where the executor's model expects the wall time
# to fall to this fraction or less: a split entry is assembled afterwards in this process (its
# groups' states loaded, checkpoints merged: seconds), and on 2 cores, where a default run's
# 39 cells already keep both workers busy, splitting would gain under 0.1% by the same model.
SPLIT_GAIN = 0.9


def entry_of(scratch: Path, name: str, key: object) -> Path:
    return scratch / "cells" / f"{name}-{config_hash(key)}"


def intact_entry(scratch: Path, name: str, key: object) -> Path | None:
    """The cache entry `name-<hash of key>` if it is there and matches its manifest, else None.
    Reads only: nothing is built, deleted or tallied."""
    entry = entry_of(scratch, name, key)
    return entry if _intact(entry) else None


@lru_cache(maxsize=None)
def writable(scratch: Path) -> Path:
    """`scratch`, made if missing; stops with the setting to change where it cannot be written."""
    try:
        (scratch / "cells").mkdir(parents=True, exist_ok=True)
        Path(tempfile.mkstemp(prefix=".write-probe.", dir=scratch / "cells")[1]).unlink()
    except OSError as err:
        raise SystemExit(f"the cell cache {scratch} cannot be written ({err.strerror or err}): set "
                         "$EMERGENCE_SCRATCH (emergence/pipeline/stage.py) to a writable folder, one that "
                         "every clone meant to share cells can reach") from None
    return scratch


@contextmanager
def entry_lock(entry: Path) -> Iterator[None]:
    """Hold `entry`'s build lock: another process building the same entry waits here."""
    locks = entry.parent.parent / "cell-locks"  # beside cells/, whose listing stays the entries
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{entry.name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached(scratch: Path, name: str, key: object, build: Callable[[Path], float | None]) -> Path:
    """The cache entry `name-<hash of key>`: built into a temporary folder by `build(folder)`
    when missing or damaged, then checksummed and moved into place. Returns its folder. `build`
    may return the seconds that work it reused took when it was done (seed groups trained
    earlier, or by other processes: `finished_group`), which its recorded build time counts.
    A second process asking for an entry being built waits for it (`entry_lock`)."""
    entry = entry_of(writable(scratch), name, key)
    if _intact(entry):
        build_log.LOOKUPS.append({"entry": entry.name, "built": False, **_build_record(entry)})
        return entry
    with entry_lock(entry):
        return _build_locked(entry, key, build)


def _build_locked(entry: Path, key: object, build: Callable[[Path], float | None]) -> Path:
    if _intact(entry):  # another process built it while this one waited for the lock
        build_log.LOOKUPS.append({"entry": entry.name, "built": False, **_build_record(entry)})
        return entry
    shutil.rmtree(entry, ignore_errors=True)
    runs = key.get("runs_on", {}) if isinstance(key, dict) else {}
    shares = runs.get("device") == "cpu" and not thread_dependent(runs)
    start = time.perf_counter()
    with atomic_dir(entry) as tmp, (sharing_cores() if shares else nullcontext()):
        reused = build(tmp) or 0.0
        record = _seal(tmp, time.perf_counter() - start + reused)
    build_log.LOOKUPS.append({"entry": entry.name, "built": True, **record, "reused": reused})
    return entry


def _seal(folder: Path, seconds: float) -> dict:
    """Write a finished build's record (its seconds, the CPU) and its files' manifest."""
    record = {"seconds": round(seconds, 2), "cpu": cpu_model()}
    write_json(record, folder / BUILD_RECORD)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    write_json({str(p.relative_to(folder)): file_digest(p) for p in files}, folder / MANIFEST)
    return record


# --- seed groups ---------------------------------------------------------------------------
# A cell trains its seeds in groups, and a group's trajectory depends on its seeds alone, not on
# the others (seeds are an array axis), so each group's finished training state is kept too,
# keyed without the cell's seed count: a cell that adds seeds to one trained before trains only
# the groups it adds, and its results have the bytes of a cell built whole (tested).

def group_entry(scratch: Path, name: str, key: object) -> Path:
    return scratch / "groups" / f"{name}-{config_hash(key)}"


def group_stored(scratch: Path, name: str, key: object) -> bool:
    """Whether the group store holds `key` (by its manifest, for planning: a build checks the files)."""
    return (group_entry(scratch, name, key) / MANIFEST).exists()


def finished_group(scratch: Path, name: str, key: object, folder: Path, train: Callable[[], object],
                   leave_out: tuple[str, ...] = ()) -> float:
    """Leave in `folder` (the resume scratch a cell's build reads) one seed group trained to its
    end: copied from the group store where an intact entry `key` holds it, else trained there by
    `train()` (resuming what `folder` holds) and then stored, without the files named in
    `leave_out` (a group's checkpoints, where its cell keeps none: 3x its final state on a
    default sparsity cell). Returns the seconds a copied group's training took when it was
    done (0 where it trained now: the caller's clock counts that)."""
    entry = group_entry(scratch, name, key)
    if _intact(entry):
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(entry, folder, ignore=shutil.ignore_patterns(*RECORDS))
        return _build_record(entry)["seconds"] or 0.0
    shutil.rmtree(entry, ignore_errors=True)
    start = time.perf_counter()
    train()
    with atomic_dir(entry) as tmp:
        shutil.copytree(folder, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*leave_out))
        _seal(tmp, time.perf_counter() - start)
    return 0.0


def _bound(trains: list[TrainArgs]) -> bool:
    return any(bound_to_process(train) for train in trains)


def on_slurm(execution: ExecutionArgs, trains: list[TrainArgs]) -> bool:
    """Whether entries trained with these `train` sections go to SLURM: never those bound to
    this process (CPU bfloat16 with the threads left to it: their keys record its threads)."""
    return execution.executor == "slurm" and not _bound(trains)


def as_built(execution: ExecutionArgs, trains: list[TrainArgs]) -> ExecutionArgs:
    """`execution` as it applies to entries trained with these `train` sections: where every one
    fixes its thread count, this process would build each on those threads too, so a worker is
    no slower than here (`slowdown` 1; two one-thread linear-map processes on the 2-core AMD
    EPYC: 0.080 and 0.083 s a step against 0.077 alone)."""
    return replace(execution, slowdown=1.0) if trains and all(t.threads for t in trains) else execution


def build_plan(execution: ExecutionArgs, trains: list[TrainArgs], costs: list[float]) -> Plan:
    """How this machine builds entries costing `costs` (expected seconds in this process), told
    by their `train` sections the threads a build asks for, its device, and whether an entry is
    bound to this process (`bound_to_process`; emergence/runs/executor.py's `plan`)."""
    runs = [runs_on(train) for train in trains]
    return plan(as_built(execution, trains), costs, cell_threads=max((t.threads for t in trains), default=0),
                device="cpu" if all(r["device"] == "cpu" for r in runs) else "cuda",
                bound_here=_bound(trains))


def handout_seconds(execution: ExecutionArgs, trains: list[TrainArgs], costs: list[float]) -> float:
    """Expected wall seconds of building work that costs `costs` (seconds in this process),
    trained with these `train` sections, as `build_missing` hands it out: one SLURM array task
    per piece (nodes as fast as this device), or by the executor's plan on this machine."""
    if not costs:
        return 0.0
    if on_slurm(execution, trains):
        return makespan(costs, min(len(costs), execution.slurm.array_parallelism))
    return expected_seconds(as_built(execution, trains), costs, build_plan(execution, trains, costs))


def pieces(entries: list[tuple[float, tuple[float, ...]]]) -> list[float]:
    """The costs handed out when entries (cost, its parts' costs) are split: each part, and each
    entry that has none whole."""
    return [c for cost, parts in entries for c in (parts or (cost,))]


def handout(execution: ExecutionArgs, trains: list[TrainArgs], entries: list[tuple[float, tuple[float, ...]]]) -> tuple[bool, list[float]]:
    """(whether `splits`, the costs handed out): the entries' parts, or the whole entries."""
    split = splits(execution, trains, entries)
    return split, pieces(entries) if split else [cost for cost, _ in entries]


def splits(execution: ExecutionArgs, trains: list[TrainArgs], entries: list[tuple[float, tuple[float, ...]]]) -> bool:
    """Whether to hand out the entries' parts (a cell's seed groups) rather than whole entries:
    where a stage has fewer long cells than workers (one 8-group cell on 16 cores; the paper
    profile's 64-seed cells on a SLURM array), by `SPLIT_GAIN` or more."""
    return (any(parts for _, parts in entries)
            and handout_seconds(execution, trains, pieces(entries))
            <= SPLIT_GAIN * handout_seconds(execution, trains, [cost for cost, _ in entries]))


def _call(fn: Callable, *args) -> Any:
    return fn(*args)


def _build_in_worker(scratch: Path, name: str, key: object, build: Callable[[Path], float | None]) -> list[dict]:
    del build_log.LOOKUPS[:]
    cached(scratch, name, key, build)
    return list(build_log.LOOKUPS)


def build_missing(scratch: Path, requests: list[Request], execution: ExecutionArgs, trains: list[TrainArgs],
                  desc: str = "cells") -> None:
    """Build every requested entry that is missing or damaged, through worker processes where
    `execution` expects them to finish sooner (`build_plan`), or as one SLURM array (its task
    logs under scratch/slurm/<the running stage>/); `build` and the parts' `run` must be
    picklable (partials of module-level functions). Where `splits` says so, the entries' parts
    (seed groups) are handed out with the entries that have none, and the split entries are
    then assembled from them, here (on SLURM, as a second array). Entries bound to this process
    (`bound_to_process`: CPU bfloat16 with the threads left to it, so their keys record its
    threads) are always built here. Each is built once however often it is requested; the
    entries' build records join this process's log, so the stage's timing counts them as
    built. Entries left to this process are built by the stage's own lookups."""
    wanted: dict[Path, Request] = {}
    for r in requests:  # an entry asked for twice is built by its first request
        wanted.setdefault(entry_of(scratch, r.name, r.key), r)
    jobs = [r for entry, r in wanted.items() if not (entry.exists() and _intact(entry))]
    slurm = on_slurm(execution, trains)
    folder = scratch / "slurm" / build_log.STAGE

    def handed_out(rs: list[Request], cold: bool = False) -> tuple[bool, list[float]]:
        return handout(execution, trains, [r.pieces(cold) for r in rs])

    # what building every requested entry would use: the entry page's cold estimate spreads the
    # stage's cells over it, also when this run found them all in the cache
    cold_split, cold = handed_out(list(wanted.values()), cold=True)
    build_log.PIECES.update({entry.name: len(r.parts) for entry, r in wanted.items() if cold_split and r.parts})
    build_log.COLD_WORKERS.append(min(len(cold), execution.slurm.array_parallelism) if slurm
                                  else build_plan(execution, trains, cold).workers)
    if not jobs:
        return
    split = handed_out(jobs)[0]
    parts = {p.key: p for r in jobs if split for p in r.parts if not p.stored}
    calls = ([(p.run,) for p in parts.values()]
             + [(_build_in_worker, scratch, r.name, r.key, r.build) for r in jobs if not (split and r.parts)])
    call_costs = [p.cost for p in parts.values()] + [r.pieces()[0] for r in jobs if not (split and r.parts)]
    if split:
        desc = f"{desc}, {len(parts)} seed groups of {sum(1 for r in jobs if r.parts)} of them apart"
    start = time.perf_counter()
    if slurm:
        workers = min(len(calls), execution.slurm.array_parallelism)
        results = run_slurm(_call, calls, execution.slurm, folder, desc)
    else:
        pool = build_plan(execution, trains, call_costs)
        if pool.workers == 1:
            return
        workers = pool.workers
        results = run_jobs(_call, calls, pool, call_costs, desc)
    records = [r for rs in results[len(parts):] for r in rs]
    assemble = [r for r in jobs if split and r.parts]  # their groups now stored: each build copies them
    if slurm and assemble:
        records += [r for rs in run_slurm(_build_in_worker, [(scratch, r.name, r.key, r.build) for r in assemble],
                                          execution.slurm, folder, "cells assembled from their seed groups") for r in rs]
    elif assemble:
        first = len(build_log.LOOKUPS)
        for r in assemble:
            cached(scratch, r.name, r.key, r.build)
        records += build_log.LOOKUPS[first:]
        del build_log.LOOKUPS[first:]
    build_log.LOOKUPS.extend(records)
    build_log.POOLS.append({"workers": workers, "wall": time.perf_counter() - start,
                            "cell_seconds": sum(r["seconds"] - r.get("reused", 0.0) for r in records if r["built"])})


def _build_record(entry: Path) -> dict:
    """The recorded build time of an entry and the CPU that built it (the process that wrote
    it: for a cell assembled from seed groups, the assembler's); None for entries older than
    the record."""
    try:
        record = json.loads((entry / BUILD_RECORD).read_text())
        return {"seconds": float(record["seconds"]), "cpu": record.get("cpu")}
    except (OSError, ValueError, KeyError, TypeError):
        return {"seconds": None, "cpu": None}

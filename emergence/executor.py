"""Where a stage's missing cache entries are built: in this process, or in a pool of worker
processes on this machine (`execution` in params.yaml).

A training stage lists everything it needs (cells, language-model variants) as cache
requests; the cell cache says which are missing, and `build_missing` hands those to the
workers, waits, and the stage then reads every entry from the cache exactly as it does when
nothing was missing. The outputs are the same bytes however many workers built them: in
float32 the thread count does not change a result on this CPU (tested); entries whose
results do depend on it (CPU bfloat16, whose cache keys record the threads) are built in the
stage's own process.

Threads never exceed cores: each worker runs `threads_per_worker` torch threads (or the
cells' own `train.threads` where set), and the pool has at most cores // threads workers.
"""
from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Callable, Iterator, Literal

import torch
from tqdm.auto import tqdm

from emergence.schema import number

EXECUTORS = ("local",)


@dataclass(frozen=True, kw_only=True)
class ExecutionArgs:
    """How a training stage builds the cells the cell cache lacks (never what they compute)."""
    executor: Literal[EXECUTORS] = "local"
    workers: int = number(0, 4096)             # worker processes; 0 = cores // threads_per_worker
    threads_per_worker: int = number(1, 4096)  # torch threads in each worker
    slowdown: float = number(1.0, 4096.0)      # a cell's time in a worker / in one process with every core


@dataclass(frozen=True)
class Plan:
    workers: int   # 1: build in this process, with its own threads
    threads: int   # each worker's torch threads (this process's when workers == 1)


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def makespan(costs: list[float], workers: int) -> float:
    """Wall time of `costs` handed longest first to whichever of `workers` is free first."""
    loads = [0.0] * workers
    for cost in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += cost
    return max(loads)


def plan(execution: dict, costs: list[float], cell_threads: int = 0, device: str = "cpu",
         thread_dependent: bool = False) -> Plan:
    """Workers and threads for building entries that cost `costs` (relative; in this process
    with every core). Workers only where they are expected to finish sooner: a worker runs each
    entry `slowdown` times slower, so one long entry among short ones, or three on two workers,
    build faster here. `cell_threads` is the cells' own `train.threads` (0: unset). In this
    process: CUDA (one device), and entries whose results depend on the thread count (CPU
    bfloat16: their cache keys record this process's threads, so no plan may change them)."""
    cores, here = usable_cores(), Plan(1, torch.get_num_threads())
    if device != "cpu" or thread_dependent or len(costs) < 2:
        return here
    threads = min(cell_threads or execution["threads_per_worker"], cores)
    workers = min(execution["workers"] or cores // threads, cores // threads, len(costs))
    if workers < 2 or makespan(costs, workers) * execution["slowdown"] >= sum(costs):
        return here
    return Plan(workers, threads)


def _start_worker(threads: int) -> None:
    torch.set_num_threads(threads)


@contextmanager
def _worker_environment(threads: int) -> Iterator[None]:
    """What spawned workers inherit: their thread count before torch starts, and no per-step
    progress bars (tqdm reads TQDM_DISABLE at import; this process shows one bar over entries)."""
    names = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "TQDM_DISABLE": "1"}
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_jobs(fn: Callable, jobs: list[tuple], p: Plan, costs: list[float] | None = None,
             desc: str = "entries") -> list[Any]:
    """fn(*args) for each job, in this process (p.workers == 1) or in p.workers spawned
    processes, the costliest first; results in job order. The first failure cancels what has
    not started and is raised. `fn` must be importable (a module-level function or a partial)."""
    if p.workers == 1 or len(jobs) < 2:
        return [fn(*args) for args in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -(costs[i] if costs else 0.0))
    results: list[Any] = [None] * len(jobs)
    with ProcessPoolExecutor(p.workers, mp_context=get_context("spawn"), initializer=_start_worker,
                             initargs=(p.threads,)) as pool:
        with _worker_environment(p.threads):
            futures = {pool.submit(fn, *jobs[i]): i for i in order}
        with tqdm(total=len(jobs), desc=f"{desc} ({p.workers} workers x {p.threads} threads)") as bar:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    if future.exception() is not None:
                        for other in pending:
                            other.cancel()
                        raise future.exception()
                    results[futures[future]] = future.result()
                    bar.update(1)
    return results

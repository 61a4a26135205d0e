"""Where a stage's missing cache entries are built: in this process, in a pool of worker
processes on this machine, or as a SLURM job array through submitit (`execution` in params.yaml).

A training stage lists everything it needs (cells, language-model variants) as cache
requests; the cell cache says which are missing, and `build_missing` hands those to the
workers, waits, and the stage then reads every entry from the cache exactly as it does when
nothing was missing. The outputs are the same bytes however many workers built them: in
float32 the thread count does not change a result on this CPU (tested); entries whose
results do depend on it (CPU bfloat16, whose cache keys record the threads) are built in the
stage's own process, unless their `train.threads` fixes the count for any process.

Threads never exceed cores: each worker runs `threads_per_worker` torch threads (or the
cells' own `train.threads` where set), and the pool has at most cores // threads workers; where
a stage has fewer entries than that and `workers` is left to the executor, the spare cores are
shared out among the workers' threads.

On CUDA the pool has one worker per visible GPU (at most `workers` where set, at most one per
entry), each seeing its own GPU alone (CUDA_VISIBLE_DEVICES) as cuda:0 and a share of the cores;
a machine with one GPU builds in the stage's process.

On SLURM each missing entry (or, where there are fewer entries than the array runs at once,
each of its seed groups: emergence/runs/cache.py's `splits`) is one task of an array
(`execution.slurm`: partition, time, CPUs, GPUs, memory); its torch threads are its CPUs. A task that fails or dies (killed, timed
out, preempted) is resubmitted up to `max_resubmit` times; finished entries are never
resubmitted, because the cell cache decides what is missing. Task logs stay under the stage's
scratch folder (data/.scratch/slurm/<stage>/<job id>).
"""
from __future__ import annotations

import fcntl
import importlib
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

import submitit
import torch
from tqdm.auto import tqdm

from emergence.common.schema import number
from emergence.runs.cores import usable_cores

EXECUTORS = ("local", "slurm")


class ExecutorError(RuntimeError):
    """The executor could not build the entries (no cluster, tasks that kept failing)."""


@dataclass(frozen=True, kw_only=True)
class SlurmArgs:
    """One task per missing entry, as a job array (submitit's `AutoExecutor` on SLURM)."""
    partition: str = ""                        # "" = the cluster's default partition
    timeout_min: int = number(1, 60 * 24 * 14)  # wall-time limit of each task
    cpus_per_task: int = number(1, 4096)        # also each task's torch threads
    gpus_per_task: int = number(0, 64)          # 1 on GPU partitions (with train.device cuda)
    mem_gb: float = number(0.0, 100_000.0)      # 0 = the partition's default
    max_resubmit: int = number(0, 100)          # resubmissions of tasks that failed or died
    array_parallelism: int = number(1, 100_000)  # tasks of one array running at once


@dataclass(frozen=True, kw_only=True)
class ExecutionArgs:
    """How a training stage builds the cells the cell cache lacks (never what they compute)."""
    executor: Literal[EXECUTORS] = "local"     # local: a process pool here; slurm: one job-array task per missing cell
    workers: int = number(0, 4096)             # worker processes; 0 = cores // threads_per_worker (CUDA: GPUs)
    threads_per_worker: int = number(1, 4096)  # torch threads in each worker
    slowdown: float = number(1.0, 4096.0)      # a cell's time in a worker / in one process with every core
    worker_start_s: float = number(0.0, 3600.0)  # seconds a spawned worker takes to be ready (imports)
    slurm: SlurmArgs = field(default_factory=SlurmArgs)


@dataclass(frozen=True)
class Plan:
    workers: int   # 1: build in this process, with its own threads
    threads: int   # each worker's torch threads (this process's when workers == 1)
    device: str = "cpu"  # cuda: each worker on a GPU of its own


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them (indices or UUIDs);
    every one torch counts where the variable is unset."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [name.strip() for name in listed.split(",") if name.strip()]
    return [str(i) for i in range(torch.cuda.device_count())]


# Builds running on this machine, across pipelines and clones: one file per process, named by
# its pid, holding the torch threads its build runs.
BUILDS = Path(tempfile.gettempdir()) / f"emergence-builds-{os.getuid() if hasattr(os, 'getuid') else 0}"


def threads_beside(held: int, cores: int, wanted: int) -> int:
    """A build's threads when other builds hold `held` threads: what it wants, but never more
    than the cores they leave, and at least one."""
    return max(1, min(wanted, cores - held))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # PermissionError: alive, another user's
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def held_threads(registry: Path, own_pid: int) -> int:
    """Threads the other live builds in `registry` hold; the files of builds that died are removed."""
    held = 0
    for entry in registry.iterdir():
        try:
            pid, threads = int(entry.name), int(entry.read_text())
        except (ValueError, OSError):
            continue
        if pid == own_pid:
            continue
        if _alive(pid):
            held += threads
        else:
            entry.unlink(missing_ok=True)
    return held


@contextmanager
def sharing_cores(registry: Path = BUILDS) -> Iterator[int]:
    """Run a CPU build with no more torch threads than the other builds on this machine leave
    (each registers its threads for its duration), so that two pipelines on one machine do not
    run more threads than cores, where a multi-threaded step waits for a thread that another
    process holds up. A build that starts while others run takes what they leave, at least one
    thread; one that is running keeps its threads until it ends (the thread count is set per
    build, outside the training loop). Measured on 2 cores, two linear-map builds started 3 s
    apart: both done in 95 s with two threads each, 80 s with this (two and one), 53 s with one
    each; 27.5 s for one alone. Not on SLURM, where each task has cores of its own. Yields the
    threads; the process's own count is restored after."""
    before = torch.get_num_threads()
    mine = registry / str(os.getpid())
    if os.environ.get("SLURM_JOB_ID") or mine.exists():  # on SLURM; inside this process's own build
        yield before
        return
    try:
        registry.mkdir(parents=True, exist_ok=True)
        with open(registry / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two builds starting together must see each other
            threads = threads_beside(held_threads(registry, os.getpid()), usable_cores(), before)
            mine.write_text(str(threads))
    except OSError:  # no writable temporary folder: build as before, unregistered
        threads = 0
    if not threads:
        yield before
        return
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        mine.unlink(missing_ok=True)
        torch.set_num_threads(before)


def makespan(costs: list[float], workers: int) -> float:
    """Wall time of `costs` handed longest first to whichever of `workers` is free first."""
    loads = [0.0] * workers
    for cost in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += cost
    return max(loads)


def plan(execution: ExecutionArgs, costs: list[float], cell_threads: int = 0, device: str = "cpu",
         bound_here: bool = False) -> Plan:
    """Workers and threads for building entries that cost `costs` (expected seconds in this
    process with every core: emergence/runs/cells.build_seconds). Workers only where they
    are expected to finish sooner by more than a worker takes to start (`worker_start_s`: a
    spawned process imports torch and the library before its first entry): a worker runs each
    entry `slowdown` times slower, so one long entry among short ones, three on two workers, or
    a few seconds of entries, build faster here. `cell_threads` is the cells' own
    `train.threads` (0: unset). On CUDA, one worker per visible GPU, each GPU as fast as this
    process's (none where there is one GPU). In this process: entries bound to it
    (`bound_here`: results that depend on the thread count, CPU bfloat16, where the cells leave
    the count to the process, so that their cache keys record this process's threads and no
    plan may change them)."""
    cores, here = usable_cores(), Plan(1, torch.get_num_threads())
    if bound_here or len(costs) < 2:
        return here
    if device != "cpu":
        gpus = len(visible_gpus())
        workers = min(execution.workers or gpus, gpus, len(costs))
        if workers < 2 or sum(costs) <= pooled_seconds(execution, costs, workers, device):
            return here
        return Plan(workers, max(1, cores // workers), device)
    threads = min(cell_threads or execution.threads_per_worker, cores)
    workers = min(execution.workers or cores // threads, cores // threads, len(costs))
    if workers < 2 or sum(costs) <= pooled_seconds(execution, costs, workers):
        return here
    if not execution.workers and not cell_threads:
        # fewer entries than the cores hold workers: the spare cores go to the workers' threads
        # (7 cells on 16 cores: 7 workers of 2 threads, not 7 of 1 beside 9 idle cores)
        threads = max(threads, cores // workers)
    return Plan(workers, threads)


def pooled_seconds(execution: ExecutionArgs, costs: list[float], workers: int, device: str = "cpu") -> float:
    """Expected wall time of building `costs` (seconds in this process) on `workers` worker
    processes: each entry `slowdown` times slower there (on the CPU, where workers share the
    cores; on CUDA each has a GPU of its own, as fast as this process's), handed out longest
    first, after the workers' start."""
    slowdown = execution.slowdown if device == "cpu" else 1.0
    return makespan(costs, workers) * slowdown + execution.worker_start_s


def expected_seconds(execution: ExecutionArgs, costs: list[float], p: Plan) -> float:
    """Expected wall time of building `costs` as `p` plans it."""
    return pooled_seconds(execution, costs, p.workers, p.device) if p.workers > 1 else sum(costs)


def _start_worker(threads: int, gpus=None) -> None:
    """A worker's start: its torch threads, and on CUDA the one GPU it takes from the `gpus`
    queue, made its only visible device before anything in it starts CUDA."""
    if gpus is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus.get()
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


def _pool(p: Plan) -> ProcessPoolExecutor:
    context = get_context("spawn")
    gpus = None
    if p.device != "cpu":
        gpus = context.Queue()
        for name in visible_gpus()[:p.workers]:
            gpus.put(name)
    return ProcessPoolExecutor(p.workers, mp_context=context, initializer=_start_worker, initargs=(p.threads, gpus))


def _imported(module: str) -> str:
    importlib.import_module(module)
    return module


def worker_start_seconds(p: Plan, module: str = "emergence.runs.cells") -> float:
    """Seconds from starting a pool of p.workers until each has imported `module` (what a cell
    build unpickles first: torch and the library), the pool's shutdown not counted: what
    `execution.worker_start_s` stands for (`make bench` measures it)."""
    start = time.perf_counter()
    with _pool(p) as pool:
        with _worker_environment(p.threads):
            futures = [pool.submit(_imported, module) for _ in range(p.workers)]
        for future in futures:
            future.result()
        return time.perf_counter() - start


def run_jobs(fn: Callable, jobs: list[tuple], p: Plan, costs: list[float] | None = None,
             desc: str = "entries") -> list[Any]:
    """fn(*args) for each job, in this process (p.workers == 1) or in p.workers spawned
    processes, the costliest first; results in job order. The first failure cancels what has
    not started and is raised. `fn` must be importable (a module-level function or a partial)."""
    if p.workers == 1 or len(jobs) < 2:
        return [fn(*args) for args in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -(costs[i] if costs else 0.0))
    results: list[Any] = [None] * len(jobs)
    with _pool(p) as pool:
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


def _cluster_answers() -> str | None:
    """None where a SLURM controller answers here, else why not."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return "sbatch and sinfo are not on PATH: this is not a SLURM login node"
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%P %a"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 30 s"
    if done.returncode != 0:
        return f"sinfo failed: {done.stderr.strip() or done.returncode}"
    return None


def run_slurm(fn: Callable, jobs: list[tuple], slurm: SlurmArgs, folder: Path, desc: str = "entries") -> list[Any]:
    """fn(*args) for each job as one task of a SLURM job array; results in job order. Tasks that
    fail or die are resubmitted, at most `slurm.max_resubmit` times; then the first error is
    raised with where the logs are. `fn` is pickled by reference: its module must be importable
    in the task (which runs this interpreter in this working directory, with this environment)."""
    if not jobs:
        return []
    problem = _cluster_answers()
    if problem:
        raise ExecutorError(f"execution.executor: slurm, but the cluster cannot be reached: {problem}")
    executor = submitit.AutoExecutor(folder=folder / "%j", cluster="slurm")
    executor.update_parameters(timeout_min=slurm.timeout_min, cpus_per_task=slurm.cpus_per_task,
                               slurm_array_parallelism=slurm.array_parallelism,
                               **({"slurm_partition": slurm.partition} if slurm.partition else {}),
                               **({"gpus_per_node": slurm.gpus_per_task} if slurm.gpus_per_task else {}),
                               **({"mem_gb": slurm.mem_gb} if slurm.mem_gb else {}))
    results: list[Any] = [None] * len(jobs)
    pending = list(range(len(jobs)))
    for attempt in range(slurm.max_resubmit + 1):
        with _worker_environment(slurm.cpus_per_task):   # sbatch exports the environment to the tasks
            submitted = executor.map_array(fn, *zip(*[jobs[i] for i in pending]))
        failed = []
        with tqdm(total=len(submitted), desc=f"{desc} (SLURM array {submitted[0].job_id.split('_')[0]}, "
                                             f"try {attempt + 1})") as bar:
            for i, job in zip(pending, submitted):
                try:
                    results[i] = job.result()
                except (submitit.core.utils.UncompletedJobError, submitit.core.utils.FailedJobError) as err:
                    failed.append((i, err))
                bar.update(1)
        if not failed:
            return results
        pending = [i for i, _ in failed]
    raise ExecutorError(f"{len(failed)} of {len(jobs)} SLURM tasks still failed after {slurm.max_resubmit} "
                        f"resubmissions (logs under {folder}); the first: {failed[0][1]}")

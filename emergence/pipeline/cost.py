"""What the active profile costs to train, printed by `make report` before anything runs.

    python -m emergence.pipeline.cost [--profile NAME] [--no-calibrate | --calibrate-seconds S]

(`--no-calibrate`, which `make plan` uses: only the cells the cache lacks, no timing.)

Every training stage that `dvc repro` will run (`stages_to_run`), its cells (and the
language-model variants), how many of them the cell cache lacks, their seed-steps, their
training FLOPs (6 x parameters x tokens for the weights, plus 12 x layers x T^2 x d_model per
sequence for the attention scores and mixing, forward and backward), and an estimate of the
device time: each cell's cost by the build-time model that orders the builds
(emergence.runs.cells.build_seconds: FLOPs, attention scores and token-layers,
evaluations at a third of a training pass), scaled by how fast this machine, in this process,
runs cells of its kind against that model: the first cell of each kind (task, sequence mixer,
precision, compile mode) to build has a few seconds of training steps and a few evaluations
timed after warm-up, and so has each language-model variant (its corpus steps, a twin's
pre-pretraining steps); a kind with little to build takes the linear-map cell's factor. The model
alone has no term for a recurrent mixer's scan: on 2 CPU cores, against the model, RWKV-7 ran
2.4 times and Gated DeltaNet 1.9 times slower than the automata's attention cells, and the
ratio of scans to attention differs from device to device: hence one factor per kind. The
factors timed on a quiet machine are kept in data/records/calibration.json under the machine
(CPU, cores, torch), so a clone on the same kind of machine times only the linear-map cell again
(a check on the record, printed) and plans in seconds; on a busy machine (other work on half
its cores or more) the plan says how slow that makes the kinds it times, and keeps none. Besides
the device-hours (one process, every thread: what a cluster allocation needs), the wall time
on this machine with the executor's workers (`execution`: emergence/runs/executor.py's plan, each
stage's cells handed out longest first), stage by stage as `dvc repro` alone builds them and
in one pool over every stage as `make report` does (emergence/pipeline/prebuild.py). An estimate to
plan a run, not a measurement. Asks for nothing.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from emergence.common.io import write_json
from emergence.common.params import PROFILES, REPO_ROOT, merged_params
from emergence.common.provenance import cpu_model
from emergence.common.experiments import entry_points
from emergence.core.train import TrainArgs, resolve_device, schedules
from emergence.pipeline.config import load_params, validate
from emergence.pipeline.stage import SCRATCH
from emergence.runs import cells, language_model as lm
from emergence.runs.cache import (Request, bound_to_process, build_plan, entry_of, handout, handout_seconds,
                                  on_slurm, splits)
from emergence.runs.cells import cell_flops, training_flops
from emergence.runs.cores import usable_cores
from emergence.runs.executor import ExecutionArgs
from emergence.runs.lm_builds import variant_requests, variant_seconds
from emergence.runs.runner import seed_groups
from emergence.runs.timing import MIN_TIMED_STEPS, WARMUP_STEPS, language_model_seconds, step_and_evaluation_seconds


def planned_cells(params: dict) -> dict[str, list[tuple[cells.Cell, bool]]]:
    """Training stage -> its (cell, with_checkpoints), on the active profile: every experiment's
    declared cells (emergence/experiments/), or those of the files it declares."""
    setting = cells.Setting.of(params)
    out = {e.training_stage(): planned(setting, e.section(params), e.name) for e, planned in entry_points("cells")}
    out.update({e.training_stage(): [(c, f.checkpoints) for f in files(setting, e.section(params), e.name)
                                     for c in f.cells]
                for e, files in entry_points("files")})
    return out


def language_model_section(params: dict) -> lm.LanguageModelTraining:
    return lm.LanguageModelTraining.of(params["language_model"])


def language_model_flops(params: dict) -> list[tuple[str, float, float, float]]:
    """(variant, FLOPs, seed-steps, modelled one-core seconds) of every language-model variant,
    pre-pretraining included."""
    section = language_model_section(params)
    layout, train = lm.layout_of(section), section.train
    out = []
    for name, (size, kind, _) in lm.variants(section).items():
        steps = train.steps + lm.pretraining_steps(section, kind)
        sequences = float(steps * train.batch_size * train.n_seeds)
        out.append((name, training_flops(lm.model_config(section.sizes[size], layout), layout.seq_len, sequences),
                    float(steps * train.n_seeds), variant_seconds(section, size, kind)))
    return out


def cell_kind(cell: cells.Cell) -> tuple[str, str, str, str]:
    """What a cell's speed against the build-time model depends on beyond the model's terms:
    its task, its sequence mixer, its precision and its compile mode."""
    return cells.task_of(cell), cell.model.mixer or "attention", cell.train.precision, cell.train.compile


def language_model_kind(params: dict, variant: str) -> tuple[str, str, str, str]:
    """A language-model variant is a kind of its own: its corpus window sampler (Python, a third
    of the small model's step on 2 cores) and a twin's synthetic task weigh differently at each
    size. On 2 cores the six default variants' recorded build times came to 1.23-1.90 times
    their estimate by the linear-map transformer's factor (the large model least, the small ones
    and the neural-CA twin most) and to 1.38-1.63 times by their own factors, timed one after
    the other in one state of the machine (whose speed drifts; the spread is what compares)."""
    train = language_model_section(params).train
    return lm.NAME, variant, train.precision, train.compile


def _kind_cell(params: dict, kind: tuple) -> cells.Cell:
    """The first planned cell of `kind`."""
    return next(cell for planned in planned_cells(params).values() for cell, _ in planned if cell_kind(cell) == kind)


def calibrate_cell(cell: cells.Cell, seconds: float = 3.0) -> float:
    """How many times the build-time model's seconds this machine takes, in this process with
    every thread, to train `cell`: one seed group's training step (a few seconds of steps timed
    after warm-up) and evaluation (the median of three, with the cell's per-example answers),
    each measured here, times the cell's steps, evaluations and seed groups. Set-up, checkpoints
    and the attention maps read at checkpoints are not timed."""
    train = cell.train
    step_s, eval_s = step_and_evaluation_seconds(cell, torch.get_num_threads(), seconds,
                                                 str(resolve_device(train.device)), (train.examples,), repeats=3)
    measured = len(seed_groups(train)) * (train.steps * step_s + len(schedules(train)[0]) * eval_s[train.examples])
    return measured / cells.cell_build_seconds(cell)


def calibrate_language_model(params: dict, variant: str, seconds: float, reference: float) -> float:
    """`calibrate_cell` for a language-model variant (timing.language_model_seconds: its corpus
    steps, its evaluations with attention maps, a twin's pre-pretraining steps), kept to about
    four times `seconds`: where the `reference` factor puts the warm-up and the fewest timed
    steps of a whole seed group over that, one seed's batches are timed and scaled to the group,
    and where even one seed's would be (the paper's medium and large models on a CPU: one seed of
    the large one took 134 s to time on 2 cores), the variant takes the reference factor."""
    section = language_model_section(params)
    size, pretraining, _ = lm.variants(section)[variant]
    modelled = variant_seconds(section, size, pretraining)
    train = section.train
    steps = len(seed_groups(train)) * (train.steps + lm.pretraining_steps(section, pretraining))
    group_timing = reference * modelled / steps * (WARMUP_STEPS + MIN_TIMED_STEPS)
    seeds = next((n for n in (train.seeds_per_group, 1)
                  if group_timing * n / train.seeds_per_group <= 4 * seconds), None)
    if seeds is None:
        return reference
    return language_model_seconds(section, size, pretraining, seconds, str(resolve_device(train.device)),
                                  seeds=seeds) / modelled


# A kind whose cells to build the model puts under this many one-core seconds in all takes the
# linear-map cell's factor instead of its own timing: timing a kind costs seconds, a compiled
# mixer its compile (on 2 cores the default profile's nine kinds took 218 s from a cold inductor
# cache, 103 s warm), more than a smoke run's cells take to train. Every default kind has more
# (the smallest, the automata's MLP-Mixer, 116 s).
CALIBRATE_ABOVE_S = 60.0


def reference_kind(params: dict) -> tuple[str, str, str, str]:
    """The linear-map cell's kind: always calibrated, the factor of every kind that is not."""
    return cell_kind(planned_cells(params)["linear_map_train"][0][0])


def calibrate(params: dict, kinds, seconds: float = 3.0) -> dict[tuple, float]:
    """Kind -> its factor (`calibrate_cell` on its first cell, `calibrate_language_model` on a
    language model) for `kinds` and the reference kind."""
    factors = {}
    reference = reference_kind(params)
    for kind in [reference] + sorted(set(kinds) - {reference}):
        start = time.perf_counter()
        factors[kind] = (calibrate_language_model(params, kind[1], seconds, factors[reference]) if kind[0] == lm.NAME
                         else calibrate_cell(_kind_cell(params, kind), seconds))
        # as it goes: a compiled kind takes its compile, and a run cut short keeps what it timed
        print(f"calibrated {'/'.join(kind)}: {factors[kind]:.3g}x ({time.perf_counter() - start:.0f} s)",
              file=sys.stderr, flush=True)
    return factors


# The factors timed on a machine, kept (git-tracked) so that a fresh clone on the same kind of
# machine plans in seconds: only the reference kind is timed again, as a check on the record.
CALIBRATION_RECORD = Path("data") / "records" / "calibration.json"
# Other work on at least this share of the cores before timing (`busy_cores`): the machine is
# busy, the factors timed now are slow by up to (cores + load) / cores, and none is recorded.
BUSY_SHARE = 0.5


def machine() -> str:
    """What a calibration factor holds for: the CPU, the cores this process may use, torch."""
    return f"{cpu_model()}; {usable_cores()} cores; torch {torch.__version__}"


def recorded_factors(path: Path, here: str) -> dict[tuple, float]:
    """Kind -> factor recorded for machine `here` (none where the file or the machine is absent)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {tuple(name.split("/")): float(f) for name, f in record.get(here, {}).items()}


def record_factors(path: Path, here: str, factors: dict[tuple, float]) -> None:
    """Add (or replace) `factors` under machine `here`, keeping every other machine's."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {}
    record.setdefault(here, {}).update({"/".join(k): round(f, 3) for k, f in factors.items()})
    write_json(record, path)


def busy_cores(seconds: float = 1.0) -> float:
    """How many cores other work keeps busy now: the machine's non-idle share over `seconds` of
    /proc/stat (this process waits meanwhile) times its cores; where there is no /proc/stat, the
    one-minute load average, which still counts the last minute's work."""
    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]
    busy = 1.0 - (idle1 - idle0) / max(total1 - total0, 1)
    return busy * (os.cpu_count() or 1)


def busy_slowdown(load: float, cores: int) -> float:
    """How much slower a calibration that wants every core runs beside `load` other runnable
    processes (1.0 on a quiet machine): the cores shared out among all."""
    return (cores + load) / cores if load >= BUSY_SHARE * cores else 1.0


def planned_factors(params: dict, kinds: set[tuple], seconds: float, record: Path, recalibrate: bool = False,
                    load: float | None = None) -> tuple[dict[tuple, float], list[str]]:
    """Kind -> factor for `kinds`: the recorded ones for this machine (unless `recalibrate`), the
    others timed now, and the reference kind always timed (a record that no longer holds shows
    there). Records what it timed when the machine is quiet. Returns the factors and what to tell
    the reader about where they came from."""
    here, reference = machine(), reference_kind(params)
    known = {} if recalibrate else recorded_factors(record, here)
    load = busy_cores() if load is None else load
    slow = busy_slowdown(load, usable_cores())
    start = time.perf_counter()
    timed = calibrate(params, {k for k in kinds if k not in known} | {reference}, seconds)
    factors = {**{k: f for k, f in known.items() if k in kinds}, **timed}
    reused = sorted(set(factors) - set(timed))
    notes = [f"{len(timed)} kinds timed here in {time.perf_counter() - start:.0f} s"
             + (f", {len(reused)} from {record.name} (recorded on {here})" if reused else "")]
    if reference in known:
        notes.append(f"the reference kind {'/'.join(reference)} ran at {known[reference] / timed[reference]:.2f} "
                     "times its recorded speed")
    if slow > 1.0:
        notes.append(f"the machine is busy ({load:.1f} of its cores taken by other work before timing): the kinds "
                     f"timed now ran up to {slow:.1f} times slow, so the forecast is long by up to that for their "
                     "cells; not recorded")
    else:
        record_factors(record, here, timed)
    return factors, notes


def runs(stage: str, running: set[str] | None) -> bool:
    """Whether training stage `stage` is among the DVC stages `running` (a foreach stage's rows,
    `sparsity@S08`, are that stage's); None: every stage runs."""
    return running is None or any(name == stage or name.startswith(stage + "@") for name in running)


def stages_after(changed: set[str], downstream: dict[str, set[str]]) -> set[str]:
    """The stages `dvc repro` runs: each one `changed` lists and every stage after one
    (`downstream`: stage -> the stages reading one of its outputs), whose inputs it may rewrite."""
    found, todo = set(changed), list(changed)
    while todo:
        for after in downstream.get(todo.pop(), ()):
            if after not in found:
                found.add(after)
                todo.append(after)
    return found


def stages_to_run(params: dict, root: Path = REPO_ROOT) -> set[str] | None:
    """The stages `dvc repro` would run with `params` (validated, the active profile's): what
    `dvc status` finds changed (their code, data, the keys of params.yaml they declare, the
    active overlay) and every stage after those (`stages_after`), less the training stages (and
    the stages they read) it will check out of DVC's run cache instead (`run_cache_restores`).
    None where DVC cannot tell (no DVC repository, or DVC not installed: a GPU machine given the
    working tree alone can still price the plan)."""
    try:
        from dvc.exceptions import DvcException
        from dvc.repo import Repo
    except ImportError:
        return None
    try:
        with Repo(str(root)) as repo:
            changed = set(repo.status())
            graph = repo.index.graph  # edges point from a stage to the stages it depends on
            downstream = {stage.addressing: {after.addressing for after in graph.predecessors(stage)}
                          for stage in graph.nodes}
            running = stages_after(changed, downstream)
            return running - run_cache_restores(repo, running, set(planned_cells(params)) | {"lm_train"})
    except DvcException:
        return None


def run_cache_restores(repo, running: set[str], training: set[str]) -> set[str]:
    """The training stages among `running` (and the stages they read) whose outputs `dvc repro`
    will check out of DVC's run cache rather than run them: the same command, deps and params
    ran before with this cache (a profile switched back, a value set back, a revision checked out
    without `dvc checkout`, another clone sharing a cluster's cache), so the cells the cell cache
    lacks would be trained for nothing. Judged upstream first, each stage from its deps as they
    will be when it runs: the files and params.yaml's keys as they are, or an upstream stage's
    outputs as its run cache holds them (the linear-map run after its task file). A stage after another that will really run cannot be
    judged here and counts as running."""
    import networkx as nx
    from dvc.exceptions import DvcException
    from dvc.stage.cache import _can_hash

    graph = repo.index.graph  # edges point from a stage to the stages it depends on
    wanted = set().union(*(nx.descendants(graph, stage) | {stage} for stage in graph.nodes
                           if stage.addressing.split("@")[0] in training))  # those stages and the ones they read
    restored: dict[str, tuple] = {}  # an output's path -> its (hash, meta) as the run cache holds it
    restores: set[str] = set()
    for stage in reversed(list(nx.topological_sort(graph))):
        name = stage.addressing
        if stage not in wanted or name not in running:
            continue
        if any(up.addressing in running and up.addressing not in restores for up in graph.successors(stage)):
            continue
        try:  # DVC's own lookup (StageCache.restore's, without the checkout), on the deps as they will be
            for dep in stage.deps:
                if dep.def_path in restored:
                    dep.hash_info, dep.meta = restored[dep.def_path]
                    # _can_hash asks the dep for its hash by reading the file, which a clone lacks
                    # until `dvc repro` checks out the upstream run: the hash it will then have
                    dep.get_hash = lambda known=dep.hash_info: known
                else:
                    dep.save()
            cache = repo.stage_cache._load(stage) if _can_hash(stage) else None
            cached = cache and repo.stage_cache._create_stage(cache, wdir=stage.wdir)
        except DvcException:  # a dep missing, say: DVC will run it
            continue
        if cached and cached.outs_cached():
            restores.add(name)
            restored.update({out.def_path: (out.hash_info, out.meta) for out in cached.outs})
    return restores


def stage_entries(params: dict, scratch: Path = SCRATCH,
                  running: set[str] | None = None) -> list[tuple[str, dict[Path, tuple]]]:
    """Each training stage's cell-cache entries (the language models' too), in pipeline order,
    each -> (FLOPs, seed-steps, modelled one-core seconds, kind, train section, its seed groups'
    shares if the executor may train them apart), the first three and the shares counting only
    the seed groups the group store lacks; only the stages `runs` finds among `running`."""
    out = [(stage, {entry_of(scratch, r.name, r.key): _left(*cell_flops(c), r, cell_kind(c), c.train)
                    for c, ckpt in planned for r in [cells.cell_request(c, scratch, ckpt)]})
           for stage, planned in planned_cells(params).items() if runs(stage, running)]
    if not runs("lm_train", running):
        return out
    lm_cost = {name: cost for name, *cost in language_model_flops(params)}
    section = language_model_section(params)
    out.append(("lm_train", {entry_of(scratch, r.name, r.key): _left(*lm_cost[name][:2], r, language_model_kind(params, name),
                                                                      section.train)
                             for name, r in variant_requests(section, scratch).items()}))
    return out


def _left(flops: float, seed_steps: float, request: Request, kind: tuple, train: TrainArgs) -> tuple:
    """An entry's stage_entries value: its FLOPs, seed-steps and modelled seconds (the request's
    cost) scaled to the seed groups the group store lacks, and those groups' shares of that."""
    left, parts = request.pieces()
    return flops * request.todo, seed_steps * request.todo, left, kind, train, tuple(c / left for c in parts) if left else ()


def plan_table(params: dict, speed: dict[tuple, float] | None, scratch: Path = SCRATCH,
               running: set[str] | None = None) -> tuple[pd.DataFrame, float]:
    """One row per training stage: its cells, those the cell cache lacks and no earlier stage
    builds (a cell two stages share is built once), their seed-steps, FLOPs, estimated
    device-hours in one process (the build-time model's seconds times the factor of each cell's
    kind, `speed` from `calibrate`) and estimated wall hours on this machine with the executor's
    workers (None: no estimate); the stages among `running` alone. Returns it and the total
    estimated device-seconds."""
    rows, seen, every = [], set(), []
    execution = cells.Setting.of(params).execution
    reference = reference_kind(params)

    def factor(kind: tuple) -> float:
        return speed[kind] if kind in speed else speed[reference]

    for stage, entries in stage_entries(params, scratch, running):
        build = {e: cost for e, cost in entries.items() if e not in seen and not e.exists()}
        seen.update(entries)
        seconds = [modelled * factor(kind) for _, _, modelled, kind, _, _ in build.values()] if speed else []
        trains = [train for *_, train, _ in build.values()]
        shares = [s for *_, s in build.values()]
        every += zip(seconds, trains, shares)
        rows.append({"stage": stage, "cells": len(entries), "to build": len(build),
                     "seed-steps": sum(c[1] for c in build.values()), "flops": sum(c[0] for c in build.values()),
                     "seconds": sum(seconds) if speed else float("nan"),
                     "wall": build_wall(execution, seconds, trains, shares) if speed else float("nan")})
    # columns named even with no training stage to run (a chapter edit, an analysis threshold)
    table = pd.DataFrame(rows, columns=["stage", "cells", "to build", "seed-steps", "flops", "seconds", "wall"])
    total = float(table["seconds"].sum()) if speed else float("nan")
    table.attrs["one pool hours"] = (one_pool_seconds(execution, every, float(table["wall"].sum())) / 3600
                                     if speed else float("nan"))
    table.attrs["one pool split"] = pool_split(execution, every) if speed else (0, 0)
    table["device-hours"] = (table.pop("seconds") / 3600).round(2)
    table["wall hours here"] = (table.pop("wall") / 3600).round(2)
    return table, total


def _priced(seconds: list[float], shares: list[tuple[float, ...]]) -> list[tuple[float, tuple[float, ...]]]:
    """(seconds, its seed groups' seconds) of each entry, as cache.splits takes them."""
    return [(s, tuple(s * f for f in share)) for s, share in zip(seconds, shares)]


def build_wall(execution: ExecutionArgs, seconds: list[float], trains: list[TrainArgs], shares: list[tuple[float, ...]]) -> float:
    """Expected wall seconds of building entries that take `seconds` in this process, trained
    with these `train` sections, the way cache.build_missing builds them: whole, or split into
    their seed groups (`shares` of each entry's seconds) where that is expected to be sooner."""
    return handout_seconds(execution, trains, handout(execution, trains, _priced(seconds, shares))[1])


def _one_pool(execution: ExecutionArgs, builds: list[tuple[float, TrainArgs, tuple[float, ...]]]) -> tuple[list, float] | None:
    """`builds` (seconds in this process, train section, seed-group shares) that `make report`'s
    one pool takes (emergence/pipeline/prebuild.py), and the seconds of those left to their stages'
    processes (CPU bfloat16 with the threads left to the process); None where the pool would be
    this one process (the stages then build everything)."""
    pooled = [b for b in builds if not bound_to_process(b[1])]
    trains = [t for _, t, _ in pooled]
    if len(pooled) < 2 or not on_slurm(execution, trains) and \
            build_plan(execution, trains, [s for s, _, _ in pooled]).workers < 2:
        return None
    return pooled, sum(s for s, t, _ in builds if bound_to_process(t))


def one_pool_seconds(execution: ExecutionArgs, builds: list[tuple[float, TrainArgs, tuple[float, ...]]], stage_by_stage: float) -> float:
    """Expected wall seconds of `builds` as `make report` builds them: its one pool (`_one_pool`),
    then the entries bound to their stages; `stage_by_stage` seconds where there is no pool."""
    pool = _one_pool(execution, builds)
    if pool is None:
        return stage_by_stage
    pooled, left = pool
    return build_wall(execution, *map(list, zip(*pooled))) + left


def pool_split(execution: ExecutionArgs, builds: list[tuple[float, TrainArgs, tuple[float, ...]]]) -> tuple[int, int]:
    """(cells, seed groups): how many of `builds` (as `one_pool_seconds` takes them) the one pool
    hands out as their seed groups; (0, 0) where it hands out whole cells."""
    pool = _one_pool(execution, builds)
    if pool is None:
        return 0, 0
    seconds, trains, shares = map(list, zip(*pool[0]))
    entries = _priced(seconds, shares)
    if not splits(execution, trains, entries):
        return 0, 0
    return sum(1 for _, parts in entries if parts), sum(len(parts) for _, parts in entries)


def kinds_to_build(params: dict, scratch: Path = SCRATCH, running: set[str] | None = None) -> dict[tuple, float]:
    """Kind -> the modelled one-core seconds of its cells (and language models) the cell cache
    lacks, a cell two stages share once."""
    todo: dict[tuple, float] = {}
    missing = {e: cost for _, entries in stage_entries(params, scratch, running) for e, cost in
               entries.items() if not e.exists()}
    for _, _, modelled, kind, _, _ in missing.values():
        todo[kind] = todo.get(kind, 0.0) + modelled
    return todo


def kinds_to_calibrate(params: dict, scratch: Path = SCRATCH, running: set[str] | None = None) -> set[tuple]:
    """The kinds with at least CALIBRATE_ABOVE_S modelled seconds to build (and the reference)."""
    return {k for k, s in kinds_to_build(params, scratch, running).items() if s >= CALIBRATE_ABOVE_S} | {reference_kind(params)}


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m emergence.pipeline.cost", description="What the pipeline would train: "
                                     "each training stage `dvc repro` will run, the cells the cell cache lacks, and "
                                     "their time, calibrated on this machine.")
    parser.add_argument("--profile", choices=PROFILES, help="a profile other than params.yaml's")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--no-calibrate", action="store_true", help="the cells alone, untimed (make plan)")
    mode.add_argument("--calibrate-seconds", type=float, default=3.0, metavar="S",
                      help="seconds of training steps timed per kind of cell (default 3)")
    parser.add_argument("--recalibrate", action="store_true",
                        help=f"time every kind anew, not taking the factors recorded in {CALIBRATION_RECORD}")
    args = parser.parse_args(argv)
    if not math.isfinite(args.calibrate_seconds) or args.calibrate_seconds <= 0:
        parser.error(f"--calibrate-seconds: a positive number of seconds, got {args.calibrate_seconds}")
    return args


def main(argv: list[str], scratch: Path = SCRATCH, root: Path = REPO_ROOT) -> int:
    args = _arguments(argv)
    params = validate(load_params(profile=args.profile) if args.profile else load_params())
    # another profile than params.yaml's changes the params of every training stage: DVC's view
    # of the active one says nothing about what switching would run
    running = None if args.profile not in (None, merged_params()["profile"]) else stages_to_run(params, root)
    if running is not None and not running:
        print(f"Profile {params['profile']}: `dvc status` finds the pipeline up to date; nothing to train.")
        return 0
    table, _ = plan_table(params, None, scratch, running)
    if table.empty:
        # the other stages are not judged against the run cache: some listed may be checked out of it
        print(f"Profile {params['profile']}: no training stage among those `dvc repro` will run or check out of "
              f"its run cache ({', '.join(sorted(running))}); nothing to train.")
        return 0
    if table["to build"].sum() == 0:
        print(f"Profile {params['profile']}: every cell and language model the stages to run need is in the cell "
              "cache; nothing to train.")
        return 0
    if args.no_calibrate:  # `make plan`: what an edit retrains, in seconds rather than minutes
        print(f"Profile {params['profile']}: cells and language models the cell cache lacks, by stage (`make report` "
              "prints their estimated time, calibrated here, before it starts):")
        print(table.drop(columns=["flops", "device-hours", "wall hours here"]).to_string(
            index=False, formatters={"seed-steps": "{:,.0f}".format}))
        return 0
    speed, notes = planned_factors(params, kinds_to_calibrate(params, scratch, running), args.calibrate_seconds,
                                   root / CALIBRATION_RECORD, args.recalibrate)
    table, seconds = plan_table(params, speed, scratch, running)
    print(f"Profile {params['profile']}: training plan (each kind of cell's steps and evaluations against the "
          "build-time model's one-core seconds: " + "; ".join(f"{'/'.join(k)} {v:.2f}x" for k, v in speed.items())
          + "; any other kind as " + "/".join(reference_kind(params)) + "; " + "; ".join(notes) + ")")
    print(table.to_string(index=False, formatters={"seed-steps": "{:,.0f}".format, "flops": "{:.3g}".format}))
    print(f"Estimated training time of what the cache lacks: {seconds / 3600:.2f} device-hours on this device in "
          f"one process; with `execution` ({params['execution']['executor']}), "
          f"{table.attrs['one pool hours']:.2f} hours of wall time here as `make report` builds the cells (one pool "
          f"over every stage's, emergence/pipeline/prebuild.py), {table['wall hours here'].sum():.2f} stage by stage "
          "(`dvc repro` alone: the column). An estimate from a cost model calibrated here, not a measurement."
          + (" In that pool {} cells go out as their {} seed groups (more workers than long cells: "
             "emergence/runs/cache.py's `splits`).".format(*table.attrs["one pool split"])
             if table.attrs["one pool split"][0] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The one path by which every experiment trains: cells, the cell cache, sweeps.

A cell is one synthetic task's training section (`linear_map.Section` or
`cellular_automata.Section`: task, model, train, bias), typed; sweeps derive theirs from the
task's section in params.yaml (`Setting`) with `with_budget` and `dataclasses.replace`. A sweep declares its cells as the results
files it writes (`SweepFile`: one cell, or several stacked along a dimension); this module
trains each cell or loads it from the cell cache, writes the files, and the whole output
folder replaces the old one atomically.

A cell's cache key (emergence/runs/cache.py) is its configuration and the code
version of what training it executes (its import closure: editing the analysis, the report
or the renderer retrains nothing). A cell shared by two sweeps trains once. A cell of several
seed groups lists them as parts, which the executor may train in separate processes
(`train_seed_group`) before the cell's own build assembles it from their finished states. Each
group's finished state is kept in the group store (cache.finished_group), keyed without the
cell's seed count, so a cell given more seeds trains only the groups it adds.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Iterator

import xarray as xr

from emergence.common.io import atomic_dir, config_hash, read_netcdf, write_netcdf
from emergence.common.schema import load, number, to_params
from emergence.core.model import ModelConfig, parameter_count
from emergence.core.tasks import cellular_automata, linear_map
from emergence.core.train import Examples, TrainArgs, schedules, train_group
from emergence.runs.cache import (Part, Request, build_missing, cached, finished_group, group_stored,
                                         intact_entry)
from emergence.runs.executor import ExecutionArgs
from emergence.runs.runner import (PreparedTraining, prepare_training, runs_on, seed_groups, train_prepared,
                                   training_code_version)

TASKS: dict[str, ModuleType] = {module.NAME: module for module in (linear_map, cellular_automata)}
RESULTS = "results.nc"
Cell = linear_map.Section | cellular_automata.Section


def task_module(task: str) -> ModuleType:
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown task section {task!r}; expected one of {tuple(TASKS)}") from None


def task_of(cell: Cell) -> str:
    (task,) = [name for name, module in TASKS.items() if type(cell) is module.Section]
    return task


@dataclass(frozen=True, kw_only=True)
class Setting:
    """What a sweep reads besides its own section: the active profile and the two synthetic
    tasks' sections of params.yaml (without their `analysis`), typed; and how its missing
    cells are built (`execution`), which never changes what they compute."""
    profile: str
    linear_map: linear_map.Section
    cellular_automata: cellular_automata.Section
    execution: ExecutionArgs

    @classmethod
    def of(cls, params: dict) -> "Setting":
        """From validated params: the merged whole, or a stage's (the keys it declares, where
        each key it leaves out is an `Undeclared` that raises when read)."""
        sections = {"execution": (ExecutionArgs, params.get("execution", {})),
                    **{task: (module.Section, {k: v for k, v in params.get(task, {}).items() if k != "analysis"})
                       for task, module in TASKS.items()}}
        return cls(profile=params["profile"], **{name: load(kind, section, name, declared_only=True)
                                                 for name, (kind, section) in sections.items()})

    def section(self, task: str) -> Cell:
        return getattr(self, task)


@dataclass(frozen=True, kw_only=True)
class Budget:
    """The training budget a sweep gives each of its cells (see `with_budget`); sweeps add
    their batch (`batch_size`, or `batch_tokens` held fixed across state sizes)."""
    n_seeds: int = number(1, 4096)                 # seeds of each cell
    steps: int = number(1, 10_000_000)             # training steps of each cell (a run unfinished here is censored)
    eval_every: int = number(1, 10_000_000)        # evaluation spacing (train.eval_every)
    eval_sequences: int = number(1, 1_000_000)     # the fixed evaluation set (task.eval_sequences)
    examples: Examples  # per-example answers kept (train.examples); per unit they are GBs at the paper's S


SEED_FIELDS = ("n_seeds", "first_seed", "seeds_per_group")  # which seeds a cell trains, and how many at once


def with_budget(section: Cell, task_overrides: dict, budget: Budget, batch_size: int | None = None,
                n_seeds: int | None = None) -> Cell:
    """A task's `section` with a sweep's task overrides and training budget (its n_seeds, steps,
    batch_size, eval_every, eval_sequences, examples; `batch_size` and `n_seeds` given here
    replace the budget's); checkpoints only at the start and end."""
    n_seeds = budget.n_seeds if n_seeds is None else n_seeds
    task = replace(section.task, **task_overrides, eval_sequences=budget.eval_sequences)
    train = replace(section.train, n_seeds=n_seeds, steps=budget.steps,
                    batch_size=budget.batch_size if batch_size is None else batch_size,
                    eval_every=budget.eval_every, seeds_per_group=min(section.train.seeds_per_group, n_seeds),
                    checkpoint_every=budget.steps, resume_every=max(1, budget.steps // 4), examples=budget.examples)
    return replace(section, task=task, train=train)


# --- cells ------------------------------------------------------------------------------

def cell_key(cell: Cell, with_checkpoints: bool = False) -> dict:
    task = task_of(cell)
    return {"task": task, "c": to_params(cell),
            "code": training_code_version(task_module(task).__name__), "checkpoints": with_checkpoints,
            "runs_on": runs_on(cell.train)}


@contextmanager
def _task_file(cell: Cell, task_path: Path | None, beside: Path) -> Iterator[Path]:
    """`task_path`, or the cell's task built into a file named `beside` plus -task.nc (removed after)."""
    if task_path is not None:
        yield task_path
        return
    task = task_of(cell)
    path = beside.parent / f"{beside.name}-task.nc"
    write_netcdf(task_module(task).build_task(cell.task), path)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def group_key(cell: Cell, group: int, with_checkpoints: bool = False) -> dict:
    """A seed group's key in the group store: the cell's key without its seed count, first seed or
    group size, with the group's seeds. A cell with more seeds than one trained before shares its
    first groups."""
    key = cell_key(cell, with_checkpoints)
    return {**key, "c": {**key["c"], "train": seedless(key["c"]["train"])},
            "seeds": seed_groups(cell.train)[group]}


def seedless(train: dict) -> dict:
    """A `train` section without which seeds it trains (a seed group's key holds them itself)."""
    return {k: v for k, v in train.items() if k not in SEED_FIELDS}


def groups_left(scratch: Path, name: str, keys: list[dict], train: TrainArgs) -> tuple[list[bool], float]:
    """(whether the group store holds each seed group of `keys`, the share of the seeds it lacks)."""
    stored = [group_stored(scratch, name, key) for key in keys]
    return stored, sum(share for share, done in zip(seed_group_shares(train), stored) if not done)


def finish_groups(run: PreparedTraining, scratch: Path, keys: list[dict], groups: list[int],
                  leave_out: tuple[str, ...] = ()) -> float:
    """Leave `groups` of a prepared run trained to their end in the resume scratch that
    `train_prepared` reads, each copied from the group store (group g under `keys[g]`) or trained
    and stored without the files in `leave_out` (`finished_group`), so that `train_prepared` then
    trains nothing. Returns the seconds of the groups copied (their training's, when it was done)."""
    every, folder = seed_groups(run.train), run.resume_folder(scratch)
    return sum(finished_group(scratch, run.module.NAME, keys[g], folder / f"group{g}",
                              partial(train_group, every[g], run.cfg, run.task, run.train, folder / f"group{g}", g,
                                      len(every), run.device, train_hooks=run.train_hooks, eval_hooks=run.eval_hooks),
                              leave_out)
               for g in groups)


def _finish_cell_groups(cell: Cell, scratch: Path, run: PreparedTraining, groups: list[int],
                        with_checkpoints: bool) -> float:
    keys = [group_key(cell, g, with_checkpoints) for g in range(len(seed_groups(run.train)))]
    return finish_groups(run, scratch, keys, groups, () if with_checkpoints else ("checkpoints",))


def _build_cell(cell: Cell, scratch: Path, with_checkpoints: bool, task_path: Path | None, folder: Path) -> float:
    task = task_of(cell)
    with _task_file(cell, task_path, folder) as path:
        run = prepare_training(task_module(task), cell, path)
        copied = _finish_cell_groups(cell, scratch, run, list(range(len(seed_groups(run.train)))), with_checkpoints)
        train_prepared(run, folder / RESULTS, folder / "checkpoints" if with_checkpoints else None, scratch)
    return copied


def train_seed_group(cell: Cell, scratch: Path, task_path: Path | None, group: int,
                     with_checkpoints: bool = False) -> float:
    """Train one seed group of a cell to its end and store it (`finish_groups`), so that the
    cell's build then finds it and trains nothing. Seed groups are independent trajectories, so a
    cell's groups can train in separate processes (or SLURM tasks) and give the bytes one process
    gives: tested against the whole build. Returns the seconds it took."""
    start = time.perf_counter()
    task = task_of(cell)
    beside = scratch / "cells" / f"{task}-{config_hash(cell_key(cell))}-group{group}"  # its task file's name
    beside.parent.mkdir(parents=True, exist_ok=True)
    with _task_file(cell, task_path, beside) as path:
        _finish_cell_groups(cell, scratch, prepare_training(task_module(task), cell, path), [group],
                            with_checkpoints)
    return time.perf_counter() - start


def seed_group_shares(train: TrainArgs) -> tuple[float, ...]:
    """Each seed group's share of a cell's seeds."""
    return tuple(len(g) / train.n_seeds for g in seed_groups(train))


def group_shares(train: TrainArgs) -> tuple[float, ...]:
    """Each seed group's share of a cell's seeds (its parts' costs); () for a single group."""
    shares = seed_group_shares(train)
    return shares if len(shares) > 1 else ()


def cell_request(cell: Cell, scratch: Path, with_checkpoints: bool = False, task_path: Path | None = None) -> Request:
    """A cell's cache request (emergence/runs/cache.py): priced at its seed groups the
    group store lacks; a cell of several seed groups has one part per group, which the executor
    may train apart (`train_seed_group`)."""
    cost, task = cell_build_seconds(cell), task_of(cell)
    train = cell.train
    keys = [group_key(cell, g, with_checkpoints) for g in range(len(seed_groups(train)))]
    stored, todo = groups_left(scratch, task, keys, train)
    # a part is its group's store entry: cells with more seeds share it
    parts = tuple(Part(f"{task}-{config_hash(keys[g])}", partial(train_seed_group, cell, scratch, task_path, g,
                                                                 with_checkpoints), cost * share, stored[g])
                  for g, share in enumerate(group_shares(train)))
    return Request(task_of(cell), cell_key(cell, with_checkpoints),
                   partial(_build_cell, cell, scratch, with_checkpoints, task_path), cost, parts, todo)


def training_flops(cfg: ModelConfig, seq_len: int, sequences: float) -> float:
    """FLOPs of training `cfg` on `sequences` sequences of `seq_len` tokens (one seed)."""
    per_sequence = 6 * parameter_count(cfg) * seq_len + 12 * cfg.n_layer * seq_len ** 2 * cfg.d_model
    return per_sequence * sequences


def cell_shape(cell: Cell) -> tuple[ModelConfig, int, float, float]:
    """(model config, sequence length, seed-steps, sequences over all seeds) of a cell."""
    module = task_module(task_of(cell))
    layout = module.layout_of(cell.task)
    seed_steps = float(cell.train.n_seeds * cell.train.steps)
    return module.model_config(cell.model, layout), layout.seq_len, seed_steps, seed_steps * cell.train.batch_size


def cell_flops(cell: Cell) -> tuple[float, float]:
    """(FLOPs, seed-steps) of training one synthetic-task cell, all its seeds."""
    cfg, seq_len, seed_steps, sequences = cell_shape(cell)
    return training_flops(cfg, seq_len, sequences), seed_steps


# Seconds per unit of each term of a cell's build time on one core, fitted by least squares
# (relative error) to the 35 cells of a default run measured in one-thread workers on an Intel
# Xeon: within ~35% for attention models, while the recurrent mixers' reference scans run 2-3x
# slower than predicted. They order builds and choose workers (against a worker's start-up
# time, in seconds: emergence/runs/executor.py).
SECONDS_PER_FLOP, SECONDS_PER_SCORE, SECONDS_PER_TOKEN_LAYER = 1.0e-11, 6.4e-9, 1.46e-6


def build_seconds(cfg: ModelConfig, seq_len: int, sequences: float) -> float:
    """Expected seconds on one core of training `cfg` on `sequences` sequences (all seeds): its
    training FLOPs, its attention scores (layers x heads x T^2 per sequence: the softmax and
    masking, costly at small head sizes) and its token-layers (per-token work beside the
    matmuls). FLOPs alone put the automata sweep's one-head cell at a fifteenth of the widest
    one's time (measured: a sixth)."""
    return (SECONDS_PER_FLOP * training_flops(cfg, seq_len, sequences)
            + SECONDS_PER_SCORE * cfg.n_layer * cfg.n_head * seq_len ** 2 * sequences
            + SECONDS_PER_TOKEN_LAYER * cfg.n_layer * seq_len * sequences)


def cell_build_seconds(cell: Cell) -> float:
    """A cell's expected build time (seconds on one core): its training sequences, and its
    evaluations counted as sequences at a third (a forward pass, of three in a training step)."""
    cfg, seq_len, _, sequences = cell_shape(cell)
    return build_seconds(cfg, seq_len, sequences + _evaluated_sequences(cell) / 3)


def _evaluated_sequences(cell: Cell) -> float:
    return float(len(schedules(cell.train)[0]) * cell.train.n_seeds * cell.task.eval_sequences)


def trained_cell(cell: Cell, scratch: Path, with_checkpoints: bool = False, task_path: Path | None = None) -> Path:
    """The cell's cache folder (results.nc, and checkpoints/), trained here first if the cache
    lacks it. `task_path` gives the task file to train on (else it is built from the cell's task
    params). To read without ever training, `cached_cell`."""
    request = cell_request(cell, scratch, with_checkpoints, task_path)
    return cached(scratch, request.name, request.key, request.build)


def cached_cell(cell: Cell, scratch: Path, with_checkpoints: bool = False) -> Path | None:
    """The cell's cache folder if it is there and intact, else None; never trains (a script that
    reads what a run built: `build.json` holds the seconds it took)."""
    return intact_entry(scratch, task_of(cell), cell_key(cell, with_checkpoints))


def build_cells(cells: list[tuple[Cell, bool]], scratch: Path, execution: ExecutionArgs) -> None:
    """Every (cell, with_checkpoints) the cache lacks, built through `execution`'s workers
    where they finish sooner (emergence/runs/executor.py); the stage then reads them as cache hits."""
    build_missing(scratch, [cell_request(cell, scratch, ckpt) for cell, ckpt in cells], execution,
                  [cell.train for cell, _ in cells])


def load_cell(cell: Cell, scratch: Path, with_checkpoints: bool = False) -> xr.Dataset:
    """The cell's results, trained here first if the cache lacks them."""
    return read_netcdf(trained_cell(cell, scratch, with_checkpoints) / RESULTS)


# --- sweeps -----------------------------------------------------------------------------

@dataclass
class SweepFile:
    """One results file of a sweep: a single cell (`dim` None) or cells stacked along `dim`
    at `values`. `attrs` are added to the file's attributes."""
    name: str
    cells: list[Cell]
    attrs: dict = field(default_factory=dict)
    dim: str | None = None
    values: list = field(default_factory=list)
    checkpoints: bool = False  # train the cells with checkpoints (shares linear_map_train's cache entry)


def sweep_dataset(spec: SweepFile, scratch: Path) -> xr.Dataset:
    datasets = [load_cell(cell, scratch, spec.checkpoints) for cell in spec.cells]
    if spec.dim is None:
        (ds,) = datasets
        ds.attrs.update(spec.attrs)
        return ds
    return stack_cells(datasets, spec.dim, spec.values, spec.attrs)


def trained_file(spec: SweepFile, scratch: Path, execution: ExecutionArgs) -> xr.Dataset:
    """One sweep file's Dataset, its missing cells built through `execution`'s workers."""
    build_cells([(cell, spec.checkpoints) for cell in spec.cells], scratch, execution)
    return sweep_dataset(spec, scratch)


def write_sweep(files: list[SweepFile], out_dir: Path, scratch: Path, execution: ExecutionArgs) -> list[str]:
    """Every file of a sweep into out_dir/<name>.nc; the folder replaces the old one atomically."""
    build_cells([(cell, spec.checkpoints) for spec in files for cell in spec.cells], scratch, execution)
    with atomic_dir(out_dir) as tmp:
        for spec in files:
            write_netcdf(sweep_dataset(spec, scratch), tmp / f"{spec.name}.nc")
    return [spec.name for spec in files]


def stack_cells(cells: list[xr.Dataset], dim: str, values: list, attrs: dict) -> xr.Dataset:
    """Cells of one shape stacked along a new leading dimension, with each cell's config kept."""
    configs = [json.loads(c.attrs["config"]) for c in cells]
    keep = {k: cells[0].attrs[k] for k in ("model_config", "code_version", "schema_version", "chance_loss",
                                           "eval_sequences")}
    keep.update({k: cells[0].attrs[k] for k in ("device", "precision", "threads")
                 if k in cells[0].attrs and len({c.attrs.get(k) for c in cells}) == 1})  # else per cell, in its config
    keep.update({k: cells[0].attrs[k] for k in ("chance_accuracy",) if k in cells[0].attrs})
    ds = xr.concat([c.drop_attrs() for c in cells], dim=xr.DataArray(values, dims=dim, name=dim),
                   coords="minimal", compat="override", join="exact")
    ds.attrs = {**attrs, "configs": json.dumps(configs, sort_keys=True), **keep}
    if all("loss_floor" in c.attrs for c in cells):
        ds.attrs["loss_floors"] = json.dumps([float(c.attrs["loss_floor"]) for c in cells])
    return ds

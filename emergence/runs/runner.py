"""Shared by every experiment that trains: seed groups -> one results Dataset.

A task (the linear map, the cellular automata, the language models' corpus) is a module that
implements the task protocol below; `prepare` sets one up on this device and `train_prepared`
trains it with the shared trainer (resumable through a scratch folder keyed by everything that
changes the trajectory), merges the checkpoints and lays the recorded arrays out with named
dimensions. `run_training` does both for a synthetic task's params section.

Task protocol (the synthetic tasks implement it in their own modules, emergence/core/tasks/linear_map.py
and cellular_automata.py; the corpus in emergence/runs/language_model.py, where its task
params are the whole language_model section and its model params one of the sizes):
    NAME, UNIT_DIM, UNIT_TEXT            params section, output-unit dimension and its description
    Section                              its params section as a dataclass (task, model, train, bias)
    layout_of(task_args)                 the task's shape, from the section's `task`
    build_task(task_args) -> Dataset     the fixed task (matrix, rule pool) and its evaluation set
    task_tensors(task_ds, task_args)     the trainer's Task
    model_config(model_args, layout)     the ModelConfig, from the section's `model`
    identity(task_ds) -> dict            what, besides the config, fixes the trajectory
    result_layout(task_ds) -> dict       extra_vars / extra_coords / extra_attrs of the results
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Mapping

import numpy as np
import torch
import xarray as xr

from emergence.common.import_closure import closure, code_version, module_path
from emergence.common.io import config_hash, read_netcdf, write_netcdf
from emergence.common.schema import to_params
from emergence.core.hooks import BiasArgs, Hook
from emergence.core.model import ModelConfig
from emergence.core.precision import resolve
from emergence.core.train import (Task, TrainArgs, TrainingSection, merge_checkpoints, resolve_device, schedules,
                                  train_group)
# Version of the results layout (data/SCHEMA.md). 2: per-unit variables are unit_* (they were
# bit_*, which also held the automata's cells and the language models' positions). 3: adds the
# per-example answers (example_*, over a new `example` dimension).
SCHEMA_VERSION = 3


def training_code_version(module: str) -> str:
    """What training through `module` executes: this runner and `module`, with their imports."""
    return code_version(closure([module_path(__name__), module_path(module)]))


def seed_groups(train: TrainArgs) -> list[list[int]]:
    seeds = list(range(train.first_seed, train.first_seed + train.n_seeds))
    k = train.seeds_per_group
    return [seeds[i:i + k] for i in range(0, len(seeds), k)]


def runs_on(train: TrainArgs) -> dict:
    """Where and in what precision a `train` section trains on this machine (after fallbacks):
    part of a cell's cache key and of its results' attributes. Under CPU bfloat16 the thread
    count changes the results (oneDNN splits the reductions by thread: the automata's losses
    differ by ~6e-5 after 20 steps between 1 and 2 threads, measured here; float32 gives the
    same bytes), so it is recorded there and only there."""
    device = resolve_device(train.device)
    out = {"device": device.type, "precision": resolve(train.precision, device)}
    if device.type == "cpu" and out["precision"] != "float32":
        out["threads"] = train.threads or torch.get_num_threads()
    return out


def prepare_device(train: TrainArgs) -> torch.device:
    if train.threads > 0:
        torch.set_num_threads(train.threads)
    return resolve_device(train.device)


def resume_folder(scratch_root: Path, name: str, trajectory_key: object, code: str) -> Path:
    """Where a run's seed groups keep their resumable state: keyed by everything that changes
    the trajectory and by the training code version."""
    return scratch_root / f"{name}-{config_hash({'key': trajectory_key, 'code': code})}"


def train_seeds(task: Task, cfg: ModelConfig, train: TrainArgs, scratch_root: Path, scratch_name: str,
                trajectory_key: object, code: str, checkpoint_dir: Path | None, device: torch.device,
                train_hooks: Mapping[str, Hook] | None = None,
                eval_hooks: Mapping[str, Hook] | None = None,
                init_model=None) -> tuple[dict[str, np.ndarray], np.ndarray, list[int]]:
    """Train every seed group; returns (metric arrays with a leading seed axis, diverged_step, seeds).
    `code` (the training code version) joins the resume key; `init_model` (a SeedTransformer
    holding every seed) replaces the fresh initialisation."""
    scratch = resume_folder(scratch_root, scratch_name, trajectory_key, code)
    groups = seed_groups(train)
    recorders = [train_group(seeds, cfg, task, train, scratch / f"group{gi}", gi, len(groups), device,
                             train_hooks=train_hooks, eval_hooks=eval_hooks, init_model=init_model)
                 for gi, seeds in enumerate(groups)]
    if checkpoint_dir is not None:
        merge_checkpoints([scratch / f"group{gi}" for gi in range(len(groups))], checkpoint_dir)
    shutil.rmtree(scratch, ignore_errors=True)
    arrays = {name: np.concatenate([r.arrays[name] for r in recorders]) for name in recorders[0].arrays}
    diverged = np.concatenate([r.diverged_step for r in recorders])
    return arrays, diverged, [s for g in groups for s in g]


def training_dataset(arrays: dict[str, np.ndarray], diverged: np.ndarray, seeds: list[int], cfg: ModelConfig,
                     train: TrainArgs, unit_dim: str, unit_text: str, run_config: dict, experiment: str, code: str,
                     extra_vars: dict | None = None, extra_coords: dict | None = None,
                     extra_attrs: dict | None = None) -> xr.Dataset:
    """The results Dataset with named dimensions; `unit_text` describes one output unit for long_names."""
    steps, ckpts = schedules(train)
    n_units, T = arrays["unit_loss"].shape[-1], arrays["attention_map"].shape[-1]
    per_eval = ("seed", "step")
    heads = ("seed", "step", "layer", "head", unit_dim)
    data_vars = {
        "loss": (per_eval, arrays["loss"], {"long_name": "evaluation loss on the training objective's positions"}),
        "output_loss": (per_eval, arrays["output_loss"], {"long_name": "mean loss on the predictable outputs"}),
        "accuracy": (per_eval, arrays["accuracy"], {"long_name": "mean greedy accuracy on the outputs"}),
        "exact_match": (per_eval, arrays["exact_match"], {"long_name": "fraction of sequences with every output right"}),
        "p_correct": (per_eval, arrays["p_correct"], {"long_name": "mean probability of the correct output token"}),
        "unit_loss": (per_eval + (unit_dim,), arrays["unit_loss"], {"long_name": f"loss on {unit_text}"}),
        "unit_accuracy": (per_eval + (unit_dim,), arrays["unit_accuracy"], {"long_name": f"greedy accuracy on {unit_text}"}),
        "attention_entropy": (heads, arrays["attention_entropy"],
                              {"long_name": f"entropy (nats) of the attention rows predicting {unit_text}"}),
        "parent_mass": (heads, arrays["parent_mass"],
                        {"long_name": f"attention mass of the rows predicting {unit_text} on their true parents"}),
        "attention_map": (("seed", "checkpoint_step", "layer", "head", "query", "key"), arrays["attention_map"],
                          {"long_name": "attention pattern averaged over the evaluation set"}),
        "train_loss": (("seed", "train_step"), arrays["train_loss"], {"long_name": "training batch loss"}),
        "diverged_step": (("seed",), diverged, {"long_name": "first step with NaN or exploding loss; -1 if none"}),
        **(extra_vars or {}),
    }
    example = {"example_answer_log_p": (per_eval + ("example",), "log p of the whole correct answer (sum over its "
                                                               "outputs), per evaluation example"),
               "example_exact": (per_eval + ("example",), "1 where every output of the example is right (greedy), else 0"),
               "example_unit_log_p": (per_eval + ("example", unit_dim), f"log p of the correct answer on {unit_text}, "
                                                                        "per example"),
               "example_unit_correct": (per_eval + ("example", unit_dim), f"1 where {unit_text} is right (greedy), "
                                                                          "per example")}
    data_vars.update({name: (dims, arrays[name], {"long_name": text}) for name, (dims, text) in example.items()
                      if name in arrays})
    coords = {"seed": np.array(seeds), "step": np.array(steps), "checkpoint_step": np.array(ckpts),
              "train_step": np.arange(1, train.steps + 1), unit_dim: np.arange(n_units),
              "layer": np.arange(cfg.n_layer), "head": np.arange(cfg.n_head), "query": np.arange(T),
              "key": np.arange(T), **(extra_coords or {})}
    if "example_exact" in arrays:
        coords["example"] = np.arange(arrays["example_exact"].shape[-1])
    attrs = {"experiment": experiment, "config": json.dumps(run_config, sort_keys=True),
             "model_config": json.dumps(cfg.to_dict(), sort_keys=True), "code_version": code,
             "torch_version": torch.__version__, "schema_version": SCHEMA_VERSION, **runs_on(train),
             **(extra_attrs or {})}
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


@dataclass(frozen=True)
class PreparedTraining:
    """A task of the protocol above set up to train on this device: what training it whole
    (`train_prepared`) and training one of its seed groups apart share. `name` names its resume
    scratch; `run_config` is what its results record as their config."""
    module: ModuleType
    name: str
    train: TrainArgs
    task_ds: xr.Dataset
    task: Task
    cfg: ModelConfig
    device: torch.device
    run_config: dict
    code: str
    train_hooks: dict | None = None
    eval_hooks: dict | None = None

    @property
    def trajectory_key(self) -> dict:
        return {"config": self.run_config, **self.module.identity(self.task_ds)}

    def resume_folder(self, scratch_root: Path) -> Path:
        return resume_folder(scratch_root, self.name, self.trajectory_key, self.code)


def prepare(module: ModuleType, task_ds: xr.Dataset, task_args, model_args, train: TrainArgs,
            run_config: dict, code: str, name: str | None = None, bias: BiasArgs | None = None) -> PreparedTraining:
    """`module`'s task (its `task_ds`, built from `task_args`, the module's own task section) and
    model (`model_args`, the module's model section) set up on this device, with the
    attention-bias hooks of `bias` if given."""
    device = prepare_device(train)
    task = module.task_tensors(task_ds, task_args).to(device)
    cfg = module.model_config(model_args, module.layout_of(task_args))
    hooks = bias.hooks(task.gt_pattern, cfg.n_layer) if bias is not None else (None, None)
    return PreparedTraining(module, name or module.NAME, train, task_ds, task, cfg, device, run_config, code, *hooks)


def prepare_training(task_module: ModuleType, section: TrainingSection, task_path: Path) -> PreparedTraining:
    """A synthetic task's section (the module's `Section`: task, model, train, bias) set up, its
    task read from `task_path`."""
    return prepare(task_module, read_netcdf(task_path), section.task, section.model, section.train,
                   run_config={task_module.NAME: to_params(section)},
                   code=training_code_version(task_module.__name__), bias=section.bias)


def run_training(task_module: ModuleType, section: TrainingSection, task_path: Path, results_path: Path,
                 checkpoint_dir: Path | None, scratch_root: Path) -> xr.Dataset:
    """Train every seed of a synthetic task's section (task, model, train, bias), resuming from
    scratch, then write the results (and the checkpoints, unless checkpoint_dir is None) atomically."""
    return train_prepared(prepare_training(task_module, section, task_path), results_path, checkpoint_dir, scratch_root)


def train_prepared(run: PreparedTraining, results_path: Path, checkpoint_dir: Path | None, scratch_root: Path,
                   init_model=None, attrs: dict | None = None) -> xr.Dataset:
    """Train every seed of a prepared run (from `init_model`, a SeedTransformer holding every seed,
    if given), resuming from scratch; write the results, with `attrs` added, to `results_path`."""
    module = run.module
    arrays, diverged, seeds = train_seeds(
        run.task, run.cfg, run.train, scratch_root, run.name, trajectory_key=run.trajectory_key, code=run.code,
        checkpoint_dir=checkpoint_dir, device=run.device, train_hooks=run.train_hooks, eval_hooks=run.eval_hooks,
        init_model=init_model)
    layout = module.result_layout(run.task_ds)
    if attrs:
        layout = {**layout, "extra_attrs": {**attrs, **layout.get("extra_attrs", {})}}
    ds = training_dataset(arrays, diverged, seeds, run.cfg, run.train, unit_dim=module.UNIT_DIM,
                          unit_text=module.UNIT_TEXT, run_config=run.run_config, experiment=module.NAME, code=run.code,
                          **layout)
    write_netcdf(ds, results_path)
    return ds

"""Shared by every synthetic experiment: train all seeds in groups, then one results Dataset.

An experiment supplies a Task (emergence.train.Task), a ModelConfig and its train params;
this module trains the seed groups (resumable through a scratch directory keyed by
everything that changes the trajectory), merges the checkpoints and lays the recorded
arrays out with named dimensions. `unit_dim` names the output units ("bit", "cell").
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Mapping

import numpy as np
import torch
import xarray as xr

from emergence.config import config_hash, int_list
from emergence.hooks import Hook, ground_truth_bias
from emergence.model import ModelConfig
from emergence.provenance import code_version
from emergence.train import Task, merge_checkpoints, resolve_device, schedules, train_group


def seed_groups(train: dict) -> list[list[int]]:
    seeds = list(range(train["first_seed"], train["first_seed"] + train["n_seeds"]))
    k = train["seeds_per_group"]
    return [seeds[i:i + k] for i in range(0, len(seeds), k)]


def prepare_device(train: dict) -> torch.device:
    if train["threads"] > 0:
        torch.set_num_threads(train["threads"])
    return resolve_device(train["device"])


def train_seeds(task: Task, cfg: ModelConfig, train: dict, scratch_root: Path, scratch_name: str,
                trajectory_key: object, checkpoint_dir: Path | None, device: torch.device,
                train_hooks: Mapping[str, Hook] | None = None,
                eval_hooks: Mapping[str, Hook] | None = None,
                init_model=None) -> tuple[dict[str, np.ndarray], np.ndarray, list[int]]:
    """Train every seed group; returns (metric arrays with a leading seed axis, diverged_step, seeds).
    `init_model` (a SeedTransformer holding every seed) replaces the fresh initialisation."""
    key = config_hash({"key": trajectory_key, "code": code_version()})
    scratch = scratch_root / f"{scratch_name}-{key}"
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
                     train: dict, unit_dim: str, unit_text: str, run_config: dict, experiment: str,
                     extra_vars: dict | None = None, extra_coords: dict | None = None,
                     extra_attrs: dict | None = None) -> xr.Dataset:
    """The results Dataset with named dimensions; `unit_text` describes one output unit for long_names."""
    steps, ckpts = schedules(train)
    n_units, T = arrays["bit_loss"].shape[-1], arrays["attention_map"].shape[-1]
    per_eval = ("seed", "step")
    heads = ("seed", "step", "layer", "head", unit_dim)
    data_vars = {
        "loss": (per_eval, arrays["loss"], {"long_name": "evaluation loss on the training objective's positions"}),
        "output_loss": (per_eval, arrays["output_loss"], {"long_name": "mean loss on the predictable outputs"}),
        "accuracy": (per_eval, arrays["accuracy"], {"long_name": "mean greedy accuracy on the outputs"}),
        "exact_match": (per_eval, arrays["exact_match"], {"long_name": "fraction of sequences with every output right"}),
        "p_correct": (per_eval, arrays["p_correct"], {"long_name": "mean probability of the correct output token"}),
        "bit_loss": (per_eval + (unit_dim,), arrays["bit_loss"], {"long_name": f"loss on {unit_text}"}),
        "bit_accuracy": (per_eval + (unit_dim,), arrays["bit_accuracy"], {"long_name": f"greedy accuracy on {unit_text}"}),
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
    coords = {"seed": np.array(seeds), "step": np.array(steps), "checkpoint_step": np.array(ckpts),
              "train_step": np.arange(1, train["steps"] + 1), unit_dim: np.arange(n_units),
              "layer": np.arange(cfg.n_layer), "head": np.arange(cfg.n_head), "query": np.arange(T),
              "key": np.arange(T), **(extra_coords or {})}
    attrs = {"experiment": experiment, "config": json.dumps(run_config, sort_keys=True),
             "model_config": json.dumps(cfg.to_dict(), sort_keys=True), "code_version": code_version(),
             "torch_version": torch.__version__, **(extra_attrs or {})}
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


def bias_hooks(bias: dict, task: Task, cfg: ModelConfig) -> tuple[dict, dict]:
    """(training hooks, evaluation hooks) of the attention-bias intervention described by `bias`."""
    layers = range(cfg.n_layer) if bias["layers"] == "all" else int_list(bias["layers"])
    heads = None if bias["heads"] == "all" else int_list(bias["heads"])
    hooks = ground_truth_bias(task.gt_pattern, bias["strength"], layers, heads)
    return hooks, (hooks if bias["at_eval"] else {})


def train_section(name: str, section: dict, task: Task, cfg: ModelConfig, task_identity: dict,
                  checkpoint_dir: Path | None, scratch_root: Path,
                  device: torch.device) -> tuple[dict[str, np.ndarray], np.ndarray, list[int], dict]:
    """Train a synthetic task's section (task, model, train, bias) with its attention-bias hooks.
    `task_identity` (the matrix A, the rule pool) joins the config in the resume key.
    Returns (arrays, diverged_step, seeds, run_config)."""
    run_config = {name: {k: section[k] for k in ("task", "model", "train", "bias")}}
    train_hooks, eval_hooks = bias_hooks(section["bias"], task, cfg)
    arrays, diverged, seeds = train_seeds(
        task, cfg, section["train"], scratch_root, name, trajectory_key={"config": run_config, **task_identity},
        checkpoint_dir=checkpoint_dir, device=device, train_hooks=train_hooks, eval_hooks=eval_hooks)
    return arrays, diverged, seeds, run_config

"""The cellular-automata experiment: rule pool -> trained seeds -> results NetCDF.

Mirrors experiments/linear_map.py on the shared runner; output units are the S cells of a
state (each averaged over the T-1 predicted states). Stages and sweeps over S (with and
without the attention bias) build on `build_task` and `run_training`.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import xarray as xr

from emergence.experiments.runner import prepare_device, train_section, training_dataset
from emergence.io import read_netcdf, write_netcdf
from emergence.model import ModelConfig, mixer_fields
from emergence.provenance import code_version
from emergence.tasks import cellular_automata as ca
from emergence.train import Task


def layout_of(task: dict) -> ca.Layout:
    return ca.Layout(task["state_size"], task["n_states"], task["n_colours"], task["radius"], task["periodic"])


def build_task(task: dict) -> xr.Dataset:
    layout = layout_of(task)
    rules = ca.sample_rules(task["n_rules"], layout, task["rule_seed"])
    rng = np.random.default_rng([task["rule_seed"], 1])
    n = task["eval_sequences"]
    rule_of = rng.integers(0, task["n_rules"], size=n)
    x0 = rng.integers(0, layout.n_colours, size=(n, layout.state_size))
    tokens = ca.make_sequences(x0, rules[rule_of], layout)
    T = layout.seq_len
    return xr.Dataset(
        {"rules": (("rule", "window_index"), rules.astype(np.int8),
                   {"long_name": "lookup tables: next colour for each window (leftmost cell most significant)"}),
         "eval_tokens": (("sequence", "position"), tokens.astype(np.int8)),
         "eval_rule": (("sequence",), rule_of),
         "ground_truth_pattern": (("query", "key"), ca.ground_truth_pattern(layout)),
         "loss_weight": (("prediction",), ca.loss_weights(layout, task["loss_positions"]))},
        coords={"rule": np.arange(task["n_rules"]), "window_index": np.arange(layout.table_size),
                "sequence": np.arange(n), "position": np.arange(T), "query": np.arange(T), "key": np.arange(T),
                "prediction": np.arange(T - 1)},
        attrs={"task_params": json.dumps(task, sort_keys=True), "chance_loss": float(np.log(layout.n_colours)),
               "code_version": code_version()})


def task_tensors(task_ds: xr.Dataset, task: dict) -> Task:
    layout = layout_of(task)
    rules = torch.tensor(task_ds["rules"].values, dtype=torch.int64)
    S, T = layout.state_size, layout.n_states
    # unit i = cell i, over states 1..T-1 (predicted one position earlier)
    positions = torch.tensor([[t * S + i - 1 for t in range(1, T)] for i in range(S)], dtype=torch.int64)
    return Task(eval_tokens=torch.tensor(task_ds["eval_tokens"].values, dtype=torch.int64),
                loss_weights=torch.tensor(task_ds["loss_weight"].values, dtype=torch.float32),
                gt_pattern=torch.tensor(task_ds["ground_truth_pattern"].values, dtype=torch.float32),
                output_positions=positions, n_output_tokens=layout.n_colours,
                sampler=lambda batch, gen: ca.sample_batch(rules, batch, layout, gen))


def model_config(model: dict, layout: ca.Layout) -> ModelConfig:
    return ModelConfig(vocab_size=layout.vocab_size, seq_len=layout.seq_len, n_layer=model["n_layer"],
                       d_model=model["d_model"], n_head=model["n_head"], d_mlp=model["d_mlp"], norm=model["norm"],
                       **mixer_fields(model))


def run_training(params: dict, task_path: Path, results_path: Path, checkpoint_dir: Path | None,
                 scratch_root: Path) -> xr.Dataset:
    """As experiments.linear_map.run_training, for a params dict with a `cellular_automata` section."""
    section = params["cellular_automata"]
    task_params, train = section["task"], section["train"]
    task_ds = read_netcdf(task_path)
    device = prepare_device(train)
    task = task_tensors(task_ds, task_params).to(device)
    cfg = model_config(section["model"], layout_of(task_params))
    arrays, diverged, seeds, run_config = train_section("cellular_automata", section, task, cfg,
                                                        {"rules": task_ds["rules"].values.tolist()}, checkpoint_dir,
                                                        scratch_root, device)
    ds = training_dataset(arrays, diverged, seeds, cfg, train, unit_dim="cell",
                          unit_text="cell i of a state (over the predicted states)", run_config=run_config,
                          experiment="cellular_automata",
                          extra_vars={"ground_truth_pattern": (("query", "key"),
                                                               task_ds["ground_truth_pattern"].values)},
                          extra_attrs={"chance_loss": task_ds.attrs["chance_loss"],
                                       "chance_accuracy": 1.0 / task_params["n_colours"],
                                       "eval_sequences": task_ds.sizes["sequence"]})
    write_netcdf(ds, results_path)
    return ds

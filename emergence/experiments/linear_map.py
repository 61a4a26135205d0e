"""The linear-map emergence experiment: task file -> trained seeds -> results NetCDF."""
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
from emergence.tasks import linear_map as lm
from emergence.train import Task


def layout_of(task_params: dict) -> lm.Layout:
    return lm.Layout(task_params["state_size"], task_params["separator"])


def build_task(task_params: dict) -> xr.Dataset:
    """The fixed matrix A, the evaluation set and the ground-truth pattern, as a Dataset."""
    layout = layout_of(task_params)
    S = layout.state_size
    A = lm.sample_sparse_matrix(S, task_params["sparsity"], task_params["task_seed"], task_params["distinct_rows"])
    # The evaluation set is drawn from its own stream, disjoint from the A draw.
    rng = np.random.default_rng([task_params["task_seed"], 1])
    x0 = rng.integers(0, 2, size=(task_params["eval_sequences"], S), dtype=np.uint8)
    tokens = lm.make_sequences(A, x0, layout)
    gt = lm.ground_truth_pattern(A, layout)
    weights = lm.loss_weights(layout, task_params["loss_positions"])
    ds = xr.Dataset(
        {
            "A": (("row", "col"), A, {"long_name": "sparse map over GF(2): x_1 = A x_0 mod 2"}),
            "eval_tokens": (("sequence", "position"), tokens.astype(np.int8)),
            "ground_truth_pattern": (("query", "key"), gt,
                                     {"long_name": "attention mask the task needs at the next-token offset"}),
            "loss_weight": (("prediction",), weights),
        },
        coords={"row": np.arange(S), "col": np.arange(S), "query": np.arange(layout.seq_len),
                "key": np.arange(layout.seq_len), "position": np.arange(layout.seq_len),
                "prediction": np.arange(layout.seq_len - 1)},
        attrs={"task_params": json.dumps(task_params, sort_keys=True),
               "chance_loss": lm.chance_loss(),
               "loss_floor": lm.loss_floor(layout, task_params["loss_positions"]),
               "code_version": code_version()},
    )
    return ds


def task_tensors(task_ds: xr.Dataset, task_params: dict) -> Task:
    layout = layout_of(task_params)
    A = torch.tensor(task_ds["A"].values, dtype=torch.float32)
    return Task(eval_tokens=torch.tensor(task_ds["eval_tokens"].values, dtype=torch.int64),
                loss_weights=torch.tensor(task_ds["loss_weight"].values, dtype=torch.float32),
                gt_pattern=torch.tensor(task_ds["ground_truth_pattern"].values, dtype=torch.float32),
                output_positions=torch.as_tensor(layout.prediction_positions, dtype=torch.int64)[:, None],
                n_output_tokens=2,
                sampler=lambda batch, gen: lm.sample_batch(A, batch, layout, gen))


def model_config(model_params: dict, layout: lm.Layout) -> ModelConfig:
    return ModelConfig(vocab_size=layout.vocab_size, seq_len=layout.seq_len, n_layer=model_params["n_layer"],
                       d_model=model_params["d_model"], n_head=model_params["n_head"],
                       d_mlp=model_params["d_mlp"], norm=model_params["norm"],
                       **mixer_fields(model_params))


def run_training(params: dict, task_path: Path, results_path: Path, checkpoint_dir: Path | None,
                 scratch_root: Path) -> xr.Dataset:
    """Train every seed (resuming from scratch), then write results (and checkpoints, unless
    checkpoint_dir is None) atomically."""
    section = params["linear_map"]
    task_params, train = section["task"], section["train"]
    task_ds = read_netcdf(task_path)
    device = prepare_device(train)
    task = task_tensors(task_ds, task_params).to(device)
    cfg = model_config(section["model"], layout_of(task_params))
    arrays, diverged, seeds, run_config = train_section("linear_map", section, task, cfg,
                                                        {"A": task_ds["A"].values.tolist()}, checkpoint_dir,
                                                        scratch_root, device)
    S = task_ds.sizes["row"]
    ds = training_dataset(
        arrays, diverged, seeds, cfg, train, unit_dim="bit", unit_text="output bit i (row i of A)",
        run_config=run_config, experiment="linear_map",
        extra_vars={"A": (("row", "col"), task_ds["A"].values),
                    "ground_truth_pattern": (("query", "key"), task_ds["ground_truth_pattern"].values)},
        extra_coords={"row": np.arange(S), "col": np.arange(S)},
        extra_attrs={"chance_loss": task_ds.attrs["chance_loss"], "loss_floor": task_ds.attrs["loss_floor"],
                     "eval_sequences": task_ds.sizes["sequence"]})
    write_netcdf(ds, results_path)
    return ds

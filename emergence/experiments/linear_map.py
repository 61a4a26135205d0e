"""The linear map as a synthetic task of the shared runner (emergence/experiments/runner.py):
the fixed matrix A and evaluation set, the trainer's tensors, the model, the results layout."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import xarray as xr

from emergence.import_closure import module_code_version
from emergence.model import ModelConfig, mixer_fields
from emergence.schema import ConfigError, number
from emergence.tasks import linear_map as lm
from emergence.train import Task

NAME = "linear_map"
UNIT_DIM = "bit"
UNIT_TEXT = "output bit i (row i of A)"


@dataclass(frozen=True, kw_only=True)
class TaskArgs:
    """The linear map's `task` section (see params.yaml for each field)."""
    state_size: int = number(1, 4096)
    sparsity: int = number(1, 4096)
    task_seed: int = number(0, 2**31 - 1)
    distinct_rows: bool = True
    separator: bool = False
    loss_positions: Literal["all", "output"] = "all"
    eval_sequences: int = number(1, 1_000_000)

    def check(self, key: str) -> None:
        if self.sparsity > self.state_size:
            raise ConfigError(f"{key}.sparsity: must be <= {key}.state_size ({self.state_size}), got {self.sparsity}")


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
    return xr.Dataset(
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
               "code_version": module_code_version(__name__)},
    )


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


def identity(task_ds: xr.Dataset) -> dict:
    return {"A": task_ds["A"].values.tolist()}


def result_layout(task_ds: xr.Dataset) -> dict:
    S = task_ds.sizes["row"]
    return {"extra_vars": {"A": (("row", "col"), task_ds["A"].values),
                           "ground_truth_pattern": (("query", "key"), task_ds["ground_truth_pattern"].values)},
            "extra_coords": {"row": np.arange(S), "col": np.arange(S)},
            "extra_attrs": {"chance_loss": task_ds.attrs["chance_loss"], "loss_floor": task_ds.attrs["loss_floor"],
                            "eval_sequences": task_ds.sizes["sequence"]}}

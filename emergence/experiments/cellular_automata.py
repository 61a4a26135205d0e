"""The cellular automata as a synthetic task of the shared runner (emergence/experiments/runner.py):
the rule pool and evaluation set, the trainer's tensors, the model, the results layout. Output
units are the S cells of a state (each averaged over the T-1 predicted states)."""
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
from emergence.tasks import cellular_automata as ca
from emergence.train import Task

NAME = "cellular_automata"
UNIT_DIM = "cell"
UNIT_TEXT = "cell i of a state (over the predicted states)"


@dataclass(frozen=True, kw_only=True)
class TaskArgs:
    """The cellular automata's `task` section (see params.yaml for each field)."""
    state_size: int = number(1, 4096)
    n_states: int = number(2, 4096)
    n_colours: int = number(2, 64)
    radius: int = number(0, 16)
    periodic: bool = True
    n_rules: int = number(1, 1_000_000)
    rule_seed: int = number(0, 2**31 - 1)
    loss_positions: Literal["all", "predictable"] = "predictable"
    eval_sequences: int = number(1, 1_000_000)

    @property
    def window(self) -> int:
        return 2 * self.radius + 1

    def check(self, key: str) -> None:
        if self.window > self.state_size:
            raise ConfigError(f"{key}.radius: the window 2r+1 must fit in state_size ({self.state_size}), "
                              f"got r = {self.radius}")
        if self.n_colours ** self.window > 10**7:
            raise ConfigError(f"{key}.radius: lookup tables of n_colours^(2r+1) entries must stay below 10^7, "
                              f"got {self.n_colours}^{self.window}")


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
               "code_version": module_code_version(__name__)})


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


def identity(task_ds: xr.Dataset) -> dict:
    return {"rules": task_ds["rules"].values.tolist()}


def result_layout(task_ds: xr.Dataset) -> dict:
    n_colours = json.loads(task_ds.attrs["task_params"])["n_colours"]
    return {"extra_vars": {"ground_truth_pattern": (("query", "key"), task_ds["ground_truth_pattern"].values)},
            "extra_attrs": {"chance_loss": task_ds.attrs["chance_loss"], "chance_accuracy": 1.0 / n_colours,
                            "eval_sequences": task_ds.sizes["sequence"]}}

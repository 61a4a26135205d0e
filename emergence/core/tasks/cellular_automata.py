"""Cellular automata with in-context rule inference.

A rule maps the colours of a window of 2r+1 neighbouring cells to the next colour of the
centre cell (a lookup table with C^(2r+1) entries). A pool of N rules is drawn once; each
sequence draws one rule from the pool and a random initial state, then lists T states of S
cells, one cell per token. The model never sees the rule: it must infer it from the
sequence's own transitions. Cell i of state t+1 is predicted at the position just before
it, and needs the window around cell i of state t: that window is the ground-truth pattern.

After the task's functions, the task as the runner's protocol asks for it
(emergence/runs/runner.py): the rule pool and evaluation set, the trainer's tensors, the
model, the results layout. Output units are the S cells of a state (each averaged over the T-1
predicted states).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import xarray as xr

from emergence.common.import_closure import module_code_version
from emergence.common.schema import ConfigError, number, to_params
from emergence.core.model import ModelArgs, ModelConfig
from emergence.core.train import Task, TrainingSection


@dataclass(frozen=True)
class Layout:
    state_size: int   # S cells per state
    n_states: int     # T states per sequence
    n_colours: int    # C
    radius: int       # r; the window is 2r + 1 cells
    periodic: bool    # wrap around at the edges; otherwise cells beyond the edge read colour 0

    @property
    def window(self) -> int:
        return 2 * self.radius + 1

    @property
    def seq_len(self) -> int:
        return self.state_size * self.n_states

    @property
    def vocab_size(self) -> int:
        return self.n_colours

    @property
    def table_size(self) -> int:
        return self.n_colours ** self.window


def elementary_rule(code: int) -> np.ndarray:
    """Wolfram's elementary rule `code` (C=2, r=1) as a lookup table indexed by 4l + 2c + r."""
    if not 0 <= code <= 255:
        raise ValueError(f"elementary rules are numbered 0..255, got {code}")
    return np.array([(code >> k) & 1 for k in range(8)], dtype=np.int64)


def sample_rules(n_rules: int, layout: Layout, seed: int) -> np.ndarray:
    """A pool of uniform random lookup tables [n_rules, C^(2r+1)]."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, layout.n_colours, size=(n_rules, layout.table_size), dtype=np.int64)


def window_index(states: np.ndarray, layout: Layout) -> np.ndarray:
    """Lookup-table index of each cell's window: states [..., S] -> [..., S].

    The leftmost neighbour is the most significant digit (base C), as in Wolfram's numbering."""
    states = np.asarray(states, dtype=np.int64)
    S, C, r = layout.state_size, layout.n_colours, layout.radius
    idx = np.zeros_like(states)
    for offset in range(-r, r + 1):
        if layout.periodic:
            neighbour = np.roll(states, -offset, axis=-1)
        else:
            neighbour = np.zeros_like(states)
            src = np.arange(S) + offset
            ok = (src >= 0) & (src < S)
            neighbour[..., ok] = states[..., src[ok]]
        idx = idx * C + neighbour
    return idx


def step(states: np.ndarray, tables: np.ndarray, layout: Layout) -> np.ndarray:
    """Next states: states [N, S] under tables [N, table_size] (one rule per row)."""
    idx = window_index(states, layout)
    return np.take_along_axis(np.asarray(tables), idx, axis=-1)


def rollout(x0: np.ndarray, tables: np.ndarray, layout: Layout) -> np.ndarray:
    """States [N, T, S] starting from x0 [N, S]."""
    states = [np.asarray(x0, dtype=np.int64)]
    for _ in range(layout.n_states - 1):
        states.append(step(states[-1], tables, layout))
    return np.stack(states, axis=1)


def make_sequences(x0: np.ndarray, tables: np.ndarray, layout: Layout) -> np.ndarray:
    """Token sequences [N, T*S]."""
    return rollout(x0, tables, layout).reshape(len(x0), layout.seq_len)


def ground_truth_pattern(layout: Layout) -> np.ndarray:
    """[T*S, T*S] 0/1: the row predicting cell i of state t+1 -> the window around i in state t."""
    S, T = layout.state_size, layout.n_states
    mask = np.zeros((layout.seq_len, layout.seq_len), dtype=np.uint8)
    for t in range(T - 1):
        for i in range(S):
            query = (t + 1) * S + i - 1
            for offset in range(-layout.radius, layout.radius + 1):
                j = i + offset
                if layout.periodic:
                    j %= S
                elif not 0 <= j < S:
                    continue
                mask[query, t * S + j] = 1
    return mask


def prediction_positions(layout: Layout) -> np.ndarray:
    """Positions whose next-token logits predict the cells of states 1..T-1."""
    return np.arange(layout.state_size, layout.seq_len) - 1


def loss_weights(layout: Layout, loss_positions: str) -> np.ndarray:
    """Weight per next-token prediction position: "all", or "predictable" (states 1..T-1 only)."""
    w = np.zeros(layout.seq_len - 1, dtype=np.float32)
    if loss_positions == "all":
        w[:] = 1.0
    elif loss_positions == "predictable":
        w[prediction_positions(layout)] = 1.0
    else:
        raise ValueError(f"loss_positions must be 'all' or 'predictable', got {loss_positions!r}")
    return w


def sample_batch(tables: torch.Tensor, batch_size: int, layout: Layout, generator: torch.Generator) -> torch.Tensor:
    """Random training sequences [batch, T*S] (int64): a rule from the pool and a random x_0 each."""
    S, C = layout.state_size, layout.n_colours
    rule = torch.randint(0, tables.shape[0], (batch_size,), generator=generator)
    x = torch.randint(0, C, (batch_size, S), generator=generator)
    table = tables[rule]                                   # [B, table_size]
    offsets = torch.arange(-layout.radius, layout.radius + 1)
    cols = torch.arange(S)[:, None] + offsets[None, :]      # [S, window]
    valid = (cols >= 0) & (cols < S)
    cols = cols % S
    states = [x]
    for _ in range(layout.n_states - 1):
        neighbours = x[:, cols]                             # [B, S, window]
        if not layout.periodic:
            neighbours = torch.where(valid, neighbours, torch.zeros_like(neighbours))
        idx = torch.zeros_like(x)
        for k in range(layout.window):
            idx = idx * C + neighbours[..., k]
        x = torch.gather(table, 1, idx)
        states.append(x)
    return torch.cat(states, dim=1)


# --- the task protocol of emergence/runs/runner.py ----------------------------------------

NAME = "cellular_automata"
UNIT_DIM = "cell"
UNIT_TEXT = "cell i of a state (over the predicted states)"


@dataclass(frozen=True, kw_only=True)
class TaskArgs:
    """The cellular automata's `task` section."""
    state_size: int = number(1, 4096)              # S: cells in one state
    n_states: int = number(2, 4096)                # states per sequence (the first is the prompt)
    n_colours: int = number(2, 64)                 # colours a cell takes
    radius: int = number(0, 16)                    # r: a cell's next colour reads the 2r+1 cells around it
    periodic: bool = True                          # the window wraps around the state's ends
    n_rules: int = number(1, 1_000_000)            # the pool a sequence's rule is drawn from (inferred in context)
    rule_seed: int = number(0, 2**31 - 1)          # draws the rule pool and the evaluation set
    loss_positions: Literal["all", "predictable"] = "predictable"  # all, or every state after the prompt
    eval_sequences: int = number(1, 1_000_000)     # fixed evaluation set, the same for every seed

    @property
    def layout(self) -> Layout:
        return Layout(self.state_size, self.n_states, self.n_colours, self.radius, self.periodic)

    def check(self, key: str) -> None:
        layout = self.layout
        if layout.window > self.state_size:
            raise ConfigError(f"{key}.radius: the window 2r+1 must fit in state_size ({self.state_size}), "
                              f"got r = {self.radius}")
        if layout.table_size > 10**7:
            raise ConfigError(f"{key}.radius: lookup tables of n_colours^(2r+1) entries must stay below 10^7, "
                              f"got {self.n_colours}^{layout.window}")


@dataclass(frozen=True, kw_only=True)
class Section(TrainingSection):
    """The cellular automata's training section: its task, model, training and bias."""
    task: TaskArgs


def layout_of(task: TaskArgs) -> Layout:
    return task.layout


def build_task(task: TaskArgs) -> xr.Dataset:
    layout = layout_of(task)
    rules = sample_rules(task.n_rules, layout, task.rule_seed)
    rng = np.random.default_rng([task.rule_seed, 1])
    n = task.eval_sequences
    rule_of = rng.integers(0, task.n_rules, size=n)
    x0 = rng.integers(0, layout.n_colours, size=(n, layout.state_size))
    tokens = make_sequences(x0, rules[rule_of], layout)
    T = layout.seq_len
    return xr.Dataset(
        {"rules": (("rule", "window_index"), rules.astype(np.int8),
                   {"long_name": "lookup tables: next colour for each window (leftmost cell most significant)"}),
         "eval_tokens": (("sequence", "position"), tokens.astype(np.int8)),
         "eval_rule": (("sequence",), rule_of),
         "ground_truth_pattern": (("query", "key"), ground_truth_pattern(layout)),
         "loss_weight": (("prediction",), loss_weights(layout, task.loss_positions))},
        coords={"rule": np.arange(task.n_rules), "window_index": np.arange(layout.table_size),
                "sequence": np.arange(n), "position": np.arange(T), "query": np.arange(T), "key": np.arange(T),
                "prediction": np.arange(T - 1)},
        attrs={"task_params": json.dumps(to_params(task), sort_keys=True), "chance_loss": float(np.log(layout.n_colours)),
               "code_version": module_code_version(__name__)})


def task_tensors(task_ds: xr.Dataset, task: TaskArgs) -> Task:
    layout = layout_of(task)
    rules = torch.tensor(task_ds["rules"].values, dtype=torch.int64)
    S, T = layout.state_size, layout.n_states
    # unit i = cell i, over states 1..T-1 (predicted one position earlier)
    positions = torch.tensor([[t * S + i - 1 for t in range(1, T)] for i in range(S)], dtype=torch.int64)
    return Task(eval_tokens=torch.tensor(task_ds["eval_tokens"].values, dtype=torch.int64),
                loss_weights=torch.tensor(task_ds["loss_weight"].values, dtype=torch.float32),
                gt_pattern=torch.tensor(task_ds["ground_truth_pattern"].values, dtype=torch.float32),
                output_positions=positions, n_output_tokens=layout.n_colours,
                sampler=lambda batch, gen: sample_batch(rules, batch, layout, gen))


def model_config(model: ModelArgs, layout: Layout) -> ModelConfig:
    return model.config(layout.vocab_size, layout.seq_len)


def identity(task_ds: xr.Dataset) -> dict:
    return {"rules": task_ds["rules"].values.tolist()}


def result_layout(task_ds: xr.Dataset) -> dict:
    n_colours = json.loads(task_ds.attrs["task_params"])["n_colours"]
    return {"extra_vars": {"ground_truth_pattern": (("query", "key"), task_ds["ground_truth_pattern"].values)},
            "extra_attrs": {"chance_loss": task_ds.attrs["chance_loss"], "chance_accuracy": 1.0 / n_colours,
                            "eval_sequences": task_ds.sizes["sequence"]}}

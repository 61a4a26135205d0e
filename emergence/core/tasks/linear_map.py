"""The sparse linear map over GF(2): x_1 = A x_0 mod 2, each row of A with s ones.

A sequence is x_0 then x_1 (optionally with a separator token between them), one bit per
token. Next-token prediction means bit i of x_1 is predicted at the position just before
it, so the ground-truth attention pattern (query row -> the input bits A says it needs)
sits at query rows `prediction_positions` over key columns 0..S-1.

After the task's functions, the task as the runner's protocol asks for it
(emergence/runs/runner.py): the fixed matrix A and evaluation set, the trainer's tensors,
the model, the results layout.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import xarray as xr

from emergence.common.import_closure import module_code_version
from emergence.common.schema import ConfigError, number, to_params
from emergence.core.model import ModelArgs, ModelConfig
from emergence.core.train import Task, TrainingSection

SEPARATOR_TOKEN = 2


@dataclass(frozen=True)
class Layout:
    state_size: int
    separator: bool

    @property
    def seq_len(self) -> int:
        return 2 * self.state_size + int(self.separator)

    @property
    def vocab_size(self) -> int:
        return 3 if self.separator else 2

    @property
    def input_positions(self) -> np.ndarray:
        return np.arange(self.state_size)

    @property
    def output_positions(self) -> np.ndarray:
        """Token positions holding the bits of x_1."""
        return np.arange(self.state_size) + self.state_size + int(self.separator)

    @property
    def prediction_positions(self) -> np.ndarray:
        """Positions whose next-token logits predict the bits of x_1 (output position - 1)."""
        return self.output_positions - 1


def sample_sparse_matrix(state_size: int, sparsity: int, seed: int, distinct_rows: bool = False) -> np.ndarray:
    """S x S matrix over GF(2) (uint8) whose rows are uniform s-subsets.

    With `distinct_rows`, rows are redrawn until no two are equal (a repeated row lets an
    output bit copy an earlier output bit instead of learning its sparse parents). If there
    are fewer distinct s-subsets than rows, repeats are unavoidable and allowed."""
    if not 1 <= sparsity <= state_size:
        raise ValueError(f"sparsity must be in [1, {state_size}], got {sparsity}")
    rng = np.random.default_rng(seed)
    feasible = math.comb(state_size, sparsity) >= state_size
    A = np.zeros((state_size, state_size), dtype=np.uint8)
    seen: set[tuple[int, ...]] = set()
    for i in range(state_size):
        while True:
            row = tuple(sorted(int(j) for j in rng.choice(state_size, size=sparsity, replace=False)))
            if not (distinct_rows and feasible and row in seen):
                break
        seen.add(row)
        A[i, list(row)] = 1
    return A


def next_state(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A x mod 2 for a batch of states x [..., S]."""
    return (np.asarray(x, dtype=np.int64) @ np.asarray(A, dtype=np.int64).T % 2).astype(np.uint8)


def make_sequences(A: np.ndarray, x0: np.ndarray, layout: Layout) -> np.ndarray:
    """Token sequences [N, seq_len] for initial states x0 [N, S]."""
    x0 = np.asarray(x0, dtype=np.uint8)
    parts = [x0]
    if layout.separator:
        parts.append(np.full((x0.shape[0], 1), SEPARATOR_TOKEN, dtype=np.uint8))
    parts.append(next_state(A, x0))
    return np.concatenate(parts, axis=1).astype(np.int64)


def ground_truth_pattern(A: np.ndarray, layout: Layout) -> np.ndarray:
    """[seq_len, seq_len] 0/1 mask: query row predicting bit i of x_1 -> its parents in x_0."""
    T = layout.seq_len
    mask = np.zeros((T, T), dtype=np.uint8)
    mask[np.ix_(layout.prediction_positions, layout.input_positions)] = A
    return mask


def loss_weights(layout: Layout, loss_positions: str) -> np.ndarray:
    """Weight per next-token prediction position (0..seq_len-2): which predictions train."""
    T = layout.seq_len
    w = np.zeros(T - 1, dtype=np.float32)
    if loss_positions == "all":
        w[:] = 1.0
        if layout.separator:  # the separator itself is not a prediction target
            w[layout.state_size - 1] = 0.0
    elif loss_positions == "output":
        w[layout.prediction_positions] = 1.0
    else:
        raise ValueError(f"loss_positions must be 'all' or 'output', got {loss_positions!r}")
    return w


def chance_loss() -> float:
    """Loss per bit of a model that has not learned A: every bit is a fair coin to it."""
    return float(np.log(2.0))


def loss_floor(layout: Layout, loss_positions: str) -> float:
    """Loss of a perfect model: only x_0's bits after the first are unpredictable.

    With loss on all positions and no separator this is (S-1)/(2S-1) * ln 2 (the blog's floors)."""
    w = loss_weights(layout, loss_positions)
    unpredictable = np.zeros_like(w)
    unpredictable[: layout.state_size - 1] = 1.0  # predicting x_0[1..S-1]
    return float((w * unpredictable).sum() / w.sum() * np.log(2.0))


def sample_batch(A: torch.Tensor, batch_size: int, layout: Layout, generator: torch.Generator) -> torch.Tensor:
    """Random training sequences [batch, seq_len] (int64) on A's device; x_0 uniform bits."""
    S = layout.state_size
    x0 = torch.randint(0, 2, (batch_size, S), generator=generator, device="cpu").to(A.device)
    x1 = (x0.to(A.dtype) @ A.T).remainder_(2).to(torch.int64)
    parts = [x0]
    if layout.separator:
        parts.append(torch.full((batch_size, 1), SEPARATOR_TOKEN, dtype=torch.int64, device=A.device))
    parts.append(x1)
    return torch.cat(parts, dim=1)


# --- the task protocol of emergence/runs/runner.py ----------------------------------------

NAME = "linear_map"
UNIT_DIM = "bit"
UNIT_TEXT = "output bit i (row i of A)"


@dataclass(frozen=True, kw_only=True)
class TaskArgs:
    """The linear map's `task` section."""
    state_size: int = number(1, 4096)              # S: bits in x_0 and x_1
    sparsity: int = number(1, 4096)                # s: ones in each row of A (parents of each output bit)
    task_seed: int = number(0, 2**31 - 1)          # draws A and the evaluation set
    distinct_rows: bool = True                     # no repeated row of A, so no output bit copies another
    separator: bool = False                        # a separator token between x_0 and x_1
    loss_positions: Literal["all", "output"] = "all"  # next-token loss on every position, or on x_1's only
    eval_sequences: int = number(1, 1_000_000)     # fixed evaluation set, the same for every seed

    def check(self, key: str) -> None:
        if self.sparsity > self.state_size:
            raise ConfigError(f"{key}.sparsity: must be <= {key}.state_size ({self.state_size}), got {self.sparsity}")


@dataclass(frozen=True, kw_only=True)
class Section(TrainingSection):
    """The linear map's training section: its task, model, training and bias."""
    task: TaskArgs


def layout_of(task: TaskArgs) -> Layout:
    return Layout(task.state_size, task.separator)


def build_task(task: TaskArgs) -> xr.Dataset:
    """The fixed matrix A, the evaluation set and the ground-truth pattern, as a Dataset."""
    layout = layout_of(task)
    S = layout.state_size
    A = sample_sparse_matrix(S, task.sparsity, task.task_seed, task.distinct_rows)
    # The evaluation set is drawn from its own stream, disjoint from the A draw.
    rng = np.random.default_rng([task.task_seed, 1])
    x0 = rng.integers(0, 2, size=(task.eval_sequences, S), dtype=np.uint8)
    tokens = make_sequences(A, x0, layout)
    gt = ground_truth_pattern(A, layout)
    weights = loss_weights(layout, task.loss_positions)
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
        attrs={"task_params": json.dumps(to_params(task), sort_keys=True),
               "chance_loss": chance_loss(),
               "loss_floor": loss_floor(layout, task.loss_positions),
               "code_version": module_code_version(__name__)},
    )


def task_tensors(task_ds: xr.Dataset, task: TaskArgs) -> Task:
    layout = layout_of(task)
    A = torch.tensor(task_ds["A"].values, dtype=torch.float32)
    return Task(eval_tokens=torch.tensor(task_ds["eval_tokens"].values, dtype=torch.int64),
                loss_weights=torch.tensor(task_ds["loss_weight"].values, dtype=torch.float32),
                gt_pattern=torch.tensor(task_ds["ground_truth_pattern"].values, dtype=torch.float32),
                output_positions=torch.as_tensor(layout.prediction_positions, dtype=torch.int64)[:, None],
                n_output_tokens=2,
                sampler=lambda batch, gen: sample_batch(A, batch, layout, gen))


def model_config(model: ModelArgs, layout: Layout) -> ModelConfig:
    return model.config(layout.vocab_size, layout.seq_len)


def identity(task_ds: xr.Dataset) -> dict:
    return {"A": task_ds["A"].values.tolist()}


def result_layout(task_ds: xr.Dataset) -> dict:
    S = task_ds.sizes["row"]
    return {"extra_vars": {"A": (("row", "col"), task_ds["A"].values),
                           "ground_truth_pattern": (("query", "key"), task_ds["ground_truth_pattern"].values)},
            "extra_coords": {"row": np.arange(S), "col": np.arange(S)},
            "extra_attrs": {"chance_loss": task_ds.attrs["chance_loss"], "loss_floor": task_ds.attrs["loss_floor"],
                            "eval_sequences": task_ds.sizes["sequence"]}}

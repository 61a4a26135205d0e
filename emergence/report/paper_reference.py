"""The paper's numbers per figure (data/paper/figures.yaml), in the units the chapters plot.

The blog's linear-map losses are means over every next-token prediction of x_0 x_1 (their
floor is (S - 1) / (2S - 1) ln 2, the S - 1 unpredictable bits of x_0); the chapters plot the
loss on x_1 alone, so `output_loss` converts: of the 2S - 1 predictions, S - 1 sit at ln 2
whatever the model does, and the other S are x_1's.
"""
from __future__ import annotations

import math
from pathlib import Path

import yaml

from emergence.pipeline.stage import pipeline_paths


def load_figures(path: Path | None = None) -> dict:
    return yaml.safe_load(Path(path or pipeline_paths()["paper_figures"]).read_text())


def output_loss(sequence_loss: float, state_size: int) -> float:
    """Loss on x_1 from the mean loss over all 2S - 1 next-token predictions of x_0 x_1."""
    S = state_size
    return ((2 * S - 1) * sequence_loss - (S - 1) * math.log(2)) / S


def bits_at_chance(output_loss_nats, state_size: int):
    """Loss on x_1 in output bits at chance: each of x_1's S bits at chance adds ln 2 / S, so a
    model that gets every bit but one right (and that one at chance) scores 1."""
    return output_loss_nats * state_size / math.log(2)


def value_range(entry) -> tuple[float, float]:
    """A figure reading as (low, high): a number is both ends; null is (nan, nan)."""
    if entry is None:
        return math.nan, math.nan
    if isinstance(entry, (list, tuple)):
        return float(entry[0]), float(entry[1])
    return float(entry), float(entry)


def sparsity_output_loss(figures: dict, state_size: int) -> dict[int, tuple[float, float]]:
    """Fig 4-left at one S, as loss on x_1: {s: (low, high)} ({} when the figure has no such S)."""
    row = figures["sparsity_final_loss"]["by_state_size"].get(state_size, {})
    return {int(s): tuple(max(0.0, output_loss(v, state_size)) for v in value_range(e)) for s, e in row.items()}


def linear_map_output_losses(readings: dict, state_size: int) -> dict:
    """A {key: sequence loss} reading of a linear-map figure as loss on x_1 (floored at 0)."""
    return {k: max(0.0, output_loss(float(v), state_size)) for k, v in readings.items()}


def heads_output_loss(figures: dict, head_size: int) -> dict[int, float]:
    """Fig 5 at one head size, as loss on x_1 at the paper's S = 16: {H: loss} ({} for other sizes)."""
    row = figures["heads_final_loss"]["by_head_size"].get(head_size, {})
    return {int(h): v for h, v in linear_map_output_losses(row, 16).items()}


def width_output_loss(figures: dict) -> dict[int, float]:
    """Fig 5 at the paper's fixed total width (128), as loss on x_1 at S = 16: {H: loss}."""
    return {int(h): v for h, v in linear_map_output_losses(figures["width_final_loss"]["by_heads"], 16).items()}


def ca_heads_loss(figures: dict, head_size: int) -> dict[int, float]:
    """Fig 5's automata panel at one head size: {H: per-cell loss} ({} for other sizes)."""
    return {int(h): float(v) for h, v in figures["ca_heads_final_loss"]["by_head_size"].get(head_size, {}).items()}


def mixer_output_loss(figures: dict, sparsity: int) -> dict[str, float]:
    """Fig 6 at one s (S = 16), as loss on x_1: {architecture: loss} ({} for an s it does not show)."""
    return linear_map_output_losses(figures["mixers_final_loss"]["by_sparsity"].get(sparsity, {}), 16)

"""What the active profile costs to train, printed by `make report` before anything runs.

    python -m emergence.cost [--profile NAME] [--no-calibrate]

Every training stage's cells (and the language-model variants), how many of them the cell
cache lacks, their seed-steps, their training FLOPs (6 x parameters x tokens for the weights,
plus 12 x layers x T^2 x d_model per sequence for the attention scores and mixing, forward and
backward), and an estimate of the device time: each cell's cost by the build-time model that
orders the builds (emergence.experiments.cells.build_seconds: FLOPs, attention scores and
token-layers, evaluations at a third of a training pass), scaled by how fast this machine, in
this process, runs the linear-map cell's training steps against that model (a few seconds of
timed steps after warm-up). An estimate to plan a run (and a cluster allocation), not a
measurement: within ~35% for attention models where the model was fitted; the recurrent mixers'
scans run 2-3x slower than it says. Asks for nothing.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import torch

from emergence.bench import measure_steps
from emergence.config import load_params, validate
from emergence.experiments import bias_intervention, cells, language_model as lm, mixer_comparison
from emergence.experiments.cells import build_seconds, cell_flops, training_flops
from emergence.experiments.architecture_sweep import sweep_files as architecture_files
from emergence.experiments.cache import entry_of
from emergence.experiments.ca_state_size_sweep import sweep_files as automata_files
from emergence.experiments.precision_check import sweep_files as precision_files
from emergence.experiments.sparsity_sweep import row_file
from emergence.stage import SCRATCH
from emergence.train import resolve_device
from stages.lm_train import variant_seconds


def planned_cells(params: dict) -> dict[str, list[tuple[dict, bool]]]:
    """Training stage -> its (cell, with_checkpoints), on the active profile."""
    grid = params["sweeps"]["sparsity"]["grid"]
    return {
        "linear_map_train": [({"profile": params["profile"], "linear_map": params["linear_map"]}, True)],
        "sweep_sparsity": [(c, False) for name, row in grid.items() for c in row_file(params, name, row).cells],
        "sweep_architecture": [(c, False) for f in architecture_files(params) for c in f.cells],
        "attention_bias": [(bias_intervention.run_config(params, s), False) for s in bias_intervention.strengths(params)],
        "sweep_ca_state_size": [(c, False) for f in automata_files(params) for c in f.cells],
        "sweep_ca_architecture": [(c, False) for f in architecture_files(params, "ca_architecture") for c in f.cells],
        "sweep_mixers": [(c, False) for _, c in mixer_comparison.cells(params)],
        "sweep_precision": [(c, f.checkpoints) for f in precision_files(params) for c in f.cells],
    }


def language_model_flops(params: dict) -> list[tuple[str, float, float, float]]:
    """(variant, FLOPs, seed-steps, modelled one-core seconds) of every language-model variant,
    pre-pretraining included."""
    section = params["language_model"]
    layout, train = lm.layout_of(section), section["train"]
    out = []
    for name, (size, kind) in lm.variants(section).items():
        steps = train["steps"] + (section["pretraining"]["steps"] if kind else 0)
        sequences = float(steps * train["batch_size"] * train["n_seeds"])
        out.append((name, training_flops(lm.model_config(section["sizes"][size], layout), layout["seq_len"], sequences),
                    float(steps * train["n_seeds"]), variant_seconds(section, size, kind)))
    return out


def calibrate(params: dict, seconds: float = 3.0) -> float:
    """How many times the build-time model's seconds this machine takes, in this process with
    every thread, for the linear-map cell's training steps (its seeds_per_group, timed after
    warm-up by `make bench`'s measurement; evaluations and set-up are in the model, not here)."""
    section = params["linear_map"]
    train = section["train"]
    group = train["seeds_per_group"]
    row = measure_steps(("calibration", "linear_map", section, group, torch.get_num_threads(), seconds,
                         str(resolve_device(train["device"]))))
    (cell, _), = planned_cells(params)["linear_map_train"]
    cfg, seq_len = cells.cell_shape(cell)[:2]
    return (1 / row["steps_per_s"]) / build_seconds(cfg, seq_len, train["batch_size"] * group)


def plan_table(params: dict, speed: float | None, scratch: Path = SCRATCH) -> tuple[pd.DataFrame, float]:
    """One row per training stage: its cells, those the cell cache lacks and no earlier stage
    builds (a cell two stages share is built once), their seed-steps, FLOPs and estimated hours:
    the build-time model's seconds times `speed` (`calibrate`; None: no estimate). Returns it
    and the total estimated seconds."""
    rows, seen = [], set()

    def row(stage: str, entries: dict, cost) -> None:
        build = [e for e in entries if e not in seen and not e.exists()]
        seen.update(entries)
        rows.append({"stage": stage, "cells": len(entries), "to build": len(build),
                     "seed-steps": sum(cost(entries[e])[1] for e in build),
                     "flops": sum(cost(entries[e])[0] for e in build),
                     "seconds": sum(cost(entries[e])[2] for e in build) * speed if speed else float("nan")})

    for stage, planned in planned_cells(params).items():
        row(stage, {entry_of(scratch, cells.task_of(c), cells.cell_key(c, ckpt)): c for c, ckpt in planned},
            lambda c: (*cell_flops(c), cells.cell_build_seconds(c)))
    variants = {entry_of(scratch, lm.NAME, lm.training_key(params, size, kind)): (name, size, kind)
                for name, (size, kind) in lm.variants(params["language_model"]).items()}
    lm_cost = {name: cost for name, *cost in language_model_flops(params)}
    row("lm_train", variants, lambda v: lm_cost[v[0]])
    table = pd.DataFrame(rows)
    total = float(table["seconds"].sum()) if speed else float("nan")
    table["estimated hours"] = (table.pop("seconds") / 3600).round(2)
    return table, total


def main(argv: list[str]) -> int:
    profile = argv[argv.index("--profile") + 1] if "--profile" in argv else None
    params = validate(load_params(profile=profile) if profile else load_params())
    table, _ = plan_table(params, None)
    if table["to build"].sum() == 0:
        print(f"Profile {params['profile']}: every cell and language model is in the cell cache; nothing to train.")
        return 0
    speed = None if "--no-calibrate" in argv else calibrate(params)
    table, seconds = plan_table(params, speed)
    print(f"Profile {params['profile']}: training plan"
          + (f" (calibrated here: the linear-map cell's steps take {speed:.2f} x the build-time model's one-core "
             "seconds)" if speed else ""))
    print(table.to_string(index=False, formatters={"seed-steps": "{:,.0f}".format, "flops": "{:.3g}".format}))
    if speed:
        print(f"Estimated training time of what the cache lacks: {seconds / 3600:.2f} device-hours on this device, "
              "in one process (an estimate from a cost model calibrated here, not a measurement; workers or a "
              "cluster divide it)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

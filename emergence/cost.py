"""What the active profile costs to train, printed by `make report` before anything runs.

    python -m emergence.cost [--profile NAME] [--no-calibrate]

Every training stage's cells (and the language-model variants), how many of them the cell
cache lacks, their seed-steps, and an estimate of the device time: the training FLOPs of each
cell (6 x parameters x tokens for the weights, plus 12 x layers x T^2 x d_model per sequence for
the attention scores and mixing, forward and backward) over the FLOP rate a short calibration
run of the linear-map cell achieves on this machine, in this process. An estimate to plan a run
(and a cluster allocation), not a measurement: the achieved rate differs between model shapes.
Asks for nothing.
"""
from __future__ import annotations

import contextlib
import copy
import io
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from emergence.config import load_params, validate
from emergence.experiments import bias_intervention, cells, language_model as lm, mixer_comparison
from emergence.experiments.cells import cell_flops, training_flops
from emergence.experiments.architecture_sweep import sweep_files as architecture_files
from emergence.experiments.cache import entry_of
from emergence.experiments.ca_state_size_sweep import sweep_files as automata_files
from emergence.experiments.precision_check import sweep_files as precision_files
from emergence.experiments.sparsity_sweep import row_file
from emergence.stage import SCRATCH


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


def language_model_flops(params: dict) -> list[tuple[str, float, float]]:
    """(variant, FLOPs, seed-steps) of every language-model variant, pre-pretraining included."""
    section = params["language_model"]
    layout, train = lm.layout_of(section), section["train"]
    out = []
    for name, (size, kind) in lm.variants(section).items():
        steps = train["steps"] + (section["pretraining"]["steps"] if kind else 0)
        cfg = lm.model_config(section["sizes"][size], layout)
        out.append((name, training_flops(cfg, layout["seq_len"], steps * train["batch_size"]) * train["n_seeds"],
                    float(steps * train["n_seeds"])))
    return out


def calibrate(params: dict, steps: int = 10) -> float:
    """FLOP/s this process achieves training the profile's linear-map cell for a few steps (one
    seed, set-up and evaluations included, so the rate errs low)."""
    cell = copy.deepcopy({"profile": params["profile"], "linear_map": params["linear_map"]})
    train = cell["linear_map"]["train"]
    train.update(n_seeds=1, steps=steps, eval_every=steps, checkpoint_every=steps, resume_every=steps,
                 seeds_per_group=1)
    flops, _ = cell_flops(cell)
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):  # its step bar
        start = time.perf_counter()
        cells._build_cell(cell, Path(tmp) / "scratch", False, None, Path(tmp) / "cell")
        return flops / (time.perf_counter() - start)


def plan_table(params: dict, flop_rate: float | None, scratch: Path = SCRATCH) -> tuple[pd.DataFrame, float]:
    """One row per training stage: its cells, those the cell cache lacks and no earlier stage
    builds (a cell two stages share is built once), their seed-steps, FLOPs and estimated hours
    at `flop_rate` (None: no estimate). Returns it and the total estimated seconds."""
    rows, seen = [], set()

    def row(stage: str, entries: dict, cost) -> None:
        build = [e for e in entries if e not in seen and not e.exists()]
        seen.update(entries)
        rows.append({"stage": stage, "cells": len(entries), "to build": len(build),
                     "seed-steps": sum(cost(entries[e])[1] for e in build),
                     "flops": sum(cost(entries[e])[0] for e in build)})

    for stage, planned in planned_cells(params).items():
        row(stage, {entry_of(scratch, cells.task_of(c), cells.cell_key(c, ckpt)): c for c, ckpt in planned}, cell_flops)
    variants = {entry_of(scratch, lm.NAME, lm.training_key(params, size, kind)): (name, size, kind)
                for name, (size, kind) in lm.variants(params["language_model"]).items()}
    lm_cost = {name: (flops, steps) for name, flops, steps in language_model_flops(params)}
    row("lm_train", variants, lambda v: lm_cost[v[0]])
    table = pd.DataFrame(rows)
    total = float(table["flops"].sum() / flop_rate) if flop_rate else float("nan")
    table["estimated hours"] = [round(f / flop_rate / 3600, 2) if flop_rate else float("nan") for f in table["flops"]]
    return table, total


def main(argv: list[str]) -> int:
    profile = argv[argv.index("--profile") + 1] if "--profile" in argv else None
    params = validate(load_params(profile=profile) if profile else load_params())
    table, _ = plan_table(params, None)
    if table["to build"].sum() == 0:
        print(f"Profile {params['profile']}: every cell and language model is in the cell cache; nothing to train.")
        return 0
    rate = None if "--no-calibrate" in argv else calibrate(params)
    table, seconds = plan_table(params, rate)
    print(f"Profile {params['profile']}: training plan"
          + (f" (calibrated here: {rate / 1e9:.2f} GFLOP/s on the linear-map cell)" if rate else ""))
    print(table.to_string(index=False, formatters={"seed-steps": "{:,.0f}".format, "flops": "{:.3g}".format}))
    if rate:
        print(f"Estimated training time of what the cache lacks: {seconds / 3600:.2f} device-hours on this device, "
              "in one process (an estimate from FLOPs, not a measurement; workers or a cluster divide it)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

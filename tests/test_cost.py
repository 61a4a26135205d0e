"""The training plan `make report` prints: every training stage, shared cells counted once,
cached ones not at all, FLOPs that scale as the model and the data say."""
import math

import pytest

from emergence.config import load_params
from emergence.cost import calibrate, cell_flops, language_model_flops, plan_table, planned_cells, training_flops
from emergence.experiments import cells
from emergence.experiments.cache import entry_of
from emergence.model import ModelConfig, parameter_count


def test_flops_grow_with_tokens_and_the_attention_with_the_square_of_the_length():
    cfg = ModelConfig(vocab_size=2, seq_len=64, n_layer=1, d_model=64, n_head=8, d_mlp=256, norm="pre")
    assert training_flops(cfg, 64, 10) == pytest.approx(10 * training_flops(cfg, 64, 1))
    weights = 6 * parameter_count(cfg) * 64
    assert training_flops(cfg, 64, 1) - weights == pytest.approx(12 * 1 * 64 ** 2 * 64)


def test_every_training_stage_is_planned_and_a_cell_counts_once(tmp_path):
    params = load_params(profile="smoke")
    planned = planned_cells(params)
    assert {"linear_map_train", "sweep_sparsity", "sweep_mixers", "sweep_precision"} <= set(planned)
    table, seconds = plan_table(params, speed=2.0, scratch=tmp_path)   # empty cache: everything to build
    rows = table.set_index("stage")
    assert rows.loc["linear_map_train", "to build"] == 1
    # the precision check's float32 linear-map cell is linear_map_train's: built once, by the first stage
    assert rows.loc["sweep_precision", "to build"] == rows.loc["sweep_precision", "cells"] - 1
    assert rows.loc["lm_train", "to build"] == rows.loc["lm_train", "cells"] > 0
    # the build-time model's seconds, at twice its speed, for every cell to build (shared ones once)
    lm_seconds = sum(cost[-1] for cost in language_model_flops(params))
    builds = {entry_of(tmp_path, cells.task_of(c), cells.cell_key(c, ckpt)): c
              for stage_cells in planned.values() for c, ckpt in stage_cells}
    assert len(builds) == table["to build"].sum() - rows.loc["lm_train", "to build"]
    assert seconds == pytest.approx(2.0 * (sum(cells.cell_build_seconds(c) for c in builds.values()) + lm_seconds)) and seconds > 0
    assert table["estimated hours"].sum() == pytest.approx(seconds / 3600, abs=0.01 * len(table))
    flops, seed_steps = cell_flops(planned["linear_map_train"][0][0])
    assert flops > 0 and seed_steps == params["linear_map"]["train"]["n_seeds"] * params["linear_map"]["train"]["steps"]
    assert math.isnan(plan_table(params, None, scratch=tmp_path)[1])


def test_builds_start_with_the_widest_automata_cell_as_measured():
    """Workers take cells longest first by their cost; on the default automata architecture
    sweep the one-layer model of width 128 took 646 s, the two-layer one of width 64 494 s and
    the one-head one 110 s (2 cores, 12 seeds, one-thread workers): the cost must order them so,
    and come within a third of each."""
    cost = {}
    for c, _ in planned_cells(load_params(profile="default"))["sweep_ca_architecture"]:
        model = c["cellular_automata"]["model"]
        cost[model["n_head"], model["n_layer"]] = cells.cell_build_seconds(c)
    assert cost[(8, 1)] > cost[(4, 2)] > cost[(1, 2)]
    for shape, seconds in {(8, 1): 646, (4, 2): 494, (1, 2): 110}.items():
        assert cost[shape] == pytest.approx(seconds, rel=0.35), shape


def test_the_plan_is_calibrated_on_this_machine(tmp_path):
    """The calibration times the linear-map cell's real training steps and scales the build-time
    model by it: a positive finite factor, and the printed plan's hours are the model's seconds
    times it."""
    params = load_params(profile="smoke")
    speed = calibrate(params, seconds=0.3)
    assert math.isfinite(speed) and speed > 0
    table, seconds = plan_table(params, speed, scratch=tmp_path)
    assert seconds == pytest.approx(speed * plan_table(params, 1.0, scratch=tmp_path)[1])

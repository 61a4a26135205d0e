"""Every chapter's summary as flat metrics, by hand on a two-cell summary."""
import math

import numpy as np
import pytest
import xarray as xr

from emergence.analysis.summary_metrics import language_model_metrics, sparsity_metrics, summary_metrics
from emergence.claims.scorecard import json_safe


def _summary():
    return xr.Dataset(
        {"plateau_end_step": (("cell", "seed"), [[100.0, 200.0, 300.0], [1000.0, 1000.0, 1000.0]]),
         "plateau_end_censored": (("cell", "seed"), [[0, 0, 0], [1, 1, 1]]),
         "solved_step": (("cell", "seed"), [[400.0, 500.0, 1000.0], [1000.0, 1000.0, 1000.0]]),
         "solved_censored": (("cell", "seed"), [[0, 0, 1], [1, 1, 1]]),
         "final_output_loss": (("cell", "seed"), [[0.0, 0.1, 0.5], [0.69, 0.69, np.nan]]),
         "state_size": (("cell",), [8, 32]), "sparsity": (("cell",), [1, 16])})


def test_cell_metrics_by_hand():
    m = sparsity_metrics(_summary())
    assert m["S08_s01.km_median_plateau_end"] == pytest.approx(200.0)
    assert m["S08_s01.km_median_solved"] == pytest.approx(500.0)
    assert m["S08_s01.fraction_solved"] == pytest.approx(2 / 3)
    assert m["S08_s01.final_loss_mean"] == pytest.approx(0.2)
    assert math.isinf(m["S32_s16.km_median_plateau_end"])          # never left: not reached
    assert m["S32_s16.fraction_solved"] == 0.0                     # the run without a result is left out
    assert json_safe(m)["S32_s16.km_median_plateau_end"] == "inf"


def test_language_model_metrics_count_the_censored_seeds():
    probes = xr.Dataset({"bracket_censored": (("size", "capability", "seed"), [[[0, 1, 1]]]),
                         "bracket_new_step": (("size", "capability", "seed"), [[[200, -1, -1]]])},
                        coords={"size": ["small"], "capability": ["spans"], "seed": [0, 1, 2],
                                "checkpoint_step": [0, 500, 1000]})
    m = language_model_metrics(probes)
    assert m["small_spans.fraction_solved"] == pytest.approx(1 / 3) and math.isinf(m["small_spans.km_median_solved"])


def test_the_whole_reports_metrics_are_keyed_by_experiment_and_sorted():
    m = summary_metrics({"sparsity": sparsity_metrics(_summary()), "language_models": {"small_spans.fraction_solved": 0.5}})
    assert list(m) == sorted(m) and m["language_models.small_spans.fraction_solved"] == 0.5
    assert m["sparsity.S08_s01.km_median_solved"] == pytest.approx(500.0)


def test_json_safe_is_byte_stable():
    assert json_safe({"a": np.float32(0.1), "b": [np.nan, -np.inf, np.int64(3)]}) == {"a": 0.1, "b": [None, "-inf", 3]}


def test_plot_tables_hold_the_key_curves():
    from emergence.analysis.summary_metrics import plot_tables
    sp = _summary().assign(density=("cell", [0.125, 0.5]))
    ca = _summary().assign(strength=("cell", [0.0, 0.0]), budget_step=(("cell",), [1000.0, 1000.0]))
    probes = xr.Dataset({"bracket_censored": (("size", "capability", "seed"), [[[0, 1]], [[0, 0]]])},
                        coords={"size": ["small", "large"], "capability": ["spans"], "seed": [0, 1]})
    tables = plot_tables(sp, ca, probes)
    assert list(tables["sparsity_hump"]["median_final_loss"]) == pytest.approx([0.1, 0.69])
    assert list(tables["automata_plateau"]["km_median_plateau_end"]) == pytest.approx([200.0, 1000.0])  # at the budget
    assert list(tables["lm_solved"]["fraction_solved"]) == [0.5, 1.0]

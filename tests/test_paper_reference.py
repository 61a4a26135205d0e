"""The paper's figure readings: every entry cites its figure, and the losses convert to ours."""
import math

import pytest

from emergence.paper_reference import load_figures, output_loss, sparsity_output_loss, value_range


def test_every_reading_names_its_figure_and_budget():
    figures = load_figures()
    assert {"sparsity_final_loss", "ca_plateau", "heads_final_loss", "mixers_final_loss"} <= set(figures)
    for name, entry in figures.items():
        assert entry["figure"].startswith("Fig ") and entry["steps"] == 10000, name


@pytest.mark.parametrize("S", [8, 16, 32])
def test_output_loss_maps_the_floor_to_zero_and_chance_to_chance(S):
    floor = (S - 1) / (2 * S - 1) * math.log(2)
    assert output_loss(floor, S) == pytest.approx(0.0, abs=1e-12)
    assert output_loss(math.log(2), S) == pytest.approx(math.log(2))


def test_sparsity_readings_in_our_units():
    ref = sparsity_output_loss(load_figures(), 16)
    assert ref[1] == pytest.approx((0.0, 0.0), abs=2e-3)     # solved: at the floor
    assert ref[8][0] == pytest.approx(output_loss(0.67, 16))  # the hump's peak, near chance on x_1
    assert ref[5][0] < ref[5][1]                              # a range read off the figure stays a range
    assert sparsity_output_loss(load_figures(), 64) == {}
    assert all(math.isnan(v) for v in value_range(None))

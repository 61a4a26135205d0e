"""The paper's figure readings: every entry cites its figure, and the losses convert to ours."""
import math

import pytest

from emergence.paper_reference import (ca_heads_loss, heads_output_loss, load_figures, mixer_output_loss,
                                       output_loss, sparsity_output_loss, value_range, width_output_loss)

FIGURES = {"sparsity_final_loss", "ca_plateau", "heads_final_loss", "width_final_loss", "ca_heads_final_loss",
           "per_bit_jumps", "mixers_final_loss", "mixers_emergence", "pythia_emergence", "pythia_patching"}


def test_every_reading_names_its_figure_and_budget():
    figures = load_figures()
    assert FIGURES <= set(figures)
    for name, entry in figures.items():
        assert entry["figure"].startswith(("Fig ", "Blog")), name
        assert entry["steps"] == (143000 if name.startswith("pythia") else 10000), name


def test_head_and_mixer_readings_in_our_units():
    figures = load_figures()
    heads = heads_output_loss(figures, 8)
    assert sorted(heads) == [1, 2, 4, 8, 16]
    assert heads[16] == pytest.approx(0.0, abs=2e-3)                 # H >= 16: at the floor
    assert heads[1] == pytest.approx(output_loss(0.692, 16))          # H = 1: near chance on x_1
    assert list(heads.values()) == sorted(heads.values(), reverse=True)  # more heads, lower loss
    assert heads_output_loss(figures, 32) == {}
    width = width_output_loss(figures)
    assert width[1] > width[8] > width[128] == pytest.approx(0.0, abs=1e-12)
    assert ca_heads_loss(figures, 16) == {1: 0.98, 8: 0.28, 128: 0.12}
    mixers = mixer_output_loss(figures, 5)
    assert mixers["mlp_mixer"] < mixers["transformer"]               # Fig 6: only the Mixer gets far at s = 5
    assert mixer_output_loss(figures, 2) == {}


def test_pythia_readings_match_the_notes():
    py = load_figures()["pythia_emergence"]
    assert [py["solved"][s] for s in ("14M", "31M", "70M", "160M", "410M")] == [6, 8, 5, 9, 10]
    assert all(0 <= v <= py["seeds"] for v in py["solved"].values())
    assert py["solved"].keys() == py["mean_step"].keys()


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

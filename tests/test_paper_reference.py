"""The paper's figure readings: every entry cites its figure, and the losses convert to ours."""
import math

import pytest

from emergence.report.paper_reference import (bits_at_chance, ca_heads_loss, heads_output_loss, load_figures,
                                              mixer_output_loss, output_loss, sparsity_output_loss, value_range,
                                              width_output_loss)

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


def test_the_dense_end_of_the_papers_sparsity_figure_leaves_one_output_bit_at_chance():
    """At s >= S - 1 the rows of A after the first follow from it by a few XORs; the first, a
    parity of (nearly) all S inputs, is what stays unlearned: Fig 4-left sits one output bit
    above the floor at S = 16 and 32 (0.357 against 0.335 at S = 16), on it at S = 8."""
    assert bits_at_chance(math.log(2) / 16, 16) == pytest.approx(1.0)
    assert bits_at_chance(math.log(2), 8) == pytest.approx(8.0)   # every bit at chance
    figures = load_figures()
    for S in (16, 32):
        for s in (S - 1, S):
            lo, hi = sparsity_output_loss(figures, S)[s]
            assert bits_at_chance((lo + hi) / 2, S) == pytest.approx(1.0, abs=0.2), (S, s)
    assert bits_at_chance(sum(sparsity_output_loss(figures, 8)[8]) / 2, 8) == pytest.approx(0.0, abs=0.05)

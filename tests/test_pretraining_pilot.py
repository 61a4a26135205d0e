"""The claim-9 pre-pretraining pilot's reading of a loss curve, on hand-built curves."""
import numpy as np
import pytest

from emergence.experiments.pretraining_pilot import learned_step, unigram_entropy


def test_unigram_entropy_ignores_the_first_position_and_matches_the_formula():
    tokens = np.array([[9, 0, 1, 0, 1], [9, 2, 2, 2, 2]])  # predicted: 0 1 0 1 2 2 2 2
    p = np.array([2, 2, 4]) / 8
    assert unigram_entropy(tokens) == pytest.approx(-(p * np.log(p)).sum())
    assert unigram_entropy(np.array([[5, 3, 3, 3]])) == 0.0


def test_learned_step_reads_the_drop_below_the_reference_per_seed():
    steps = np.array([0, 50, 100, 150, 200])
    loss = np.array([[4.6, 2.0, 1.2, 1.05, 1.0],     # 90% of 2.0 -> 1.0 is 1.1: reached at 150
                     [4.6, 2.1, 2.0, 1.9, 1.0],      # reached only at the end
                     [4.6, 2.1, 2.05, 2.1, 2.06]])   # never below the reference: nothing learned
    out = learned_step(steps, loss, 0.9, reference=2.0)
    np.testing.assert_array_equal(out[:2], [150.0, 200.0])
    assert np.isnan(out[2])
    # the first steps' fall to the reference (learning which symbols occur) never counts
    assert learned_step(steps, loss[:1], 0.5, reference=2.0)[0] == 100.0

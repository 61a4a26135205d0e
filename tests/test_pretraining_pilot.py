"""The claim-9 pre-pretraining pilot's reading of a loss curve, on hand-built curves."""
import numpy as np
import pytest

from emergence.tools.pretraining_pilot import learned_step, unigram_entropy


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


def test_the_pilot_trains_each_task_as_the_twins_are_pre_pretrained(tmp_path):
    from emergence.pipeline.config import load_params
    from emergence.tools.pretraining_pilot import pilot_row, pretraining_curve

    params = load_params(profile="smoke")
    steps, loss, unigram = pretraining_curve(params, "dyck", steps=6, eval_every=2, scratch=tmp_path)
    n_seeds = params["language_model"]["train"]["n_seeds"]
    assert list(steps) == [0, 1, 2, 4, 6] and loss.shape == (n_seeds, 5)
    assert 0 < unigram < np.log(params["language_model"]["corpus"]["synthetic_tokens"]) + 1e-9
    row = pilot_row("dyck", steps, loss, unigram, 0.9, budget=4)
    assert row["task"] == "dyck" and set(row["loss_at"]) == {0, 4, 6}
    assert len(row["learned_0.9"]) == n_seeds

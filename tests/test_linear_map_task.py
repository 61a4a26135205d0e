import numpy as np
import pytest
import torch

from emergence.core.tasks import linear_map as lm


def test_next_state_hand_example():
    A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], dtype=np.uint8)
    x0 = np.array([[1, 0, 1], [1, 1, 1]], dtype=np.uint8)
    # row 0: x0+x1, row 1: x1+x2, row 2: x0+x2 (mod 2)
    assert next_state(A, x0).tolist() == [[1, 1, 0], [0, 0, 0]]


def next_state(A, x):
    return lm.next_state(A, x)


def test_sequences_layout_without_separator():
    A = np.array([[0, 1], [1, 1]], dtype=np.uint8)
    layout = lm.Layout(2, separator=False)
    tokens = lm.make_sequences(A, np.array([[1, 1]]), layout)
    assert tokens.tolist() == [[1, 1, 1, 0]]  # x_1 = (x1, x0 + x1) = (1, 0)
    assert layout.seq_len == 4 and layout.vocab_size == 2
    assert layout.prediction_positions.tolist() == [1, 2]


def test_sequences_layout_with_separator():
    A = np.eye(2, dtype=np.uint8)
    layout = lm.Layout(2, separator=True)
    tokens = lm.make_sequences(A, np.array([[0, 1]]), layout)
    assert tokens.tolist() == [[0, 1, lm.SEPARATOR_TOKEN, 0, 1]]
    assert layout.prediction_positions.tolist() == [2, 3]


def test_ground_truth_pattern_sits_at_next_token_offset():
    A = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]], dtype=np.uint8)
    gt = lm.ground_truth_pattern(A, lm.Layout(3, separator=False))
    expected = np.zeros((6, 6), dtype=np.uint8)
    expected[2, [0, 2]] = 1  # bit 0 of x_1 (position 3) is predicted at position 2
    expected[3, [1]] = 1
    expected[4, [0, 1]] = 1
    assert (gt == expected).all()
    # causal: every ground-truth key precedes or equals its query
    q, k = np.nonzero(gt)
    assert (k <= q).all()


def test_sparse_matrix_rows_have_s_ones_and_depend_on_seed():
    A = lm.sample_sparse_matrix(16, 3, seed=4)
    assert A.shape == (16, 16) and (A.sum(1) == 3).all()
    assert (A == lm.sample_sparse_matrix(16, 3, seed=4)).all()
    assert (A != lm.sample_sparse_matrix(16, 3, seed=5)).any()
    with pytest.raises(ValueError):
        lm.sample_sparse_matrix(4, 5, seed=0)


def test_loss_floor_matches_blog_formula():
    for S in (8, 16, 32):
        floor = lm.loss_floor(lm.Layout(S, False), "all")
        assert floor == pytest.approx((S - 1) / (2 * S - 1) * np.log(2))
    assert lm.loss_floor(lm.Layout(16, False), "output") == 0.0


def test_loss_weights():
    layout = lm.Layout(3, separator=True)
    assert lm.loss_weights(layout, "output").tolist() == [0, 0, 0, 1, 1, 1]
    assert lm.loss_weights(layout, "all").tolist() == [1, 1, 0, 1, 1, 1]  # separator not a target


def test_sample_batch_obeys_the_map():
    A = lm.sample_sparse_matrix(8, 3, seed=1)
    layout = lm.Layout(8, False)
    tokens = lm.sample_batch(torch.tensor(A, dtype=torch.float32), 64, layout, torch.Generator().manual_seed(0))
    x0, x1 = tokens[:, :8].numpy(), tokens[:, 8:].numpy()
    assert (lm.next_state(A, x0) == x1).all()
    assert set(np.unique(x0)) == {0, 1}


def test_distinct_rows_removes_repeated_rows():
    # S=16, s=2 (120 subsets) repeats rows for this seed unless asked not to
    plain = lm.sample_sparse_matrix(16, 2, seed=0)
    assert len({r.tobytes() for r in plain}) < 16
    distinct = lm.sample_sparse_matrix(16, 2, seed=0, distinct_rows=True)
    assert len({r.tobytes() for r in distinct}) == 16 and (distinct.sum(1) == 2).all()
    # infeasible (C(3,3) = 1 < 3 rows): repeats allowed rather than looping forever
    assert (lm.sample_sparse_matrix(3, 3, seed=0, distinct_rows=True) == 1).all()

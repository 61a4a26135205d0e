import numpy as np
import pytest

from emergence.core.tasks.neural_ca import evolve, neural_rule, sample_neural_ca


def test_a_rule_is_a_table_over_every_neighbourhood():
    rule = neural_rule(np.random.default_rng(0), n_states=3, hidden=8)
    assert rule.shape == (3, 3, 3) and rule.min() >= 0 and rule.max() < 3
    assert np.array_equal(rule, neural_rule(np.random.default_rng(0), n_states=3, hidden=8))
    rules = {neural_rule(np.random.default_rng(s), 3, 8).tobytes() for s in range(20)}
    assert len(rules) > 10  # a fresh rule per draw


def test_evolution_applies_the_rule_with_a_periodic_boundary():
    # rule 90 on two states: next = left xor right
    rule = np.fromfunction(lambda l, c, r: (l + r) % 2, (2, 2, 2), dtype=int)
    rows = evolve(rule, np.array([0, 0, 1, 0, 0]), 2)
    assert rows.tolist() == [[0, 0, 1, 0, 0], [0, 1, 0, 1, 0], [1, 0, 0, 0, 1]]


def test_a_sequence_is_the_rows_flattened_and_cut():
    seq = sample_neural_ca(np.random.default_rng(1), n_states=4, width=5, length=23, hidden=16)
    assert len(seq) == 23 and set(seq) <= set(range(4))
    with pytest.raises(ValueError, match="width"):
        sample_neural_ca(np.random.default_rng(1), n_states=4, width=2, length=8, hidden=4)

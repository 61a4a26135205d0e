"""How many rules of the automata's pool stay consistent with a sequence, against hand-built pools."""
import numpy as np

from emergence.analysis.rule_inference import consistent_rules, mean_consistent_rules
from emergence.core.tasks.cellular_automata import Layout, elementary_rule, make_sequences

ELEMENTARY = Layout(state_size=5, n_states=4, n_colours=2, radius=1, periodic=True)


def test_rules_that_differ_only_on_an_unseen_window_stay_consistent_until_it_appears():
    # rule 204 (identity) and rule 205 differ only on window 000 (index 0): from a state with no
    # three zeros in a row both explain every transition; from 00000 one transition tells them apart
    rules = np.stack([elementary_rule(204), elementary_rule(205)])
    assert (rules[0] != rules[1]).sum() == 1 and rules[0][0] != rules[1][0]
    ones = make_sequences(np.array([[1, 1, 0, 1, 1]]), rules[[0]], ELEMENTARY)
    zeros = make_sequences(np.array([[0, 0, 0, 0, 0]]), rules[[0]], ELEMENTARY)
    np.testing.assert_array_equal(consistent_rules(rules, ones, ELEMENTARY), [[2, 2, 2]])
    np.testing.assert_array_equal(consistent_rules(rules, zeros, ELEMENTARY), [[1, 1, 1]])


def test_a_rule_once_contradicted_stays_out():
    # the sequence follows rule 204 for one step, then jumps: nothing explains the second transition
    rules = np.stack([elementary_rule(204), elementary_rule(51)])  # 51: every cell flips
    tokens = np.array([[1, 0, 1, 1, 0] + [1, 0, 1, 1, 0] + [1, 1, 1, 1, 1] + [0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(consistent_rules(rules, tokens, ELEMENTARY), [[1, 0, 0]])


def test_the_true_rule_is_always_consistent_and_more_rules_need_more_transitions():
    layout = Layout(state_size=8, n_states=16, n_colours=4, radius=1, periodic=True)
    few, many = (mean_consistent_rules(n, layout, rule_seed=0, n_sequences=128) for n in (4, 256))
    assert (few >= 1).all() and (many >= 1).all()
    assert np.all(np.diff(many) <= 0)                   # evidence only removes rules
    assert few[0] < 1.01 and many[0] > few[0]           # 4 rules: one transition singles the rule out

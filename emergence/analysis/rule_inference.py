"""How much rule inference an automata setting asks for (claim 8, the Mixer on the automata).

The paper's automata draw each sequence's rule from a pool of N; the model must infer it from the
sequence's own transitions ("posterior rule inference"). How many of the pool's rules are still
consistent with the transitions seen so far says whether that inference is needed at all: when one
transition already leaves a single rule, a content-free average over the prefix (what a static
mixing matrix does natively) has nothing left to infer, and a comparison of the Mixer with the
transformer there cannot test the claim.
"""
from __future__ import annotations

import numpy as np

from emergence.core.tasks.cellular_automata import Layout, make_sequences, sample_rules, window_index


def consistent_rules(rules: np.ndarray, tokens: np.ndarray, layout: Layout) -> np.ndarray:
    """Rules of the pool [N, C^(2r+1)] that reproduce every transition of a sequence [B, T*S] up to
    and including each one: [B, T-1] counts (column k: after the first k+1 transitions)."""
    states = np.asarray(tokens, dtype=np.int64).reshape(len(tokens), layout.n_states, layout.state_size)
    index = window_index(states[:, :-1], layout)                   # [B, T-1, S]
    agree = (np.asarray(rules)[:, index] == states[None, :, 1:]).all(-1)  # [N, B, T-1]
    return np.logical_and.accumulate(agree, axis=-1).sum(0)


def mean_consistent_rules(n_rules: int, layout: Layout, rule_seed: int, n_sequences: int = 512) -> np.ndarray:
    """The mean over sequences (each its rule drawn from the pool, a random first state) of
    `consistent_rules`: [T-1]."""
    rules = sample_rules(n_rules, layout, rule_seed)
    rng = np.random.default_rng([rule_seed, 2])
    rule_of = rng.integers(0, n_rules, size=n_sequences)
    x0 = rng.integers(0, layout.n_colours, size=(n_sequences, layout.state_size))
    return consistent_rules(rules, make_sequences(x0, rules[rule_of], layout), layout).mean(0)

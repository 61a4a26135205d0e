"""Neural cellular automata for pre-pretraining (claim 9: "pre-pretraining on Dyck or neural
cellular automata"): one row of `width` cells with `n_states` states evolves by a rule drawn
per sequence from a randomly initialised network, so that a model trained on the sequences
must infer each sequence's rule from its context.

The rule maps a cell's neighbourhood (itself and its two neighbours, periodic boundary) to its
next state: the one-hot neighbourhood goes through a tanh layer of `hidden` units with random
Gaussian weights and the next state is the argmax of a random linear read-out. Unlike a
uniformly drawn lookup table (emergence/core/tasks/cellular_automata.py) the rule is smooth in the
neighbourhood's encoding, as in neural-CA pre-pretraining. The sequence is the rows one after
another, flattened, cut to `length` tokens. [open] the paper does not describe its automata.
"""
from __future__ import annotations

import numpy as np


def neural_rule(rng: np.random.Generator, n_states: int, hidden: int) -> np.ndarray:
    """The rule's lookup table: [n_states, n_states, n_states] -> next state (left, centre, right)."""
    if n_states < 2 or hidden < 1:
        raise ValueError(f"need n_states >= 2 and hidden >= 1, got n_states={n_states}, hidden={hidden}")
    w1 = rng.normal(0.0, 1.0, (3 * n_states, hidden)) / np.sqrt(3)
    b1 = rng.normal(0.0, 1.0, hidden)
    w2 = rng.normal(0.0, 1.0, (hidden, n_states)) / np.sqrt(hidden)
    grid = np.stack(np.meshgrid(*[np.arange(n_states)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    onehot = np.zeros((grid.shape[0], 3 * n_states))
    onehot[np.arange(grid.shape[0])[:, None], grid + n_states * np.arange(3)] = 1.0
    return np.argmax(np.tanh(onehot @ w1 + b1) @ w2, axis=1).reshape(n_states, n_states, n_states)


def evolve(rule: np.ndarray, row: np.ndarray, steps: int) -> np.ndarray:
    """[steps + 1, width]: `row` and the rows the rule makes of it (periodic boundary)."""
    rows = [np.asarray(row)]
    for _ in range(steps):
        r = rows[-1]
        rows.append(rule[np.roll(r, 1), r, np.roll(r, -1)])
    return np.stack(rows)


def sample_neural_ca(rng: np.random.Generator, n_states: int, width: int, length: int, hidden: int) -> list[int]:
    """One sequence of `length` tokens (states 0 .. n_states - 1): a fresh rule and a random first row."""
    if width < 3:
        raise ValueError(f"need width >= 3 (a cell and two neighbours), got {width}")
    rule = neural_rule(rng, n_states, hidden)
    rows = evolve(rule, rng.integers(0, n_states, width), -(-length // width))
    return rows.reshape(-1)[:length].tolist()

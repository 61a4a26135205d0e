"""Dyck-k sequences for pre-pretraining: k bracket types, nesting at most max_depth.

Bracket type i opens with token 2i and closes with 2i + 1. A sequence is a random prefix of a
well-formed word: at each position it opens a random type (always at depth 0) or closes the
innermost open bracket (always at max_depth), with equal probability otherwise.
"""
from __future__ import annotations

import numpy as np


def sample_dyck(rng: np.random.Generator, k: int, length: int, max_depth: int) -> list[int]:
    if k < 1 or max_depth < 1:
        raise ValueError(f"need k >= 1 and max_depth >= 1, got k={k}, max_depth={max_depth}")
    out, stack = [], []
    for _ in range(length):
        if stack and (len(stack) == max_depth or rng.random() < 0.5):
            out.append(2 * stack.pop() + 1)
        else:
            t = int(rng.integers(k))
            stack.append(t)
            out.append(2 * t)
    return out


def is_dyck_prefix(tokens: list[int], max_depth: int) -> bool:
    """Every close matches the innermost open bracket and depth never exceeds max_depth."""
    stack = []
    for t in tokens:
        if t % 2 == 0:
            stack.append(t // 2)
            if len(stack) > max_depth:
                return False
        elif not stack or stack.pop() != t // 2:
            return False
    return True

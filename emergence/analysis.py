"""Emergence statistics as pure functions of (steps, values) arrays.

A trajectory's *progress* runs from 0 at chance to 1 when solved. Plateau end, emergence
step and solved step are first crossings of thresholds; a run that never crosses within
the budget is right-censored at the last step (time = budget, censored = True), never
dropped. Censored times feed Kaplan-Meier estimates (emergence/survival.py), not plain means.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.stats import norm


def progress_from_accuracy(accuracy: np.ndarray, chance: float = 0.5) -> np.ndarray:
    """(accuracy - chance) / (1 - chance), so 0 = chance and 1 = perfect."""
    return (np.asarray(accuracy, dtype=float) - chance) / (1.0 - chance)


def running_median(values: np.ndarray, window: int) -> np.ndarray:
    """Centred running median along the last axis (window 1 = identity; edges use what exists)."""
    values = np.asarray(values, dtype=float)
    if window <= 1:
        return values.copy()
    half = window // 2
    n = values.shape[-1]
    out = np.empty_like(values)
    for i in range(n):
        out[..., i] = np.nanmedian(values[..., max(0, i - half):min(n, i + half + 1)], axis=-1)
    return out


@dataclass(frozen=True)
class Crossing:
    step: float      # interpolated step of the first crossing, or the budget if censored
    censored: bool   # True when the threshold is never reached within the budget


def first_crossing(steps: np.ndarray, values: np.ndarray, threshold: float, interpolate: bool = True) -> Crossing:
    """First step at which `values` reaches `threshold` (from below).

    With interpolation the crossing is placed linearly between the last evaluation below
    and the first at or above the threshold. NaN evaluations (diverged) never count as
    crossings. Never reached: Crossing(steps[-1], censored=True)."""
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    hit = np.flatnonzero(np.nan_to_num(values, nan=-np.inf) >= threshold)
    if hit.size == 0:
        return Crossing(float(steps[-1]), True)
    i = int(hit[0])
    if i == 0 or not interpolate or not np.isfinite(values[i - 1]):
        return Crossing(float(steps[i]), False)
    v0, v1 = values[i - 1], values[i]
    frac = (threshold - v0) / (v1 - v0) if v1 != v0 else 1.0
    return Crossing(float(steps[i - 1] + frac * (steps[i] - steps[i - 1])), False)


@dataclass(frozen=True)
class Emergence:
    plateau_end: Crossing
    emergence: Crossing
    solved: Crossing

    @property
    def transition_width(self) -> float:
        """Steps from leaving the plateau to solved; NaN unless both happened."""
        if self.plateau_end.censored or self.solved.censored:
            return float("nan")
        return self.solved.step - self.plateau_end.step


def emergence_of(steps: np.ndarray, progress: np.ndarray, plateau: float, emergence: float, solved: float,
                 smoothing_window: int = 1) -> Emergence:
    p = running_median(progress, smoothing_window)
    return Emergence(first_crossing(steps, p, plateau), first_crossing(steps, p, emergence),
                     first_crossing(steps, p, solved))


def wilson_interval(successes: int, n: int, level: float = 0.9) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    if n == 0:
        return (0.0, 1.0)
    z = float(norm.ppf((1 + level) / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def steepest_drop_step(steps: np.ndarray, values: np.ndarray) -> float:
    """Step midway through the largest single-interval drop of `values` (e.g. an entropy collapse)."""
    steps, values = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    diffs = np.diff(values)
    if diffs.size == 0 or not np.isfinite(diffs).any():
        return float("nan")
    i = int(np.nanargmin(diffs))
    return float(0.5 * (steps[i] + steps[i + 1]))


def responsible_head(parent_mass_after: np.ndarray, parent_mass_before: np.ndarray) -> tuple[int, float]:
    """The head whose parent mass on a row rose the most across its jump: (head, rise).

    Both inputs are [head] (or [layer * head] flattened) parent masses for one output bit."""
    rise = np.asarray(parent_mass_after, dtype=float) - np.asarray(parent_mass_before, dtype=float)
    if not np.isfinite(rise).any():
        return -1, float("nan")
    h = int(np.nanargmax(rise))
    return h, float(rise[h])


JUMP_START = 0.1  # the jump starts where accuracy last sits this fraction of the way from its plateau to 1


def jump_start(steps, accuracy, end: float, include_end: bool = False) -> tuple[float, float]:
    """(step, accuracy level) at which one run's jump towards `end` starts, measured from the
    run's own plateau: the plateau level is the median accuracy over its checkpoints from step 1
    to before `end` (to `end` itself with `include_end`, for a run never solved), so that IOI's
    either-name stage at ~0.5 counts as plateau, not as part of the jump; the start is the last
    of those checkpoints at or below JUMP_START of the way from that level to 1 (NaN if none)."""
    steps, accuracy = np.asarray(steps, float), np.asarray(accuracy, float)
    before = ((steps <= end) if include_end else (steps < end)) & (steps >= 1)
    if not before.any():
        return float("nan"), float("nan")
    level = float(np.median(accuracy[before]))
    start_level = level + JUMP_START * (1 - level)
    idx = np.flatnonzero(before & (accuracy <= start_level))
    return (float(steps[idx[-1]]) if idx.size else float("nan")), start_level


@dataclass(frozen=True)
class Bracket:
    """Where a capability emerges between checkpoints: `old` is the last checkpoint step before
    it and `new` the first at which it is solved; censored when the last checkpoint is unsolved
    (new is then None), and `old` is None when it is solved from the first checkpoint on."""
    old: int | None
    new: int | None
    censored: bool
    evaluations: int


def bracket_emergence(steps: list[int], solved: Callable[[int], bool]) -> Bracket:
    """Binary search over checkpoint `steps` (ascending) for the first solved one, as the paper
    locates emergence in Pythia: `solved(step)` (e.g. greedy accuracy on a probe set above a
    threshold, evaluated on that checkpoint) is called O(log n) times. Assumes a capability,
    once solved, stays solved; where it does not, the bracket is one solved/unsolved boundary."""
    calls = 0

    def check(i: int) -> bool:
        nonlocal calls
        calls += 1
        return bool(solved(steps[i]))

    if not steps:
        raise ValueError("no checkpoints to search")
    if not check(len(steps) - 1):
        return Bracket(steps[-1], None, True, calls)
    lo, hi = -1, len(steps) - 1  # invariant: steps[hi] solved; steps[lo] unsolved (or lo = -1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(mid):
            hi = mid
        else:
            lo = mid
    return Bracket(steps[lo] if lo >= 0 else None, steps[hi], False, calls)

"""Verdict rules: each decides on synthetic results where the claim holds, fails and cannot be
decided, and says "reproduced" on the paper's own numbers (../shared/paper/NOTES.md)."""
import math

import numpy as np
import pytest

from emergence.verdicts import Arm, Verdict, bias_keeps_plateau_flat, detectable_hazard_ratio, plateau_grows_with_state_size

ALPHA = 0.1
PAPER_SIZES = (4, 8, 16, 32, 64, 128, 256, 512)
# Fig 4-right (automata): plateau length in steps, three seeds per S; S = 512 never escapes in 10^4
PAPER_STANDARD = (60, 377, 398, 657, 1395, 3340, 8725, None)
PAPER_BIASED = (60, 203, 199, 171, 169, 171, 162, 163)


def seeds_at(median, n=3, budget=10_000, spread=0.1):
    """n seeds spread around a reported median (None: every seed censored at the budget)."""
    if median is None:
        return Arm.of([budget] * n, [True] * n)
    return Arm.of(np.linspace(1 - spread, 1 + spread, n) * median, [False] * n)


def draws(scale, n=8, budget=3000, seed=0):
    t = np.random.default_rng(seed).exponential(scale, n) + scale / 2
    return Arm.of(np.minimum(t, budget), t >= budget)


def test_plateau_growth_on_the_papers_numbers():
    arms = {S: seeds_at(m) for S, m in zip(PAPER_SIZES, PAPER_STANDARD)}
    v = plateau_grows_with_state_size(arms, alpha=ALPHA, min_ratio=2.0, paper="60 -> never (S = 4 -> 512)")
    assert v.verdict == "reproduced", v.reason
    assert v.estimate == math.inf and v.n == 6 and v.censored == 3


def test_plateau_growth_holds_fails_and_cannot_be_decided():
    holds = plateau_grows_with_state_size({4: draws(100), 16: draws(900, seed=1)}, alpha=ALPHA, min_ratio=2.0)
    assert holds.verdict == "reproduced", holds.reason
    same = plateau_grows_with_state_size({4: draws(400, n=16), 16: draws(400, n=16, seed=1)}, alpha=ALPHA,
                                         min_ratio=2.0)
    assert same.verdict == "not reproduced", same.reason
    shrinks = plateau_grows_with_state_size({4: draws(900), 16: draws(100, seed=1)}, alpha=ALPHA, min_ratio=2.0)
    assert shrinks.verdict == "not reproduced", shrinks.reason
    never = plateau_grows_with_state_size({4: seeds_at(None), 16: seeds_at(None)}, alpha=ALPHA, min_ratio=2.0)
    assert never.verdict == "inconclusive" and "budget" in never.reason
    few = plateau_grows_with_state_size({4: Arm.of([300, 500], [0, 0]), 16: Arm.of([400, 900], [0, 0])},
                                        alpha=ALPHA, min_ratio=2.0)
    assert few.verdict == "inconclusive" and "more seeds" in few.reason


def test_bias_flatness_on_the_papers_numbers():
    biased = {S: seeds_at(m) for S, m in zip(PAPER_SIZES, PAPER_BIASED)}
    control = {S: seeds_at(m) for S, m in zip(PAPER_SIZES, PAPER_STANDARD)}
    v = bias_keeps_plateau_flat(biased, control, flat_from=8, max_ratio=2.0, alpha=ALPHA)
    assert v.verdict == "reproduced", v.reason
    # from S = 4 the paper itself would not be flat (60 -> 199 is x3.3)
    assert bias_keeps_plateau_flat(biased, control, flat_from=4, max_ratio=2.0, alpha=ALPHA).verdict == "partly"


def test_bias_flatness_holds_fails_and_cannot_be_decided():
    control = {8: draws(400), 32: draws(2000, seed=3)}
    holds = bias_keeps_plateau_flat({8: draws(150, seed=1), 32: draws(160, seed=2)}, control, flat_from=8,
                                    max_ratio=2.0, alpha=ALPHA)
    assert holds.verdict == "reproduced", holds.reason
    grows = bias_keeps_plateau_flat({8: draws(150, seed=1), 32: draws(2000, seed=4)}, control, flat_from=8,
                                    max_ratio=2.0, alpha=ALPHA)
    assert grows.verdict == "not reproduced", grows.reason
    never = bias_keeps_plateau_flat({8: seeds_at(None, budget=3000), 32: seeds_at(None, budget=3000)}, control,
                                    flat_from=8, max_ratio=2.0, alpha=ALPHA)
    assert never.verdict == "inconclusive" and "never leaves" in never.reason


def test_detectable_effect_shrinks_with_events():
    assert detectable_hazard_ratio(0, ALPHA) == math.inf
    assert detectable_hazard_ratio(8, ALPHA) > detectable_hazard_ratio(32, ALPHA) > 1


def test_a_verdict_outside_the_vocabulary_is_an_error():
    with pytest.raises(ValueError, match="verdict"):
        Verdict(claim="1", statement="", paper="", statistic="", estimate=0.0, interval=(0.0, 1.0), n=1, censored=0,
                detectable="", verdict="holds", reason="")

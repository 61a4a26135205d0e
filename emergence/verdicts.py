"""Verdict rules: one pure function per claim, from per-seed results to a decision the data
could have gone against.

Each rule takes per-seed times (with censoring at the budget) or statistics and its thresholds
and returns a `Verdict`: the paper's statement and number, the statistic with its interval,
the number of seeds and how many were censored, the smallest effect the test could detect at
this n, the verdict and a one-line reason. A rule says "inconclusive" (or "needs the paper
profile", when the budget is what stops it) only with the computed reason and what would
decide it. Every rule is tested on synthetic results where the claim holds, fails and cannot
be decided, and on the paper's own numbers (../shared/paper/NOTES.md), which must pass.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from emergence.survival import km_median, logrank

VERDICTS = ("reproduced", "partly", "not reproduced", "inconclusive", "needs the paper profile")
POWER = 0.8  # the power at which `detectable` is stated


@dataclass(frozen=True, kw_only=True)
class Verdict:
    claim: str                       # the paper's claim number and part, e.g. "4 (automata)"
    statement: str                   # what the paper says
    paper: str                       # the paper's own number for it, as read ("" where it gives none)
    statistic: str                   # what is measured here
    estimate: float
    interval: tuple[float, float]    # at level 1 - alpha
    n: int                           # seeds (the unit)
    censored: int                    # seeds censored at the budget among them
    detectable: str                  # the smallest effect this test could detect here
    verdict: str
    reason: str

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict: one of {VERDICTS}, got {self.verdict!r}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["interval"] = list(self.interval)
        return d


@dataclass(frozen=True)
class Arm:
    """Per-seed event times of one setting; censored seeds carry their budget as the time."""
    times: np.ndarray
    censored: np.ndarray

    @classmethod
    def of(cls, times: Sequence[float], censored: Sequence[bool]) -> "Arm":
        t, c = np.asarray(times, dtype=float), np.asarray(censored, dtype=bool)
        if t.shape != c.shape or t.size == 0:
            raise ValueError("an arm needs one censoring flag per seed and at least one seed")
        return cls(t, c)

    @property
    def median(self) -> float:
        return km_median(self.times, self.censored)

    @property
    def events(self) -> int:
        return int((~self.censored).sum())


def _ratio(a: float, b: float) -> float:
    """b / a for KM medians that may be unreached (inf): inf when only b is, NaN when both are."""
    if b == math.inf:
        return math.inf if a < math.inf else float("nan")
    return 0.0 if a == math.inf else b / a


def median_ratio_interval(a: Arm, b: Arm, level: float, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of KM median(b) / KM median(a), seeds resampled within each
    arm (an unreached median of b makes the ratio infinite, of a makes it 0)."""
    rng = np.random.default_rng(seed)
    ratios = np.empty(n_boot)
    for i in range(n_boot):
        ia, ib = rng.integers(0, len(a.times), len(a.times)), rng.integers(0, len(b.times), len(b.times))
        ratios[i] = _ratio(km_median(a.times[ia], a.censored[ia]), km_median(b.times[ib], b.censored[ib]))
    if np.isnan(ratios).all():
        return float("nan"), float("nan")
    lo, hi = np.nanquantile(ratios, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


def detectable_hazard_ratio(events: int, alpha: float, power: float = POWER) -> float:
    """Smallest hazard ratio a one-sided log-rank detects with `power` given `events` events
    (Schoenfeld: D = 4 (z_alpha + z_beta)^2 / ln(HR)^2 for equal arms)."""
    if events <= 0:
        return math.inf
    return math.exp(2 * (stats.norm.ppf(1 - alpha) + stats.norm.ppf(power)) / math.sqrt(events))


def plateau_grows_with_state_size(arms: dict[int, Arm], *, alpha: float, min_ratio: float,
                                  paper: str = "") -> Verdict:
    """Claim 4 (automata): the plateau lengthens with the state size S.

    Compares the smallest and the largest S: one-sided log-rank that the smallest leaves the
    plateau earlier, and the ratio of KM medians (largest / smallest) against `min_ratio`.
    reproduced: p < alpha and ratio >= min_ratio; not reproduced: the largest S leaves earlier
    (p < alpha the other way), or the whole interval of the ratio lies below min_ratio;
    needs the paper profile: every seed at the largest S censored and none at the smallest
    (the budget, not the data, decides); inconclusive otherwise (too few seeds or events)."""
    sizes = sorted(arms)
    if len(sizes) < 2:
        raise ValueError("plateau_grows_with_state_size: needs at least two state sizes")
    small, large = arms[sizes[0]], arms[sizes[-1]]
    test = logrank(small.times, small.censored, large.times, large.censored)
    ratio = _ratio(small.median, large.median)
    lo, hi = median_ratio_interval(small, large, 1 - alpha)
    n = len(small.times) + len(large.times)
    censored = int(small.censored.sum() + large.censored.sum())
    hr = detectable_hazard_ratio(test.events, alpha)
    common = dict(claim="4 (automata)", statement="the loss plateau grows with the state size S", paper=paper,
                  statistic=f"KM median plateau end, S = {sizes[-1]} over S = {sizes[0]}",
                  estimate=ratio, interval=(lo, hi), n=n, censored=censored,
                  detectable=f"hazard ratio {hr:.3g} at {POWER:.0%} power ({test.events} events)")
    if not test.decidable:
        return Verdict(**common, verdict="inconclusive",
                       reason="no seed left the plateau at either S within the budget: a longer budget decides")
    if test.p_a_earlier < alpha and ratio >= min_ratio:
        return Verdict(**common, verdict="reproduced",
                       reason=f"S = {sizes[0]} leaves the plateau first (log-rank p = {test.p_a_earlier:.3g}), "
                              f"median {ratio:.3g} times longer at S = {sizes[-1]}")
    if test.p_a_earlier > 1 - alpha or hi < min_ratio:
        return Verdict(**common, verdict="not reproduced",
                       reason=f"median ratio {ratio:.3g} [{lo:.3g}, {hi:.3g}] against the {min_ratio:g} asked "
                              f"(log-rank p = {test.p_a_earlier:.3g})")
    return Verdict(**common, verdict="inconclusive",
                   reason=f"median ratio {ratio:.3g} [{lo:.3g}, {hi:.3g}], log-rank p = {test.p_a_earlier:.3g}: "
                          f"more seeds decide (this n detects hazard ratios from {hr:.3g})")


def bias_keeps_plateau_flat(biased: dict[int, Arm], control: dict[int, Arm], *, flat_from: int, max_ratio: float,
                            alpha: float, paper: str = "") -> Verdict:
    """Claim 5 (automata): with the ground-truth bias the plateau stays short at every S.

    Two parts, over the state sizes S >= `flat_from`: flat, the biased KM median at the largest
    S over that at the smallest is below `max_ratio` (its interval's upper end too); shorter,
    at the largest S the biased arm leaves the plateau before the control (one-sided log-rank,
    p < alpha). reproduced: both; partly: one; not reproduced: the biased plateau grows by at
    least max_ratio (the interval's lower end) and is not shorter; inconclusive: otherwise, or
    when the biased arm never leaves the plateau."""
    sizes = sorted(S for S in biased if S >= flat_from)
    if len(sizes) < 2:
        raise ValueError(f"bias_keeps_plateau_flat: needs two state sizes >= {flat_from}, got {sorted(biased)}")
    first, last = biased[sizes[0]], biased[sizes[-1]]
    ratio = _ratio(first.median, last.median)
    lo, hi = median_ratio_interval(first, last, 1 - alpha)
    shorter = logrank(last.times, last.censored, control[sizes[-1]].times, control[sizes[-1]].censored)
    n = sum(len(biased[S].times) for S in sizes) + len(control[sizes[-1]].times)
    censored = sum(int(biased[S].censored.sum()) for S in sizes) + int(control[sizes[-1]].censored.sum())
    common = dict(claim="5 (automata)", statement="with the attention bias the plateau stays short at every S",
                  paper=paper, statistic=f"biased KM median plateau end, S = {sizes[-1]} over S = {sizes[0]}",
                  estimate=ratio, interval=(lo, hi), n=n, censored=censored,
                  detectable=f"hazard ratio {detectable_hazard_ratio(shorter.events, alpha):.3g} against the "
                             f"control at S = {sizes[-1]} ({shorter.events} events)")
    if first.events == 0 or last.events == 0:
        return Verdict(**common, verdict="inconclusive",
                       reason=f"the biased arm never leaves the plateau at S = {sizes[0] if first.events == 0 else sizes[-1]}: "
                              "a stronger bias or a longer budget decides")
    flat = hi < max_ratio
    grows = lo >= max_ratio
    is_shorter = shorter.decidable and shorter.p_a_earlier < alpha
    detail = (f"biased median ratio {ratio:.3g} [{lo:.3g}, {hi:.3g}] over S = {sizes[0]}..{sizes[-1]} (flat below "
              f"{max_ratio:g}); against the control at S = {sizes[-1]} log-rank p = {shorter.p_a_earlier:.3g}")
    if flat and is_shorter:
        return Verdict(**common, verdict="reproduced", reason=detail)
    if grows and not is_shorter:
        return Verdict(**common, verdict="not reproduced", reason=detail)
    if flat or is_shorter:
        return Verdict(**common, verdict="partly", reason=detail)
    return Verdict(**common, verdict="inconclusive", reason=detail + ": more seeds decide")

"""Survival statistics over seeds: Kaplan-Meier and log-rank, stratified where settings share a
comparison, and Benjamini-Hochberg across a scorecard.

A seed that never reaches an event (leaving the plateau, emerging, solving) within its budget
is right-censored at the budget and stays in every statistic; the seed is the unit.
Kaplan-Meier comes from scipy.stats.ecdf on CensoredData and the two-sample log-rank from
scipy.stats.logrank. scipy has no stratified log-rank, so `stratified_logrank` sums each
stratum's observed-minus-expected events and their variances (an event-less stratum adds
nothing to either, unlike a Stouffer sum of per-stratum z, where it adds 0 to the numerator
and still grows the denominator); on one stratum it is tested to equal scipy's statistic.

Ties. Events of both groups at one time (runs evaluated on the same grid) are one 2 x 2 table,
as scipy counts them. Several events of one group alone at one time are counted one after
another, as if a hair apart: their order among themselves says nothing about the order between
the groups, while the table's count of them does, and moves the wrong way when one of them moves
earlier onto another's step (a = [4, 7, 8] against b = [6, 10+, 10+] gave p 0.098, a = [4, 7, 7]
p 0.113). Tested to equal scipy's statistic on the same times with such ties pulled apart.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np
from scipy import optimize, special, stats


def _arrays(times, censored) -> tuple[np.ndarray, np.ndarray]:
    t, c = np.asarray(times, dtype=float), np.asarray(censored, dtype=bool)
    if t.shape != c.shape or t.ndim != 1:
        raise ValueError(f"times and censored: one flag per time, got shapes {t.shape} and {c.shape}")
    if not np.isfinite(t).all():
        raise ValueError("times: every time must be finite (a censored seed is censored at its budget)")
    return t, c


def censored_data(times, censored) -> stats.CensoredData:
    t, c = _arrays(times, censored)
    return stats.CensoredData(uncensored=t[~c], right=t[c])


def km_survival(times, censored) -> tuple[np.ndarray, np.ndarray]:
    """Kaplan-Meier P(no event yet) as a right-continuous step function from (0, 1):
    (event times with 0 prepended, survival just after each)."""
    t, c = _arrays(times, censored)
    if not (~c).any():
        return np.array([0.0]), np.array([1.0])
    sf = stats.ecdf(censored_data(t, c)).sf
    at_event = np.isin(sf.quantiles, t[~c])  # scipy also lists censoring times, where nothing drops
    return (np.concatenate([[0.0], sf.quantiles[at_event]]),
            np.concatenate([[1.0], sf.probabilities[at_event]]))


def km_quantile(times, censored, q: float) -> float:
    """First time by which a fraction q of seeds has had the event by Kaplan-Meier (survival
    <= 1 - q); inf when it never gets there within the budget.

    The bootstraps call this ~10^6 times per scorecard (its stability resamples included) on
    arms of a few seeds, where scipy.stats.ecdf's set-up costs ~190 us a call and numpy's per
    call overhead most of 18 us, so the product-limit estimate is computed here directly, in
    plain Python over the sorted seeds (3 us; tested equal to `km_survival`, which is scipy's,
    on random censored samples with ties). Sorting (time, censored) puts a tie's events before
    its censorings: a seed censored at t is still at risk at t."""
    seeds = sorted(zip(np.asarray(times, dtype=float).tolist(), np.asarray(censored, dtype=bool).tolist()))
    n, survival, i = len(seeds), 1.0, 0
    while i < n:
        at, deaths, j = seeds[i][0], 0, i
        while j < n and seeds[j][0] == at:
            deaths += not seeds[j][1]
            j += 1
        if deaths:
            survival *= 1.0 - deaths / (n - i)  # n - i seeds have not had the event or left by `at`
            if survival <= 1.0 - q + 1e-12:
                return at
        i = j
    return float("inf")


def km_median(times, censored) -> float:
    """First time at which Kaplan-Meier survival is <= 0.5; inf when it never gets there."""
    return km_quantile(times, censored, 0.5)


def bootstrap_km_median(times, censored, n_boot: int = 2000, level: float = 0.9, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the Kaplan-Meier median, seeds resampled (inf where unreached)."""
    t, c = _arrays(times, censored)
    rng = np.random.default_rng(seed)
    meds = np.array([km_median(t[i], c[i]) for i in rng.integers(0, len(t), size=(n_boot, len(t)))])
    lo, hi = np.quantile(meds, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


def km_median_of_rows(times, censored, rows=None) -> float:
    """Kaplan-Meier median over every finite entry of the chosen rows (seeds; all if None) of
    [seed, unit] arrays: each seed's units pooled, censored ones included. NaN where none."""
    t, c = np.atleast_2d(np.asarray(times, float)), np.atleast_2d(np.asarray(censored, bool))
    if rows is not None:
        t, c = t[rows], c[rows]
    valid = np.isfinite(t)
    return km_median(t[valid], c[valid]) if valid.any() else float("nan")


def bootstrap_rows_km_median(times, censored, n_boot: int = 2000, level: float = 0.9,
                             seed: int = 0) -> tuple[float, float]:
    """Percentile interval of `km_median_of_rows` with the seeds (rows, the unit) resampled; inf
    where unreached; a resample without a finite entry is left out (NaN where all are)."""
    n = len(np.atleast_2d(times))
    rng = np.random.default_rng(seed)
    draws = np.array([km_median_of_rows(times, censored, rng.integers(0, n, n)) for _ in range(n_boot)])
    if np.isnan(draws).all():
        return float("nan"), float("nan")
    lo, hi = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


@dataclass(frozen=True)
class LogRank:
    """A (stratified) log-rank comparison of groups a and b."""
    z: float                        # (O - E) / sqrt(V) of group a: > 0 when a has its events earlier
    p_two_sided: float
    p_a_earlier: float              # one-sided, alternative: a's hazard is higher
    observed_minus_expected: float
    variance: float
    events: int                     # events in both groups, every stratum
    strata: int
    permutations: int = 0           # seed reassignments behind the p-values (random ones besides the
                                    # observed split, which counts in their null); 0: normal approximation

    @property
    def decidable(self) -> bool:
        """False when no stratum has an event in a risk set holding both groups: no test exists."""
        return self.variance > 0


def logrank_terms(times_a, censored_a, times_b, censored_b) -> tuple[float, float, int]:
    """(O_a - E_a, V_a, events) of one stratum, in the notation of scipy.stats.logrank."""
    ta, ca = _arrays(times_a, censored_a)
    tb, cb = _arrays(times_b, censored_b)
    t, c = np.concatenate([ta, tb]), np.concatenate([ca, cb])
    in_a = np.concatenate([np.ones(len(ta), bool), np.zeros(len(tb), bool)])
    o_minus_e = variance = 0.0
    for time in np.unique(t[~c]):
        at_risk = t >= time
        n, n_a = int(at_risk.sum()), int((at_risk & in_a).sum())
        event = (t == time) & ~c
        d, d_a = int(event.sum()), int((event & in_a).sum())
        if d == 1 or 0 < d_a < d:   # one event, or a tie across the groups: the 2 x 2 table
            o_minus_e += d_a - d * n_a / n
            if n > 1:
                variance += d * (n_a / n) * (1 - n_a / n) * (n - d) / (n - 1)
            continue
        for j in range(d):          # a tie within one group: one event after another
            share = (n_a - j * (d_a == d)) / (n - j)
            o_minus_e += (d_a == d) - share
            variance += share * (1 - share)
    return o_minus_e, variance, int((~c).sum())


def stratified_logrank(strata: Iterable[tuple]) -> LogRank:
    """Log-rank over strata, each (times_a, censored_a, times_b, censored_b): z = sum(O - E) / sqrt(sum V)."""
    o_minus_e = variance = 0.0
    events = n = 0
    for stratum in strata:
        d_oe, d_v, d_events = logrank_terms(*stratum)
        o_minus_e, variance, events, n = o_minus_e + d_oe, variance + d_v, events + d_events, n + 1
    if variance <= 0:
        return LogRank(0.0, float("nan"), float("nan"), o_minus_e, 0.0, events, n)
    z = o_minus_e / np.sqrt(variance)
    return LogRank(float(z), float(2 * stats.norm.sf(abs(z))), float(stats.norm.sf(z)), o_minus_e, variance,
                   events, n)


def logrank(times_a, censored_a, times_b, censored_b) -> LogRank:
    return stratified_logrank([(times_a, censored_a, times_b, censored_b)])


def _split_z(t: np.ndarray, c: np.ndarray, in_a: np.ndarray) -> np.ndarray:
    """The stratified log-rank z of group a for many splits at once: `in_a` [P, n] marks, per
    split, which of the n seeds (rows of the [seed, stratum] arrays t, c) are in group a.
    The pooled risk sets and events of a stratum are the same in every split; only how many of
    them fall in a changes, so each split's O - E and V are sums of matrix products."""
    weight = in_a.astype(float)
    oe = np.zeros(len(in_a))
    v = np.zeros(len(in_a))
    for k in range(t.shape[1]):
        tk, ck = t[:, k], c[:, k]
        times = np.unique(tk[~ck])
        if times.size == 0:
            continue
        at_risk = (tk[None, :] >= times[:, None]).astype(float)   # [J, n]
        event = ((tk[None, :] == times[:, None]) & ~ck[None, :]).astype(float)
        n, d = at_risk.sum(1), event.sum(1)
        n_a, d_a = weight @ at_risk.T, weight @ event.T              # [P, J]
        share = n_a / n
        table = (d == 1) | ((d_a > 0) & (d_a < d))                   # as logrank_terms: the 2 x 2 table
        multi = n > 1
        table_v = np.where(multi, d * share * (1 - share) * (n - d) / np.where(multi, n - 1, 1), 0.0)
        seq_oe, seq_v = np.zeros_like(share), np.zeros_like(share)   # a tie within one group, in turn
        all_a = d_a == d
        for j in range(int(d.max())):
            step = j < d
            s_j = np.where(step, (n_a - j * all_a) / np.where(step, n - j, 1), 0.0)
            seq_oe += np.where(step, all_a - s_j, 0.0)
            seq_v += s_j * (1 - s_j)
        oe += np.where(table, d_a - d * share, seq_oe).sum(1)
        v += np.where(table, table_v, seq_v).sum(1)
    safe = np.where(v > 0, v, 1.0)
    return np.where(v > 0, oe / np.sqrt(safe), 0.0)


def seed_permutation_logrank(times_a, censored_a, times_b, censored_b, n_perm: float = 2000,
                             seed: int = 0, chunk: int = 20_000) -> LogRank:
    """Stratified log-rank where every stratum is measured on the same seeds (for example
    several capabilities of one trained model): inputs are [seed, stratum] arrays, and the
    one-sided p comes from reassigning whole seeds between the groups (every stratum of a seed
    moves together), so correlated strata do not count as independent evidence. Exact over
    all reassignments when there are at most `n_perm` of them (math.inf: always); the
    two-sided p is from the same permutations. The null's z are computed `chunk` splits at a
    time (tested equal to the per-split log-rank)."""
    ta, ca = np.atleast_2d(np.asarray(times_a, float)), np.atleast_2d(np.asarray(censored_a, bool))
    tb, cb = np.atleast_2d(np.asarray(times_b, float)), np.atleast_2d(np.asarray(censored_b, bool))
    if ta.shape[1] != tb.shape[1] or ta.shape != ca.shape or tb.shape != cb.shape:
        raise ValueError("seed_permutation_logrank: [seed, stratum] arrays with the same strata in both groups")
    t, c = np.concatenate([ta, tb]), np.concatenate([ca, cb])
    n, n_a = len(t), len(ta)
    observed = stratified_logrank([(ta[:, k], ca[:, k], tb[:, k], cb[:, k]) for k in range(t.shape[1])])
    if not observed.decidable:
        return observed
    null = []
    if math.comb(n, n_a) <= n_perm:
        groups = itertools.combinations(range(n), n_a)  # the observed split is among them
    else:
        rng = np.random.default_rng(seed)
        groups = (rng.permutation(n)[:n_a] for _ in range(int(n_perm)))
        null.append(np.array([observed.z]))
    while True:
        block = list(itertools.islice(groups, chunk))
        if not block:
            break
        in_a = np.zeros((len(block), n), bool)
        np.put_along_axis(in_a, np.asarray(block), True, axis=1)
        null.append(_split_z(t, c, in_a))
    null = np.concatenate(null)
    tol = 1e-9 * max(1.0, abs(observed.z))
    p_one = float((null >= observed.z - tol).mean())
    p_two = float((np.abs(null) >= abs(observed.z) - tol).mean())
    return LogRank(observed.z, p_two, p_one, observed.observed_minus_expected, observed.variance, observed.events,
                   observed.strata, permutations=len(null) - (math.comb(n, n_a) > n_perm))


def censored_normal_mean(values, censored, sigma: float) -> float:
    """Maximum-likelihood mean of normal values right-censored where `censored`, at a given
    standard deviation `sigma` (the mean a null of that sigma is simulated about). The
    log-likelihood is concave in the mean, so a bounded scalar search finds it."""
    y, c = np.asarray(values, dtype=float), np.asarray(censored, dtype=bool)

    def minus_log_likelihood(mu: float) -> float:
        z = (y - mu) / sigma
        return -(stats.norm.logpdf(z[~c]).sum() + special.log_ndtr(-z[c]).sum())

    lo, hi = float(y.min()) - 10 * sigma, float(y.max()) + 10 * sigma
    return float(optimize.minimize_scalar(minus_log_likelihood, bounds=(lo, hi), method="bounded",
                                          options={"xatol": 1e-10}).x)


def censored_normal_fit(values, censored, tol: float = 1e-9,
                        max_iterations: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood mean and standard deviation of normal values right-censored where
    `censored` (the value is then the censoring point), row by row over the last axis: the
    bootstraps fit thousands of simulated samples at once. Uncensored rows take the closed form
    (the mean, and the root mean square deviation: the MLE, divided by n); censored rows
    iterate EM from it (Dempster, Laird and Rubin 1977): each censored value replaced by its
    conditional moments above the censoring point, then the closed form again; tested equal to
    scipy.stats.norm.fit on CensoredData. NaN where a row has fewer than two distinct
    uncensored values (with one, the likelihood grows without bound as sigma -> 0)."""
    y = np.atleast_2d(np.asarray(values, dtype=float))
    c = np.atleast_2d(np.asarray(censored, dtype=bool))
    if y.shape != c.shape:
        raise ValueError(f"values and censored: one flag per value, got shapes {y.shape} and {c.shape}")
    event = ~c
    events = event.sum(-1)
    distinct = np.where(event, y, -np.inf).max(-1) > np.where(event, y, np.inf).min(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = (y * event).sum(-1) / events
        sigma = np.sqrt((((y - mu[:, None]) * event) ** 2).sum(-1) / events)
    mu, sigma = np.where(distinct, mu, np.nan), np.where(distinct, sigma, np.nan)
    active = np.flatnonzero(distinct & c.any(-1))
    for _ in range(max_iterations):
        if not active.size:
            break
        ya, ca, m, s = y[active], c[active], mu[active, None], sigma[active, None]
        z = (ya - m) / s
        hazard = np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - special.log_ndtr(-z))  # phi(z) / (1 - Phi(z))
        first = np.where(ca, m + s * hazard, ya)
        second = np.where(ca, m * m + s * s + s * hazard * (ya + m), ya * ya)
        new_mu = first.mean(-1)
        new_sigma = np.sqrt(np.maximum(second.mean(-1) - new_mu ** 2, 0.0))
        settled = np.abs(new_mu - m[:, 0]) + np.abs(new_sigma - s[:, 0]) <= tol * (1 + np.abs(new_mu))
        mu[active], sigma[active] = new_mu, new_sigma
        active = active[~settled]
    return mu, sigma


def benjamini_hochberg(p_values) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control); NaN (a test
    that could not be made) stays NaN and does not count towards the number of tests."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out

"""Survival statistics: scipy's Kaplan-Meier and log-rank, and the stratified log-rank built on them."""
import math

import numpy as np
import pytest
from scipy import stats

from emergence.analysis.survival import (_split_z, benjamini_hochberg, bootstrap_km_median, bootstrap_rows_km_median, censored_normal_fit,
                                         km_median, km_median_of_rows, km_quantile, km_survival,
                                         logrank, seed_permutation_logrank, stratified_logrank)


def test_km_median_by_hand():
    assert km_median([100, 200, 300, 400], [0, 0, 0, 0]) == 200
    # one censored before the median: survival 1 -> 3/4 at 100, -> 3/4 * 1/2 at 300
    assert km_median([100, 150, 300, 400], [0, 1, 0, 0]) == 300
    assert km_median([100, 500, 500], [0, 1, 1]) == math.inf   # never below one half
    assert km_median([500, 500], [1, 1]) == math.inf           # no event at all
    t, s = km_survival([100, 150, 300, 400], [0, 1, 0, 0])
    np.testing.assert_allclose(t, [0, 100, 300, 400])
    np.testing.assert_allclose(s, [1, 0.75, 0.375, 0.0])


@pytest.mark.parametrize("seed", range(20))
def test_km_quantiles_agree_with_scipys_estimate(seed):
    rng = np.random.default_rng(seed)
    t = rng.integers(1, 20, size=int(rng.integers(1, 16))).astype(float) * 50   # ties
    c = rng.random(t.size) < 0.3
    steps, surv = km_survival(t, c)
    for q in (0.25, 0.5, 0.75):
        below = np.flatnonzero(surv <= 1 - q + 1e-12)
        assert km_quantile(t, c, q) == (steps[below[0]] if below.size else math.inf)


def test_shared_seeds_do_not_count_twice():
    rng = np.random.default_rng(0)
    ta, tb = rng.exponential(300, 5).round() + 1, rng.exponential(700, 5).round() + 1
    ca, cb = ta > 900, tb > 900
    ta, tb = np.minimum(ta, 900), np.minimum(tb, 900)
    one = seed_permutation_logrank(ta[:, None], ca[:, None], tb[:, None], cb[:, None])
    # the same measurement three times over (three strata on the same seeds) is no new evidence
    three = seed_permutation_logrank(np.tile(ta[:, None], 3), np.tile(ca[:, None], 3), np.tile(tb[:, None], 3),
                                     np.tile(cb[:, None], 3))
    assert three.p_a_earlier == pytest.approx(one.p_a_earlier)
    naive = stratified_logrank([(ta, ca, tb, cb)] * 3)
    assert naive.p_a_earlier < one.p_a_earlier / 2   # what treating them as independent would claim
    assert one.p_a_earlier >= 1 / math.comb(10, 5)


@pytest.mark.parametrize("seed", range(10))
def test_the_permutation_null_is_the_log_rank_of_each_split(seed):
    # the null's z, computed for many splits at once, against the stratified log-rank of each
    # split on its own (ties, censoring, strata where one group has no event)
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(4, 12)), int(rng.integers(1, 4))
    t = rng.integers(1, 8, (n, k)).astype(float) * 100
    c = rng.random((n, k)) < 0.35
    in_a = rng.random((30, n)) < 0.5
    in_a[:, 0], in_a[:, 1] = True, False
    oracle = [stratified_logrank([(t[m, j], c[m, j], t[~m, j], c[~m, j]) for j in range(k)]) for m in in_a]
    np.testing.assert_allclose(_split_z(t, c, in_a), [o.z for o in oracle], rtol=1e-12, atol=1e-12)


def test_random_reassignments_count_and_exact_ones_enumerate():
    rng = np.random.default_rng(3)
    ta, tb = rng.exponential(300, (9, 2)).round() + 1, rng.exponential(500, (9, 2)).round() + 1
    ca, cb = ta > 800, tb > 800
    drawn = seed_permutation_logrank(ta, ca, tb, cb, n_perm=500)
    assert drawn.permutations == 500
    exact = seed_permutation_logrank(ta, ca, tb, cb, n_perm=math.inf)
    assert exact.permutations == math.comb(18, 9)
    assert exact.p_a_earlier * math.comb(18, 9) == pytest.approx(round(exact.p_a_earlier * math.comb(18, 9)))
    assert abs(drawn.p_a_earlier - exact.p_a_earlier) < 4 * math.sqrt(exact.p_a_earlier / 500)


@pytest.mark.parametrize("seed", range(5))
def test_one_stratum_is_scipys_logrank(seed):
    rng = np.random.default_rng(seed)
    ta, tb = rng.exponential(300, 8).round(), rng.exponential(600, 8).round() + 1
    ca, cb = ta > 700, tb > 700
    ta, tb = np.minimum(ta, 700), np.minimum(tb, 700)
    ours = logrank(ta, ca, tb, cb)
    ref = stats.logrank(stats.CensoredData(uncensored=ta[~ca], right=ta[ca]),
                        stats.CensoredData(uncensored=tb[~cb], right=tb[cb]))
    assert ours.z == pytest.approx(float(ref.statistic), rel=1e-9)
    assert ours.p_two_sided == pytest.approx(float(ref.pvalue), rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_a_tie_within_one_group_counts_as_its_events_a_hair_apart(seed):
    # on an evaluation grid (ties within and across the groups), against scipy on the same times
    # with each group's own tied events pulled apart (ties across the groups stay ties)
    rng = np.random.default_rng(seed)
    ta, tb = rng.integers(1, 8, 7).astype(float) * 10, rng.integers(2, 9, 6).astype(float) * 10
    ca, cb = ta >= 70, tb >= 70
    shared = np.intersect1d(ta[~ca], tb[~cb])

    def apart(t, c):   # events of one group alone at a step: a hair apart, in any order
        out = t.copy()
        for time in np.unique(t[~c]):
            if time not in shared:
                idx = np.flatnonzero((t == time) & ~c)
                out[idx] += np.arange(len(idx)) * 1e-6
        return out

    ours = logrank(ta, ca, tb, cb)
    a, b = apart(ta, ca), apart(tb, cb)
    ref = stats.logrank(stats.CensoredData(uncensored=a[~ca], right=a[ca]),
                        stats.CensoredData(uncensored=b[~cb], right=b[cb]))
    assert ours.z == pytest.approx(float(ref.statistic), rel=1e-9)


def test_an_event_moved_earlier_onto_its_own_groups_step_changes_nothing():
    moved = [logrank(a, [0, 0, 0], [6, 10, 10], [0, 1, 1]) for a in ([4, 7, 8], [4, 7, 7])]
    assert moved[0].z == pytest.approx(moved[1].z) and moved[0].p_a_earlier < 0.1


def test_an_event_less_stratum_changes_nothing():
    early = ([100, 120, 150, 200], [0, 0, 0, 0], [400, 450, 500, 500], [0, 0, 1, 1])
    silent = ([1000, 1000], [1, 1], [1000, 1000], [1, 1])
    one, both = stratified_logrank([early]), stratified_logrank([early, silent])
    assert both.z == one.z and both.p_a_earlier == one.p_a_earlier and both.strata == 2
    # Stouffer would have divided by sqrt(2): the defect the stratified sum avoids
    assert one.z / math.sqrt(2) != pytest.approx(both.z)
    twice = stratified_logrank([early, early])
    assert twice.z == pytest.approx(one.z * math.sqrt(2))
    assert one.z > 0 and one.p_a_earlier < 0.05


def test_no_events_cannot_be_decided():
    none = stratified_logrank([([1000, 1000], [1, 1], [1000], [1])])
    assert not none.decidable and math.isnan(none.p_two_sided) and none.events == 0


def test_times_must_be_finite():
    with pytest.raises(ValueError, match="finite"):
        logrank([100, math.inf], [0, 1], [200], [0])


def test_benjamini_hochberg_by_hand_and_skips_missing():
    p = [0.01, 0.04, 0.03, 0.2]
    # sorted 0.01, 0.03, 0.04, 0.2 -> 0.04, 0.0533, 0.0533, 0.2
    np.testing.assert_allclose(benjamini_hochberg(p), [0.04, 0.16 / 3, 0.16 / 3, 0.2])
    out = benjamini_hochberg([0.01, np.nan, 0.04])
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.04)


def test_kaplan_meier_with_ties_by_hand():
    # events at 2, 3 (two), censored at 3 and 5: S(2) = 4/5, S(3) = 4/5 * (1 - 2/4) = 0.4
    t, s = km_survival([2, 3, 3, 3, 5], [0, 0, 0, 1, 1])
    assert t.tolist() == [0, 2, 3]
    assert s == pytest.approx([1.0, 0.8, 0.4])
    assert km_median([2, 3, 3, 3, 5], [0, 0, 0, 1, 1]) == 3


def test_bootstrap_interval_brackets_the_median():
    t = np.random.default_rng(0).uniform(100, 200, 30)
    lo, hi = bootstrap_km_median(t, np.zeros(30, bool), n_boot=300)
    assert lo <= km_median(t, np.zeros(30, bool)) <= hi


def test_logrank_by_hand():
    # a: events at 1 and 2; b: events at 3, 4. At t=1: n=4, n_a=2, d=1 -> E_a=0.5, V=0.25;
    # t=2: n=3, n_a=1 -> E_a=1/3, V=2/9; t=3: n=2, n_a=0; t=4: n=1, n_a=0.
    ab = logrank([1, 2], [0, 0], [3, 4], [0, 0])
    assert ab.z == pytest.approx((2 - 0.5 - 1 / 3) / np.sqrt(0.25 + 2 / 9)) and ab.p_a_earlier < 0.05
    ba = logrank([3, 4], [0, 0], [1, 2], [0, 0])
    assert ba.z == pytest.approx(-ab.z) and ba.p_a_earlier > 0.9


def test_row_km_median_pools_each_seeds_units_and_resamples_seeds():
    rng = np.random.default_rng(3)
    t = rng.exponential(100, (6, 5))
    c = rng.random((6, 5)) < 0.3
    t[0, :2] = np.nan  # units without a value are left out
    ok = np.isfinite(t)
    assert km_median_of_rows(t, c) == km_median(t[ok], c[ok])
    assert km_median_of_rows(t, c, [1, 1, 4]) == km_median(np.r_[t[1], t[1], t[4]], np.r_[c[1], c[1], c[4]])
    assert math.isnan(km_median_of_rows(np.full((2, 2), np.nan), np.zeros((2, 2), bool)))
    draws = np.random.default_rng(0)
    manual = [km_median_of_rows(t, c, draws.integers(0, 6, 6)) for _ in range(300)]
    assert bootstrap_rows_km_median(t, c, n_boot=300, level=0.8, seed=0) == tuple(
        np.nanquantile(manual, [0.1, 0.9], method="inverted_cdf"))


def test_the_mean_at_a_given_sigma_maximises_the_censored_likelihood():
    from emergence.analysis.survival import censored_normal_mean

    y = np.array([1.0, 1.5, 2.2, 3.0, 3.0, 3.0])
    c = np.array([False, False, False, True, True, True])
    assert censored_normal_mean(y, np.zeros(6, bool), 0.3) == pytest.approx(y.mean(), abs=1e-7)  # uncensored
    grid = np.linspace(-2, 8, 200_001)
    loglik = [stats.norm.logpdf((y[~c] - m) / 0.3).sum() + stats.norm.logsf((y[c] - m) / 0.3).sum() for m in grid[::100]]
    coarse = grid[::100][int(np.argmax(loglik))]
    assert censored_normal_mean(y, c, 0.3) == pytest.approx(coarse, abs=0.01)
    # a narrower sigma puts the mean nearer the censored values' threshold than a wide one does
    assert censored_normal_mean(y, c, 0.3) < censored_normal_mean(y, c, 3.0)


@pytest.mark.parametrize("seed", range(4))
def test_censored_normal_fit_is_scipys_maximum_likelihood(seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(3.0, 0.7, 9)
    censored = values > np.quantile(values, 0.6)
    values = np.where(censored, np.quantile(values, 0.6), values)
    mu, sigma = censored_normal_fit(values, censored)
    expected = stats.norm.fit(stats.CensoredData(uncensored=values[~censored], right=values[censored]))
    assert (mu[0], sigma[0]) == pytest.approx(expected, rel=1e-4)


def test_censored_normal_fit_by_rows_closed_form_and_undefined():
    rows = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 5.0], [2.0, 2.0, 2.0]])
    censored = np.array([[False] * 3, [False, True, True], [False, False, True]])
    mu, sigma = censored_normal_fit(rows, censored)
    assert mu[0] == pytest.approx(2.0) and sigma[0] == pytest.approx(math.sqrt(2 / 3))  # divided by n
    assert np.isnan(mu[1:]).all() and np.isnan(sigma[1:]).all()  # one event; two events at one value

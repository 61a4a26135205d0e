"""Verdict rules: each decides on synthetic results where the claim holds, fails and cannot be
decided, and says "reproduced" on the paper's own numbers (../shared/paper/NOTES.md)."""
import math

import numpy as np
import pytest
from scipy import stats

from emergence.analysis.survival import seed_permutation_logrank
from emergence.claims.verdicts import (Arm, Verdict, bias_keeps_plateau_flat, detectable_hazard_ratio, earlier,
                                       every_seed_solves, hardest_at_medium_sparsity, head_sharpens_more_than_others,
                                       jumps_are_abrupt, jumps_coincide_with_entropy_drops, most_of, never_leaves_plateau,
                                       plateau_grows_with_state_size, recovers_most_of_gap, row_median_bounds,
                                       times_vary_across_seeds, what_decides_spread,
                                       lognormal_quartile_ratio,
                                       any_of, by_time_or_loss, lower_final_loss, median_ratio_interval,
                                       seeds_for_interval, seeds_per_arm_for_difference, settled_null, settled_permutation,
                                       undecided)

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


def test_seeds_to_decide_follow_schoenfeld():
    from emergence.claims.verdicts import seeds_to_decide
    # HR 2, alpha 0.1, power 0.8, every seed an event: D = 4 (1.2816 + 0.8416)^2 / ln(2)^2 = 37.5 -> 19 per arm
    assert seeds_to_decide(2.0, 1.0, ALPHA) == 19
    assert seeds_to_decide(2.0, 0.5, ALPHA) == 38          # half the seeds censored: twice the seeds
    assert seeds_to_decide(1.0, 1.0, ALPHA) == math.inf and seeds_to_decide(math.inf, 1.0, ALPHA) == math.inf
    assert "seeds per arm would" in compare([("one", draws(300, n=4), draws(350, n=4, seed=1))]).reason


def test_seeds_for_an_interval_follow_the_normal_approximation():
    z = 1.6448536  # z_(1 - 0.1 / 2)
    # estimate 10, interval 10 -+ z (se 1 at n = 10), threshold 9: n' = 10 (z + 0.8416)^2 = 61.8 -> 62
    assert seeds_for_interval(10.0, (10 - z, 10 + z), 9.0, 10, ALPHA) == 62
    # on the log scale the same arithmetic on ln(ratio): ln 4 -+ z ln 2 against ratio 2 -> n' = 4 (z + 0.8416)^2
    assert seeds_for_interval(4.0, (4 / 2 ** z, 4 * 2 ** z), 2.0, 4, ALPHA, log=True) == math.ceil(4 * (z + 0.8416) ** 2)
    assert seeds_for_interval(9.0, (8.0, 10.0), 9.0, 10, ALPHA) == math.inf        # the estimate on the threshold
    assert seeds_for_interval(10.0, (9.5, 10.5), 9.0, 10, ALPHA) == math.inf       # already excluded: not this case
    assert seeds_for_interval(math.inf, (1.0, math.inf), 2.0, 10, ALPHA, log=True) == math.inf
    # a censored median's unbounded far end does not enter: the facing end 1 gives se = 1 / z
    assert seeds_for_interval(2.0, (1.0, math.inf), 1.0, 12, ALPHA) == math.ceil(12 * ((z + 0.8416) / z) ** 2)
    assert seeds_for_interval(0.5, (0.0, math.inf), 1.0, 12, ALPHA) == math.inf  # the unbounded end faces it


def test_seeds_for_an_interval_reach_their_power_in_simulation():
    # normal seeds, mean 1, sd 2, threshold 0; a 90% t-free interval mean -+ z sd / sqrt(n) at n = 8
    z, sd, rng = 1.6448536, 2.0, np.random.default_rng(0)
    need = seeds_for_interval(1.0, (1 - z * sd / math.sqrt(8), 1 + z * sd / math.sqrt(8)), 0.0, 8, ALPHA)
    means = rng.normal(1.0, sd, (20_000, need)).mean(1)
    assert np.mean(means - z * sd / math.sqrt(need) > 0) == pytest.approx(0.8, abs=0.02)


def test_seeds_per_arm_for_a_difference_of_means():
    # var 1 in each arm, difference 0.5, alpha 0.1: (1.2816 + 0.8416)^2 x 2 / 0.25 = 36.05 -> 37
    a, b = np.array([-1.0, 0.0, 1.0]), np.array([-0.5, 0.5, 1.5])
    need = seeds_per_arm_for_difference(a, b, ALPHA)
    assert need == 37
    assert seeds_per_arm_for_difference(a, a, ALPHA) == math.inf
    # in simulation: normal arms at that size reject at alpha in ~80% of runs (z test, known variance)
    rng = np.random.default_rng(0)
    x, y = rng.normal(0, 1, (20_000, need)), rng.normal(0.5, 1, (20_000, need))
    z = (y.mean(1) - x.mean(1)) / math.sqrt(2 / need)
    assert np.mean(z > 1.2815516) == pytest.approx(0.8, abs=0.02)
    # an undecided final-loss comparison says it
    v = lower_final_loss([0.30, 0.25, 0.41, 0.33], [0.28, 0.36, 0.44, 0.31], claim="8", statement="", alpha=ALPHA)
    assert v.verdict == "inconclusive" and "seeds per arm would at 80% power" in v.reason, v.reason


def test_an_undecided_interval_says_how_many_seeds_would_decide():
    rng = np.random.default_rng(4)
    v = vary(Arm.of(rng.lognormal(7, 0.4, 8), np.zeros(8, bool)))
    assert v.verdict == "inconclusive", v.reason
    need = seeds_for_interval(v.estimate, v.interval, 1.5, 8, ALPHA, log=True)
    assert 8 < need < 10_000 and f"~{need:,} seeds would at 80% power" in v.reason


def test_undecided_needs_the_paper_profile_only_where_its_seeds_reach_the_need():
    assert undecided(27, 8, 32) == "needs the paper profile"
    assert undecided(32, 8, 32) == "needs the paper profile"
    assert undecided(33, 8, 32) == "inconclusive"           # more than any profile runs
    assert undecided(27, 8, None) == "inconclusive"         # no paper profile to compare with
    assert undecided(math.inf, 8, 10**6) == "inconclusive"  # no finite forecast
    assert undecided(27, 32, 32) == "inconclusive"          # this run is the paper profile's


def test_an_undecided_rule_says_whether_the_paper_profiles_seeds_would_decide_it():
    rng = np.random.default_rng(4)
    arm = Arm.of(rng.lognormal(7, 0.4, 8), np.zeros(8, bool))
    need = seeds_for_interval(vary(arm).estimate, vary(arm).interval, 1.5, 8, ALPHA, log=True)
    rule = lambda paper_n: times_vary_across_seeds(  # noqa: E731
        arm, claim="1", statement="", min_quartile_ratio=1.5, alpha=ALPHA, n_boot=500, paper_n=paper_n)
    enough, short = rule(need), rule(need - 1)
    assert enough.verdict == "needs the paper profile" and f"this run has 8, the paper profile {need:,}" in enough.reason
    assert short.verdict == "inconclusive" and f"the paper profile {need - 1:,}" in short.reason
    # a decided rule is untouched by the paper profile's count
    decided = Arm.of(rng.lognormal(7, 0.8, 16), np.zeros(16, bool))
    assert times_vary_across_seeds(decided, claim="1", statement="", min_quartile_ratio=1.5, alpha=ALPHA, n_boot=500,
                                   paper_n=10**6).verdict == "reproduced"
    # final loss, seeds per arm: 37 decide the difference below (test_seeds_per_arm_for_a_difference_of_means)
    a, b = [-1.0, 0.0, 1.0, 0.0], [-0.5, 0.5, 1.5, 0.5]
    loss = lambda paper_n: lower_final_loss(a, b, claim="8", statement="", alpha=ALPHA, paper_n=paper_n)  # noqa: E731
    need = seeds_per_arm_for_difference(a, b, ALPHA)
    assert loss(need).verdict == "needs the paper profile" and loss(need - 1).verdict == "inconclusive"
    # time to an event, seeds per arm (Schoenfeld)
    pair = [("one", draws(300, n=4), draws(350, n=4, seed=1))]
    time = lambda paper_n: earlier(pair, claim="8", statement="", statistic="", alpha=ALPHA,  # noqa: E731
                                   paper_n=paper_n)
    assert time(None).verdict == "inconclusive"
    assert time(10**6).verdict == "needs the paper profile" and "the paper profile 1,000,000" in time(10**6).reason
    assert time(4).verdict == "inconclusive"
    # abruptness, runs: an interval straddling the threshold
    ratios = np.random.default_rng(2).uniform(0.1, 0.45, (6, 4))
    jumps = lambda paper_n: jumps_are_abrupt(ratios, np.zeros((6, 4), bool), claim="1", statement="",  # noqa: E731
                                             max_ratio=0.25, alpha=ALPHA, n_boot=500, paper_n=paper_n)
    assert jumps(None).verdict == "inconclusive" and "runs would" in jumps(None).reason
    assert jumps(10**6).verdict == "needs the paper profile"


def test_two_measures_need_the_paper_profile_when_either_would_decide_there():
    open_time = earlier([("one", draws(300, n=4), draws(350, n=4, seed=1))], claim="8", statement="", statistic="",
                        alpha=ALPHA / 2, paper_n=4)
    a, b = [-1.0, 0.0, 1.0, 0.0], [-0.5, 0.5, 1.5, 0.5]
    paper_loss = lower_final_loss(a, b, claim="8", statement="", alpha=ALPHA / 2, paper_n=10**6)
    assert (open_time.verdict, paper_loss.verdict) == ("inconclusive", "needs the paper profile")
    both = by_time_or_loss(open_time, paper_loss, claim="8", statement="")
    assert both.verdict == "needs the paper profile" and both.p_value == paper_loss.p_value


def test_a_verdict_outside_the_vocabulary_is_an_error():
    with pytest.raises(ValueError, match="verdict"):
        Verdict(claim="1", statement="", paper="", statistic="", estimate=0.0, interval=(0.0, 1.0), n=1, censored=0,
                detectable="", verdict="holds", reason="")


def compare(strata, **kw):
    return earlier(strata, claim="x", statement="a before b", statistic="ratio", alpha=ALPHA, **kw)


def test_earlier_holds_fails_partly_and_cannot_be_decided():
    assert compare([("one", draws(100), draws(900, seed=1))]).verdict == "reproduced"
    assert compare([("one", draws(900), draws(100, seed=1))]).verdict == "not reproduced"
    assert compare([("one", draws(100, n=16), draws(300, n=16, seed=1))], min_ratio=10).verdict == "partly"
    never = [("one", seeds_at(None, budget=1000), seeds_at(None, budget=1000))]
    assert compare(never).verdict == "inconclusive"
    assert compare(never).detectable == "nothing: no event in either arm"
    short = compare(never, budget=1000, paper_budget=10_000)
    assert short.verdict == "needs the paper profile" and "10,000" in short.reason
    # strata add up: two weak strata decide where one does not
    one = compare([("s1", draws(300, n=4), draws(600, n=4, seed=1))])
    two = compare([("s1", draws(300, n=4), draws(600, n=4, seed=1)), ("s2", draws(300, n=4, seed=2),
                                                                        draws(600, n=4, seed=3))])
    assert two.p_value < one.p_value


def test_an_unbounded_ratio_reads_as_the_scorecard_writes_it():
    v = compare([("one", draws(100), seeds_at(None, n=8, budget=3000))])
    assert v.verdict == "reproduced" and math.isinf(v.estimate)
    assert "ratio ∞ [" in v.reason and "vs not reached" in v.reason  # a median is not reached; a ratio is ∞


def test_a_factor_asked_is_tested_not_read_off_the_point_estimate():
    """At a true ratio of exactly the factor asked the point estimate clears it about half the
    time; the log-rank with the later arm's times divided by the factor says "reproduced" at
    about its level (the pilot's 400 draws: 9.5-13.2%), and its power grows with the ratio."""
    rng = np.random.default_rng(7)

    def arm(median, n=8):
        return Arm.of(median * np.exp(0.5 * rng.standard_normal(n)), np.zeros(n, bool))

    at_factor = [compare([("s", arm(200), arm(400))], min_ratio=2.0, n_boot=100).verdict for _ in range(150)]
    assert at_factor.count("reproduced") <= 30  # 20% at most, against ~50% for the point estimate
    far = [compare([("s", arm(200), arm(1600))], min_ratio=2.0, n_boot=100).verdict for _ in range(40)]
    assert far.count("reproduced") >= 36
    # earlier, but with the factor neither shown nor refuted: undecided, and it says what decides it
    open_size = compare([("s", seeds_at(200, n=4, spread=0.3), seeds_at(420, n=4, spread=0.3))], min_ratio=2.0)
    assert open_size.verdict in ("inconclusive", "needs the paper profile")
    assert "at least 2 times later" in open_size.reason


def test_an_unbounded_stratum_does_not_make_the_effect_unbounded():
    # one stratum where b never has the event, one where b is faster: the effect is the lower middle
    v = compare([("one", draws(100), seeds_at(None, n=8, budget=3000)), ("two", draws(900), draws(600, seed=1))])
    assert math.isfinite(v.estimate) and v.estimate < 1
    # strata pulling in opposite directions: the stratified log-rank decides (here a earlier,
    # p = 0.015), and the reason says that the effect's median over strata points the other way
    assert v.verdict == "reproduced" and "strata, or the curves within one, disagree" in v.reason, v.reason


def test_earlier_with_shared_seeds_permutes_whole_seeds():
    # three capabilities measured on the same five seeds of each model
    fast = [draws(100, n=5, seed=k) for k in range(3)]
    slow = [draws(900, n=5, seed=10 + k) for k in range(3)]
    v = compare([(f"cap{k}", fast[k], slow[k]) for k in range(3)], shared_seeds=True)
    assert v.verdict == "reproduced" and v.n == 10
    assert v.p_value >= 1 / 252  # exact over the C(10, 5) reassignments of seeds
    assert compare([(f"cap{k}", slow[k], fast[k]) for k in range(3)], shared_seeds=True).verdict == "not reproduced"


def test_strata_on_the_same_seeds_resample_whole_seeds():
    """Two capabilities that are copies of one another carry one capability's information: on
    whole seeds resampled the interval is the single stratum's, draw for draw; resampled stratum
    by stratum as if independent it is another (the copies count as twice the seeds)."""
    from emergence.claims.verdicts import strata_ratio_interval

    a, b = draws(300, n=6, seed=3), draws(600, n=6, seed=4)
    one = strata_ratio_interval([(a, b)], 0.9, n_boot=400)
    assert strata_ratio_interval([(a, b), (a, b)], 0.9, n_boot=400, shared_seeds=True) == one
    assert strata_ratio_interval([(a, b), (a, b)], 0.9, n_boot=400) != one
    with pytest.raises(ValueError, match="same seeds"):
        strata_ratio_interval([(a, b), (draws(300, n=5), b)], 0.9, n_boot=10, shared_seeds=True)
    # earlier() reads its interval so where the strata share seeds
    v = compare([("cap0", a, b), ("cap1", a, b), ("cap2", a, b)], shared_seeds=True, n_boot=400)
    assert v.interval == strata_ratio_interval([(a, b)], 1 - ALPHA, n_boot=400)


def test_a_shared_seed_log_rank_near_alpha_is_settled_by_every_split():
    # two capabilities on 8 + 8 seeds whose 2,000 random reassignments give p = 0.101, within
    # Monte Carlo error of alpha = 0.1: drawn again, and C(16, 8) = 12,870 is few enough to enumerate
    fast = [draws(500, n=8, seed=21 + k) for k in range(2)]
    slow = [draws(700, n=8, seed=1021 + k) for k in range(2)]
    stack = lambda arms, attr: np.stack([getattr(x, attr) for x in arms], axis=1)  # noqa: E731
    arrays = [stack(fast, "times"), stack(fast, "censored"), stack(slow, "times"), stack(slow, "censored")]
    drawn = seed_permutation_logrank(*arrays, n_perm=2000)
    assert abs(drawn.p_a_earlier - ALPHA) < 3 * math.sqrt(ALPHA * (1 - ALPHA) / 2000)
    v = compare([(f"cap{k}", fast[k], slow[k]) for k in range(2)], shared_seeds=True)
    exact = seed_permutation_logrank(*arrays, n_perm=math.inf)
    assert exact.permutations == math.comb(16, 8) and v.p_value == exact.p_a_earlier != drawn.p_a_earlier
    assert "(12,870 permutations)" in v.reason


def test_earlier_on_the_papers_numbers():
    # Fig 4-right: with the bias the automata leave the plateau earlier from S = 32 on
    strata = [(f"S = {S}", seeds_at(b), seeds_at(m)) for S, b, m in zip(PAPER_SIZES, PAPER_BIASED, PAPER_STANDARD)
              if S >= 32]
    assert compare(strata, budget=10_000, paper_budget=10_000).verdict == "reproduced"
    # Fig 6: at S = 16, s = 3 the Mixer drops at ~500-700 steps, the transformer after ~3-5k
    mixer, transformer = Arm.of([500, 600, 700], [0, 0, 0]), Arm.of([3000, 4000, 5000], [0, 0, 0])
    assert compare([("s = 3", mixer, transformer)], min_ratio=3.0).verdict == "reproduced"


def vary(arm):
    return times_vary_across_seeds(arm, claim="1", statement="random times", min_quartile_ratio=1.5, alpha=ALPHA,
                                   n_boot=500)


def test_times_vary_censored_at_the_budget_asks_for_a_longer_one():
    """Most seeds censored at the budget: the fit cannot bound the spread above, and the verdict
    says the budget, not the seed count, decides (the paper profile's where it trains longer)."""
    arm = Arm.of([580, 920] + [1000] * 8, [False, False] + [True] * 8)
    rule = lambda paper_budget: times_vary_across_seeds(  # noqa: E731
        arm, claim="1", statement="", min_quartile_ratio=1.5, alpha=ALPHA, budget=1000, n_boot=500, paper_n=10,
        paper_budget=paper_budget)
    assert math.isinf(rule(None).interval[1])
    assert rule(None).verdict == "inconclusive" and "a longer budget decides" in rule(None).reason
    longer = rule(20_000)
    assert longer.verdict == "needs the paper profile" and "8 of 10 seeds censored" in longer.reason
    assert "20,000 steps" in longer.reason
    assert rule(1000).verdict == "inconclusive"  # the paper profile trains no longer
    # few seeds censored leave the interval bounded: the seed count still decides
    bounded = Arm.of([300, 420, 520, 650, 800, 900, 1000], [False] * 6 + [True])
    v = times_vary_across_seeds(bounded, claim="1", statement="", min_quartile_ratio=1.5, alpha=ALPHA, budget=1000,
                                n_boot=500, paper_budget=20_000)
    assert math.isfinite(v.interval[1]) and "longer budget" not in v.reason
    # one seed emerged, the rest censored: no spread to fit, and the budget is what hid it
    one = Arm.of([640] + [1000] * 4, [False] + [True] * 4)
    hidden = lambda paper_budget: times_vary_across_seeds(  # noqa: E731
        one, claim="1", statement="", min_quartile_ratio=1.5, alpha=ALPHA, budget=1000, n_boot=500,
        paper_budget=paper_budget)
    assert math.isnan(hidden(None).estimate) and hidden(None).verdict == "inconclusive"
    assert hidden(1000).verdict == "inconclusive"
    assert hidden(20_000).verdict == "needs the paper profile" and "20,000 steps" in hidden(20_000).reason
    # every seed emerged at one step: nothing censored, so no budget would help
    same = Arm.of([700] * 4, [False] * 4)
    assert times_vary_across_seeds(same, claim="1", statement="", min_quartile_ratio=1.5, alpha=ALPHA, budget=1000,
                                   n_boot=500, paper_budget=20_000).verdict == "inconclusive"


def test_an_undecided_spread_says_what_would_decide_it():
    censored = times_vary_across_seeds(Arm.of([580, 920] + [1000] * 8, [False, False] + [True] * 8), claim="1",
                                       statement="", min_quartile_ratio=1.5, alpha=ALPHA, budget=1000, n_boot=500)
    assert what_decides_spread(censored, 1.5, ALPHA) == " (a longer budget)"
    rng = np.random.default_rng(1)
    near = vary(Arm.of(np.exp(7 + 0.3 * rng.standard_normal(6)), np.zeros(6, bool)))
    assert near.verdict == "inconclusive" and math.isfinite(near.interval[1])
    need = seeds_for_interval(near.estimate, near.interval, 1.5, 6, ALPHA, log=True)
    assert 6 < need < math.inf and what_decides_spread(near, 1.5, ALPHA) == f" (~{need:,} seeds)"
    decided = vary(Arm.of(np.random.default_rng(0).lognormal(7, 0.8, 16), np.zeros(16, bool)))
    assert decided.verdict == "reproduced" and what_decides_spread(decided, 1.5, ALPHA) == ""
    one = vary(Arm.of([700, 700, 700, 3000], [False, False, False, True]))
    assert math.isnan(one.estimate) and what_decides_spread(one, 1.5, ALPHA) == " (a longer budget or more seeds)"


def test_times_vary_holds_fails_and_cannot_be_decided():
    rng = np.random.default_rng(0)
    assert vary(Arm.of(rng.lognormal(7, 0.8, 16), np.zeros(16, bool))).verdict == "reproduced"
    together = Arm.of(1000 * (1 + 0.02 * rng.standard_normal(16)), np.zeros(16, bool))
    assert vary(together).verdict == "not reproduced"
    assert vary(Arm.of([500] + [3000] * 7, [False] + [True] * 7)).verdict == "inconclusive"
    assert vary(Arm.of([700, 700, 700, 3000], [False, False, False, True])).verdict == "inconclusive"  # one distinct
    # half the seeds never emerge while the others do within a quarter of each other: spread out
    split = vary(Arm.of([800, 900, 1000, 1100] + [3000] * 4, [False] * 4 + [True] * 4))
    assert split.verdict == "reproduced" and split.censored == 4
    with pytest.raises(ValueError, match="positive"):
        vary(Arm.of([0, 100, 200], [False] * 3))


def test_the_quartile_ratios_interval_is_the_exact_chi_square_one_without_censoring():
    """Uncensored, with no budget: n sigma_hat^2 / sigma^2 ~ chi-square(n - 1), the textbook
    interval; with a budget far beyond every time the simulated pivot gives the same interval."""
    times = np.exp(np.array([6.1, 6.9, 7.4, 6.6, 7.8]))
    arm = Arm.of(times, np.zeros(5, bool))
    sigma, est, (lo, hi) = lognormal_quartile_ratio(arm, threshold=1.5, alpha=ALPHA)
    logs = np.log(times)
    assert sigma == pytest.approx(np.std(logs))  # the MLE, divided by n
    ss = ((logs - logs.mean()) ** 2).sum()
    chi = stats.chi2.ppf([1 - ALPHA / 2, ALPHA / 2], 4)
    z = stats.norm.ppf(0.75)
    assert (lo, hi) == pytest.approx(tuple(np.exp(2 * z * np.sqrt(ss / chi))))
    assert est == pytest.approx(math.exp(2 * z * sigma)) and est == pytest.approx(
        np.exp(stats.norm.ppf(0.75, logs.mean(), sigma)) / np.exp(stats.norm.ppf(0.25, logs.mean(), sigma)))
    _, _, (s_lo, s_hi) = lognormal_quartile_ratio(arm, threshold=1.5, alpha=ALPHA, budget=1e12, n_boot=20_000)
    assert s_lo == pytest.approx(lo, rel=0.03) and s_hi == pytest.approx(hi, rel=0.05)


@pytest.mark.parametrize("n,budget_quantile", [(5, None), (8, None), (8, 0.75)])
def test_times_vary_is_calibrated_at_its_threshold(n, budget_quantile):
    """Lognormal seeds whose true quartile ratio is exactly the threshold: each decision comes
    back about alpha / 2 of the time (200 draws: at most 10%), censored seeds included. The
    percentile bootstrap of Kaplan-Meier quartiles this rule replaced said "the seeds emerge
    together" in 20% of such draws at 5 seeds."""
    rng = np.random.default_rng(n)
    sigma = math.log(1.5) / (2 * stats.norm.ppf(0.75))
    budget = None if budget_quantile is None else math.exp(7 + sigma * stats.norm.ppf(budget_quantile))
    verdicts = []
    for i in range(200):
        t = rng.lognormal(7, sigma, n)
        c = np.zeros(n, bool) if budget is None else t >= budget
        t = t if budget is None else np.minimum(t, budget)
        verdicts.append(times_vary_across_seeds(Arm.of(t, c), claim="1", statement="", min_quartile_ratio=1.5,
                                                alpha=ALPHA, budget=budget, n_boot=500, seed=i).verdict)
    assert verdicts.count("reproduced") <= 20 and verdicts.count("not reproduced") <= 20
    assert verdicts.count("inconclusive") + verdicts.count("needs the paper profile") >= 150


def abrupt(ratio, censored):
    return jumps_are_abrupt(np.asarray(ratio), np.asarray(censored), claim="1", statement="abrupt", max_ratio=0.25,
                            alpha=ALPHA, n_boot=500)


def test_abruptness_holds_fails_and_cannot_be_decided():
    rng = np.random.default_rng(1)
    assert abrupt(rng.uniform(0.02, 0.1, (8, 16)), np.zeros((8, 16), bool)).verdict == "reproduced"
    assert abrupt(rng.uniform(0.5, 1.0, (8, 16)), np.zeros((8, 16), bool)).verdict == "not reproduced"
    # slow jumps that never finish are censored lower bounds, not dropped: they still refute
    slow = abrupt(np.column_stack([rng.uniform(0.02, 0.1, 8), rng.uniform(0.6, 1, (8, 3))]),
                  np.column_stack([np.zeros(8, bool), np.ones((8, 3), bool)]))
    assert slow.verdict == "not reproduced" and slow.censored == 24
    assert abrupt(np.full((4, 4), np.nan), np.zeros((4, 4), bool)).verdict == "inconclusive"
    # the run is the unit: four runs cannot decide a sign test at alpha 0.1, however many units
    few = abrupt(rng.uniform(0.02, 0.1, (4, 64)), np.zeros((4, 64), bool))
    assert few.verdict == "inconclusive" and "needs at least 5" in few.reason and few.n == 4
    # an evaluation grid as coarse as the threshold cannot show abruptness either way
    coarse = jumps_are_abrupt(rng.uniform(0.3, 0.4, (8, 4)), np.zeros((8, 4), bool), claim="1", statement="",
                              max_ratio=0.25, alpha=ALPHA, resolution=np.full((8, 4), 0.3), n_boot=200)
    assert coarse.verdict == "inconclusive" and "denser evaluations" in coarse.reason


def test_a_runs_median_is_bracketed_by_its_two_middle_units_and_censored_bounds():
    values = np.array([[0.1, 0.3, 0.2, 0.4], [0.5, 0.1, 0.3, np.nan], [0.2, 0.6, np.nan, np.nan],
                       [np.nan] * 4])
    censored = np.array([[0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]], bool)
    lower, upper = row_median_bounds(values, censored)
    # even count: the 2nd and 3rd smallest; a censored unit (0.3 in run 2, 0.6 in run 3) may lie
    # anywhere above its bound: the lower median takes the bound, the upper median inf
    assert lower.tolist() == [0.2, 0.3, 0.2] and upper.tolist() == [0.3, 0.5, np.inf]


def test_abruptness_interval_is_the_sign_test_over_runs_medians():
    rng = np.random.default_rng(3)
    ratio = rng.uniform(0.05, 0.4, (9, 3))  # odd units per run: each run's median is its middle unit
    rule = abrupt(ratio, np.zeros(ratio.shape, bool))
    ci = stats.quantile_test(np.median(ratio, 1), q=0.5, p=0.5).confidence_interval(confidence_level=1 - ALPHA)
    assert rule.interval == (ci.low, ci.high) and rule.estimate == np.median(np.median(ratio, 1))
    # a tie in a run's middle goes against the verdict being tested: two units each side of
    # the threshold in every run cannot say "reproduced" or "not reproduced"
    tied = abrupt(np.tile([0.1, 0.15, 0.35, 0.4], (12, 1)), np.zeros((12, 4), bool))
    assert tied.interval == (0.15, 0.35) and tied.verdict != "reproduced" and tied.verdict != "not reproduced"


def test_abruptness_at_the_threshold_rarely_decides():
    """Operating characteristic at a true median of exactly max_ratio (lognormal ratios, runs
    sharing half the variance, 15 runs x 4 units as the language models): each wrong verdict
    well under the nominal 5% (the pilot's 1,000 draws read 0.3% and 0.1%)."""
    rng = np.random.default_rng(4)
    verdicts = []
    for _ in range(200):
        z = np.sqrt(0.5) * rng.standard_normal((15, 1)) + np.sqrt(0.5) * rng.standard_normal((15, 4))
        verdicts.append(abrupt(0.25 * np.exp(0.5 * z), np.zeros((15, 4), bool)).verdict)
    assert verdicts.count("reproduced") <= 10 and verdicts.count("not reproduced") <= 10


def test_abruptness_on_the_papers_numbers():
    # Pythia-410M: p(correct) 0.16 at 30k -> 0.61 at 31k, one checkpoint interval. The paper shows
    # one run; read as its claim for every run of its Fig 1 (10 seeds of that size), it holds
    assert abrupt([[1000 / 31_000]] * 10, [[False]] * 10).verdict == "reproduced"
    # one run alone is no sign test
    assert abrupt([[1000 / 31_000]], [[False]]).verdict == "inconclusive"


def coincide(emergence, drop):
    return jumps_coincide_with_entropy_drops(np.asarray(emergence), np.asarray(drop), claim="2", statement="coincide",
                                             tolerance=100, alpha=ALPHA, n_perm=500, n_boot=200)


def test_coincidence_holds_fails_and_cannot_be_decided():
    rng = np.random.default_rng(2)
    e = rng.uniform(500, 3000, (4, 16))
    assert coincide(e, e + rng.normal(0, 30, e.shape)).verdict == "reproduced"
    assert coincide(e, rng.uniform(0, 3000, e.shape)).verdict == "not reproduced"
    # every unit jumps at the same step: any head's drop is as close, the pairing is untestable
    same = np.full((4, 16), 1000.0)
    assert coincide(same, same + rng.normal(0, 30, same.shape)).verdict == "inconclusive"
    assert coincide(e[:, :1], e[:, :1]).verdict == "inconclusive"


def test_coincidence_on_the_papers_numbers():
    # the blog's S = 16, s = 3 run: 16 jumps between ~500 and ~4600 steps, each with a head's entropy drop
    e = np.linspace(500, 4600, 16)[None]
    assert coincide(e, e + 50).verdict == "reproduced"


def test_coincidence_in_jump_widths_scales_with_the_jump_not_the_grid():
    rng = np.random.default_rng(4)
    e = rng.uniform(500, 3000, (8, 16))
    lag = rng.choice([-1, 1], e.shape) * rng.uniform(25, 35, e.shape)   # ~30 steps from each unit's jump
    kw = dict(claim="2", statement="coincide", alpha=ALPHA, n_perm=500, n_boot=200)
    # wide jumps (60 steps): inside its own jump, so it coincides; a grid-tied tolerance of two
    # 10-step evaluations calls the same run "partly" (closer than chance, beyond 20 steps)
    wide = np.full(e.shape, 60.0)
    by_width = jumps_coincide_with_entropy_drops(e, e + lag, tolerance=1.0, width=wide, **kw)
    by_grid = jumps_coincide_with_entropy_drops(e, e + lag, tolerance=2 * 10, **kw)
    assert (by_width.verdict, by_grid.verdict) == ("reproduced", "partly")
    assert "jump widths (tolerance 1)" in by_width.reason and by_width.estimate == pytest.approx(0.5, abs=0.05)
    # narrow jumps (5 steps): the same lags are six jumps away, however coarse the grid
    narrow = np.full(e.shape, 5.0)
    assert jumps_coincide_with_entropy_drops(e, e + lag, tolerance=1.0, width=narrow, **kw).verdict == "partly"
    assert jumps_coincide_with_entropy_drops(e, e + lag, tolerance=2 * 50, **kw).verdict == "reproduced"
    # drops unrelated to the jumps fail; units with no width (never left the plateau) are left out
    assert jumps_coincide_with_entropy_drops(e, rng.uniform(0, 3000, e.shape), tolerance=1.0, width=wide,
                                             **kw).verdict == "not reproduced"
    assert jumps_coincide_with_entropy_drops(e, e + lag, tolerance=1.0, width=np.full(e.shape, np.nan),
                                             **kw).verdict == "inconclusive"


def test_coincidence_in_jump_widths_on_the_papers_numbers():
    # the blog's S = 16, s = 3 run: 16 jumps between ~500 and ~4600 steps, each with an entropy drop
    # in 1-2 heads; the figure shows each jump over a few hundred steps, the drop within it
    e = np.linspace(500, 4600, 16)[None]
    v = jumps_coincide_with_entropy_drops(e, e + 50, tolerance=1.0, width=np.full(e.shape, 200.0), claim="2",
                                          statement="coincide", alpha=ALPHA, n_perm=500, n_boot=200)
    assert v.verdict == "reproduced"


def solve_times(solved, n=3, budget=10_000, at=4000):
    return Arm.of([at if solved else budget] * n, [not solved] * n)


def test_hump_on_the_papers_numbers():
    # S = 16: s <= 3 and s >= 15 solved, s = 5..12 near chance; S = 32: s <= 2 and s >= 31 solved, 4..29 at chance
    strata = [("S = 16", solve_times(True), solve_times(False), solve_times(True)),
              ("S = 32", solve_times(True, at=3000), solve_times(False), solve_times(True, at=5000))]
    assert hardest_at_medium_sparsity(strata, alpha=ALPHA, budget=10_000, paper_budget=10_000).verdict == "reproduced"


def test_hump_holds_fails_and_cannot_be_decided():
    hump = [("S = 16", draws(200), draws(2000, seed=1), draws(300, seed=2))]
    assert hardest_at_medium_sparsity(hump, alpha=ALPHA).verdict == "reproduced"
    # difficulty that only falls with s is no hump: the low end is the slowest
    falls = [("S = 16", draws(2000), draws(800, seed=1), draws(200, seed=2))]
    assert hardest_at_medium_sparsity(falls, alpha=ALPHA).verdict == "not reproduced"
    one_end = [("S = 16", draws(200), draws(2000, seed=1), draws(2000, seed=2))]
    assert hardest_at_medium_sparsity(one_end, alpha=ALPHA).verdict == "partly"
    censored = [("S = 16", seeds_at(None, budget=1000), seeds_at(None, budget=1000), seeds_at(None, budget=1000))]
    assert hardest_at_medium_sparsity(censored, alpha=ALPHA, budget=1000,
                                      paper_budget=10_000).verdict == "needs the paper profile"


def test_never_leaving_and_every_seed_solving():
    kw = dict(claim="4", statement="s", alpha=ALPHA)
    at_chance = seeds_at(None, budget=10_000)  # S = 32, s = 4..29 at chance after 10^4 steps
    assert never_leaves_plateau(at_chance, budget=10_000, paper_budget=10_000, **kw).verdict == "reproduced"
    assert never_leaves_plateau(seeds_at(None, budget=1000), budget=1000, paper_budget=10_000,
                                **kw).verdict == "needs the paper profile"
    assert never_leaves_plateau(Arm.of([600, 1000, 1000], [0, 1, 1]), budget=1000, paper_budget=10_000,
                                **kw).verdict == "not reproduced"
    assert every_seed_solves(solve_times(True), budget=10_000, paper_budget=10_000, **kw).verdict == "reproduced"
    assert every_seed_solves(solve_times(False, budget=1000), budget=1000, paper_budget=10_000,
                             **kw).verdict == "needs the paper profile"
    assert every_seed_solves(solve_times(False), budget=10_000, paper_budget=10_000, **kw).verdict == "not reproduced"


def test_gap_recovery_holds_fails_and_cannot_be_decided():
    kw = dict(claim="3", statement="s", most=0.5, alpha=ALPHA, n_boot=500)
    assert recovers_most_of_gap([0.7, 0.8, 0.9, 0.75, 0.85, 0.65], **kw).verdict == "reproduced"
    assert recovers_most_of_gap([0.1, 0.2, 0.15, 0.3, 0.05, 0.25], **kw).verdict == "not reproduced"
    assert recovers_most_of_gap([0.2, 0.9, 0.4, 0.7], **kw).verdict == "inconclusive"
    assert recovers_most_of_gap([], **kw).verdict == "inconclusive"
    # the seeds' median by order statistics (scipy's interval); four seeds can never decide it
    seeds = [0.55, 0.6, 0.52, 0.9, 0.7, 0.45, 0.8, 0.65]
    ci = stats.quantile_test(seeds, q=0.5, p=0.5).confidence_interval(confidence_level=1 - ALPHA)
    assert recovers_most_of_gap(seeds, **kw).interval == (ci.low, ci.high) == (0.52, 0.8)
    assert recovers_most_of_gap([0.9] * 4, **kw).verdict == "inconclusive"


def test_a_verdict_against_the_paper_counts_only_at_the_papers_setting():
    from emergence.claims.verdicts import Verdict, at_the_papers_setting

    base = dict(claim="8", statement="s", paper="", statistic="x", estimate=0.5, interval=(0.0, 1.7), n=8, censored=2,
                detectable="d", reason="the Mixer 2x slower")
    refuted, held = Verdict(**base, verdict="not reproduced"), Verdict(**base, verdict="reproduced")
    paper = {"state_size": [16], "sparsity": [3]}
    off = [{"state_size": 16, "sparsity": 2, "n_rules": 4}]
    # at a sparsity the paper does not use: no verdict against it, deferred to the paper profile where it runs s = 3
    v = at_the_papers_setting(refuted, used=off, paper=paper, profile_runs_it=True)
    assert v.verdict == "needs the paper profile"
    assert v.reason.startswith("decided at sparsity = 2, where the paper states it at state_size = 16, sparsity = 3")
    assert "the Mixer 2x slower" in v.reason
    assert at_the_papers_setting(refuted, used=off, paper=paper, profile_runs_it=False).verdict == "inconclusive"
    # at the paper's setting a refutation stands, and nothing is said
    assert at_the_papers_setting(refuted, used=[{"state_size": 16, "sparsity": 3}], paper=paper,
                                 profile_runs_it=True) == refuted
    # one setting of several off the paper's is enough to withhold it
    both = [{"state_size": 16, "sparsity": 3}, {"state_size": 16, "sparsity": 2}]
    assert at_the_papers_setting(refuted, used=both, paper=paper, profile_runs_it=True).verdict != "not reproduced"
    # any other verdict stands, naming where it was decided
    kept = at_the_papers_setting(held, used=off, paper=paper, profile_runs_it=True)
    assert kept.verdict == "reproduced" and "(decided at sparsity = 2" in kept.reason


def test_gap_recovery_below_the_all_heads_ceiling_cannot_pass_and_says_so():
    kw = dict(claim="3", statement="s", most=0.5, alpha=ALPHA)
    few = [0.1, 0.2, 0.15, 0.3, 0.05, 0.25]   # the top heads alone: below 'most' in every seed
    # every head together recovers most of the gap, a few do not: a test the claim could pass, failed
    high = recovers_most_of_gap(few, ceiling=[0.8, 0.9, 0.7, 0.85, 0.95, 0.75], **kw)
    assert high.verdict == "not reproduced" and "every head's pattern patched at once recovers 0.825" in high.reason
    # every head together stays below it: no choice of heads can pass, so no verdict against the paper
    low = recovers_most_of_gap(few, ceiling=[0.2, 0.25, 0.3, 0.15, 0.22, 0.28], output=[0.9] * 6, **kw)
    assert low.verdict == "inconclusive" and "cannot pass at this scale" in low.reason
    assert "the gap lives in what the heads read" in low.reason and "every head's output 0.9 over 6" in low.reason
    # a ceiling whose interval reaches 'most' leaves the ordinary rule in charge
    assert recovers_most_of_gap(few, ceiling=[0.2, 0.3, 0.45, 0.6, 0.7, 0.9], **kw).verdict == "not reproduced"
    # a few heads that pass pass, whatever the ceiling says (it is measured on other patches)
    assert recovers_most_of_gap([0.7, 0.8, 0.9, 0.75, 0.85, 0.65], ceiling=[0.3] * 6, **kw).verdict == "reproduced"
    # NaN ceilings (runs that predate it) are no ceiling
    assert recovers_most_of_gap(few, ceiling=[float("nan")] * 6, **kw).verdict == "not reproduced"


def test_head_sharpening_against_the_other_heads():
    kw = dict(claim="2", statement="s", alpha=ALPHA, n_boot=200)
    assert head_sharpens_more_than_others([-0.5] * 8, **kw).verdict == "reproduced"
    assert head_sharpens_more_than_others([0.4] * 8, **kw).verdict == "not reproduced"
    assert head_sharpens_more_than_others([-0.5, 0.4, -0.1, 0.2], **kw).verdict == "inconclusive"
    assert head_sharpens_more_than_others([], **kw).verdict == "inconclusive"


def test_most_of_counts_parts():
    def part(v):
        return Verdict(claim="8", statement="", paper="", statistic="", estimate=0.0, interval=(0.0, 0.0), n=8,
                       censored=0, detectable="", verdict=v, reason="")
    kw = dict(claim="8", statement="mostly")
    assert most_of([part("reproduced")] * 2 + [part("not reproduced")], **kw).verdict == "reproduced"
    assert most_of([part("not reproduced")] * 2 + [part("reproduced")], **kw).verdict == "not reproduced"
    assert most_of([part("reproduced"), part("not reproduced")], **kw).verdict == "partly"
    assert most_of([part("reproduced")] * 2 + [part("not reproduced")] * 2, **kw).verdict == "partly"
    assert most_of([part("inconclusive")] * 3, **kw).verdict == "inconclusive"
    # undecided parts that could still tip a majority leave the claim undecided, whichever way
    # the decided ones lean
    open_one = most_of([part("reproduced"), part("inconclusive"), part("not reproduced")], **kw)
    assert open_one.verdict == "inconclusive" and "could still make a majority" in open_one.reason
    assert "1 more reproduced would make it reproduced; 1 more not reproduced" in open_one.reason
    leaning = most_of([part("reproduced")] * 2 + [part("not reproduced")] * 6 + [part("inconclusive")] * 4, **kw)
    assert leaning.reason.endswith("(1 more not reproduced would make it not reproduced)")
    assert most_of([part("reproduced")] * 2 + [part("not reproduced")] * 6 + [part("inconclusive")] * 4,
                   **kw).verdict == "inconclusive"
    assert most_of([part("reproduced"), part("not reproduced"), part("needs the paper profile")],
                   **kw).verdict == "needs the paper profile"
    # one undecided part among five that cannot tip it: two each way is settled as partly
    assert most_of([part("reproduced")] * 2 + [part("not reproduced")] * 2 + [part("partly")],
                   **kw).verdict == "partly"
    assert most_of([part("reproduced")] * 2 + [part("not reproduced")] * 2 + [part("partly"), part("inconclusive")],
                   **kw).verdict == "partly"


# --- final loss at the budget (claims 6, 7: the paper's Fig 5) -----------------------------------

def loss_verdict(better, worse, alpha=ALPHA):
    return lower_final_loss(better, worse, claim="6", statement="more heads help", alpha=alpha)


def test_final_loss_holds_fails_and_cannot_be_decided():
    rng = np.random.default_rng(0)
    low, high = 0.1 + 0.02 * rng.random(4), 0.6 + 0.02 * rng.random(4)
    held = loss_verdict(low, high)
    assert held.verdict == "reproduced"
    assert held.p_value == pytest.approx(1 / math.comb(8, 4))     # exact: every split enumerated
    assert held.interval[0] > 0.4
    assert loss_verdict(high, low).verdict == "not reproduced"
    same = loss_verdict(np.zeros(4), np.zeros(4))                  # both arms at the floor
    assert same.verdict == "inconclusive" and "same loss" in same.reason
    mixed = loss_verdict([0.1, 0.5, 0.2, 0.6], [0.5, 0.1, 0.6, 0.2])
    assert mixed.verdict == "inconclusive"
    few = loss_verdict([0.1], [0.6])                               # one seed each: p >= 1/2 whatever happens
    assert few.verdict == "inconclusive" and "more seeds" in few.reason


def test_final_loss_on_the_papers_numbers():
    # Fig 5: final loss at 10^4 steps at H = 1 and H >= 16 (linear map) or H = 128 (automata),
    # one run per head size 4 / 8 / 16, taken as three runs of each arm
    assert loss_verdict([0.336, 0.336, 0.336], [0.692, 0.692, 0.692]).verdict == "reproduced"
    assert loss_verdict([0.15, 0.12, 0.12], [1.37, 1.30, 0.98]).verdict == "reproduced"
    # Fig 6 (claim 8, the sparser maps): the Mixer's final loss below the transformer's at s = 5 and 7,
    # at the level the scorecard tests the deciding reading (alpha: 3 runs an arm cannot reach alpha / 2)
    assert loss_verdict([0.395] * 3, [0.59] * 3).verdict == "reproduced"
    assert loss_verdict([0.46] * 3, [0.585] * 3).verdict == "reproduced"
    assert loss_verdict([0.46] * 3, [0.585] * 3, alpha=ALPHA / 2).verdict != "reproduced"


class _Fixed:
    """A stand-in permutation test whose p-value depends on how many permutations it draws."""
    def __init__(self, by_n):
        self.by_n, self.asked = by_n, []

    def __call__(self, n):
        self.asked.append(n)
        return type("Result", (), {"pvalue": self.by_n[n]})()


def test_a_permutation_p_near_alpha_is_drawn_again_until_settled():
    near = _Fixed({2000: 0.049, 20000: 0.03})      # 0.049 +- 3 x 0.0048 reaches 0.05; 0.03 does not
    assert settled_permutation(near, splits=10**9, n_perm=2000, alpha=0.05)[1] == 20000
    assert near.asked == [2000, 20000]
    far = _Fixed({2000: 0.4})
    assert settled_permutation(far, splits=10**9, n_perm=2000, alpha=0.05)[1] == 2000
    few = _Fixed({math.inf: 0.05})                  # few splits: every one enumerated, once
    assert settled_permutation(few, splits=70, n_perm=2000, alpha=0.05)[1] == 70 and few.asked == [math.inf]
    capped = _Fixed({2000: 0.05, 20000: 0.05, math.inf: 0.05})   # the splits run out before the cap
    assert settled_permutation(capped, splits=50000, n_perm=2000, alpha=0.05)[1] == 50000
    assert capped.asked == [2000, 20000, math.inf]


def test_a_drawn_null_near_alpha_is_drawn_further():
    rng = np.random.default_rng(0)
    asked = []

    def draw(k):  # p = the observed value
        asked.append(k)
        return rng.random(k)

    assert len(settled_null(draw, 2000, observed=0.5, alpha=0.1)) == 2000
    near = settled_null(draw, 2000, observed=0.1, alpha=0.1)      # p ~ alpha: drawn to the cap
    assert len(near) == 200_000
    assert (1 + np.sum(near <= 0.1)) / (1 + len(near)) == pytest.approx(0.1, abs=0.003)
    assert max(asked) == 20_000  # drawn in chunks: a null of 200,000 shuffles never sits in memory at once


def test_rows_are_shuffled_uniformly_each_on_its_own():
    from emergence.claims.verdicts import shuffled_rows

    values = np.array([[0.0, 1.0, 2.0], [10.0, 11.0, np.nan]])
    out = shuffled_rows(values, 60_000, np.random.default_rng(0))
    assert out.shape == (60_000, 2, 3)
    assert (np.sort(out[:, 0], axis=1) == [0, 1, 2]).all()                       # a row keeps its own entries
    assert np.isnan(out[:, 1]).sum(1).tolist() == [1] * 60_000                    # NaN moves with the row
    first = out[:, 0, 0]
    assert [np.mean(first == v) for v in (0, 1, 2)] == pytest.approx([1 / 3] * 3, abs=0.01)
    orders = {tuple(r) for r in out[:2000, 0].astype(int)}
    assert len(orders) == 6                                                       # every order occurs
    assert np.corrcoef(out[:, 0, 0], np.nan_to_num(out[:, 1, 0]))[0, 1] == pytest.approx(0, abs=0.02)


def test_width_on_the_linear_map_is_decided_by_the_test_not_the_draw():
    # this run's final losses, 16 seeds a cell (H = 32 against H = 2 at total width 64): 2000
    # permutations give p = 0.0475, 0.045 or 0.053 by the draw; 200,000 give 0.047-0.0475
    h32 = [0.000164039, 0.0867204, 0.000114921, 0.000102281, 0.000135475, 0.173481, 0.000110996, 0.00012211,
           0.0285068, 0.000181995, 0.171952, 8.23974e-05, 0.000111038, 0.000105539, 0.000114288, 0.0856871]
    h2 = [0.000146045, 7.23004e-05, 0.362008, 0.000171336, 0.000108866, 0.302257, 0.0540554, 0.000140782,
          0.000108118, 0.000179456, 0.331991, 0.389555, 0.000151947, 0.0867268, 9.86788e-05, 0.134519]
    v = lower_final_loss(h32, h2, claim="6", statement="", alpha=0.05, n_perm=2000)
    assert v.verdict == "reproduced" and "200,000 permutations" in v.reason
    assert v.p_value == pytest.approx(0.047, abs=0.002)


def test_two_measures_combine_at_half_the_level_each():
    faster, slower = draws(200, seed=1), draws(2000, seed=2)
    time_yes = earlier([("s", faster, slower)], claim="6", statement="", statistic="", alpha=ALPHA / 2)
    time_no = earlier([("s", slower, faster)], claim="6", statement="", statistic="", alpha=ALPHA / 2)
    none = Arm.of([1000] * 4, [True] * 4)
    time_open = earlier([("s", none, none)], claim="6", statement="", statistic="", alpha=ALPHA / 2,
                        budget=1000, paper_budget=10_000)
    loss_yes, loss_no = loss_verdict([0.1] * 3 + [0.12], [0.6] * 4, ALPHA / 2), loss_verdict([0.6] * 4, [0.1] * 4, ALPHA / 2)
    loss_open = loss_verdict([0.1, 0.5, 0.2, 0.6], [0.5, 0.1, 0.6, 0.2], ALPHA / 2)
    combine = lambda t, l: by_time_or_loss(t, l, claim="6", statement="more heads help").verdict  # noqa: E731
    assert combine(time_yes, loss_open) == "reproduced"
    assert combine(time_open, loss_yes) == "reproduced"        # the loss separates what the budget left unsolved
    assert combine(time_no, loss_open) == "not reproduced"
    assert combine(time_yes, loss_no) == "inconclusive"        # the measures disagree
    assert combine(time_open, loss_open) == "needs the paper profile"


def test_any_of_holds_when_one_setting_does():
    yes = earlier([("s", draws(200, seed=1), draws(2000, seed=2))], claim="9", statement="", statistic="",
                  alpha=ALPHA / 2)
    no = earlier([("s", draws(2000, seed=3), draws(200, seed=4))], claim="9", statement="", statistic="",
                 alpha=ALPHA / 2)
    none = Arm.of([1000] * 4, [True] * 4)
    open_ = earlier([("s", none, none)], claim="9", statement="", statistic="", alpha=ALPHA / 2)
    assert (yes.verdict, no.verdict, open_.verdict) == ("reproduced", "not reproduced", "inconclusive")
    verdict = lambda *parts: any_of(parts, claim="9", statement="Dyck or NCA").verdict  # noqa: E731
    assert verdict(no, yes) == "reproduced"
    assert verdict(no, no) == "not reproduced"
    assert verdict(no, open_) == "inconclusive"
    assert verdict(open_, open_) == "inconclusive"


def test_ratio_interval_counts_resamples_without_a_ratio_at_both_ends():
    # Three seeds of eight solve in one arm, none in the other: most resamples leave both
    # medians unreached. Dropped, they would leave those where only the first arm is reached
    # and the interval would read [∞, ∞]; they could be anything, so it spans 0 to ∞.
    a = Arm.of([100] * 3 + [1000] * 5, [False] * 3 + [True] * 5)
    b = Arm.of([1000] * 8, [True] * 8)
    assert median_ratio_interval(a, b, 0.9) == (0.0, math.inf)
    # where every resample has a ratio the interval is the plain percentile one
    lo, hi = median_ratio_interval(draws(100, n=16), draws(400, n=16, seed=1), 0.9)
    assert 1 < lo < 4 < hi < math.inf


def test_censored_counts_say_what_they_count():
    rng = np.random.default_rng(1)
    # 8 runs x 4 units, 3 units a run censored: units, not seeds, are what is censored
    slow = abrupt(np.column_stack([rng.uniform(0.02, 0.1, 8), rng.uniform(0.6, 1, (8, 3))]),
                  np.column_stack([np.zeros(8, bool), np.ones((8, 3), bool)]))
    assert slow.sample() == "8 runs; 24 of 32 units censored"
    # a control arm shared by two strata counts once among the runs
    control = seeds_at(None, n=4, budget=1000)
    v = compare([("S = 8", draws(100, n=4), control), ("S = 16", draws(200, n=4, seed=2), control)])
    assert (v.n, v.censored) == (12, 4) and v.sample() == "12 runs, 4 censored"
    # shared seeds: the censoring counts (run, capability) pairs
    fast = [draws(100, n=5, seed=k) for k in range(3)]
    slow_arms = [seeds_at(None, n=5, budget=3000)] * 3
    v = compare([(f"cap{k}", fast[k], slow_arms[k]) for k in range(3)], shared_seeds=True, stratum="capability")
    assert v.sample() == "10 runs; 15 of 30 (run, capability) pairs censored"
    with pytest.raises(ValueError, match="9 censored of 8"):
        Verdict(claim="x", statement="", paper="", statistic="", estimate=0.0, interval=(0.0, 1.0), n=8,
                censored=9, detectable="", verdict="inconclusive", reason="")


def test_composites_count_their_parts_runs():
    rng = np.random.default_rng(2)
    units = abrupt(rng.uniform(0.02, 0.1, (4, 4)), np.eye(4, dtype=bool))  # 4 of 16 units censored
    runs = compare([("one", draws(100, n=4), seeds_at(None, n=4, budget=1000))])  # 8 runs, 4 censored
    both = most_of([units, runs], claim="y", statement="")
    assert both.sample() == "12 runs over 2 parts; 8 of 24 observations censored"
    assert most_of([runs, runs], claim="y", statement="").sample() == "16 runs over 2 parts, 8 censored"
    # any_of shows its lead part's statistic, and so that part's counts
    lead = any_of([units, runs], claim="y", statement="")
    assert lead.sample() == (units if lead.estimate == units.estimate else runs).sample()


def test_the_log_rank_rule_says_reproduced_about_alpha_of_the_time_when_the_arms_are_alike():
    """Both arms drawn from one distribution (lognormal times, censored at a budget that cuts
    ~8% of seeds): "reproduced" (a earlier) and "not reproduced" (b earlier) each come back in
    about alpha of the draws, at few seeds too, so a verdict is not an artefact of the test."""
    rng = np.random.default_rng(0)

    def arm(n: int) -> Arm:
        t = rng.lognormal(6.3, 0.5, n)
        return Arm.of(np.minimum(t, 1000.0), t > 1000.0)

    for n in (4, 8):
        verdicts = [earlier([("s", arm(n), arm(n))], claim="x", statement="", statistic="", alpha=0.1,
                               n_boot=100).verdict for _ in range(200)]
        assert 0.04 <= verdicts.count("reproduced") / 200 <= 0.16
        assert 0.04 <= verdicts.count("not reproduced") / 200 <= 0.18

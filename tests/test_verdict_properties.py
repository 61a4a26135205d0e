"""Properties every verdict rule must have, on random cases (times on an evaluation grid, so
ties are the normal case, and censored runs in every arm):

- swapped arms are never "reproduced" where the arms as given are (both cannot hold);
- a stronger effect never gives a weaker verdict (reproduced > partly > undecided > not reproduced);
- input in which nothing happened (every run censored) abstains;
- times and budget scaled together change nothing (the rules read no unit of time).

Each family runs on CASES random cases drawn from a fixed seed. The rules' Monte Carlo draws are
few (n_perm, n_boot), which the rules allow for: a permutation p near a threshold is drawn
again until the draw cannot move the verdict (verdicts.settled_permutation)."""
import numpy as np
import pytest

from emergence.claims.verdicts import (Arm, bias_keeps_plateau_flat, earlier, jump_not_a_resolution_artefact,
                                       jump_survives_continuous_metrics, lower_final_loss)

CASES = 1000
ALPHA = 0.1
RANK = {"not reproduced": 0, "inconclusive": 1, "needs the paper profile": 1, "partly": 2, "reproduced": 3}
# `earlier` says "partly" where a factor is asked and the direction holds but the factor is shown
# short: a stronger effect moves it on towards undecided, then reproduced
FACTOR_RANK = dict(RANK, partly=0.5)
UNDECIDED = ("inconclusive", "needs the paper profile")
FAST = dict(claim="c", statement="s", alpha=ALPHA)


def grid_arm(rng, n: int, budget: int, late: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n runs' event steps on a grid of whole evaluations 1..budget, censored at the budget;
    `late` shifts the draws later (some arms mostly censored)."""
    t = rng.integers(1, budget + 1 + late, n).astype(float)
    return np.minimum(t, budget), t >= budget


def stronger_times(rng, t: np.ndarray, c: np.ndarray, budget: int, earlier_: bool):
    """One run moved one evaluation in the claim's direction: earlier (a censored run then has
    its event at the last evaluation before the budget), or later (censored at the budget once
    it reaches it). None where that run cannot move."""
    j = int(rng.integers(len(t)))
    t, c = t.copy(), c.copy()
    if earlier_:
        if c[j]:
            t[j], c[j] = budget - 1, False
        elif t[j] > 1:
            t[j] -= 1
        else:
            return None
    else:
        if c[j]:
            return None
        t[j] += 1
        c[j] = t[j] >= budget
    return t, c


def earlier_case(rng):
    budget = int(rng.integers(6, 25))
    shared = bool(rng.random() < 0.3)
    n_a = int(rng.integers(3, 9))
    n_b = n_a if shared else int(rng.integers(3, 9))
    a = grid_arm(rng, n_a, budget, late=int(rng.integers(0, 4)))
    b = grid_arm(rng, n_b, budget, late=int(rng.integers(0, 10)))
    return dict(budget=budget, shared=shared, ratio=float(rng.choice([1.0, 2.0])), a=a, b=b)


def decide_earlier(case, a=None, b=None, scale: float = 1.0):
    (ta, ca), (tb, cb) = a or case["a"], b or case["b"]
    return earlier([("x", Arm.of(ta * scale, ca), Arm.of(tb * scale, cb))], statistic="x", min_ratio=case["ratio"],
                   shared_seeds=case["shared"], budget=case["budget"] * scale, paper_budget=None, n_perm=200,
                   n_boot=100, **FAST).verdict


@pytest.fixture(scope="module")
def earlier_cases():
    rng = np.random.default_rng(68)
    return [(case, decide_earlier(case)) for case in (earlier_case(rng) for _ in range(CASES))]


def test_earlier_never_reproduces_both_ways(earlier_cases):
    both = [case for case, verdict in earlier_cases if verdict == "reproduced"
            and decide_earlier(dict(case, a=case["b"], b=case["a"])) == "reproduced"]
    assert not both, both[:3]
    assert sum(v == "reproduced" for _, v in earlier_cases) > 50   # the property was exercised


def test_earlier_never_weakens_for_a_stronger_effect(earlier_cases):
    rng = np.random.default_rng(1)
    weaker = []
    for case, verdict in earlier_cases:
        moved_a = rng.random() < 0.5
        moved = stronger_times(rng, *(case["a"] if moved_a else case["b"]), case["budget"], earlier_=moved_a)
        if moved is None:
            continue
        after = decide_earlier(case, a=moved) if moved_a else decide_earlier(case, b=moved)
        if FACTOR_RANK[after] < FACTOR_RANK[verdict]:
            weaker.append((case, verdict, after, moved_a, moved))
    assert not weaker, weaker[:2]


def test_earlier_abstains_when_nothing_happened_and_reads_no_unit_of_time(earlier_cases):
    rng = np.random.default_rng(2)
    for case, verdict in earlier_cases[:200]:
        scale = float(rng.choice([0.1, 10.0, 1000.0]))
        assert decide_earlier(case, scale=scale) == verdict
    for case, _ in earlier_cases[:100]:
        none = [(np.full(len(t), float(case["budget"])), np.ones(len(t), bool)) for t, _ in (case["a"], case["b"])]
        assert decide_earlier(case, *none) in UNDECIDED


# --- the bias keeps the automata's plateau flat -------------------------------------------------

def bias_case(rng):
    budget = int(rng.integers(8, 30))
    n = int(rng.integers(3, 7))
    biased = {S: grid_arm(rng, n, budget, late=int(rng.integers(0, 2 + S // 4))) for S in (8, 16)}
    control = {S: grid_arm(rng, n, budget, late=int(rng.integers(0, 2 + S // 2))) for S in (8, 16)}
    return dict(budget=budget, biased=biased, control=control)


def decide_bias(case, biased=None, control=None, scale: float = 1.0):
    arms = lambda d: {S: Arm.of(t * scale, c) for S, (t, c) in d.items()}  # noqa: E731
    return bias_keeps_plateau_flat(arms(biased or case["biased"]), arms(control or case["control"]), flat_from=8,
                                   max_ratio=2.0, alpha=ALPHA, n_boot=100).verdict


@pytest.fixture(scope="module")
def bias_cases():
    rng = np.random.default_rng(5)
    return [(case, decide_bias(case)) for case in (bias_case(rng) for _ in range(CASES))]


def test_the_bias_rule_never_reproduces_both_ways(bias_cases):
    both = [case for case, verdict in bias_cases if verdict == "reproduced"
            and decide_bias(case, biased=case["control"], control=case["biased"]) == "reproduced"]
    assert not both, both[:3]


def test_the_bias_rule_never_weakens_for_a_longer_control_plateau(bias_cases):
    # the control's plateau at the largest S longer: the bias shortens it more
    rng = np.random.default_rng(6)
    weaker = []
    for case, verdict in bias_cases:
        moved = stronger_times(rng, *case["control"][16], case["budget"], earlier_=False)
        if moved is None:
            continue
        after = decide_bias(case, control={**case["control"], 16: moved})
        if RANK[after] < RANK[verdict]:
            weaker.append((case, verdict, after))
    assert not weaker, weaker[:2]


def test_the_bias_rule_refutes_a_biased_plateau_that_outlasts_the_budget():
    # the minimal case: a biased arm still on its plateau at S = 16 is a stronger refutation than
    # one that left it once, and gets at least as strong a verdict
    arm = lambda t, c=None: Arm.of(np.array(t, float), np.zeros(len(t), bool) if c is None else np.array(c, bool))  # noqa: E731
    control = {8: arm([600, 650, 700, 750]), 16: arm([400, 420, 440, 460])}
    never = {8: arm([300, 320, 340, 360]), 16: arm([1000] * 4, [1] * 4)}
    once = {8: arm([300, 320, 340, 360]), 16: arm([990, 1000, 1000, 1000], [0, 1, 1, 1])}
    kw = dict(flat_from=8, max_ratio=2.0, alpha=ALPHA, n_boot=200)
    assert bias_keeps_plateau_flat(never, control, **kw).verdict == "not reproduced"
    assert bias_keeps_plateau_flat(once, control, **kw).verdict == "not reproduced"
    # nothing left the plateau anywhere, biased or not: no verdict
    nothing = {S: arm([1000] * 4, [1] * 4) for S in (8, 16)}
    assert bias_keeps_plateau_flat(nothing, nothing, **kw).verdict in UNDECIDED


def test_the_bias_rule_reads_no_unit_of_time(bias_cases):
    rng = np.random.default_rng(7)
    for case, verdict in bias_cases[:200]:
        assert decide_bias(case, scale=float(rng.choice([0.1, 10.0, 1000.0]))) == verdict


# --- ratios and shifts (the mirage rules) --------------------------------------------------------

def ratio_case(rng):
    seeds, units = int(rng.integers(3, 10)), int(rng.integers(1, 12))
    r = np.exp(rng.normal(np.log(rng.uniform(0.5, 4.0)), 0.5, (seeds, units)))
    r[rng.random(r.shape) < rng.uniform(0, 0.3)] = np.inf      # never rose under the continuous metric
    r[rng.random(r.shape) < 0.15] = np.nan                      # never rose at all
    return r


@pytest.mark.parametrize("rule, field", [
    (lambda r: jump_survives_continuous_metrics(r, max_factor=2.0, **FAST), "ratio"),
    (lambda r: jump_not_a_resolution_artefact(r, max_shift=1.0, subsample=16, **FAST), "shift"),
])
def test_a_smaller_ratio_or_shift_never_weakens_and_none_measured_abstains(rule, field):
    rng = np.random.default_rng(9)
    weaker = []
    for _ in range(CASES):
        r = ratio_case(rng)
        verdict = rule(r).verdict
        smaller = r.copy()
        i = tuple(rng.integers(s) for s in r.shape)
        if np.isfinite(smaller[i]):
            smaller[i] /= rng.uniform(1.0, 3.0)
        after = rule(smaller).verdict
        if RANK[after] < RANK[verdict]:
            weaker.append((r, verdict, after))
        # one run's rise (or shift) measured and the rest never: never less decided than all never
        assert rule(np.where(np.isnan(r), np.nan, np.inf)).verdict in UNDECIDED
    assert not weaker, weaker[:2]


def test_the_minimal_all_infinite_readings_abstain():
    # a continuous rise that never finished within the budget is not shown wider than 2x accuracy's
    v = jump_survives_continuous_metrics(np.full((6, 4), np.inf), max_factor=2.0, **FAST)
    assert v.verdict == "inconclusive" and "a longer budget decides" in v.reason
    v = jump_not_a_resolution_artefact(np.full((6, 4), np.inf), max_shift=1.0, subsample=16, **FAST)
    assert v.verdict == "inconclusive" and "how far it moved is not measured" in v.reason


# --- the final loss ------------------------------------------------------------------------------

def test_a_lower_favoured_loss_never_weakens_and_swapped_arms_never_both_hold():
    rng = np.random.default_rng(11)
    weaker, both = [], []
    for _ in range(CASES // 2):
        n_a, n_b = int(rng.integers(2, 9)), int(rng.integers(2, 9))
        a = np.round(rng.normal(0.4, 0.1, n_a), 2)
        b = np.round(rng.normal(0.4 + rng.uniform(-0.1, 0.2), 0.1, n_b), 2)
        verdict = lower_final_loss(a, b, n_perm=200, n_boot=100, **FAST).verdict
        better = a.copy()
        better[int(rng.integers(n_a))] -= 0.05
        after = lower_final_loss(better, b, n_perm=200, n_boot=100, **FAST).verdict
        if RANK[after] < RANK[verdict]:
            weaker.append((a, b, verdict, after))
        if verdict == "reproduced" and lower_final_loss(b, a, n_perm=200, n_boot=100, **FAST).verdict == "reproduced":
            both.append((a, b))
    assert not weaker, weaker[:2]
    assert not both, both[:2]


def test_the_minimal_tied_and_factorless_cases():
    arm = lambda t, c=None: Arm.of(np.array(t, float), np.zeros(len(t), bool) if c is None else np.array(c, bool))  # noqa: E731
    kw = dict(statistic="x", n_perm=2000, n_boot=500, **FAST)
    b = arm([6, 10, 10], [0, 1, 1])
    for shared in (False, True):
        # a's last event moved onto its own earlier step: the order against b is the same, so is the verdict
        v1, v2 = (earlier([("x", arm(a), b)], shared_seeds=shared, budget=10, **kw) for a in ([4, 7, 8], [4, 7, 7]))
        assert v1.verdict == v2.verdict and v1.p_value == pytest.approx(v2.p_value)
    # with a factor of 2 asked, b's event one step later never weakens the verdict
    a = arm([5, 2, 5, 3])
    verdicts = [earlier([("x", a, arm(t, [1, 0, 1, 0]))], min_ratio=2, budget=10, **kw).verdict
                for t in ([10, 8, 10, 8], [10, 9, 10, 8], [10, 9, 10, 9])]
    assert [FACTOR_RANK[v] for v in verdicts] == sorted(FACTOR_RANK[v] for v in verdicts)
    # no factor asked: the log-rank decides, whatever the KM medians (here neither reached)
    v = earlier([("x", arm([100, 150, 200] + [1000] * 5, [0, 0, 0] + [1] * 5), arm([1000] * 8, [1] * 8))],
                budget=1000, **kw)
    assert v.verdict == "reproduced" and "factor" not in v.reason


# --- the other families: a stronger effect never gives a weaker verdict -------------------------

def never_weaker(decide, draw, strengthen, seed: int, rank=RANK, cases: int = CASES) -> list:
    """The cases (of `cases` drawn by `draw(rng)`) whose verdict `decide(case)` weakens when
    `strengthen(rng, case)` makes its effect stronger (None: that case cannot be)."""
    rng = np.random.default_rng(seed)
    weaker = []
    for _ in range(cases):
        case = draw(rng)
        stronger = strengthen(rng, case)
        if stronger is None:
            continue
        before, after = decide(case), decide(stronger)
        if rank[after] < rank[before]:
            weaker.append((case, before, after))
    return weaker


def test_a_plateau_that_grows_more_with_s_never_weakens_its_verdict():
    from emergence.claims.verdicts import plateau_grows_with_state_size

    def draw(rng):
        budget = int(rng.integers(8, 25))
        return budget, {S: grid_arm(rng, int(rng.integers(3, 7)), budget, late=late)
                        for S, late in ((4, int(rng.integers(0, 3))), (16, int(rng.integers(0, 12))))}

    def decide(case):
        budget, arms = case
        return plateau_grows_with_state_size({S: Arm.of(*a) for S, a in arms.items()}, alpha=ALPHA, min_ratio=2.0,
                                             budget=budget, n_boot=100).verdict

    def strengthen(rng, case):   # the largest S's plateau one evaluation longer
        budget, arms = case
        moved = stronger_times(rng, *arms[16], budget, earlier_=False)
        return None if moved is None else (budget, {**arms, 16: moved})

    assert not never_weaker(decide, draw, strengthen, 21, FACTOR_RANK)


def test_more_spread_across_seeds_never_weakens_the_randomness_verdict():
    from emergence.claims.verdicts import times_vary_across_seeds

    def draw(rng):
        budget = int(rng.integers(20, 200))
        return budget, grid_arm(rng, int(rng.integers(4, 12)), budget, late=int(rng.integers(0, budget // 2)))

    def decide(case):
        budget, (t, c) = case
        return times_vary_across_seeds(Arm.of(t, c), min_quartile_ratio=1.5, budget=budget, n_boot=100,
                                       **FAST).verdict

    def strengthen(rng, case):   # the earliest seed earlier: the spread of log steps grows
        budget, (t, c) = case
        if c.all() or t[~c].min() <= 1:
            return None
        t = t.copy()
        t[np.flatnonzero(~c)[np.argmin(t[~c])]] = max(1.0, np.floor(t[~c].min() / 2))
        return budget, (t, c)

    assert not never_weaker(decide, draw, strengthen, 22)


def test_narrower_jumps_never_weaken_the_abruptness_verdict():
    from emergence.claims.verdicts import jumps_are_abrupt

    def draw(rng):
        runs, units = int(rng.integers(3, 10)), int(rng.integers(1, 8))
        ratio = np.exp(rng.normal(np.log(rng.uniform(0.05, 0.6)), 0.6, (runs, units)))
        censored = rng.random(ratio.shape) < 0.1
        ratio[rng.random(ratio.shape) < 0.1] = np.nan
        return ratio, censored

    def decide(case):
        return jumps_are_abrupt(case[0], case[1], max_ratio=0.25, n_boot=100, **FAST).verdict

    def strengthen(rng, case):
        ratio, censored = case
        i = tuple(rng.integers(s) for s in ratio.shape)
        if not np.isfinite(ratio[i]) or censored[i]:
            return None
        ratio = ratio.copy()
        ratio[i] /= 2
        return ratio, censored

    assert not never_weaker(decide, draw, strengthen, 23)


def test_a_harder_middle_never_weakens_the_hump_verdict():
    from emergence.claims.verdicts import hardest_at_medium_sparsity

    def draw(rng):
        budget = int(rng.integers(8, 25))
        n = int(rng.integers(3, 7))
        arms = [grid_arm(rng, n, budget, late=late) for late in (int(rng.integers(0, 3)), int(rng.integers(0, 15)),
                                                                 int(rng.integers(0, 3)))]
        return budget, arms

    def decide(case):
        budget, arms = case
        low, mid, high = (Arm.of(*a) for a in arms)
        return hardest_at_medium_sparsity([("S", low, mid, high)], alpha=ALPHA, budget=budget, paper_budget=budget,
                                          n_boot=100).verdict

    def strengthen(rng, case):   # the middle one evaluation later
        budget, arms = case
        moved = stronger_times(rng, *arms[1], budget, earlier_=False)
        return None if moved is None else (budget, [arms[0], moved, arms[2]])

    assert not never_weaker(decide, draw, strengthen, 24)


@pytest.mark.parametrize("family", ["recovery", "sharpening"])
def test_a_larger_recovery_or_sharpening_never_weakens_its_verdict(family):
    from emergence.claims.verdicts import head_sharpens_more_than_others, recovers_most_of_gap

    def draw(rng):
        n = int(rng.integers(2, 16))
        if family == "recovery":
            return np.round(rng.uniform(0, 1, n), 2), np.round(rng.uniform(0, 1, n), 2)
        return np.round(rng.normal(rng.uniform(-1, 1), 0.5, n), 1), None

    def decide(case):
        values, ceiling = case
        if family == "recovery":
            return recovers_most_of_gap(values, most=0.5, ceiling=ceiling, **FAST).verdict
        return head_sharpens_more_than_others(values, n_boot=100, **FAST).verdict

    def strengthen(rng, case):   # one seed's recovery higher (its ceiling with it), or its head sharper
        values, ceiling = (x.copy() if x is not None else None for x in case)
        j = int(rng.integers(len(values)))
        if family == "recovery":
            values[j] = min(1.0, values[j] + 0.2)
            ceiling[j] = max(ceiling[j], values[j])
        else:
            values[j] -= 0.5
        return values, ceiling

    assert not never_weaker(decide, draw, strengthen, 25)


def test_attention_further_ahead_never_weakens_the_precursor_verdict():
    from emergence.claims.verdicts import attention_moves_first

    def draw(rng):
        seeds, units = int(rng.integers(3, 9)), int(rng.integers(2, 8))
        loss = np.round(rng.uniform(20, 100, (seeds, units))) * 10
        attention = loss - np.round(rng.normal(rng.uniform(-3, 5), 3, loss.shape)) * 10
        return attention, loss, bool(rng.random() < 0.3)

    def decide(case):
        attention, loss, across = case
        return attention_moves_first(attention, loss, resolution=10, n_perm=200, n_boot=100,
                                     pair_across_seeds=across, **FAST).verdict

    def strengthen(rng, case):   # every head of one seed moves one evaluation earlier
        attention, loss, across = case
        attention = attention.copy()
        attention[int(rng.integers(len(attention)))] -= 10
        return attention, loss, across

    # the pairing part ranks "partly" below undecided: moving one seed's heads can break a match
    # the within-seed null rewards, so the direction alone (sign test) is what must not weaken
    weaker = never_weaker(decide, draw, strengthen, 26, dict(RANK, partly=RANK["reproduced"]), cases=CASES // 2)
    assert not weaker, weaker[:2]

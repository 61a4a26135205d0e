import numpy as np
import pytest

from emergence import analysis as an


def test_first_crossing_interpolates_between_evaluations():
    steps = np.array([0, 100, 200, 300])
    values = np.array([0.0, 0.2, 0.6, 1.0])
    c = an.first_crossing(steps, values, 0.5)
    assert not c.censored and c.step == pytest.approx(175.0)
    assert an.first_crossing(steps, values, 0.5, interpolate=False).step == 200


def test_never_crossing_is_censored_at_the_budget():
    c = an.first_crossing(np.array([0, 10, 20]), np.array([0.0, 0.1, 0.2]), 0.5)
    assert c.censored and c.step == 20


def test_nan_evaluations_never_count():
    c = an.first_crossing(np.array([0, 10, 20]), np.array([0.0, np.nan, np.nan]), 0.5)
    assert c.censored


def test_emergence_and_transition_width():
    steps = np.arange(0, 1100, 100)
    progress = np.array([0, 0, 0, 0, 0.05, 0.3, 0.95, 1, 1, 1, 1.0])
    e = an.emergence_of(steps, progress, plateau=0.1, emergence=0.5, solved=0.9)
    assert e.plateau_end.step == pytest.approx(400 + 100 * (0.05 / 0.25))
    assert e.emergence.step == pytest.approx(500 + 100 * (0.2 / 0.65))
    assert e.solved.step == pytest.approx(500 + 100 * (0.6 / 0.65))
    assert e.transition_width == pytest.approx(e.solved.step - e.plateau_end.step)
    never = an.emergence_of(steps, np.zeros(11), 0.1, 0.5, 0.9)
    assert never.emergence.censored and np.isnan(never.transition_width)


def test_running_median_removes_a_single_spike():
    x = np.array([0, 0, 1, 0, 0.0])
    assert an.running_median(x, 3).tolist() == [0, 0, 0, 0, 0]
    assert an.running_median(x, 1).tolist() == x.tolist()


def test_kaplan_meier_hand_example():
    # events at 2, 3 (two), censored at 3 and 5: S(2)=4/5, S(3)=4/5 * (1 - 2/4) = 0.4
    t, s = an.kaplan_meier(np.array([2, 3, 3, 3, 5]), np.array([0, 0, 0, 1, 1]))
    assert t.tolist() == [0, 2, 3]
    assert s == pytest.approx([1.0, 0.8, 0.4])
    assert an.km_median(np.array([2, 3, 3, 3, 5]), np.array([0, 0, 0, 1, 1])) == 3


def test_km_median_is_infinite_when_most_never_emerge():
    assert an.km_median(np.array([5, 10, 10, 10]), np.array([0, 1, 1, 1])) == np.inf


def test_wilson_interval_contains_the_proportion():
    lo, hi = an.wilson_interval(6, 10, level=0.9)
    assert lo < 0.6 < hi and 0 <= lo and hi <= 1
    assert an.wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_steepest_drop_and_responsible_head():
    steps = np.array([0, 10, 20, 30])
    assert an.steepest_drop_step(steps, np.array([2.0, 1.9, 0.2, 0.1])) == 15
    head, rise = an.responsible_head(np.array([0.1, 0.9, 0.3]), np.array([0.1, 0.2, 0.25]))
    assert head == 1 and rise == pytest.approx(0.7)


def test_bootstrap_interval_brackets_the_median():
    rng = np.random.default_rng(0)
    t = rng.uniform(100, 200, 30)
    lo, hi = an.bootstrap_km_median(t, np.zeros(30, bool), n_boot=300)
    assert lo <= an.km_median(t, np.zeros(30, bool)) <= hi


def test_logrank_hand_example():
    # a: events at 1 and 2; b: events at 3, 4. At t=1: n=4, n_a=2, d=1 -> E_a=0.5, V=0.25;
    # t=2: n=3, n_a=1 -> E_a=1/3, V=2/9; t=3: n=2, n_a=0; t=4: n=1, n_a=0.
    z, p = an.logrank_test(np.array([1, 2]), np.array([0, 0]), np.array([3, 4]), np.array([0, 0]))
    assert z == pytest.approx((2 - 0.5 - 1 / 3) / np.sqrt(0.25 + 2 / 9))
    assert p < 0.05
    z2, p2 = an.logrank_test(np.array([3, 4]), np.array([0, 0]), np.array([1, 2]), np.array([0, 0]))
    assert z2 == pytest.approx(-z) and p2 > 0.9


def test_logrank_with_censoring_and_no_events():
    z, p = an.logrank_test(np.array([5, 5]), np.array([1, 1]), np.array([5, 5]), np.array([1, 1]))
    assert (z, p) == (0.0, 1.0)
    z, p = an.logrank_test(np.array([2, 3]), np.array([0, 0]), np.array([10, 10]), np.array([1, 1]))
    assert z > 0 and p < 0.1


def test_bracket_emergence_matches_a_dense_scan():
    import math

    from emergence.analysis import bracket_emergence

    steps = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 3000]
    for first in range(len(steps) + 1):  # solved from checkpoint `first` on (len: never)
        solved = lambda s, first=first: steps.index(s) >= first  # noqa: E731
        dense = next((i for i, s in enumerate(steps) if solved(s)), None)
        b = bracket_emergence(steps, solved)
        assert b.censored == (dense is None)
        assert b.new == (None if dense is None else steps[dense])
        assert b.old == (steps[-1] if dense is None else (steps[dense - 1] if dense > 0 else None))
        assert b.evaluations <= math.ceil(math.log2(len(steps))) + 1

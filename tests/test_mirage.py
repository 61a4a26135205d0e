"""The mirage statistics against hand-built curves whose answers are known."""
import math

import numpy as np
import pytest

from emergence.mirage import (TEN_NINETY, breakthroughness, change_point, exact_match_from_units,
                              explained_fraction, fit_rise, progress)

STEPS = np.unique(np.r_[0, 2 ** np.arange(10), np.arange(50, 3001, 50)]).astype(float)


def logistic(steps, mid_step, scale):
    x = np.log(np.maximum(steps, 1))
    return 1 / (1 + np.exp(-(x - math.log(mid_step)) / scale))


def test_progress_puts_a_loss_and_an_accuracy_on_one_scale():
    assert progress([math.log(2), 0.0], chance=math.log(2), solved=0.0) == pytest.approx([0, 1])
    assert progress([0.5, 0.75, 1.0], chance=0.5, solved=1.0) == pytest.approx([0, 0.5, 1])


@pytest.mark.parametrize("mid_step, scale", [(1200, 0.02), (800, 0.3), (300, 0.8)])
def test_fit_rise_recovers_a_logistic_midpoint_and_width(mid_step, scale):
    rise = fit_rise(STEPS, logistic(STEPS, mid_step, scale))
    assert not rise.censored
    assert rise.midpoint == pytest.approx(math.log(mid_step), abs=0.05)
    assert rise.width == pytest.approx(TEN_NINETY * scale, rel=0.1, abs=0.02)
    assert rise.aic_gain > 0  # the step shape beats a straight line


def test_a_rise_linear_in_log_step_is_wide_and_not_step_shaped():
    x = np.log(np.maximum(STEPS, 1))
    line = fit_rise(STEPS, x / x.max())
    sharp = fit_rise(STEPS, logistic(STEPS, 1200, 0.02))
    assert line.width > 20 * sharp.width
    assert line.aic_gain < sharp.aic_gain


def test_a_curve_that_never_rises_is_censored_at_the_budget():
    rise = fit_rise(STEPS, np.full(STEPS.shape, 0.1), threshold=0.5)
    assert rise.censored and math.isnan(rise.width)
    assert rise.midpoint == pytest.approx(math.log(STEPS[-1]))


def test_breakthroughness_follows_big_bench_formula():
    ramp = np.linspace(0, 1, 11)                       # ten equal steps of 0.1
    assert breakthroughness(ramp) == pytest.approx(1 / 0.1)
    assert breakthroughness(ramp[::-1]) == pytest.approx(-1 / 0.1)  # signed: a falling curve is negative
    assert breakthroughness([0, 0, 0, 1, 1, 1]) == math.inf
    noisy = np.r_[np.zeros(10), np.ones(10)] + 0.01 * np.resize([1, -1], 20)
    assert breakthroughness(noisy) == pytest.approx(1.02 / 0.02)   # a jump among small wiggles: range over their size


def test_exact_match_of_independent_units_is_the_product_of_their_accuracies():
    rng = np.random.default_rng(0)
    p = np.array([0.9, 0.6, 0.99, 0.8])
    correct = rng.random((200_000, 4)) < p
    assert exact_match_from_units(p) == pytest.approx(correct.all(1).mean(), abs=3e-3)
    assert exact_match_from_units(np.array([[0.5, 0.5], [1.0, 0.2]])) == pytest.approx([0.25, 0.2])


def test_explained_fraction():
    y = np.sin(np.linspace(0, 3, 30))
    assert explained_fraction(y, y) == pytest.approx(1.0)
    assert explained_fraction(y, np.full_like(y, y.mean())) == pytest.approx(0.0)
    assert explained_fraction(y, -y) < 0


def test_change_point_finds_the_mean_shift():
    y = np.r_[np.zeros(20), np.ones(30)] + np.random.default_rng(1).normal(0, 0.05, 50)
    steps = np.arange(50) * 10.0
    assert change_point(steps, y) == 200.0
    assert math.isnan(change_point(steps[:3], y[:3]))

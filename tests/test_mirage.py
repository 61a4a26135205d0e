"""The mirage statistics against hand-built curves whose answers are known."""
import math

import numpy as np
import pytest

from emergence.analysis.mirage import (TEN_NINETY, breakthroughness, change_point, exact_match_from_units,
                                       explained_fraction, fit_rise, forecast_concordance, landmark, progress)

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


def test_landmark_reads_only_what_came_before_the_horizon():
    steps = np.array([0, 1, 2, 4, 8, 16, 32], float)
    curve = np.log(np.maximum(steps, 1)) * 0.1
    level, slope = landmark(steps, curve, horizon=10)
    assert level == pytest.approx(0.1 * math.log(8)) and slope == pytest.approx(0.1)
    assert all(math.isnan(v) for v in landmark(steps, curve, horizon=1))


def _units(n_seeds=8, per_seed=16, signal=1.0, seed=0):
    rng = np.random.default_rng(seed)
    feature = rng.normal(size=(n_seeds * per_seed, 2))
    time = np.exp(6 - signal * feature[:, 0] + 0.1 * rng.normal(size=len(feature)))
    event = time < np.quantile(time, 0.8)          # the slowest fifth censored at the budget
    time = np.where(event, time, np.quantile(time, 0.8))
    return feature, time, event, np.repeat(np.arange(n_seeds), per_seed)


def test_a_feature_that_sets_the_emergence_time_forecasts_it():
    c, risk = forecast_concordance(*_units(signal=1.0))
    assert c > 0.9 and np.isfinite(risk).all()


def test_an_unrelated_feature_forecasts_no_better_than_the_median():
    c, _ = forecast_concordance(*_units(signal=0.0))
    assert abs(c - 0.5) < 0.1


def test_a_forecast_needs_events_to_learn_from():
    feature, time, event, group = _units()
    c, risk = forecast_concordance(feature, time, np.zeros_like(event), group)
    assert math.isnan(c) and np.isnan(risk).all()


def test_a_small_test_set_reads_zero_before_a_gradual_rise_and_moves_its_emergence():
    from emergence.analysis.mirage import subsampled_emergence
    rng = np.random.default_rng(0)
    steps = np.arange(0, 1000, 50.0)
    p = np.clip((steps - 200) / 600, 0.02, 1.0)                       # every example improves gradually
    gradual = rng.random((256, steps.size)) < p
    sharp = np.repeat((steps >= 600)[None, :], 256, axis=0)          # every example flips at step 600
    for correct, moves in ((gradual, True), (sharp, False)):
        full = steps[np.argmax(correct.mean(0) >= 0.9)]
        first, zeros = subsampled_emergence(steps, correct, 16, 200, 0.9, full, rng)
        assert (first != full).mean() > 0.3 if moves else np.all(first == full)
        if moves:
            assert 0 < zeros.mean() < 1       # small sets read zero at some early steps
        else:
            assert np.all(zeros == 1)        # nothing to see before a true step
    first, _ = subsampled_emergence(steps, np.zeros((32, steps.size)), 16, 10, 0.9, 500, rng)
    assert np.isinf(first).all()


def _per_example_run(n_seeds=3, n_examples=64):
    """A training run's per-example answers: bit 0 flips for every example at once (a seed-
    dependent step), bit 1 improves example by example; p(correct) 0.5 until right, then 0.99."""
    import xarray as xr
    rng = np.random.default_rng(1)
    steps = np.arange(0, 1001, 50.0)
    correct = np.zeros((n_seeds, steps.size, n_examples, 2), np.float32)
    for k in range(n_seeds):
        correct[k, :, :, 0] = (steps >= 300 + 100 * k)[:, None]
        p = np.clip((steps - 100) / 800, 0.0, 1.0)
        correct[k, :, :, 1] = rng.random((steps.size, n_examples)) < p[:, None]
    log_p = np.log(np.where(correct == 1, 0.99, 0.5)).astype(np.float32)
    return xr.Dataset({"example_unit_correct": (("seed", "step", "example", "bit"), correct),
                       "example_unit_log_p": (("seed", "step", "example", "bit"), log_p),
                       "example_exact": (("seed", "step", "example"), correct.min(-1)),
                       "example_answer_log_p": (("seed", "step", "example"), log_p.sum(-1))},
                      coords={"seed": np.arange(n_seeds), "step": steps, "example": np.arange(n_examples),
                              "bit": [0, 1]})


def test_per_example_answers_give_each_unit_and_the_whole_answer_a_resolution():
    from emergence.analysis.mirage_analysis import example_resolution, resolution_readings
    import xarray as xr
    run = _per_example_run()
    data, coords = example_resolution(run, "bit", chance_unit=0.5, threshold=0.5, min_subsample=16, draws=50)
    assert coords == {"subsample": [16, 32, 64]}
    ds = xr.Dataset(data, coords={**coords, "seed": run["seed"].values, "bit": [0, 1]})
    unit = ds["unit_resolution_shift"].sel(subsample=16)
    assert (unit.sel(bit=0) == 0).all()                      # a true step is dated alike by any test set
    assert float(unit.sel(bit=1).mean()) > 1                  # a gradual rise is not
    assert (ds["unit_resolution_shift"].sel(subsample=64) == 0).all()
    # before its jump bit 0 is right on no example: p(correct) is the 0.5 of a guess
    np.testing.assert_allclose(ds["unit_pre_emergence_p_correct"].sel(bit=0), 0.5, rtol=1e-6)
    readings = dict((level, (shift, zero, pre)) for level, shift, zero, pre in resolution_readings(ds))
    assert set(readings) == {"unit", "whole answer"}
    shift, zero, pre = readings["unit"]
    assert shift.shape == (6, 3) and pre.shape == (6,)      # runs: seed x bit, seed leading
    np.testing.assert_array_equal(shift[0::2, 0], unit.sel(bit=0).values)
    answer_only = run.drop_vars(["example_unit_correct", "example_unit_log_p"])
    data, _ = example_resolution(answer_only, "bit", 0.5, 0.5, 16, 50)
    assert set(data) == {"whole_resolution_shift", "whole_resolution_zero_fraction", "whole_pre_emergence_p_correct"}
    assert example_resolution(run.drop_vars(list(run.data_vars)), "bit", 0.5, 0.5, 16, 50) == ({}, {})


def test_binary_brier_is_the_two_class_brier_score():
    from sklearn.metrics import brier_score_loss

    from emergence.analysis.mirage import binary_brier
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    p1 = rng.random(200)                                    # predicted p(outcome 1)
    log_p_correct = np.log(np.where(y == 1, p1, 1 - p1))
    # scikit-learn scores the positive class only; the two-class sum is twice that
    assert math.isclose(binary_brier(log_p_correct), 2 * brier_score_loss(y, p1), rel_tol=1e-9)
    assert math.isclose(binary_brier(np.log([0.5, 0.5])), 0.5) and binary_brier(np.zeros(3)) == 0


def _automata_results(n_seeds: int, strengths=(0.0, 3.0), **train):
    """A stand-in for a state-size sweep file (strengths stacked) or, with strengths None, a
    single cell, of the automata at one S."""
    import json
    import xarray as xr

    def config(strength):
        return {"cellular_automata": {"task": {"state_size": 8}, "model": {"n_head": 4},
                                      "bias": {"strength": strength},
                                      "train": {"n_seeds": n_seeds, "first_seed": 0, "steps": 100, **train}}}
    data = np.arange(n_seeds, dtype=float)
    if strengths is None:
        return xr.Dataset({"unit_loss": (("seed",), data)}, coords={"seed": np.arange(n_seeds)},
                          attrs={"config": json.dumps(config(0.0))})
    return xr.Dataset({"unit_loss": (("strength", "seed"), np.stack([data] * len(strengths)))},
                      coords={"strength": list(strengths), "seed": np.arange(n_seeds)},
                      attrs={"configs": json.dumps([config(s) for s in strengths])})


def test_the_automata_control_arm_is_read_from_the_same_cell_with_the_most_seeds():
    from emergence.analysis.mirage_analysis import control_with_most_seeds

    def seeds(results, others):
        control, source = control_with_most_seeds(results, others)
        return control.sizes["seed"], source

    sweep = _automata_results(4)
    same = _automata_results(12, strengths=None)
    assert seeds(sweep, {"wide": same}) == (12, "wide, the same cell with more seeds")
    assert seeds(sweep, {}) == (4, "the state-size sweep's control arm")           # none trained it
    assert seeds(sweep, {"few": _automata_results(2, strengths=None)})[0] == 4
    other_lr = _automata_results(12, strengths=None, lr=0.01)                     # any other field differs
    assert seeds(sweep, {"other": other_lr})[0] == 4
    assert seeds(_automata_results(4, strengths=(3.0, 0.0)), {"wide": same})[0] == 12


def test_the_resolution_shift_is_read_in_each_runs_own_rise_width():
    import xarray as xr

    from emergence.analysis.mirage_analysis import shift_in_widths
    from emergence.claims.verdicts import jump_not_a_resolution_artefact

    # 6 seeds x 2 units; every shift is 3 evaluation intervals of 0.01 ln steps
    shift = np.full((6, 2, 1), 3.0)
    width = np.array([[0.1, 0.1]] * 6)                 # a rise over ten intervals: 0.3 of its width
    metrics = ["accuracy", "cross_entropy"]
    ds = xr.Dataset({"unit_resolution_shift": (("seed", "bit", "subsample"), shift),
                     "whole_resolution_shift": (("seed", "subsample"), shift[:, 0]),
                     "unit_width": (("unit_metric", "seed", "bit"), np.stack([width, width])),
                     "unit_grid": (("unit_metric", "seed", "bit"), np.full((2, 6, 2), 0.01)),
                     "unit_censored": (("unit_metric", "seed", "bit"), np.zeros((2, 6, 2), np.int8))},
                    coords={"unit_metric": metrics, "subsample": [16]})
    np.testing.assert_allclose(shift_in_widths(ds, "unit", 16), np.full((6, 2), 0.3))
    # a unit whose accuracy rise was not fitted keeps its shift in intervals; the whole answer too
    ds["unit_censored"][0, 0, 1] = 1
    assert shift_in_widths(ds, "unit", 16)[0, 1] == 3.0
    np.testing.assert_array_equal(shift_in_widths(ds, "whole", 16), np.full(6, 3.0))
    # a rise narrower than its interval reads as one interval wide: the shift stays in intervals
    ds["unit_width"][0] = 0.001
    np.testing.assert_allclose(shift_in_widths(ds, "unit", 16)[1:], 3.0)
    # the grid-tied rule and this one disagree on wide rises: three intervals is "not sharp" in
    # intervals, 0.3 of the run's own jump is "sharp"
    kw = dict(claim="1", statement="s", max_shift=1.0, alpha=0.1, subsample=16)
    assert jump_not_a_resolution_artefact(shift[..., 0], **kw).verdict == "not reproduced"
    assert jump_not_a_resolution_artefact(np.full((6, 2), 0.3), scale="rise widths", **kw).verdict == "reproduced"


def test_a_run_searched_once_is_timed_once():
    import xarray as xr

    from emergence.analysis.mirage_analysis import WHOLE_METRICS, searched_once

    n = len(WHOLE_METRICS)
    ds = xr.Dataset({"whole_midpoint": (("whole_metric", "seed"), np.tile([6.0, 7.0, 8.0], (n, 1))),
                     "whole_width": (("whole_metric", "seed"), np.tile([0.2, 0.01, 0.3], (n, 1))),
                     "whole_grid": (("whole_metric", "seed"), np.full((n, 3), 0.05)),
                     "whole_censored": (("whole_metric", "seed"), np.tile([0, 0, 1], (n, 1)).astype(np.int8))},
                    coords={"whole_metric": list(WHOLE_METRICS)})
    mid, cen, width = searched_once(ds, "cross_entropy")
    assert mid.shape == cen.shape == width.shape == (3, 1)
    np.testing.assert_array_equal(mid[:, 0], [6.0, 7.0, 8.0])
    np.testing.assert_array_equal(width[:, 0], [0.2, 0.05, np.nan])   # never below the grid; censored: none

import numpy as np
import pytest
import xarray as xr

from emergence.analysis import events as an


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


def test_wilson_interval_contains_the_proportion():
    lo, hi = an.wilson_interval(6, 10, level=0.9)
    assert lo < 0.6 < hi and 0 <= lo and hi <= 1
    assert an.wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_steepest_drop_and_responsible_head():
    steps = np.array([0, 10, 20, 30])
    assert an.steepest_drop_step(steps, np.array([2.0, 1.9, 0.2, 0.1])) == 15
    head, rise = an.responsible_head(np.array([0.1, 0.9, 0.3]), np.array([0.1, 0.2, 0.25]))
    assert head == 1 and rise == pytest.approx(0.7)


def test_bracket_emergence_matches_a_dense_scan():
    import math

    from emergence.analysis.events import bracket_emergence

    steps = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 3000]
    for first in range(len(steps) + 1):  # solved from checkpoint `first` on (len: never)
        solved = lambda s, first=first: steps.index(s) >= first  # noqa: E731
        dense = next((i for i, s in enumerate(steps) if solved(s)), None)
        b = bracket_emergence(steps, solved)
        assert b.censored == (dense is None)
        assert b.new == (None if dense is None else steps[dense])
        assert b.old == (steps[-1] if dense is None else (steps[dense - 1] if dense > 0 else None))
        assert b.evaluations <= math.ceil(math.log2(len(steps))) + 1


def test_jump_widths_censor_the_unfinished_and_drop_what_never_left():
    ds = xr.Dataset({"plateau_end_step": ("seed", [100.0, 200.0, 1000.0]),
                     "plateau_end_censored": ("seed", [0, 0, 1]),
                     "solved_step": ("seed", [400.0, 1000.0, 1000.0]),
                     "solved_censored": ("seed", [0, 1, 1])}, attrs={"budget_step": 1000})
    width, censored = an.jump_widths(ds, per="seed")
    assert width[:2].tolist() == [300.0, 800.0] and np.isnan(width[2])
    assert censored.tolist() == [False, True, False]
    with pytest.raises(KeyError):
        an.jump_widths(ds)  # per unit: the dataset has no unit_* variables


def test_a_summary_pads_the_shorter_cells_and_counts_their_seeds():
    def analysed(n: int, offset: float) -> xr.Dataset:
        per_seed = {f: ("seed", offset + np.arange(n, dtype=float)) for f in an.CELL_FIELDS}
        flags = {f: ("seed", np.zeros(n, dtype=np.int8)) for f in an.CELL_FLAGS}
        return xr.Dataset({**per_seed, **flags}, attrs={"budget_step": 1000})

    ds = an.summary_dataset([analysed(4, 0.0), analysed(12, 100.0)], ["a", "b"], {}, {"analysis": {}})
    assert ds.sizes == {"cell": 2, "seed": 12} and ds["n_seeds"].values.tolist() == [4, 12]
    assert np.isnan(ds["emergence_step"].values[0, 4:]).all() and (ds["emergence_censored"].values[0, 4:] == 1).all()
    assert ds["emergence_step"].values[1].tolist() == list(100.0 + np.arange(12))


def test_the_steepest_interval_before_a_capability_is_solved():
    steps = [0, 10, 20, 30, 40, 50]
    p = [0.1, 0.12, 0.16, 0.61, 0.9, 0.95]
    # the paper's bracket: 30k -> 31k with 0.16 -> 0.61, the steepest rise up to the first solved
    assert an.steepest_interval(steps, p, end=40) == (20.0, 30.0)
    # only intervals that end at or before the first solved checkpoint count
    assert an.steepest_interval(steps, [0.1, 0.1, 0.15, 0.3, 0.9, 1.0], end=30) == (20.0, 30.0)
    assert an.steepest_interval(steps, [0.1, 0.1, 0.15, 0.3, 0.9, 1.0], end=40) == (30.0, 40.0)
    # ties go to the earliest; NaN values never win; too few checkpoints give no interval
    assert an.steepest_interval(steps, [0.0, 0.5, 1.0, 1.0, 1.0, 1.0], end=50) == (0.0, 10.0)
    assert an.steepest_interval(steps, [0.0, np.nan, 0.2, 0.3, 0.3, 0.3], end=50) == (20.0, 30.0)
    assert all(np.isnan(an.steepest_interval(steps, p, end=0)))

"""The seed-count pilot: this run's seeds resampled, the claim's rule applied again."""
import pytest

from emergence.tools import seed_power as sp
from tests.test_scorecard import context, summary

HUMP = [(16, 1, 100, 50), (16, 8, None, None), (16, 16, 150, 60)]


def half_showing_the_hump():
    """The hump's cells, but seeds 2 and 3 of the low-sparsity cell never solve: the hump shows
    in half the seeds."""
    ds = summary(HUMP, n_seed=4)
    for what in ("solved", "emergence", "plateau_end"):
        ds[f"{what}_step"].values[0, 2:] = 1000
        ds[f"{what}_censored"].values[0, 2:] = 1
    return {"sparsity_summary": ds}


def test_a_clear_effect_decides_in_every_draw_and_draws_add_up():
    power = sp.seed_power("sparsity-hump", {"sparsity_summary": summary(HUMP)}, context(), [4, 6], draws=5)
    assert power == {4: {"reproduced": 5}, 6: {"reproduced": 5}}


def test_power_grows_with_seeds_where_half_the_seeds_show_the_effect():
    power = sp.seed_power("sparsity-hump", half_showing_the_hump(), context(), [2, 12], draws=20)
    decided = {n: sum(c.get(v, 0) for v in sp.DECIDED) for n, c in power.items()}
    assert decided[2] < decided[12]
    assert sum(power[2].values()) == sum(power[12].values()) == 20


def test_an_unknown_claim_names_the_ones_it_can_resample():
    with pytest.raises(SystemExit, match="sparsity-hump"):
        sp.seed_power("no-such-claim", {"sparsity_summary": summary(HUMP)}, context(), [4], draws=1)


def test_processes_give_the_power_one_process_gives():
    one = sp.seed_power("sparsity-hump", half_showing_the_hump(), context(), [3, 6], draws=12)
    assert sp.seed_power("sparsity-hump", half_showing_the_hump(), context(), [3, 6], draws=12, workers=2) == one


def test_sizes_above_the_runs_seeds_are_flagged_as_optimistic():
    results = half_showing_the_hump()
    have = sp.run_seeds("sparsity-hump", results, context())
    assert have == 4
    power = sp.seed_power("sparsity-hump", results, context(), [4, 8], draws=3)
    at_run, above = sp.power_lines("sparsity-hump", power, 3, have)
    assert "overstates" not in at_run and "above this run's 4 seeds" in above

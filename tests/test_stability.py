"""Verdict stability: this run's seeds resampled with replacement, a rule decided again on each
resample, and the share that gives the verdict again."""
from collections import Counter

import numpy as np
import xarray as xr

from emergence.claims import stability as st


def sign_of_mean(results) -> dict[str, str]:
    """A toy rule: "reproduced" when the mean over seeds is above zero."""
    return {"toy": "reproduced" if float(results["x"]["v"].mean()) > 0 else "not reproduced"}


def seeds(values) -> xr.Dataset:
    return xr.Dataset({"v": (("seed",), np.asarray(values, float))}, coords={"seed": np.arange(len(values))})


def test_resampling_draws_seeds_with_replacement_and_relabels_them():
    ds = xr.Dataset({"x": (("cell", "seed"), np.arange(10.0).reshape(2, 5))}, coords={"seed": np.arange(5)})
    out = st.resample_seeds(ds, 8, np.random.default_rng(0))
    assert out.sizes["seed"] == 8 and list(out["seed"].values) == list(range(8))
    # a drawn seed keeps its values in every cell (the same seeds train every cell)
    picked = out["x"].values[0].astype(int)
    assert set(picked) <= set(range(5)) and np.array_equal(out["x"].values[1], picked + 5)
    assert len(set(picked)) < 8  # 8 from 5: some seed repeats


def test_datasets_of_the_same_seeds_share_one_draw():
    """The language models' probes and patching results are the same trained seeds: a resample
    picks the same seeds in each; a dataset without seeds passes through."""
    probes = xr.Dataset({"x": (("seed",), np.arange(5.0))}, coords={"seed": np.arange(5)})
    patching = {"small": xr.Dataset({"y": (("seed",), 10 + np.arange(5.0))}, coords={"seed": np.arange(5)}),
                "fixed": xr.Dataset({"z": (("k",), np.zeros(3))})}
    rng, shared = np.random.default_rng(3), {}
    a = st.resample_result(probes, 7, rng, shared)
    b = st.resample_result(patching, 7, rng, shared)
    assert np.array_equal(b["small"]["y"].values - 10, a["x"].values)
    assert b["fixed"].identical(patching["fixed"])


def test_each_result_keeps_its_own_seed_count():
    draws = st.seed_draws({"a": seeds(range(3)), "b": {"c": seeds(range(8))}}, 5, np.random.default_rng(0))
    assert len(draws) == 5 and all(sorted(d) == [3, 8] for d in draws)
    assert all(len(d[3]) == 3 and len(d[8]) == 8 and d[3].max() < 3 for d in draws)


def padded_summary(counts: list[int]) -> xr.Dataset:
    """A sweep summary whose cells trained `counts` seeds: seed k of cell i holds 100 i + k,
    padding NaN with its censored flag 1, as emergence.analysis.events.cell_statistics lays them out."""
    width = max(counts)
    x = np.full((len(counts), width), np.nan)
    flag = np.ones((len(counts), width), dtype=np.int8)
    for i, c in enumerate(counts):
        x[i, :c], flag[i, :c] = 100 * i + np.arange(c), 0
    return xr.Dataset({"emergence_step": (("cell", "seed"), x), "emergence_censored": (("cell", "seed"), flag),
                       "n_seeds": (("cell",), np.array(counts))},
                      coords={"cell": [f"c{i}" for i in range(len(counts))], "seed": np.arange(width)})


def test_a_cell_of_fewer_seeds_is_resampled_from_its_own():
    """A summary pads a 4-seed cell to the widest cell's 12: a resample draws that cell's 4 seeds
    from its 4 (never a padding position) and pads it again, and draws the 12-seed cell from its
    12; each count's draw is the one every other result of that many seeds gets."""
    ds = padded_summary([4, 12, 4])
    rng, shared = np.random.default_rng(1), {}
    out = st.resample_seeds(ds, None, rng, shared)
    x, flag = out["emergence_step"].values, out["emergence_censored"].values
    assert out.sizes["seed"] == 12 and list(out["n_seeds"].values) == [4, 12, 4]
    for i, c in enumerate([4, 12, 4]):
        real = x[i, :c]
        assert np.isfinite(real).all() and set(real - 100 * i) <= set(range(c))
        assert np.isnan(x[i, c:]).all() and (flag[i, c:] == 1).all() and (flag[i, :c] == 0).all()
    assert np.array_equal(x[0, :4], shared[4]) and np.array_equal(x[2, :4] - 200, shared[4])
    assert np.array_equal(x[1] - 100, shared[12])
    other = st.resample_seeds(seeds(range(4)), None, rng, shared)  # another 4-seed result: the same draw
    assert np.array_equal(other["v"].values, shared[4])


def test_a_padded_summary_resampled_to_n_seeds_has_n_in_every_cell():
    out = st.resample_seeds(padded_summary([4, 12]), 6, np.random.default_rng(0))
    x = out["emergence_step"].values
    assert out.sizes["seed"] == 6 and list(out["n_seeds"].values) == [6, 6] and np.isfinite(x).all()
    assert set(x[0]) <= set(range(4)) and set(x[1] - 100) <= set(range(12))


def test_the_share_matches_the_bootstrap_by_hand():
    """Seeds +1 and -1: the mean is 0, so "not reproduced"; a resample of two seeds is (+1, +1)
    with probability 1/4, the only one with a positive mean: the verdict comes back in 3/4."""
    results = {"x": seeds([1.0, -1.0])}
    assert sign_of_mean(results)["toy"] == "not reproduced"
    counts = st.resampled_verdicts(sign_of_mean, results, 4000, np.random.default_rng(0))
    assert sum(counts["toy"].values()) == 4000
    assert abs(st.stability("not reproduced", counts["toy"]) - 0.75) < 0.03
    # every seed on one side: nothing a resample can change
    firm = st.resampled_verdicts(sign_of_mean, {"x": seeds([1.0, 2.0, 3.0])}, 50, np.random.default_rng(0))
    assert firm == {"toy": Counter({"reproduced": 50})} and st.stability("reproduced", firm["toy"]) == 1.0


def test_processes_give_the_counts_one_process_gives():
    results = {"x": seeds([0.5, -1.0, 2.0, -0.2])}
    one = st.resampled_verdicts(sign_of_mean, results, 40, np.random.default_rng(5))
    two = st.resampled_verdicts(sign_of_mean, results, 40, np.random.default_rng(5), workers=2)
    assert one == two and sum(one["toy"].values()) == 40


def test_no_draws_no_share():
    assert st.resampled_verdicts(sign_of_mean, {"x": seeds([1.0])}, 0, np.random.default_rng(0)) == {}
    assert st.stability("reproduced", None) is None and st.stability("reproduced", Counter()) is None


def test_a_resample_without_the_row_counts_against_its_verdict():
    counts = st.with_untested(Counter({"reproduced": 7}), 10)
    assert counts == {"reproduced": 7, st.NOT_TESTED: 3} and st.stability("reproduced", counts) == 0.7
    assert st.with_untested({"reproduced": 10}, 10) == {"reproduced": 10}

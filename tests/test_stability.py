"""Verdict stability: this run's seeds resampled with replacement, a rule decided again on each
resample, and the share that gives the verdict again."""
from collections import Counter

import numpy as np
import xarray as xr

from emergence import stability as st


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

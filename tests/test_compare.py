"""The comparison page's account of a result one revision lacks (emergence.compare)."""
from emergence.compare import _lacks


def _rev(role: str, value, recorded: bool) -> dict:
    path = "data/linear_map/train.nc"
    return {"role": role, "linear_map_results": value, "paths": {"linear_map_results": path},
            "results": {path: ("linear_map_train", "d1338615")} if recorded else {}}


def test_a_result_present_in_both_is_not_called_lacking():
    assert _lacks([_rev("base 4e68b8a", object(), True), _rev("head c6826fa", object(), True)],
                  "linear_map_results") == ""


def test_a_result_the_lock_records_but_the_cache_lacks_says_it_ran_elsewhere():
    note = _lacks([_rev("base 4e68b8a", None, True), _rev("head c6826fa", object(), True)], "linear_map_results")
    assert "base 4e68b8a has no `linear_map_results`" in note
    assert "DVC cache does not hold it" in note and "dvc pull" in note
    assert "head" not in note


def test_a_result_never_produced_says_so():
    note = _lacks([_rev("base 4e68b8a", object(), True), _rev("head c6826fa", None, False)], "linear_map_results")
    assert "head c6826fa has no `linear_map_results`: that revision never produced it" in note

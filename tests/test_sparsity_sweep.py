import copy

import pytest

import typed_params as typed

from emergence.common.params import sparsities_on
from emergence.core import train
from emergence.pipeline.config import ConfigError, load_params, validate
from emergence.runs.sweeps import sparsity as sweep
from emergence.analysis.events import task_analyses
from stages.sparsity_summary import summarize


@pytest.fixture
def params():
    p = load_params(profile="smoke")
    p["sweeps"]["sparsity"].update(steps=12, eval_every=6)
    return p


def test_profile_subsets():
    row = {"state_size": 8, "sparsities": [1, 2, 3, 4], "default": [1, 4], "smoke": []}
    assert sparsities_on(row, "paper") == [1, 2, 3, 4]
    assert sparsities_on(row, "default") == [1, 4]
    assert sparsities_on(row, "smoke") == []


@pytest.mark.parametrize("field, value, message", [
    ("sparsities", [1, 9], "sparsities: each must be in [1, state_size=8]"),
    ("default", [1, 3], "default: must be a subset"),
    ("smoke", "1 4", "a YAML list"),
])
def test_bad_grid_rows_are_rejected(field, value, message):
    p = load_params()
    p["sweeps"]["sparsity"]["grid"]["S08"][field] = value
    if field == "default":
        p["sweeps"]["sparsity"]["grid"]["S08"]["sparsities"] = [1, 2]
    with pytest.raises(ConfigError, match="sweeps.sparsity.grid.S08"):
        validate(p)


def run_row(params: dict, name: str, row: dict, scratch):
    """The sweep's row `name` (written into the params' grid) as its stage trains it."""
    params["sweeps"]["sparsity"]["grid"][name] = row
    setting = typed.setting(params)
    return sweep.run_row(setting, typed.section(params, "sparsity"), name, scratch, setting.execution)


def test_cell_config_overrides_only_the_cell_and_budget(params):
    setting = typed.setting(params)
    cfg = sweep.cell_config(setting, typed.section(params, "sparsity"), 16, 5)
    assert (cfg.task.state_size, cfg.task.sparsity) == (16, 5)
    assert cfg.train.steps == 12 and cfg.model == setting.linear_map.model


def test_row_trains_each_cell_once_then_uses_the_cache(tmp_path, params, monkeypatch):
    row = {"state_size": 6, "sparsities": [1, 2, 3], "default": [1], "smoke": [1, 3]}
    first = run_row(params, "S06", row, tmp_path)
    assert first["sparsity"].values.tolist() == [1, 3]
    assert first["accuracy"].dims == ("sparsity", "seed", "step")
    monkeypatch.setattr(train, "train_step", lambda *a, **k: (_ for _ in ()).throw(AssertionError("retrained")))
    again = run_row(params, "S06", row, tmp_path)
    assert again.identical(first)
    summary = summarize({"S06": _write(tmp_path, first)}, task_analyses(params)["linear_map"])
    assert summary["cell"].values.tolist() == ["S06_s01", "S06_s03"]
    assert summary["final_output_loss"].dims == ("cell", "seed")


def test_row_without_cells_on_this_profile_is_a_marker(tmp_path, params):
    ds = run_row(params, "S32", {"state_size": 32, "sparsities": [1], "default": [1], "smoke": []}, tmp_path)
    assert ds.attrs["status"] == sweep.NO_CELLS and not ds.data_vars


def _write(tmp_path, ds):
    from emergence.common.io import write_netcdf

    path = tmp_path / "row.nc"
    write_netcdf(ds, path)
    return path


def test_the_budget_pilot_trains_the_sweeps_cell_at_the_longer_budget(tmp_path, params, monkeypatch):
    from emergence.tools.sparsity_pilot import pilot_rows

    rows = pilot_rows(params, 6, [1, 3], steps=18, n_seeds=1, scratch=tmp_path)
    assert [(r["sparsity"], r["steps"]) for r in rows] == [(1, 18), (3, 18)]
    assert all(r["solved"].endswith("/1") and r["emergence"].endswith("/1") for r in rows)
    # the pilot's cell is the sweep's at that budget: the sweep then loads it instead of training
    longer = copy.deepcopy(params)
    longer["sweeps"]["sparsity"].update(steps=18, n_seeds=1)
    row = {"state_size": 6, "sparsities": [1, 3], "default": [1, 3], "smoke": [1, 3]}
    monkeypatch.setattr(train, "train_step", lambda *a, **k: (_ for _ in ()).throw(AssertionError("retrained")))
    assert run_row(longer, "S06", row, tmp_path)["sparsity"].values.tolist() == [1, 3]

import pytest

import typed_params as typed

from emergence.runs.cells import write_sweep
from emergence.pipeline.config import ConfigError, load_params, validate
from emergence.runs.sweeps import architecture as arch
from emergence.analysis.architecture import summarize_architecture as summarize
from emergence.analysis.events import task_analyses


@pytest.fixture
def params():
    p = load_params(profile="smoke")
    p["sweeps"]["architecture"].update(steps=8, eval_every=4)
    p["sweeps"]["architecture"]["cells"] = {
        "H1_dh4_L1": {"n_head": 1, "d_head": 4, "n_layer": 1, "families": ["heads"], "profiles": ["smoke"]},
        "H2_dh4_L2": {"n_head": 2, "d_head": 4, "n_layer": 2, "families": ["heads", "depth"], "profiles": ["smoke"]},
        "H9_dh9_L9": {"n_head": 9, "d_head": 9, "n_layer": 9, "families": ["depth"], "profiles": ["paper"]},
    }
    return p


def test_cell_config_sets_the_shape(params):
    sweep = typed.section(params, "architecture")
    cfg = arch.cell_config(typed.setting(params), sweep, sweep.cells["H2_dh4_L2"]).model
    assert (cfg.n_head, cfg.d_model, cfg.n_layer, cfg.d_mlp) == (2, 8, 2, 32)


def test_run_writes_only_this_profiles_cells_and_summarizes(tmp_path, params):
    names = write_sweep(typed.files(params, "architecture"), tmp_path / "cells", tmp_path / "scratch",
                        typed.execution(params))
    assert names == ["H1_dh4_L1", "H2_dh4_L2"]
    assert sorted(p.name for p in (tmp_path / "cells").iterdir()) == ["H1_dh4_L1.nc", "H2_dh4_L2.nc"]
    s = summarize(tmp_path / "cells", task_analyses(params)["linear_map"], "architecture", "linear_map")
    assert s["n_head"].values.tolist() == [1, 2] and s["n_layer"].values.tolist() == [1, 2]
    assert s["plateau_end_step"].dims == ("cell", "seed")
    assert s["n_params"].values[1] > s["n_params"].values[0]


def test_unknown_family_is_rejected():
    p = load_params()
    p["sweeps"]["architecture"]["cells"]["H1_dh8_L1"]["families"] = ["heads", "breadth"]
    with pytest.raises(ConfigError, match="sweeps.architecture.cells.H1_dh8_L1.families"):
        validate(p)

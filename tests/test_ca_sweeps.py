from dataclasses import replace

import numpy as np
import pytest

import typed_params as typed

from emergence.runs.cells import write_sweep
from emergence.pipeline.config import ConfigError, load_params, validate
from emergence.runs.sweeps import ca_state_size as sweep
from emergence.analysis.architecture import summarize_architecture
from emergence.analysis.ca_state_size import summarize as summarize_state_sizes
from emergence.analysis.events import task_analyses


@pytest.fixture
def params():
    p = load_params(profile="smoke")
    p["sweeps"]["ca_state_size"].update(steps=8, eval_every=4, state_sizes=[3, 5], strengths=[0, 30],
                                        bias_scaling="constant")
    return p


def test_token_batch_is_held_fixed_across_state_sizes(params):
    s = replace(typed.section(params, "ca_state_size"), batch_tokens=1024)
    assert [sweep.batch_size(s, S, 16) for S in (4, 8, 16, 128, 512)] == [16, 8, 4, 1, 1]
    setting = typed.setting(params)
    cfg = sweep.cell_config(setting, typed.section(params, "ca_state_size"), 5, 30.0)
    assert cfg.task.state_size == 5 and cfg.bias.strength == 30.0
    assert cfg.train.batch_size == 64 // (5 * params["cellular_automata"]["task"]["n_states"])
    assert cfg.model == setting.cellular_automata.model


def test_length_compensated_bias_keeps_the_initial_window_mass(params):
    params["sweeps"]["ca_state_size"].update(bias_scaling="log_length", reference_state_size=4)
    setting, args = typed.setting(params), typed.section(params, "ca_state_size")
    applied = {S: sweep.cell_config(setting, args, S, 3.0).bias.strength for S in (4, 8, 16)}
    assert applied[4] == 3.0 and applied[8] == pytest.approx(3 + np.log(2)) and applied[16] == pytest.approx(3 + np.log(4))
    assert sweep.cell_config(setting, args, 16, 0.0).bias.strength == 0.0  # the control
    # e^c grows as S does, as the number of keys competing with the 3-cell window does
    mass = {S: 3 * np.exp(c) / (3 * np.exp(c) + 16 * S / 2) for S, c in applied.items()}
    assert max(mass.values()) - min(mass.values()) < 1e-9


def test_run_and_summary_cover_every_state_size_and_strength(tmp_path, params):
    assert write_sweep(typed.files(params, "ca_state_size"), tmp_path / "cells", tmp_path / "scratch", typed.execution(params)) == [
        "S0003", "S0005"]
    assert sorted(p.name for p in (tmp_path / "cells").iterdir()) == ["S0003.nc", "S0005.nc"]
    s = summarize_state_sizes(params, "ca_state_size", tmp_path / "cells")
    assert s["state_size"].values.tolist() == [3, 3, 5, 5]
    assert s["strength"].values.tolist() == [0.0, 30.0, 0.0, 30.0]
    assert s["applied_strength"].values.tolist() == [0.0, 30.0, 0.0, 30.0]  # constant scaling
    mass = s["initial_parent_mass"].values
    assert mass[1] > mass[0] and mass[3] > mass[2]  # the bias puts mass on the window from step 0
    assert s.attrs["chance_accuracy"] == pytest.approx(0.25)
    assert s["plateau_end_step"].dims == ("cell", "seed") and s.sizes["seed"] == 2


def test_rerun_loads_cells_from_the_cache(tmp_path, params, monkeypatch):
    write_sweep(typed.files(params, "ca_state_size"), tmp_path / "a", tmp_path / "scratch", typed.execution(params))
    from emergence.core import train

    def boom(*args, **kwargs):
        raise AssertionError("a cached cell was retrained")

    monkeypatch.setattr(train, "train_step", boom)
    params["sweeps"]["ca_state_size"]["state_sizes"] = [5]  # a subset: every cell is cached
    write_sweep(typed.files(params, "ca_state_size"), tmp_path / "b", tmp_path / "scratch", typed.execution(params))
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["S0005.nc"]


def test_architecture_sweep_runs_on_the_automata(tmp_path, params):
    params["sweeps"]["ca_architecture"].update(steps=6, eval_every=3)
    params["sweeps"]["ca_architecture"]["cells"] = {
        "H1_dh4_L1": {"n_head": 1, "d_head": 4, "n_layer": 1, "families": ["depth"], "profiles": ["smoke"]},
        "H1_dh4_L2": {"n_head": 1, "d_head": 4, "n_layer": 2, "families": ["depth"], "profiles": ["smoke"]}}
    assert write_sweep(typed.files(params, "ca_architecture"), tmp_path / "cells", tmp_path / "scratch",
                       typed.execution(params)) == ["H1_dh4_L1", "H1_dh4_L2"]
    s = summarize_architecture(tmp_path / "cells", task_analyses(params)["cellular_automata"], "ca_architecture",
                               "cellular_automata")
    assert s.attrs["task"] == "cellular_automata" and s["n_layer"].values.tolist() == [1, 2]


@pytest.mark.parametrize("key, value, message", [
    ("sweeps.ca_state_size.strengths", [3], "must include 0"),
    ("sweeps.ca_state_size.state_sizes", [8, 4], "distinct, increasing"),
    ("sweeps.ca_state_size.state_sizes", [2, 4], "must be >= the window"),
    ("cellular_automata.task.radius", 5, "the window 2r\\+1 must fit"),
    ("cellular_automata.model.n_head", 3, "must divide cellular_automata.model.d_model"),
    ("cellular_automata.task.loss_positions", "output", "one of all, predictable"),
])
def test_bad_automata_params_are_rejected(key, value, message):
    p = load_params()
    node = p
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    with pytest.raises(ConfigError, match=message):
        validate(p)


def test_analysis_uses_the_tasks_chance_level():
    import xarray as xr

    from emergence.analysis.events import AnalysisArgs, analyse

    steps = np.array([0, 10, 20, 30])
    acc = np.array([[0.25, 0.25, 0.7, 1.0]])  # from chance (1/4) to perfect
    ds = xr.Dataset({"accuracy": (("seed", "step"), acc), "unit_accuracy": (("seed", "step", "cell"), acc[..., None]),
                     "parent_mass": (("seed", "step", "layer", "head", "cell"), np.zeros((1, 4, 1, 1, 1))),
                     "attention_entropy": (("seed", "step", "layer", "head", "cell"), np.zeros((1, 4, 1, 1, 1))),
                     **{v: (("seed", "step"), acc) for v in ("loss", "output_loss", "exact_match", "p_correct")},
                     "diverged_step": (("seed",), np.array([-1]))},
                    coords={"seed": [0], "step": steps, "cell": [0], "layer": [0], "head": [0]},
                    attrs={"chance_accuracy": 0.25})
    out = analyse(ds, AnalysisArgs(plateau_threshold=0.1, emergence_threshold=0.5, solved_threshold=0.9,
                                   smoothing_window=1, alpha=0.1))
    # progress (acc - 1/4) / (3/4) crosses 0.5 at acc = 0.625: 15/45 of the way from step 10 to 20
    assert out["emergence_step"].values[0] == pytest.approx(10 + 10 * (0.625 - 0.25) / 0.45)
    assert out["unit_emergence_step"].dims == ("seed", "cell")

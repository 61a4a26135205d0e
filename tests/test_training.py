import copy
import filecmp
import json
from dataclasses import replace

import numpy as np
import pytest
import torch
import xarray as xr

from emergence.analysis.events import analyse, summary_metrics, task_analyses
from emergence.common.io import read_netcdf
from emergence.core.tasks import linear_map
from emergence.runs.cells import Setting
from emergence.core.train import FAULT_ENV, InjectedFault, checkpoint_steps, eval_steps, load_checkpoint, schedules
from emergence.pipeline.config import load_params

from training_reference import train_task


def test_checkpoint_schedule_is_pythia_like():
    assert checkpoint_steps(3000, 512, 1000) == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 3000]
    assert checkpoint_steps(2500, 4, 1000) == [0, 1, 2, 4, 1000, 2000, 2500]


def test_eval_schedule_is_log_then_regular():
    assert eval_steps(100, 25) == [0, 1, 2, 4, 8, 16, 25, 50, 75, 100]


def test_every_checkpoint_is_evaluated():
    train = replace(Setting.of(load_params(profile="smoke")).linear_map.train, steps=1200, eval_every=100,
                    checkpoint_log_until=512, checkpoint_every=500)
    evals, ckpts = schedules(train)
    assert set(ckpts) <= set(evals) and 512 in evals and 150 not in evals


@pytest.fixture
def smoke_params():
    params = load_params(profile="smoke")
    params["linear_map"]["train"].update(steps=24, eval_every=8, checkpoint_every=12, resume_every=8,
                                         checkpoint_log_until=4, n_seeds=3, seeds_per_group=2)
    return params


def run(params, root):
    return train_task(linear_map, params["linear_map"], root)


def test_results_have_named_dims_and_config(tmp_path, smoke_params):
    ds = run(smoke_params, tmp_path)
    on_disk = read_netcdf(tmp_path / "train.nc")
    assert np.isfinite(on_disk["attention_map"].values).all()  # every checkpoint has its map
    assert on_disk["unit_loss"].dims == ("seed", "step", "bit")
    assert on_disk["attention_entropy"].dims == ("seed", "step", "layer", "head", "bit")
    assert on_disk["seed"].values.tolist() == [0, 1, 2]
    assert "config" in on_disk.attrs and "code_version" in on_disk.attrs
    xr.testing.assert_equal(ds.drop_attrs(), on_disk.drop_attrs())
    # checkpoints hold every seed, stacked across groups, and reload into a working model
    model = load_checkpoint(tmp_path / "ckpt" / "step00000024.pt")
    assert model.seeds == (0, 1, 2)
    assert not (tmp_path / "scratch").exists() or not any((tmp_path / "scratch").iterdir())


def test_identical_inputs_give_identical_bytes(tmp_path, smoke_params):
    run(smoke_params, tmp_path / "a")
    run(smoke_params, tmp_path / "b")
    assert filecmp.cmp(tmp_path / "a" / "train.nc", tmp_path / "b" / "train.nc", shallow=False)
    assert filecmp.cmp(tmp_path / "a" / "task.nc", tmp_path / "b" / "task.nc", shallow=False)


def test_interrupted_run_resumes_to_the_same_result(tmp_path, smoke_params, monkeypatch):
    run(smoke_params, tmp_path / "clean")
    monkeypatch.setenv(FAULT_ENV, "13")  # after a snapshot at 8, before the next at 16
    with pytest.raises(InjectedFault):
        run(smoke_params, tmp_path / "crash")
    assert not (tmp_path / "crash" / "train.nc").exists()  # nothing half-written
    assert not (tmp_path / "crash" / "ckpt").exists()
    monkeypatch.delenv(FAULT_ENV)
    run(smoke_params, tmp_path / "crash")
    assert filecmp.cmp(tmp_path / "clean" / "train.nc", tmp_path / "crash" / "train.nc", shallow=False)


def test_seed_result_does_not_depend_on_grouping(tmp_path, smoke_params):
    grouped = run(smoke_params, tmp_path / "g")
    single = copy.deepcopy(smoke_params)
    single["linear_map"]["train"].update(seeds_per_group=1)
    alone = run(single, tmp_path / "s")
    np.testing.assert_allclose(grouped["train_loss"].values, alone["train_loss"].values, rtol=0, atol=1e-5)
    np.testing.assert_allclose(grouped["accuracy"].values, alone["accuracy"].values, rtol=0, atol=1e-5)


def test_divergence_is_recorded_not_plotted(tmp_path, smoke_params):
    smoke_params["linear_map"]["train"].update(divergence_loss=0.5)  # every loss "diverges" at once
    ds = run(smoke_params, tmp_path)
    assert (ds["diverged_step"].values == 0).all()
    assert np.isnan(ds["accuracy"].values[:, 1:]).all()


def test_analysis_of_a_run(tmp_path, smoke_params):
    res = run(smoke_params, tmp_path)
    ana = analyse(res, task_analyses(load_params(profile="smoke"))["linear_map"])
    assert ana["emergence_step"].dims == ("seed",)
    assert ana["unit_emergence_step"].dims == ("seed", "bit")
    m = summary_metrics(ana)
    assert m["n_seeds"] == 3 and 0 <= m["fraction_solved"] <= 1


def test_attention_bias_moves_attention_onto_the_parents(tmp_path, smoke_params):
    smoke_params["linear_map"]["train"].update(steps=2, eval_every=1, n_seeds=1, seeds_per_group=1)
    smoke_params["linear_map"]["bias"].update(strength=30.0, at_eval=True)
    on = run(smoke_params, tmp_path / "on")
    assert on["parent_mass"].isel(step=0).values.min() > 0.99
    smoke_params["linear_map"]["bias"].update(at_eval=False)
    off_at_eval = run(smoke_params, tmp_path / "off")
    assert off_at_eval["parent_mass"].isel(step=0).values.max() < 0.9
    assert "bias" in json.loads(on.attrs["config"])["linear_map"]


def test_compiled_training_steps_follow_the_eager_ones():
    """train.compile changes how the step runs, not what it computes: a few compiled steps give
    the eager losses and parameters to float rounding, and a hooked pass stays eager."""
    from emergence.core.model import ModelConfig, SeedTransformer
    from emergence.core.train import make_optimizer, train_step, training_forward

    cfg = ModelConfig(vocab_size=2, seq_len=8, n_layer=1, d_model=16, n_head=2, d_mlp=32)
    train = replace(Setting.of(load_params(profile="smoke")).linear_map.train, lr=1e-2, beta1=0.9, beta2=0.999,
                    weight_decay=0.0, compile="default")
    tokens = torch.randint(0, 2, (2, 4, 8), generator=torch.Generator().manual_seed(0))
    weights = torch.ones(7)
    models = [SeedTransformer(cfg, [0, 1]) for _ in range(2)]
    forwards = [models[0], training_forward(models[1], train, None)]
    assert forwards[1] is not models[1]
    assert training_forward(models[1], train, {"blocks.0.hook_resid_pre": lambda x, n: None}) is models[1]
    assert training_forward(models[1], replace(train, compile="none"), None) is models[1]
    opts = [make_optimizer(m, train) for m in models]
    for step in range(3):
        losses = [train_step(f, o, tokens, weights, 1.0) for f, o in zip(forwards, opts)]
        torch.testing.assert_close(losses[0], losses[1], rtol=1e-4, atol=1e-5)
        if step == 0:  # gradients (Adam's later updates amplify rounding in near-zero gradients)
            for p, q in zip(models[0].parameters(), models[1].parameters()):
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-6)

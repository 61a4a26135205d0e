"""The training path on a GPU: the same run on CUDA as on the CPU (within float tolerance), the
seed axis kept, the fused attention path where no pattern is recorded, bfloat16 autocast for
training with float32 evaluation. Runs where a CUDA device exists; skipped elsewhere."""
import copy

import numpy as np
import pytest
import torch

from emergence.core.hooks import pattern_name
from emergence.core.model import SeedTransformer
from emergence.core.tasks import linear_map
from emergence.core.train import evaluate
from emergence.pipeline.config import load_params

from training_reference import train_task

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
DEVICE = "cuda"


@pytest.fixture
def params():
    p = load_params(profile="smoke")
    p["linear_map"]["train"].update(steps=40, eval_every=10, checkpoint_every=20, resume_every=20,
                                    checkpoint_log_until=4, n_seeds=3, seeds_per_group=3, threads=1)
    return p


def run(params, root, **train):
    section = copy.deepcopy(params["linear_map"])
    section["train"].update(train)
    return train_task(linear_map, section, root)


def test_a_run_on_cuda_follows_the_cpu_run_and_says_where_it_ran(tmp_path, params):
    cpu = run(params, tmp_path / "cpu", device="cpu")
    gpu = run(params, tmp_path / "gpu", device="cuda")
    assert gpu.attrs["device"] == "cuda" and cpu.attrs["device"] == "cpu"
    # 40 steps of Adam from the same initialisation: TF32 is off, so only summation order differs
    np.testing.assert_allclose(gpu["train_loss"].values, cpu["train_loss"].values, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(gpu["parent_mass"].values, cpu["parent_mass"].values, atol=5e-3)
    assert gpu["example_unit_correct"].dims == ("seed", "step", "example", "bit")


def test_seed_k_on_cuda_is_the_same_alone_or_in_a_batch(tmp_path, params):
    batched = run(params, tmp_path / "b", device="cuda")
    alone = run(params, tmp_path / "a", device="cuda", seeds_per_group=1)
    np.testing.assert_allclose(batched["train_loss"].values, alone["train_loss"].values, rtol=0, atol=1e-4)


def test_bf16_trains_on_cuda_and_evaluates_in_float32(tmp_path, params):
    ds = run(params, tmp_path, device="cuda", precision="bf16-autocast")
    major, _ = torch.cuda.get_device_capability()
    assert ds.attrs["precision"] == ("bf16-autocast" if major >= 8 else "float32")
    assert ds["loss"].dtype == np.float32 and np.isfinite(ds["loss"].values).all()
    f32 = run(params, tmp_path / "f32", device="cuda")
    np.testing.assert_allclose(ds["train_loss"].values[:, :10], f32["train_loss"].values[:, :10], rtol=0.05)


def test_the_fused_attention_path_matches_the_recorded_one_on_cuda(params):
    section = params["linear_map"]
    task = linear_map.task_tensors(linear_map.build_task(section["task"]), section["task"]).to(torch.device("cuda"))
    cfg = linear_map.model_config(section["model"], linear_map.layout_of(section["task"]))
    model = SeedTransformer(cfg, [0, 1]).cuda()
    tokens = task.eval_tokens[:8].unsqueeze(0).expand(2, -1, -1)
    fused = model(tokens)                                          # no hook: scaled_dot_product_attention
    recorded = model(tokens, {pattern_name(0): lambda pattern, name: None})  # a hook forces the explicit pattern
    torch.testing.assert_close(fused, recorded, rtol=1e-4, atol=1e-4)
    metrics = evaluate(model, task, want_maps=True)
    assert all(v.dtype == np.float32 for v in metrics.values())


def test_cells_built_by_cuda_workers_match_this_process(tmp_path, monkeypatch):
    """The executor's GPU pool, one worker per visible GPU: two workers given the same GPU
    (CUDA_VISIBLE_DEVICES names it twice), each seeing it alone as cuda:0, build the cells the
    stage's own process builds on that GPU (within float tolerance: CUDA's atomic adds in the
    embedding's backward need not sum in the same order from run to run)."""
    import xarray as xr

    from emergence.runs import build_log, executor
    from emergence.runs import cells
    from tests.test_executor import _sweep_files

    files = _sweep_files(seeds_per_group=2, device=DEVICE)
    serial = {"executor": "local", "workers": 1, "threads_per_worker": 1, "slowdown": 1.0, "worker_start_s": 0.0}
    cells.write_sweep(copy.deepcopy(files), tmp_path / "here", tmp_path / "scratch-here", serial)
    gpu = executor.visible_gpus()[0]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{gpu},{gpu}")
    for log in ("LOOKUPS", "POOLS", "COLD_WORKERS"):
        monkeypatch.setattr(build_log, log, [])
    cells.write_sweep(copy.deepcopy(files), tmp_path / "pooled", tmp_path / "scratch-pooled", dict(serial, workers=2))
    assert build_log.usage()["workers"] == 2 and build_log.usage()["cells_built"] == 3
    here = sorted((tmp_path / "here").glob("*.nc"))
    assert len(here) == 3
    for path in here:
        a, b = xr.open_dataset(path), xr.open_dataset(tmp_path / "pooled" / path.name)
        assert a.attrs == b.attrs
        xr.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)

"""The linear map, the automata and the corpus implement one task protocol (runner.py)."""
import pytest
import torch
import xarray as xr

from emergence.core.tasks import cellular_automata, linear_map
from emergence.runs.cells import Setting
from emergence.core.train import Task
from emergence.pipeline.config import load_params
from emergence.runs import language_model

PROTOCOL = ("layout_of", "build_task", "task_tensors", "model_config", "identity", "result_layout")


def _sections(params: dict):
    """(module, task section, model section) of each task on the smoke profile."""
    setting, lm = Setting.of(params), language_model.LanguageModelTraining.of(params["language_model"])
    yield linear_map, setting.linear_map.task, setting.linear_map.model
    yield cellular_automata, setting.cellular_automata.task, setting.cellular_automata.model
    yield language_model, lm, next(iter(lm.sizes.values()))


@pytest.mark.parametrize("index", range(3))
def test_every_task_builds_its_tensors_and_model_through_the_protocol(index):
    module, task_params, model_params = list(_sections(load_params(profile="smoke")))[index]
    assert isinstance(module.NAME, str) and isinstance(module.UNIT_DIM, str) and isinstance(module.UNIT_TEXT, str)
    assert all(callable(getattr(module, name)) for name in PROTOCOL)
    task_ds = module.build_task(task_params)
    assert isinstance(task_ds, xr.Dataset) and "eval_tokens" in task_ds
    task = module.task_tensors(task_ds, task_params)
    cfg = module.model_config(model_params, module.layout_of(task_params))
    assert isinstance(task, Task) and task.eval_tokens.shape[1] == cfg.seq_len
    batch = task.sampler(4, torch.Generator().manual_seed(0))
    assert batch.shape == (4, cfg.seq_len) and int(batch.max()) < cfg.vocab_size
    assert int(task.eval_tokens.max()) < cfg.vocab_size and task.gt_pattern.shape == (cfg.seq_len, cfg.seq_len)
    assert isinstance(module.identity(task_ds), dict)
    assert set(module.result_layout(task_ds)) <= {"extra_vars", "extra_coords", "extra_attrs"}

import numpy as np
import pytest
import torch

from emergence import train
from emergence.allocator import keep_freed_memory
from emergence.experiments import cellular_automata as ca_exp
from emergence.model import SeedTransformer

TASK = {"state_size": 4, "n_states": 4, "n_colours": 3, "radius": 1, "periodic": True, "n_rules": 3,
        "rule_seed": 0, "loss_positions": "predictable", "eval_sequences": 10}
MODEL = {"n_layer": 2, "d_model": 8, "n_head": 2, "d_mlp": 16, "norm": "pre"}


@pytest.fixture
def setup():
    task = ca_exp.task_tensors(ca_exp.build_task(TASK), TASK)
    cfg = ca_exp.model_config(MODEL, ca_exp.layout_of(TASK))
    return SeedTransformer(cfg, [3, 4]), task


def test_metrics_do_not_depend_on_the_evaluation_chunk(setup, monkeypatch):
    model, task = setup
    whole = train.evaluate(model, task, want_maps=True)
    # one sequence per chunk: the patterns budget allows E * H * T^2 elements
    monkeypatch.setattr(train, "EVAL_PATTERN_ELEMENTS", 2 * 2 * 16 * 16)
    one_by_one = train.evaluate(model, task, want_maps=True)
    for name in whole:
        np.testing.assert_allclose(one_by_one[name], whole[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert whole["attention_entropy"].shape == (2, 2, 2, 4)  # seed, layer, head, cell


def test_attention_maps_are_truncated_to_the_leading_block(setup, monkeypatch):
    model, task = setup
    full = train.evaluate(model, task, want_maps=True)["attention_map"]
    monkeypatch.setattr(train, "MAX_MAP_LEN", 5)
    cut = train.evaluate(model, task, want_maps=True)["attention_map"]
    assert full.shape[-2:] == (16, 16) and cut.shape[-2:] == (5, 5)
    np.testing.assert_allclose(cut, full[..., :5, :5], rtol=1e-5)


def test_entropy_of_hand_written_patterns():
    from emergence.metrics import attention_entropy

    p = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    torch.testing.assert_close(attention_entropy(p), torch.tensor([0.0, np.log(2), np.log(4)], dtype=torch.float32))


def test_allocator_settings_are_accepted_on_glibc():
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    assert keep_freed_memory() is True

import numpy as np
import pytest
import torch

from emergence.core import train
from emergence.common.schema import load
from emergence.core.model import ModelArgs, SeedTransformer
from emergence.core.tasks import cellular_automata as ca
from emergence.runs.allocator import keep_freed_memory

TASK = {"state_size": 4, "n_states": 4, "n_colours": 3, "radius": 1, "periodic": True, "n_rules": 3,
        "rule_seed": 0, "loss_positions": "predictable", "eval_sequences": 10}
MODEL = {"n_layer": 2, "d_model": 8, "n_head": 2, "d_mlp": 16, "norm": "pre"}


@pytest.fixture
def setup():
    task_args, model = load(ca.TaskArgs, TASK, "task"), load(ModelArgs, MODEL, "model")
    task = ca.task_tensors(ca.build_task(task_args), task_args)
    cfg = ca.model_config(model, ca.layout_of(task_args))
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


LINEAR_MAP = {"state_size": 6, "sparsity": 2, "task_seed": 0, "distinct_rows": True, "separator": True,
              "loss_positions": "output", "eval_sequences": 12}


def linear_map_setup():
    from emergence.core.tasks import linear_map as lm
    task_args, model = load(lm.TaskArgs, LINEAR_MAP, "task"), load(ModelArgs, MODEL | {"n_layer": 1}, "model")
    task = lm.task_tensors(lm.build_task(task_args), task_args)
    cfg = lm.model_config(model, lm.layout_of(task_args))
    return SeedTransformer(cfg, [3, 4]), task


@pytest.mark.parametrize("which", ["automata", "linear_map"])
def test_per_example_answers_reproduce_the_set_means(setup, which):
    """The per-example fields are the numbers the set means average: exact match and minus the
    unit loss (over a unit's K positions); a unit is right when all its positions are, so its
    per-example accuracy is the unit accuracy at K = 1 (a bit) and at most it otherwise; the whole
    answer's log p is the sum of its units', and it is right exactly when every unit is."""
    model, task = setup if which == "automata" else linear_map_setup()
    m = train.evaluate(model, task, want_maps=False)
    (n, _), (G, K) = task.eval_tokens.shape, task.output_positions.shape
    assert m["example_unit_correct"].shape == (2, n, G) and m["example_answer_log_p"].shape == (2, n)
    np.testing.assert_allclose(m["example_exact"].mean(1), m["exact_match"], rtol=1e-6)
    np.testing.assert_allclose(-m["example_unit_log_p"].mean(1) / K, m["unit_loss"], rtol=1e-5)
    np.testing.assert_allclose(m["example_unit_log_p"].sum(-1), m["example_answer_log_p"], rtol=1e-5)
    np.testing.assert_array_equal(m["example_unit_correct"].min(-1), m["example_exact"])
    unit_right = m["example_unit_correct"].mean(1)
    if K == 1:
        np.testing.assert_allclose(unit_right, m["unit_accuracy"], atol=1e-6)
    else:
        assert (unit_right <= m["unit_accuracy"] + 1e-6).all() and (unit_right < m["unit_accuracy"]).any()
    assert (m["example_answer_log_p"] <= 0).all()
    assert set(train.evaluate(model, task, want_maps=False, examples="none")) == set(m) - set(train.EXAMPLE_METRICS["units"])
    assert set(train.evaluate(model, task, want_maps=False, examples="answer")) == set(m) - {"example_unit_log_p", "example_unit_correct"}


def test_attention_maps_are_truncated_to_the_leading_block(setup, monkeypatch):
    model, task = setup
    full = train.evaluate(model, task, want_maps=True)["attention_map"]
    monkeypatch.setattr(train, "MAX_MAP_LEN", 5)
    cut = train.evaluate(model, task, want_maps=True)["attention_map"]
    assert full.shape[-2:] == (16, 16) and cut.shape[-2:] == (5, 5)
    np.testing.assert_allclose(cut, full[..., :5, :5], rtol=1e-5)


def test_entropy_of_hand_written_patterns():
    from emergence.core.metrics import attention_entropy

    p = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    torch.testing.assert_close(attention_entropy(p), torch.tensor([0.0, np.log(2), np.log(4)], dtype=torch.float32))


def test_allocator_settings_are_accepted_on_glibc():
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    assert keep_freed_memory() is True

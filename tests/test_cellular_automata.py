import numpy as np
import pytest
import torch

from emergence.common.schema import load
from emergence.core.tasks import cellular_automata as ca

from training_reference import train_task

ECA = ca.Layout(state_size=7, n_states=4, n_colours=2, radius=1, periodic=True)


def test_rule_30_hand_example():
    # rule 30: 111->0 110->0 101->0 100->1 011->1 010->1 001->1 000->0
    table = ca.elementary_rule(30)
    x = np.array([[0, 0, 0, 1, 0, 0, 0]])
    nxt = ca.step(x, table[None], ECA)
    assert nxt.tolist() == [[0, 0, 1, 1, 1, 0, 0]]
    assert ca.step(nxt, table[None], ECA).tolist() == [[0, 1, 1, 0, 0, 1, 0]]


def test_rule_110_hand_example_with_wraparound():
    # rule 110: 111->0 110->1 101->1 100->0 011->1 010->1 001->1 000->0
    table = ca.elementary_rule(110)
    x = np.array([[1, 0, 0, 0, 0, 0, 0]])
    # cell 6 sees (0, 0, 1) through the wrap -> 1; cell 0 sees (0, 1, 0) -> 1
    assert ca.step(x, table[None], ECA).tolist() == [[1, 0, 0, 0, 0, 0, 1]]


def test_fixed_boundary_reads_zero_beyond_the_edge():
    layout = ca.Layout(7, 2, 2, 1, periodic=False)
    table = ca.elementary_rule(110)
    x = np.array([[1, 0, 0, 0, 0, 0, 0]])
    assert ca.step(x, table[None], layout).tolist() == [[1, 0, 0, 0, 0, 0, 0]]


def test_ground_truth_pattern_is_the_window_at_the_next_token_offset():
    layout = ca.Layout(4, 2, 2, 1, periodic=True)
    gt = ca.ground_truth_pattern(layout)
    # cell 0 of state 1 (position 4) is predicted at position 3 and needs cells 3, 0, 1 of state 0
    assert np.flatnonzero(gt[3]).tolist() == [0, 1, 3]
    assert np.flatnonzero(gt[6]).tolist() == [0, 2, 3]  # cell 3 of state 1: cells 2, 3, 0 (wrap)
    assert gt[:3].sum() == 0 and gt.sum() == 4 * 3
    q, k = np.nonzero(gt)
    assert (k <= q).all()


def test_torch_sampler_matches_numpy_rollout():
    layout = ca.Layout(9, 5, 3, 1, periodic=True)
    tables = ca.sample_rules(6, layout, seed=0)
    tokens = ca.sample_batch(torch.tensor(tables), 32, layout, torch.Generator().manual_seed(1)).numpy()
    states = tokens.reshape(32, 5, 9)
    # every transition follows one rule of the pool
    for seq in states:
        ok = [np.array_equal(ca.rollout(seq[:1], tables[k:k + 1], layout)[0], seq) for k in range(6)]
        assert any(ok)


def test_loss_weights():
    layout = ca.Layout(3, 3, 2, 1, True)
    assert ca.loss_weights(layout, "predictable").tolist() == [0, 0, 1, 1, 1, 1, 1, 1]
    with pytest.raises(ValueError):
        ca.loss_weights(layout, "none")


def test_elementary_rule_range():
    with pytest.raises(ValueError):
        ca.elementary_rule(256)


# --- the task through the runner's protocol ---

SECTION = {
    "task": {"state_size": 5, "n_states": 3, "n_colours": 3, "radius": 1, "periodic": True, "n_rules": 4,
             "rule_seed": 0, "loss_positions": "predictable", "eval_sequences": 16},
    "model": {"n_layer": 2, "d_model": 16, "n_head": 2, "d_mlp": 32, "norm": "pre"},
    "train": {"n_seeds": 2, "first_seed": 0, "seeds_per_group": 2, "steps": 4, "batch_size": 4, "lr": 1e-3,
              "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.0, "warmup_steps": 0, "grad_clip": 1.0,
              "eval_every": 2, "checkpoint_log_until": 2, "checkpoint_every": 4, "resume_every": 2,
              "divergence_loss": 20.0, "device": "cpu", "threads": 0, "compile": "none", "precision": "float32", "examples": "answer"},
    "bias": {"strength": 0.0, "layers": None, "heads": None, "at_eval": True},
}


def test_eval_set_follows_its_rules():
    task = load(ca.TaskArgs, SECTION["task"], "cellular_automata.task")
    ds = ca.build_task(task)
    layout = ca.layout_of(task)
    tokens = ds["eval_tokens"].values.reshape(16, 3, 5)
    rules = ds["rules"].values
    for seq, r in zip(tokens, ds["eval_rule"].values):
        assert np.array_equal(ca.rollout(seq[:1], rules[r][None], layout)[0], seq)


def test_training_records_per_cell_metrics_and_bias_works(tmp_path):
    plain = train_task(ca, SECTION, tmp_path / "plain", checkpoints=False)
    assert plain["unit_accuracy"].dims == ("seed", "step", "cell") and plain.sizes["cell"] == 5
    assert plain["parent_mass"].isel(step=0).values.max() < 0.9
    biased = dict(SECTION, bias=dict(SECTION["bias"], strength=30.0))
    on = train_task(ca, biased, tmp_path / "biased", checkpoints=False)
    assert on["parent_mass"].isel(step=0).values.min() > 0.99

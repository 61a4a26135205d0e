import numpy as np

from emergence.experiments import cellular_automata as exp
from emergence.experiments.runner import run_training
from emergence.io import write_netcdf

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
    ds = exp.build_task(SECTION["task"])
    layout = exp.layout_of(SECTION["task"])
    tokens = ds["eval_tokens"].values.reshape(16, 3, 5)
    rules = ds["rules"].values
    from emergence.tasks import cellular_automata as ca

    for seq, r in zip(tokens, ds["eval_rule"].values):
        assert np.array_equal(ca.rollout(seq[:1], rules[r][None], layout)[0], seq)


def test_training_records_per_cell_metrics_and_bias_works(tmp_path):
    write_netcdf(exp.build_task(SECTION["task"]), tmp_path / "task.nc")
    plain = run_training(exp, SECTION, tmp_path / "task.nc", tmp_path / "a.nc", None,
                             tmp_path / "scratch")
    assert plain["unit_accuracy"].dims == ("seed", "step", "cell") and plain.sizes["cell"] == 5
    assert plain["parent_mass"].isel(step=0).values.max() < 0.9
    biased = dict(SECTION, bias=dict(SECTION["bias"], strength=30.0))
    on = run_training(exp, biased, tmp_path / "task.nc", tmp_path / "b.nc", None,
                          tmp_path / "scratch")
    assert on["parent_mass"].isel(step=0).values.min() > 0.99

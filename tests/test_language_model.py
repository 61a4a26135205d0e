import numpy as np
import pytest
import torch

from emergence.config import load_params
from emergence.experiments import language_model as lm
from emergence.experiments import lm_probes


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm")
    params = load_params(profile="smoke")
    params["language_model"]["sizes"] = {"tiny": {"n_layer": 2, "n_head": 2, "d_head": 4, "mlp_ratio": 2}}
    params["language_model"]["pretraining"]["sizes"] = ["tiny"]
    ds = lm.train_size(params, "tiny", root / "models" / "tiny", root / "scratch")
    lm.train_size(params, "tiny", root / "models" / "tiny+dyck", root / "scratch", pretrained=True)
    return params, root, ds


def test_training_writes_results_and_pythia_like_checkpoints(trained):
    params, root, ds = trained
    steps = sorted(int(p.stem[4:]) for p in (root / "models" / "tiny" / "checkpoints").glob("step*.pt"))
    assert steps == [0, 1, 2, 4, 8, 16]
    assert ds["unit_accuracy"].dims == ("seed", "step", "position") and ds.attrs["size"] == "tiny"


def test_probes_and_brackets_agree_with_a_dense_scan(trained):
    params, root, _ = trained
    pr = lm_probes.probe_sizes(params, root / "models")
    assert pr["probe_accuracy"].dims == ("size", "capability", "seed", "checkpoint_step")
    acc = pr["probe_accuracy"].sel(size="tiny").values
    thr = pr.attrs["solved_accuracy"]
    steps = pr["checkpoint_step"].values
    for i in range(acc.shape[0]):
        for k in range(acc.shape[1]):
            solved = acc[i, k] >= thr
            if solved.all() or not solved.any() or np.all(np.diff(solved.astype(int)) >= 0):  # monotone runs
                first = int(np.argmax(solved)) if solved[-1] else None
                new = int(pr["bracket_new_step"].sel(size="tiny").values[i, k])
                assert new == (steps[first] if first is not None else -1)


def test_patching_a_forced_bracket(trained):
    params, root, _ = trained
    pr = lm_probes.probe_sizes(params, root / "models")
    # pretend every capability emerged between checkpoints 8 and 16, so patching runs
    pr["bracket_old_step"][:] = 8
    pr["bracket_new_step"][:] = 16
    pr["bracket_censored"][:] = 0
    out = lm_probes.patch_size(params, root / "models", "tiny", pr)
    assert out["delta_p"].dims == ("capability", "seed", "layer", "head") and np.isfinite(out["delta_p"].values).all()
    rec = out["top_k_recovery"].values
    assert rec.shape[-1] == 2 and np.isfinite(rec).all()
    assert ((out["previous_token_score"].values >= 0) & (out["previous_token_score"].values <= 1)).all()


def test_pre_pretraining_changes_the_starting_point(trained):
    params, root, _ = trained
    scratch_model = lm_probes.load_checkpoints(root / "models" / "tiny" / "checkpoints")[0]
    pre_model = lm_probes.load_checkpoints(root / "models" / "tiny+dyck" / "checkpoints")[0]
    assert not torch.equal(scratch_model.wte, pre_model.wte)  # step 0 of the corpus phase = after Dyck
    pr = lm_probes.probe_sizes(params, root / "models")
    assert pr["size"].values.tolist() == ["tiny", "tiny+dyck"]


def test_previous_token_pattern():
    m = lm.previous_token_pattern(4)
    assert m.tolist() == [[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]

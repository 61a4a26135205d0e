import json
from dataclasses import replace

import numpy as np
import pytest

import typed_params as typed
from emergence.analysis.mixers import summarize
from emergence.common.schema import load
from emergence.pipeline.config import ConfigError, load_params, validate
from emergence.runs.cells import write_sweep
from emergence.runs.sweeps import architecture as architecture_sweep, ca_state_size as ca_state_size_sweep, mixers as mc, sparsity as sparsity_sweep


def cells(p: dict):
    return mc.cells(typed.setting(p), typed.section(p, "mixers"))


def cell_config(p: dict, task: str, overrides: dict, arch: dict):
    """The comparison's cell of `arch` (a mapping as params.yaml's architectures hold) at a task setting."""
    return mc.cell_config(typed.setting(p), typed.section(p, "mixers"), task, overrides,
                          load(mc.Architecture, arch, "architecture"))


def sparsity_cell(p: dict, state_size: int, sparsity: int):
    return sparsity_sweep.cell_config(typed.setting(p), typed.section(p, "sparsity"), state_size, sparsity)


def state_size_cell(p: dict, state_size: int, strength: float):
    return ca_state_size_sweep.cell_config(typed.setting(p), typed.section(p, "ca_state_size"), state_size, strength)


def test_transformer_cells_are_the_other_sweeps_cells():
    """The reference cells must coincide with the sparsity and CA state-size sweeps' cells, so the
    cell cache trains them once."""
    p = load_params()
    p["sweeps"]["mixers"]["linear_map"].update({k: v for k, v in p["sweeps"]["sparsity"].items() if k != "grid"})
    arch = dict(p["sweeps"]["mixers"]["architectures"]["transformer"], n_seeds=None)  # the setting's seeds
    ca = cell_config(p, "cellular_automata", {"state_size": 8}, arch)
    assert ca == state_size_cell(p, 8, 0.0)   # its own linear-map rate leaves the automata alone
    arch["lr"] = None   # at the task's rate the linear-map cell is the sparsity sweep's too
    lm = cell_config(p, "linear_map", {"state_size": 16, "sparsity": 4}, arch)
    assert lm == sparsity_cell(p, 16, 4)


def test_default_profile_trains_each_reference_cell_once():
    """On the default profile every automata transformer cell of the comparison is the
    state-size sweep's, with the same configuration (one cache entry); a linear-map one is the
    sparsity sweep's wherever the budgets coincide, and otherwise (the default trains the
    comparison for 3000 steps, the sparsity grid for 1000) a cell of its own."""
    p = load_params(profile="default")
    mixers = p["sweeps"]["mixers"]["linear_map"]
    lm_row = next(r for r in p["sweeps"]["sparsity"]["grid"].values() if r["state_size"] == mixers["state_size"])
    same_budget = all(mixers[k] == p["sweeps"]["sparsity"][k] for k in ("steps", "batch_size", "n_seeds"))
    sweep = typed.section(p, "mixers")
    for name, cfg in cells(p):
        if name.startswith("linear_map") and name.endswith("-transformer"):
            s = cfg.task.sparsity
            if same_budget and s in lm_row["default"]:
                assert cfg == sparsity_cell(p, lm_row["state_size"], s)
            else:
                assert cfg.train.steps == mixers["steps"], name
        elif name.endswith("-transformer"):
            S = cfg.task.state_size
            assert S in p["sweeps"]["ca_state_size"]["state_sizes"], name
            shared = state_size_cell(p, S, 0.0)
            # the same cell but for the seeds the comparison gives the transformer there
            assert cfg.train.n_seeds == mc.seeds(sweep, sweep.architectures["transformer"], "cellular_automata")
            assert cfg == replace(shared, train=replace(shared.train, n_seeds=cfg.train.n_seeds))
    # where the comparison's seeds for the transformer equal the automata architecture sweep's,
    # its automata cell is that sweep's default-model cell: trained once, for both
    ca_arch = p["sweeps"]["ca_architecture"]
    model = ca_arch["cells"]["H4_dh16_L2"]
    shared = [cfg for name, cfg in cells(p) if name == f"cellular_automata-S{ca_arch['state_size']:03d}-transformer"
              and cfg.train.n_seeds == ca_arch["n_seeds"]]
    assert len(shared) == 1  # as the default profile has it
    shape = load(architecture_sweep.ShapeCell, model, "cell")
    assert shared[0] == architecture_sweep.cell_config(typed.setting(p), typed.section(p, "ca_architecture"), shape,
                                                       "ca_architecture")
    transformer_cells = [name for name, _ in cells(p) if name.endswith("-transformer")]
    assert len(transformer_cells) == len(set(transformer_cells))


def test_every_cell_is_parameter_matched_and_named():
    p = load_params()
    planned = cells(p)
    sweep = typed.section(p, "mixers")
    archs = mc.architectures(typed.setting(p), sweep)
    assert len(planned) == sum(mc.runs_setting(arch, task, overrides) for arch in archs.values()
                               for task, overrides, _ in mc.settings(sweep))
    # the masking control runs the linear map's s = 3 only
    assert [n for n, _ in planned if n.endswith("unmasked_mixing")] == ["linear_map-S16_s03-unmasked_mixing"]
    assert not any(name.startswith("linear_map") and name.endswith("mamba2") for name, _ in planned)
    counts = mc.parameter_counts(planned)
    for name, count in counts.items():
        reference = counts[name.rsplit("-", 1)[0] + "-transformer"]
        assert abs(count - reference) <= 0.1 * reference, name
    mixers = {cfg.model.mixer or "attention" for name, cfg in planned if name.startswith("cellular_automata")}
    # the static reading decides no row on the automata (token_mlp decides claim 8 there): not trained
    assert mixers == {"attention", "token_mlp", "mamba2", "gated_deltanet", "rwkv7"}
    p["sweeps"]["mixers"]["architectures"]["rwkv7"]["profiles"] = ["smoke", "paper"]
    assert "rwkv7" not in mc.architectures(typed.setting(p), typed.section(p, "mixers"))  # where it runs
    smoke = {cfg.model.mixer or "attention" for _, cfg in cells(load_params(profile="smoke"))}
    assert smoke == {"attention", "static_mixing", "token_mlp", "unmasked_mixing", "mamba2", "gated_deltanet", "rwkv7"}


def test_an_architecture_can_train_at_its_own_learning_rate():
    p = load_params()
    archs = p["sweeps"]["mixers"]["architectures"]
    archs["static_mixing"]["lr"] = {"linear_map": 0.01}
    setting = {"state_size": 16, "sparsity": 3}
    assert cell_config(p, "linear_map", setting, archs["static_mixing"]).train.lr == 0.01
    ca = cell_config(p, "cellular_automata", {"state_size": 8}, archs["static_mixing"])
    assert ca.train.lr == p["cellular_automata"]["train"]["lr"]   # per task: the automata keep theirs
    archs["mamba2"].pop("lr", None)  # unset: the task's rate
    lr = cell_config(p, "linear_map", setting, archs["mamba2"]).train.lr
    assert lr == p["linear_map"]["train"]["lr"]
    archs["static_mixing"]["lr"] = {"linear_map": -1.0}
    with pytest.raises(ConfigError, match="sweeps.mixers.architectures.static_mixing.lr.linear_map"):
        validate(p)
    archs["static_mixing"]["lr"] = {"linear_mapp": 0.01}
    with pytest.raises(ConfigError, match="linear_mapp"):
        validate(p)


def test_an_architecture_can_train_its_own_seed_count_per_task():
    p = load_params()
    archs = p["sweeps"]["mixers"]["architectures"]
    sweep = p["sweeps"]["mixers"]
    ca, lm = {"state_size": 8}, {"state_size": 16, "sparsity": 3}
    train = lambda name, task, setting: cell_config(p, task, setting, archs[name]).train  # noqa: E731
    archs["static_mixing"]["n_seeds"] = {"cellular_automata": 9}
    assert train("static_mixing", "cellular_automata", ca).n_seeds == 9
    assert train("static_mixing", "cellular_automata", ca).seeds_per_group == min(
        9, p["cellular_automata"]["train"]["seeds_per_group"])
    assert train("static_mixing", "linear_map", lm).n_seeds == sweep["linear_map"]["n_seeds"]  # per task
    archs["rwkv7"].pop("n_seeds", None)  # unset: the setting's count
    assert train("rwkv7", "cellular_automata", ca).n_seeds == sweep["cellular_automata"]["n_seeds"]
    archs["rwkv7"]["n_seeds"] = None
    assert train("rwkv7", "cellular_automata", ca).n_seeds == sweep["cellular_automata"]["n_seeds"]
    for bad in (0, 2.5, "8"):
        archs["static_mixing"]["n_seeds"] = {"cellular_automata": bad}
        with pytest.raises(ConfigError, match="sweeps.mixers.architectures.static_mixing.n_seeds.cellular_automata"):
            validate(p)
    archs["static_mixing"]["n_seeds"] = {"automata": 8}
    with pytest.raises(ConfigError, match="automata"):
        validate(p)


def test_an_architecture_can_compile_its_training_step_without_touching_shared_cells():
    p = load_params()
    archs = p["sweeps"]["mixers"]["architectures"]
    setting = {"state_size": 16, "sparsity": 3}
    train = lambda name: cell_config(p, "linear_map", setting, archs[name]).train  # noqa: E731
    archs["mamba2"]["compile"] = "default"
    assert train("mamba2").compile == "default"
    assert archs["transformer"].get("compile") is None  # the transformer cells stay the other sweeps' cells
    assert train("transformer").compile == p["linear_map"]["train"]["compile"]
    archs["mamba2"]["compile"] = "fast"
    with pytest.raises(ConfigError, match="sweeps.mixers.architectures.mamba2.compile"):
        validate(p)


def test_a_shape_key_the_mixer_does_not_read_is_an_error():
    p = load_params()
    p["sweeps"]["mixers"]["architectures"]["rwkv7"]["d_state"] = 16
    with pytest.raises(ConfigError, match="architectures.rwkv7.d_state: rwkv7 does not read it"):
        validate(p)


@pytest.mark.parametrize("bad, message", [([5], r"unmasked_mixing.sparsities: each must be one of linear_map.sparsities \(\[3\]\), got \[5\]"),
                                          ([0], "unmasked_mixing.sparsities"), (["3"], "unmasked_mixing.sparsities")])
def test_an_architectures_sparsities_are_the_comparisons(bad, message):
    p = load_params()
    p["sweeps"]["mixers"]["architectures"]["unmasked_mixing"]["sparsities"] = bad
    with pytest.raises(ConfigError, match=message):
        validate(p)


def test_kernels_reach_the_mixer_cells_and_cuda_stops_before_training_without_a_gpu(tmp_path, monkeypatch):
    p = load_params(profile="smoke")
    p["sweeps"]["mixers"]["kernels"] = "cuda"
    kernels = {cfg.model.kernels for name, cfg in cells(p) if not name.endswith("-transformer")}
    assert kernels == {"cuda"}
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    for task in ("linear_map", "cellular_automata"):
        p[task]["train"]["device"] = "cpu"
    with pytest.raises(ValueError, match="kernels = cuda needs a CUDA device"):
        write_sweep(typed.files(p, "mixers"), tmp_path / "out", tmp_path / "scratch", typed.execution(p))
    assert not (tmp_path / "out").exists()


def test_a_cell_outside_the_tolerance_stops_before_training(tmp_path):
    p = load_params(profile="smoke")
    p["sweeps"]["mixers"]["tolerance"] = 0.0
    with pytest.raises(ConfigError, match=r"sweeps\.mixers\.architectures\.\w+: \d+ parameters"):
        write_sweep(typed.files(p, "mixers"), tmp_path / "out", tmp_path / "scratch", typed.execution(p))
    assert not (tmp_path / "out").exists() and not (tmp_path / "scratch").exists()


def test_bad_head_count_names_the_key():
    p = load_params()
    p["sweeps"]["mixers"]["architectures"]["rwkv7"]["n_head"] = 7
    with pytest.raises(ConfigError, match="sweeps.mixers.architectures.rwkv7.n_head"):
        validate(p)


def test_unknown_mixer_and_missing_reference_are_rejected():
    p = load_params()
    p["sweeps"]["mixers"]["architectures"]["rwkv7"]["mixer"] = "lstm"
    with pytest.raises(ConfigError, match="sweeps.mixers.architectures.rwkv7.mixer"):
        validate(p)
    p = load_params()
    del p["sweeps"]["mixers"]["architectures"]["transformer"]
    with pytest.raises(ConfigError, match="mixer: attention"):
        validate(p)
    p = load_params()
    p["sweeps"]["mixers"]["architectures"]["mamba2"]["profiles"] = ["default", "gpu"]
    with pytest.raises(ConfigError, match="sweeps.mixers.architectures.mamba2.profiles"):
        validate(p)


def test_run_and_summarize_on_a_tiny_budget(tmp_path):
    p = load_params(profile="smoke")
    sweep = p["sweeps"]["mixers"]
    sweep["linear_map"].update(steps=4, eval_every=2)
    sweep["cellular_automata"].update(steps=4, eval_every=2)
    sweep["architectures"] = {k: v for k, v in sweep["architectures"].items() if k in ("transformer", "static_mixing")}
    sweep["architectures"]["static_mixing"].update(n_seeds={"cellular_automata": 3}, tasks=None)  # both tasks
    sweep["architectures"]["transformer"]["n_seeds"] = None
    sweep["cellular_automata"]["n_seeds"] = sweep["linear_map"]["n_seeds"] = 2
    names = write_sweep(typed.files(p, "mixers"), tmp_path / "cells", tmp_path / "scratch", typed.execution(p))
    assert len(names) == 4
    s = summarize(p, "mixers", tmp_path / "cells")
    assert set(s["architecture"].values) == {"transformer", "static_mixing"}
    assert set(s["task"].values) == {"linear_map", "cellular_automata"}
    assert s["emergence_step"].dims == ("cell", "seed")
    # cells of 2 seeds beside one of 3: the summary pads the missing runs (NaN), never invents them
    runs = {str(c): int(np.isfinite(s["final_output_loss"].values[i]).sum()) for i, c in enumerate(s["cell"].values)}
    assert runs["cellular_automata-S004-static_mixing"] == 3 and s.sizes["seed"] == 3
    assert runs["cellular_automata-S004-transformer"] == runs["linear_map-S06_s02-static_mixing"] == 2
    # the Mixer's MLP width was changed to match the transformer's count
    i = list(s["cell"].values).index("linear_map-S06_s02-static_mixing")
    j = list(s["cell"].values).index("linear_map-S06_s02-transformer")
    assert s["d_mlp"].values[i] != s["d_mlp"].values[j]
    assert abs(int(s["n_params"].values[i]) - int(s["n_params"].values[j])) <= 0.1 * int(s["n_params"].values[j])
    # each cell says which task setting it ran, for the rules that must know whether it is the paper's
    assert json.loads(str(s["task_config"].values[i]))["sparsity"] == 2
    k = list(s["cell"].values).index("cellular_automata-S004-transformer")
    assert json.loads(str(s["task_config"].values[k]))["n_rules"] == p["cellular_automata"]["task"]["n_rules"]


def test_the_learning_rate_pilot_trains_each_rate_once(tmp_path):
    from emergence.tools.lr_pilot import pilot_rows

    p = load_params(profile="smoke")
    rows = pilot_rows(p, [1e-3, 1e-2], steps=12, n_seeds=1, architectures=["transformer", "static_mixing"],
                      scratch=tmp_path)
    assert [(r["architecture"], r["lr"]) for r in rows] == [("transformer", 1e-3), ("transformer", 1e-2),
                                                            ("static_mixing", 1e-3), ("static_mixing", 1e-2)]
    assert all(r["steps"] == 12 and r["emerged"].endswith("/1") and np.isfinite(r["mean_final_loss"]) for r in rows)
    assert rows[0]["mean_final_loss"] != rows[1]["mean_final_loss"]   # the rate reached the trainer
    entries = sorted(tmp_path.joinpath("cells").iterdir())
    assert len(entries) == 4
    pilot_rows(p, [1e-3], steps=12, n_seeds=1, architectures=["transformer"], scratch=tmp_path)
    assert sorted(tmp_path.joinpath("cells").iterdir()) == entries   # cached: nothing retrained


def test_the_pilot_can_train_each_architecture_at_its_own_rate_in_a_setting_not_yet_run(tmp_path):
    from emergence.tools.lr_pilot import own_rate, pilot_rows, with_overrides

    p = load_params(profile="smoke")
    setting, sweep = typed.setting(p), typed.section(p, "mixers")
    archs = mc.architectures(setting, sweep)
    assert own_rate(setting, sweep, archs["static_mixing"], "linear_map") == archs["static_mixing"].lr.linear_map
    assert own_rate(setting, sweep, replace(archs["static_mixing"], lr=None), "cellular_automata") == \
        p["cellular_automata"]["train"]["lr"]
    bigger = with_overrides(p, ["cellular_automata.task.n_rules=16"])
    assert bigger["cellular_automata"]["task"]["n_rules"] == 16 and p["cellular_automata"]["task"]["n_rules"] != 16
    for bad, message in (("cellular_automata.task.n_rulez=16", "unknown key"), ("nope.x=1", "no section"),
                         ("cellular_automata.task.n_rules", "KEY=VALUE")):
        with pytest.raises(SystemExit, match=message):
            with_overrides(p, [bad])
    with pytest.raises(ConfigError, match="n_rules"):
        with_overrides(p, ["cellular_automata.task.n_rules=-1"])
    rows = pilot_rows(p, None, steps=8, n_seeds=1, architectures=["transformer", "static_mixing"], scratch=tmp_path)
    assert [r["lr"] for r in rows] == [own_rate(setting, sweep, archs[a], "linear_map")
                                       for a in ("transformer", "static_mixing")]


def test_a_kernel_the_library_refuses_on_this_gpu_stops_before_training(tmp_path, monkeypatch):
    """fla refuses Gated DeltaNet's backward on Hopper GPUs with Triton 3.4-3.7.0 (seen on an
    H200, Triton 3.6.0): the sweep stops at the start, naming the key, not at that cell's first
    backward after the other cells trained."""
    p = load_params(profile="smoke")
    p["sweeps"]["mixers"]["kernels"] = "cuda"
    monkeypatch.setattr(mc, "check_available", lambda mixers, device: None)
    monkeypatch.setattr(mc, "refusal", lambda mixer: "refused here" if mixer == "gated_deltanet" else None)
    with pytest.raises(ValueError, match=r"sweeps\.mixers\.kernels = cuda, cell \S*gated_deltanet\S*: refused here"):
        write_sweep(typed.files(p, "mixers"), tmp_path / "out", tmp_path / "scratch", typed.execution(p))
    assert not (tmp_path / "out").exists() and not (tmp_path / "scratch").exists()

"""The training plan `make report` prints: every training stage, shared cells counted once,
cached ones not at all, FLOPs that scale as the model and the data say."""
import copy
import json
import math

import pytest

from emergence.core.model import ModelConfig, parameter_count
from emergence.core.train import schedules
from emergence.pipeline.config import load_params
from emergence.pipeline.cost import (CALIBRATE_ABOVE_S, calibrate, cell_flops, cell_kind, kinds_to_build, kinds_to_calibrate,
                                     language_model_flops, language_model_kind, plan_table, planned_cells, reference_kind,
                                     training_flops)
from emergence.runs import cells, language_model as lm
from emergence.runs.cache import entry_of
from emergence.runs.cores import usable_cores


def lm_section(params: dict) -> lm.LanguageModelTraining:
    return lm.LanguageModelTraining.of(params["language_model"])


def test_flops_grow_with_tokens_and_the_attention_with_the_square_of_the_length():
    cfg = ModelConfig(vocab_size=2, seq_len=64, n_layer=1, d_model=64, n_head=8, d_mlp=256, norm="pre")
    assert training_flops(cfg, 64, 10) == pytest.approx(10 * training_flops(cfg, 64, 1))
    weights = 6 * parameter_count(cfg) * 64
    assert training_flops(cfg, 64, 1) - weights == pytest.approx(12 * 1 * 64 ** 2 * 64)


def test_every_training_stage_is_planned_and_a_cell_counts_once(tmp_path):
    params = load_params(profile="smoke")
    planned = planned_cells(params)
    assert {"linear_map_train", "sparsity", "mixers", "precision"} <= set(planned)
    speed = dict.fromkeys(kinds_to_build(params, tmp_path), 2.0)
    table, seconds = plan_table(params, speed, scratch=tmp_path)   # empty cache: everything to build
    rows = table.set_index("stage")
    assert rows.loc["linear_map_train", "to build"] == 1
    # the precision check's float32 linear-map cell is linear_map_train's: built once, by the first stage
    assert rows.loc["precision", "to build"] == rows.loc["precision", "cells"] - 1
    assert rows.loc["lm_train", "to build"] == rows.loc["lm_train", "cells"] > 0
    # the build-time model's seconds, at twice its speed, for every cell to build (shared ones once)
    lm_seconds = sum(cost[-1] for cost in language_model_flops(params))
    builds = {entry_of(tmp_path, cells.task_of(c), cells.cell_key(c, ckpt)): c
              for stage_cells in planned.values() for c, ckpt in stage_cells}
    assert len(builds) == table["to build"].sum() - rows.loc["lm_train", "to build"]
    assert seconds == pytest.approx(2.0 * (sum(cells.cell_build_seconds(c) for c in builds.values()) + lm_seconds)) and seconds > 0
    assert table["device-hours"].sum() == pytest.approx(seconds / 3600, abs=0.01 * len(table))
    flops, seed_steps = cell_flops(planned["linear_map_train"][0][0])
    assert flops > 0 and seed_steps == params["linear_map"]["train"]["n_seeds"] * params["linear_map"]["train"]["steps"]
    assert math.isnan(plan_table(params, None, scratch=tmp_path)[1])


def test_builds_start_with_the_widest_automata_cell_as_measured():
    """Workers take cells longest first by their cost; on the default automata architecture
    sweep the one-layer model of width 128 took 646 s, the two-layer one of width 64 494 s and
    the one-head one 110 s (2 cores, 12 seeds, one-thread workers): the cost must order them so,
    and come within a third of each."""
    cost = {}
    for c, _ in planned_cells(load_params(profile="default"))["ca_architecture"]:
        cost[c.model.n_head, c.model.n_layer] = cells.cell_build_seconds(c)
    assert cost[(8, 1)] > cost[(4, 2)] > cost[(1, 2)]
    for shape, seconds in {(8, 1): 646, (4, 2): 494, (1, 2): 110}.items():
        assert cost[shape] == pytest.approx(seconds, rel=0.35), shape


def test_every_kind_of_cell_is_calibrated_on_this_machine_and_scales_only_its_cells(tmp_path):
    """The calibration times the real training steps and evaluations of the first cell of each kind (task, mixer,
    precision, compile mode), and of each language-model variant: a positive finite factor
    each, and a kind's factor scales its own cells' hours and no other's."""
    params = load_params(profile="smoke")
    kinds = kinds_to_build(params, tmp_path)
    assert {language_model_kind(params, name) for name in lm.variants(lm_section(params))} <= set(kinds)
    assert {k[1] for k in kinds} >= {"attention", "static_mixing", "token_mlp", "unmasked_mixing", "mamba2", "gated_deltanet", "rwkv7"}
    speed = calibrate(params, kinds, seconds=0.3)
    assert set(speed) == set(kinds) and all(math.isfinite(v) and v > 0 for v in speed.values())
    table, seconds = plan_table(params, speed, scratch=tmp_path)
    ones = dict.fromkeys(kinds, 1.0)
    mamba = next(k for k in kinds if k[1] == "mamba2")
    base = plan_table(params, ones, scratch=tmp_path)[0].set_index("stage")["device-hours"]
    doubled = plan_table(params, {**ones, mamba: 2.0}, scratch=tmp_path)[0].set_index("stage")["device-hours"]
    mamba_seconds = sum(cells.cell_build_seconds(c) for c, _ in planned_cells(params)["mixers"]
                        if cell_kind(c) == mamba)
    assert mamba_seconds > 0
    assert doubled["mixers"] - base["mixers"] == pytest.approx(mamba_seconds / 3600, abs=0.011)
    assert (doubled.drop("mixers") == base.drop("mixers")).all()


def test_a_language_model_is_timed_as_its_steps_evaluations_and_pre_pretraining(monkeypatch):
    """A variant's seconds: per seed group, its corpus steps and evaluations (with the attention
    maps its checkpoints keep) and, for a twin, its steps on the synthetic task, each at the
    seconds timed for it; timed on one seed's batches (a paper-scale model on a CPU), scaled to
    the group."""
    from emergence.runs import timing

    params = load_params(profile="smoke")
    section = lm_section(params)
    train = section.train
    timed = []

    def fake(train_, task, cfg, seconds, device, examples=("none",), repeats=5, want_maps=False):
        pre = task.eval_tokens.shape[0] == 16  # the pre-pretraining task's evaluation set
        timed.append((pre, want_maps, cfg.n_head, train_.seeds_per_group))
        per_seed = train_.seeds_per_group / train.seeds_per_group
        return (0.5 if pre else 0.25) * per_seed, {e: 2.0 * per_seed for e in examples}

    monkeypatch.setattr(timing, "timed_step_and_evaluation", fake)
    size, kind, _ = next(v for v in lm.variants(section).values() if v.pretraining is not None)
    group = train.seeds_per_group
    groups = -(-train.n_seeds // group)
    corpus = train.steps * 0.25 + len(schedules(train)[0]) * 2.0
    assert timing.language_model_seconds(section, size, None, 1.0, "cpu") == pytest.approx(groups * corpus)
    assert timed == [(False, True, section.sizes[size].n_head, group)]
    twin = groups * (corpus + section.pretraining.steps[kind] * 0.5)
    assert timing.language_model_seconds(section, size, kind, 1.0, "cpu") == pytest.approx(twin)
    assert group > 1 and timing.language_model_seconds(section, size, kind, 1.0, "cpu", seeds=1) == pytest.approx(twin)
    assert [t[-1] for t in timed[-2:]] == [1, 1]


def test_a_language_model_too_slow_for_a_whole_group_is_timed_on_one_seed_or_not_at_all(monkeypatch):
    from emergence.pipeline import cost

    params = load_params(profile="smoke")
    asked = []
    monkeypatch.setattr(cost, "language_model_seconds", lambda *a, seeds: asked.append(seeds) or 1.0)
    section = lm_section(params)
    variant = next(iter(lm.variants(section)))
    group = section.train.seeds_per_group
    whole = cost.calibrate_language_model(params, variant, 3.0, reference=1.0)  # a smoke model: milliseconds a step
    # as slow as one seed's timing allows, and slower still
    modelled = cost.variant_seconds(section, *lm.variants(section)[variant][:2])
    steps = section.train.steps  # one seed group, no pre-pretraining
    fits = 12.0 / (modelled / steps * 8) * group * 0.99
    assert cost.calibrate_language_model(params, variant, 3.0, reference=fits) == pytest.approx(1.0 / modelled)
    assert cost.calibrate_language_model(params, variant, 3.0, reference=fits * 1.1) == fits * 1.1
    assert asked == [group, 1] and whole == pytest.approx(1.0 / modelled)


def test_the_wall_time_follows_the_executor(tmp_path):
    """In one process the wall time is the device time; with workers it is what the executor's
    plan expects (each stage's cells handed out longest first, slower in a worker)."""
    params = load_params(profile="default")
    speed = dict.fromkeys(kinds_to_build(params, tmp_path), 1.0)
    one = copy.deepcopy(params)
    one["execution"]["workers"] = 1
    table = plan_table(one, speed, scratch=tmp_path)[0]
    assert table["wall hours here"].tolist() == pytest.approx(table["device-hours"].tolist(), abs=0.011)
    table = plan_table(params, speed, scratch=tmp_path)[0].set_index("stage")
    assert (table["wall hours here"] <= table["device-hours"] + 0.011).all()


# The default profile's gains by this model, with the precision check on: 2.4% on 2 cores, 29% on 8
# (the language models' 10-seed builds and the check's 8-seed automata cells, the longest, bound
# the 8-core pool; without the check 2.7% and 30.5%).
@pytest.mark.parametrize("cores, gain", [(2, 0.02), (8, 0.25)])
def test_one_pool_over_every_stage_finishes_sooner_than_stage_by_stage(tmp_path, monkeypatch, cores, gain):
    """`make report` builds every stage's cells in one pool (emergence/pipeline/prebuild.py): stages with
    fewer cells than workers no longer leave workers idle (on 8 cores most stages have fewer
    cells than cores). In one process both are the device time; CPU-bfloat16 cells that leave
    their threads to the process stay in their stages' processes either way."""
    from emergence.runs import executor

    monkeypatch.setattr(executor, "usable_cores", lambda: cores)
    params = load_params(profile="default")
    # with the precision check on (the paper profile runs it), so that bfloat16 twins are planned
    params["sweeps"]["precision"]["tasks"] = ["linear_map", "cellular_automata"]
    speed = dict.fromkeys(kinds_to_build(params, tmp_path), 1.0)
    table = plan_table(params, speed, scratch=tmp_path)[0]
    pooled, by_stage = table.attrs["one pool hours"], table["wall hours here"].sum()
    assert pooled < (1 - gain) * by_stage
    bf16 = sum(cells.cell_build_seconds(c) for planned in planned_cells(params).values() for c, _ in planned
               if c.train.precision != "float32") / 3600
    assert bf16 > 0 and pooled > sum(table["device-hours"]) / cores  # workers, no faster than alone
    # bfloat16 twins that leave their threads to the process stay in their stage, beside the pool
    loose = copy.deepcopy(params)
    loose["sweeps"]["precision"]["bf16_threads"] = 0
    table = plan_table(loose, speed, scratch=tmp_path)[0]
    assert table.attrs["one pool hours"] > bf16 + (sum(table["device-hours"]) - bf16) / cores
    assert table.attrs["one pool hours"] > pooled
    one = copy.deepcopy(params)
    one["execution"]["workers"] = 1
    table = plan_table(one, speed, scratch=tmp_path)[0]
    assert table.attrs["one pool hours"] == pytest.approx(table["wall hours here"].sum(), abs=0.011 * len(table))
    assert math.isnan(plan_table(params, None, scratch=tmp_path)[0].attrs["one pool hours"])


def test_a_kind_with_little_to_build_takes_the_linear_map_cells_factor(tmp_path):
    """Timing a kind costs seconds (a compiled mixer's compile: tens of them), so a kind with
    less than CALIBRATE_ABOVE_S modelled seconds to build is not timed: its cells take the
    linear-map cell's factor, which is always timed."""
    params = load_params(profile="smoke")
    todo, chosen, reference = kinds_to_build(params, tmp_path), kinds_to_calibrate(params, tmp_path), reference_kind(params)
    assert reference in chosen and reference == cell_kind(planned_cells(params)["linear_map_train"][0][0])
    assert all(todo[k] >= CALIBRATE_ABOVE_S for k in chosen - {reference})
    assert set(todo) - chosen, "the smoke profile has kinds too small to time"
    table, seconds = plan_table(params, {reference: 3.0}, scratch=tmp_path)
    assert seconds == pytest.approx(3.0 * sum(todo.values()))
    default = load_params(profile="default")
    assert kinds_to_calibrate(default, tmp_path) == set(kinds_to_build(default, tmp_path))  # every default kind is timed


def test_make_plan_lists_the_cells_an_edit_would_train_without_timing_any(tmp_path, monkeypatch, capsys):
    from emergence.pipeline import cost

    monkeypatch.setattr(cost, "calibrate", lambda *a, **k: pytest.fail("make plan times nothing"))
    assert cost.main(["--profile", "smoke", "--no-calibrate"], scratch=tmp_path, root=tmp_path) == 0  # no DVC here
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:]}
    planned = cost.stage_entries(load_params(profile="smoke"), tmp_path)
    assert set(rows) == {stage for stage, _ in planned}
    # an empty cache: every cell to build, a cell two stages share once
    assert sum(int(to_build) for _, to_build, _ in rows.values()) == len({e for _, entries in planned for e in entries})
    assert "hours" not in out


def test_the_plan_covers_the_stages_dvc_would_run(tmp_path):
    """A stage DVC would not run trains nothing, whatever the cell cache lacks (a clone that
    pulled its results has an empty cache); a foreach row counts as its stage; outside a DVC
    repository every stage counts."""
    from emergence.pipeline import cost

    params = load_params(profile="smoke")
    every = [stage for stage, _ in cost.stage_entries(params, tmp_path)]
    assert [s for s, _ in cost.stage_entries(params, tmp_path, {"sparsity@S08", "lm_probe"})] == ["sparsity"]
    table = cost.plan_table(params, None, tmp_path, {"precision", "linear_map_train", "report_render"})[0]
    assert table["stage"].tolist() == ["linear_map_train", "precision"]
    assert cost.stage_entries(params, tmp_path, None)[-1][0] == "lm_train" and len(every) == 9
    assert cost.stages_to_run(params, tmp_path) is None


# a pipeline by hand: data -> train -> summary -> report, and a second summary of the same training
AFTER = {"validate_params": set(), "data": {"train"}, "train": {"summary", "other_summary"},
         "summary": {"report"}, "other_summary": {"report"}, "report": set()}


def test_a_params_edit_runs_the_stages_reading_its_keys_and_those_after_them_not_every_stage():
    """Each stage declares its keys of params.yaml, so `dvc status` lists the stages whose keys
    changed and the plan adds those after them: an analysis threshold trains nothing (a clone
    that pulled its results, its cell cache empty, would otherwise retrain every cell)."""
    from emergence.pipeline.cost import stages_after

    assert stages_after({"validate_params", "summary"}, AFTER) == {"validate_params", "summary", "report"}
    assert stages_after({"validate_params"}, AFTER) == {"validate_params"}  # a comment, or an inactive overlay
    assert stages_after({"data"}, AFTER) == set(AFTER) - {"validate_params"}  # a task key: everything after it
    assert stages_after({"train"}, AFTER) == {"train", "summary", "other_summary", "report"}
    assert stages_after(set(), AFTER) == set()


def test_with_no_training_stage_to_run_the_plan_says_so(tmp_path, monkeypatch, capsys):
    """A chapter edit or an analysis threshold: `make report`'s plan has no training stage to price."""
    from emergence.pipeline import cost

    params = load_params(profile="smoke")
    table, seconds = cost.plan_table(params, None, tmp_path, {"validate_params", "report_render"})
    assert table.empty and "to build" in table.columns and math.isnan(seconds)
    monkeypatch.setattr(cost, "stages_to_run", lambda params, root: {"report_notebooks", "report_render"})
    monkeypatch.setattr(cost, "merged_params", lambda: {"profile": "smoke"})
    assert cost.main(["--profile", "smoke"], scratch=tmp_path, root=tmp_path) == 0
    assert ("no training stage among those `dvc repro` will run or check out of its run cache "
            "(report_notebooks, report_render)") in capsys.readouterr().out


def test_another_profile_is_planned_whole_whatever_dvc_says_of_the_active_one(tmp_path, monkeypatch, capsys):
    """`--profile paper` on a clone whose default run is up to date: switching would change every
    training stage's params, so DVC's 'nothing to do' about the default profile must not stop it."""
    from emergence.pipeline import cost

    monkeypatch.setattr(cost, "stages_to_run", lambda params, root: set())  # the active profile: up to date
    monkeypatch.setattr(cost, "merged_params", lambda: {"profile": "default"})
    assert cost.main(["--profile", "default", "--no-calibrate"], scratch=tmp_path, root=tmp_path) == 0
    assert "nothing to train" in capsys.readouterr().out
    assert cost.main(["--profile", "smoke", "--no-calibrate"], scratch=tmp_path, root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "nothing to train" not in out and "linear_map_train" in out and "lm_train" in out


@pytest.mark.parametrize("argv", [["--calibrate-seconds", "0"], ["--calibrate-seconds", "nan"], ["--profile", "huge"],
                                  ["--no-calibrate", "--calibrate-seconds", "2"]])
def test_bad_arguments_stop_before_anything_runs(argv, capsys):
    from emergence.pipeline import cost

    with pytest.raises(SystemExit) as stop:
        cost.main(argv)
    assert stop.value.code == 2 and "error:" in capsys.readouterr().err


def test_on_sixteen_cores_the_one_pool_hands_out_seed_groups_and_finishes_sooner(tmp_path, monkeypatch):
    """The default run's longest cell (the 8-seed linear-map run) bounds one pool of 16 workers
    over whole cells; handed out as seed groups it does not. On 2 cores nothing is split."""
    from emergence.runs import executor
    from emergence.runs import cache

    params = load_params(profile="default")
    speed = dict.fromkeys(kinds_to_build(params, tmp_path), 1.0)
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    assert plan_table(params, speed, scratch=tmp_path)[0].attrs["one pool split"] == (0, 0)
    monkeypatch.setattr(executor, "usable_cores", lambda: 16)
    table = plan_table(params, speed, scratch=tmp_path)[0]
    cells_split, groups = table.attrs["one pool split"]
    assert 0 < cells_split < groups
    monkeypatch.setattr(cache, "SPLIT_GAIN", 0.0)  # never split
    whole = plan_table(params, speed, scratch=tmp_path)[0]
    assert whole.attrs["one pool split"] == (0, 0)
    assert table.attrs["one pool hours"] < 0.8 * whole.attrs["one pool hours"]


def test_recorded_factors_spare_a_fresh_clone_the_calibration_but_the_reference_is_timed_again(tmp_path, monkeypatch):
    """A kind timed on this machine before is taken from the record (the plan then starts in
    seconds); the reference kind is always timed, and a busy machine's timings are not kept."""
    from emergence.pipeline import cost

    params = load_params(profile="smoke")
    kinds, reference = set(kinds_to_build(params, tmp_path)), reference_kind(params)
    timed_sets = []

    def fake(p, todo, seconds=3.0):
        timed_sets.append(set(todo))
        return {k: 2.0 for k in todo}

    monkeypatch.setattr(cost, "calibrate", fake)
    record = tmp_path / "calibration.json"
    record.write_text(json.dumps({"another machine": {"linear_map/attention/float32/none": 9.0}}))
    factors, notes = cost.planned_factors(params, kinds, 1.0, record, load=0.0)
    assert timed_sets[-1] == kinds | {reference} and factors == dict.fromkeys(kinds, 2.0)
    assert json.loads(record.read_text())["another machine"] == {"linear_map/attention/float32/none": 9.0}
    assert set(json.loads(record.read_text())[cost.machine()]) == {"/".join(k) for k in kinds | {reference}}

    factors, notes = cost.planned_factors(params, kinds, 1.0, record, load=0.0)
    assert timed_sets[-1] == {reference} and set(factors) == kinds
    assert "from" in notes[0] and "1.00 times its recorded speed" in notes[1]

    factors, notes = cost.planned_factors(params, kinds, 1.0, record, recalibrate=True, load=0.0)
    assert timed_sets[-1] == kinds | {reference}

    busy = tmp_path / "busy.json"
    factors, notes = cost.planned_factors(params, kinds, 1.0, busy, load=4.0 * usable_cores())
    assert not busy.exists() and "busy" in notes[-1] and "5.0 times slow" in notes[-1]


def test_a_busy_machine_slows_a_calibration_by_the_share_of_cores_it_gets():
    from emergence.pipeline.cost import busy_slowdown

    assert busy_slowdown(0.0, 2) == 1.0 and busy_slowdown(0.9, 2) == 1.0   # a quiet machine, and noise
    assert busy_slowdown(2.0, 2) == 2.0 and busy_slowdown(6.0, 2) == 4.0


def test_busy_cores_reads_the_machine_now_within_its_cores():
    import os

    from emergence.pipeline.cost import busy_cores

    assert 0.0 <= busy_cores(0.2) <= (os.cpu_count() or 1) + 1e-9

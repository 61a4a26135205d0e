import copy
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from emergence.common.params import merged_params
from emergence.pipeline.config import REPO_ROOT, ConfigError, load_params, set_profile, validate
from emergence.pipeline.stage import (changed_keys, declared_params, keys_by_stage, rerun_plan, stage_params, stage_started,
                                      stages_reading, written_params)


def write_params(tmp_path: Path, mutate) -> Path:
    params = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())
    mutate(params)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copytree(REPO_ROOT / "profiles", tmp_path / "profiles", dirs_exist_ok=True)
    shutil.copy(REPO_ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    return tmp_path


@pytest.mark.parametrize("profile", ["default", "smoke", "paper"])
def test_every_profile_is_valid(profile):
    params = load_params(profile=profile)
    assert params["profile"] == profile


def test_paper_profile_carries_the_paper_model():
    m = load_params(profile="paper")["linear_map"]["model"]
    assert (m["n_layer"], m["d_model"], m["n_head"], m["d_mlp"]) == (1, 128, 8, 512)


@pytest.mark.parametrize("mutate, key, fragment", [
    (lambda p: p["linear_map"]["task"].update(sparsity=20), "linear_map.task.sparsity", "state_size"),
    (lambda p: p["linear_map"]["task"].update(state_size=0), "linear_map.task.state_size", "[1, 4096]"),
    (lambda p: p["linear_map"]["task"].update(state_size=-3), "linear_map.task.state_size", "[1, 4096]"),
    (lambda p: p["linear_map"]["train"].update(steps="many"), "linear_map.train.steps", "int"),
    (lambda p: p["linear_map"]["train"].update(lr=True), "linear_map.train.lr", "float"),
    (lambda p: p["linear_map"]["model"].update(n_head=5), "linear_map.model.n_head", "divide"),
    (lambda p: p["linear_map"]["model"].update(n_heads=8), "linear_map.model.n_heads", "unknown"),
    (lambda p: p.update(profile="huge"), "profile", "default, smoke, paper"),
    (lambda p: p["linear_map"]["task"].update(loss_positions="some"), "linear_map.task.loss_positions", "one of"),
    (lambda p: p["language_model"]["train"].update(lr=float("nan")), "language_model.train.lr", "finite"),
    (lambda p: p["language_model"]["train"].update(grad_clip=float("nan")), "language_model.train.grad_clip", "finite"),
    (lambda p: p["linear_map"]["analysis"].update(alpha=float("nan")), "linear_map.analysis.alpha", "finite"),
    (lambda p: p["claims"].update(flat_ratio=float("nan")), "claims.flat_ratio", "finite"),
    (lambda p: p["claims"].update(growth_ratio=float("inf")), "claims.growth_ratio", "finite"),
    (lambda p: p["claims"].update(alpha=0.9), "claims.alpha", "[0.001, 0.5]"),
    (lambda p: p["claims"].update(most_of_gap=1.5), "claims.most_of_gap", "[0.0, 1.0]"),
    (lambda p: p["claims"].update(few_heads=3), "claims.few_heads", "top_k"),
    (lambda p: p["claims"].update(abrupt=0.2), "claims.abrupt", "unknown"),
    (lambda p: p["language_model"]["corpus"]["mixture"].update(noise=float("inf")), "language_model.corpus.mixture.noise",
     "finite"),
    (lambda p: p["linear_map"]["train"].update(precision="fp16"), "linear_map.train.precision", "bf16-autocast"),
    (lambda p: p["sweeps"]["precision"].update(tasks=["corpus"]), "sweeps.precision.tasks", "unknown task"),
    (lambda p: p["sweeps"]["precision"].update(budget_factor={"corpus": 2}), "sweeps.precision.budget_factor.corpus",
     "unknown task"),
    (lambda p: p["sweeps"]["precision"].update(budget_factor={"cellular_automata": 0}),
     "sweeps.precision.budget_factor.cellular_automata", "[1, 100]"),
    (lambda p: p["sweeps"]["precision"].update(budget_factor={"cellular_automata": 1.5}),
     "sweeps.precision.budget_factor.cellular_automata", "int"),
    (lambda p: p["sweeps"]["precision"].update(budget_factor={"cellular_automata": float("nan")}),
     "sweeps.precision.budget_factor.cellular_automata", "int"),
    (lambda p: p["sweeps"]["precision"].update(bf16_threads=-1), "sweeps.precision.bf16_threads", "[0, 4096]"),
    (lambda p: p["sweeps"]["precision"].update(margin=1.0), "sweeps.precision.margin", "(1, 10]"),
    (lambda p: p["sweeps"]["precision"].update(n_seeds={"corpus": 8}), "sweeps.precision.n_seeds.corpus",
     "unknown task"),
    (lambda p: p["sweeps"]["precision"].update(n_seeds={"cellular_automata": 0}),
     "sweeps.precision.n_seeds.cellular_automata", "[1, 4096]"),
    (lambda p: p["sweeps"]["precision"].update(n_seeds={"cellular_automata": 2.5}),
     "sweeps.precision.n_seeds.cellular_automata", "int"),
    (lambda p: p["sweeps"]["precision"].update(margin=float("nan")), "sweeps.precision.margin", "finite"),
    (lambda p: p["sweeps"]["ca_state_size"].update(examples="bits"), "sweeps.ca_state_size.examples", "units"),
    (lambda p: p["sweeps"]["mixers"]["cellular_automata"].pop("examples"), "sweeps.mixers.cellular_automata.examples",
     "missing"),
])
def test_bad_values_name_the_key_and_range(tmp_path, mutate, key, fragment):
    root = write_params(tmp_path, mutate)
    with pytest.raises(ConfigError) as err:
        load_params(root)
    assert str(err.value).startswith(key) and fragment in str(err.value)


def test_missing_key_is_an_error():
    params = load_params()
    del params["linear_map"]["train"]["lr"]
    with pytest.raises(ConfigError, match="linear_map.train.lr: missing"):
        validate(params)


def test_int_is_accepted_where_float_is_meant(tmp_path):
    root = write_params(tmp_path, lambda p: p["linear_map"]["train"].update(lr=1))
    assert load_params(root)["linear_map"]["train"]["lr"] == 1


def test_stage_with_bad_params_exits_nonzero_and_writes_nothing(tmp_path):
    root = write_params(tmp_path, lambda p: p["linear_map"]["task"].update(sparsity=99))
    shutil.copytree(REPO_ROOT / "emergence", tmp_path / "emergence")
    shutil.copytree(REPO_ROOT / "stages", tmp_path / "stages")
    out = subprocess.run([sys.executable, "-m", "stages.linear_map_data", "data/linear_map/task.nc"], cwd=root, capture_output=True, text=True)
    assert out.returncode != 0
    assert "linear_map.task.sparsity" in out.stderr
    assert not (root / "data").exists()


def test_stage_reads_only_declared_params():
    assert declared_params("linear_map_analyse") == ["profile", "linear_map.analysis"]
    params = stage_params("linear_map_analyse")
    assert set(params) == {"profile", "linear_map"} and set(params["linear_map"]) == {"analysis"}


def test_set_profile_keeps_comments(tmp_path):
    text = "# top comment\nprofile: default  # which overlay\nx: 1\n"
    (tmp_path / "params.yaml").write_text(text)
    set_profile("smoke", tmp_path)
    assert (tmp_path / "params.yaml").read_text() == "# top comment\nprofile: smoke  # which overlay\nx: 1\n"
    with pytest.raises(ConfigError, match="profile"):
        set_profile("nope", tmp_path)


def test_stage_stops_on_a_bad_value_in_a_section_it_does_not_read(tmp_path):
    root = write_params(tmp_path, lambda p: p["language_model"]["train"].update(lr=float("nan")))
    shutil.copytree(REPO_ROOT / "emergence", tmp_path / "emergence")
    shutil.copytree(REPO_ROOT / "stages", tmp_path / "stages")
    out = subprocess.run([sys.executable, "-m", "stages.linear_map_data", "data/linear_map/task.nc"], cwd=root,
                         capture_output=True, text=True)
    assert out.returncode != 0 and "language_model.train.lr" in out.stderr
    assert not (root / "data").exists()


def test_validation_writes_the_effective_params_and_nothing_for_bad_ones(tmp_path):
    shutil.copytree(REPO_ROOT / "emergence", tmp_path / "emergence")
    out_file = tmp_path / "data" / "params.json"
    check = lambda: subprocess.run([sys.executable, "-m", "emergence.pipeline.config", "check", "data/params.json"],  # noqa: E731
                                   cwd=tmp_path, capture_output=True, text=True)
    write_params(tmp_path, lambda p: None)
    assert check().returncode == 0
    first = out_file.read_bytes()
    assert json.loads(first) == merged_params(tmp_path)
    (tmp_path / "params.yaml").write_text("# a comment changes no value\n" + (tmp_path / "params.yaml").read_text())
    assert check().returncode == 0 and out_file.read_bytes() == first
    write_params(tmp_path, lambda p: p["linear_map"]["train"].update(lr=0.002))  # another valid value
    plan = subprocess.run([sys.executable, "-m", "emergence.pipeline.config", "plan"], cwd=tmp_path, capture_output=True,
                          text=True).stdout
    assert "linear_map.train.lr" in plan and "  linear_map_train:" in plan  # `make plan`, before validation
    out = check()
    assert out.returncode == 0 and json.loads(out_file.read_bytes())["linear_map"]["train"]["lr"] == 0.002
    assert "  linear_map_train:" in out.stdout  # the same list opens validate_params' log
    out_file.unlink()
    write_params(tmp_path, lambda p: p["linear_map"]["train"].update(lr=-1.0))
    out = check()
    assert out.returncode != 0 and "linear_map.train.lr" in out.stderr and not out_file.exists()


def test_a_stage_validates_itself_only_when_the_written_params_are_out_of_date(tmp_path):
    """Under DVC validation has run and written the params, so a stage skips the schemas (every
    experiment module, torch among them); run by hand after an edit, it validates."""
    shutil.copytree(REPO_ROOT / "emergence", tmp_path / "emergence")
    write_params(tmp_path, lambda p: None)
    probe = ("import sys; from emergence.pipeline.stage import stage_params; stage_params('linear_map_analyse'); "
             "print('emergence.pipeline.config' in sys.modules)")
    run = lambda: subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,  # noqa: E731
                                 text=True).stdout.strip()
    assert run() == "True"  # nothing written yet
    subprocess.run([sys.executable, "-m", "emergence.pipeline.config", "check", "data/params.json"], cwd=tmp_path, check=True)
    assert run() == "False"
    write_params(tmp_path, lambda p: p["linear_map"]["analysis"].update(alpha=0.2))
    assert run() == "True"


def test_changed_keys_finds_edits_additions_and_removals():
    old = {"a": {"x": 1, "y": [1, 2]}, "b": 2, "gone": {"k": 1}}
    new = {"a": {"x": 1, "y": [1, 3]}, "b": 2, "added": 5}
    assert changed_keys(old, new) == ["a.y", "added", "gone.k"]
    assert changed_keys(old, old) == []


def test_stages_reading_matches_sections_both_ways():
    declared = {"train": ["profile", "linear_map.train"], "analyse": ["linear_map.analysis.alpha"], "other": ["mirage"]}
    assert stages_reading(["linear_map.train.lr"], declared) == {"train": ["linear_map.train.lr"]}
    assert stages_reading(["linear_map.analysis"], declared) == {"analyse": ["linear_map.analysis"]}
    assert stages_reading(["linear_map.analysis.beta"], declared) == {}


def test_every_sparsity_row_is_its_own_stage_in_the_plan():
    keys = keys_by_stage(load_params())
    rows = [name for name in keys if name.startswith("sparsity@")]
    assert rows and all(f"sweeps.sparsity.grid.{name.split('@')[1]}" in keys[name] for name in rows)


def test_plan_names_the_stages_an_edit_reruns():
    params = load_params()
    assert "every stage runs" in rerun_plan(None, params)
    assert "no effective param changed" in rerun_plan(params, params)
    edited = copy.deepcopy(params)
    edited["linear_map"]["analysis"]["plateau_threshold"] = 0.12
    listed = set(re.findall(r"^  ([\w@-]+):", rerun_plan(params, edited), flags=re.M))
    assert listed == {"linear_map_analyse", "sparsity_summary", "architecture_summary",
                      "attention_bias_summary", "mixers_summary", "precision_summary"}
    edited = copy.deepcopy(params)
    edited["linear_map"]["train"]["lr"] = 0.002
    listed = set(re.findall(r"^  ([\w@-]+):", rerun_plan(params, edited), flags=re.M))
    assert {"linear_map_train", "architecture", "attention_bias"} <= listed
    assert any(name.startswith("sparsity@") for name in listed)  # each row, by DVC's name for it
    assert "linear_map_analyse" not in listed and "lm_train" not in listed


def test_params_left_unreadable_by_a_merge_count_as_not_written(tmp_path):
    shutil.copytree(REPO_ROOT / "emergence", tmp_path / "emergence")
    write_params(tmp_path, lambda p: None)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "params.json").write_text('{\n<<<<<<< HEAD\n  "profile": "default"\n=======\n')
    assert written_params(tmp_path) is None
    out = subprocess.run([sys.executable, "-m", "emergence.pipeline.config", "check", "data/params.json"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "every stage runs" in out.stdout
    assert written_params(tmp_path) == merged_params(tmp_path)


def test_a_stage_time_counts_from_its_process_start(tmp_path):
    """The imports before a stage's body (torch and the schemas: most of validate_params's time)
    are part of its recorded wall time; a process that is not a stage's own times from now."""
    shutil.copytree(REPO_ROOT / "emergence", tmp_path / "emergence")
    write_params(tmp_path, lambda p: None)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "emergence.pipeline.config", "check", "data/params.json"], cwd=tmp_path, check=True,
                   capture_output=True)
    wall = time.perf_counter() - start
    recorded = json.loads((tmp_path / "data" / "timings" / "validate_params.json").read_text())["seconds"]
    assert wall / 2 <= recorded <= wall  # the body alone: ~3% of the wall time
    assert stage_started() >= start  # pytest's own process started long before


def test_an_edit_no_stage_reads_is_named_with_what_to_set_instead():
    """`dvc exp run -S` may edit an overlay the active profile does not select, or a key of
    params.yaml that the active overlay overrides: neither changes what a stage reads."""
    from emergence.common.params import misdirected_edits

    base = {"params.yaml": {"profile": "default", "linear_map": {"train": {"lr": 0.001, "steps": 3000}}},
            "profiles/default.yaml": {}, "profiles/paper.yaml": {"linear_map": {"train": {"steps": 10000}}}}
    assert misdirected_edits("default", base, base) == []
    lr = {**base, "params.yaml": {"profile": "default", "linear_map": {"train": {"lr": 0.003, "steps": 3000}}}}
    assert misdirected_edits("default", lr, base) == []  # params.yaml, read by the default profile
    paper = {**base, "profiles/paper.yaml": {"linear_map": {"train": {"steps": 20000}}}}
    [problem] = misdirected_edits("default", paper, base)
    assert "profiles/paper.yaml changed (linear_map.train.steps)" in problem and "active profile is default" in problem
    assert misdirected_edits("paper", paper, base) == []  # the active overlay: read
    steps = {**base, "params.yaml": {"profile": "paper", "linear_map": {"train": {"lr": 0.001, "steps": 5000}}}}
    before = {**base, "params.yaml": {"profile": "paper", "linear_map": {"train": {"lr": 0.001, "steps": 3000}}}}
    [problem] = misdirected_edits("paper", steps, before)
    assert problem.startswith("linear_map.train.steps changed in params.yaml") and "profiles/paper.yaml" in problem
    switched = {**paper, "params.yaml": {**base["params.yaml"], "profile": "paper"}}
    assert misdirected_edits("paper", switched, base) == []  # a profile switch with its overlay's edit


def test_outside_an_experiment_or_git_the_edit_check_stays_silent(tmp_path):
    from emergence.pipeline.config import refuse_misdirected_edits

    (tmp_path / "params.yaml").write_text("profile: default\n")
    refuse_misdirected_edits(tmp_path, env={})  # not an experiment
    refuse_misdirected_edits(tmp_path, env={"DVC_EXP_NAME": "x"})  # no git history to compare with


def _schema_leaves(cls, key: str = "", seen=None):
    """(dotted key, declaring class, field name) of every leaf of the params schema `cls`."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        inner = [tp, *typing.get_args(tp)]
        inner += [b for a in inner for b in typing.get_args(a)]
        sections = [a for a in inner if dataclasses.is_dataclass(a)]
        name = f"{key}.{f.name}" if key else f.name
        if sections:
            for section in sections:
                yield from _schema_leaves(section, name)
        else:
            owner = next(c for c in cls.__mro__ if f.name in getattr(c, "__annotations__", {}))
            yield name, owner, f.name


def test_every_key_says_what_it_means_on_its_field():
    """Each leaf of the params schema carries its meaning once, as the comment on its field
    (docs and params.yaml give its value, mark and reason): a key added without one fails here,
    naming it."""
    import ast
    import inspect
    import io
    import tokenize

    from emergence.pipeline.config import Params

    def commented(owner) -> set[str]:
        try:
            lines, first = inspect.getsourcelines(owner)
        except (OSError, TypeError):  # made at run time (the sweeps' section): its fields are the experiments'
            return {f for f in owner.__annotations__}
        source = "".join(lines)
        comment_lines = {t.start[0] for t in tokenize.generate_tokens(io.StringIO(source).readline)
                         if t.type == tokenize.COMMENT}
        body = ast.parse(inspect.cleandoc("\n" + source) if source[0] == " " else source).body[0].body
        return {node.target.id for node in body if isinstance(node, ast.AnnAssign)
                and set(range(node.lineno, node.end_lineno + 1)) & comment_lines}

    cache: dict[type, set[str]] = {}
    missing = [key for key, owner, name in _schema_leaves(Params)
               if name not in cache.setdefault(owner, commented(owner))]
    assert not missing, f"keys without a comment on their field: {missing}"


def test_the_parameters_reference_is_written_from_the_schema():
    """docs/parameters-reference.md lists every key with its values on the three profiles and
    the meaning on its field; an edit of the schema, a comment or a value that leaves it stale fails."""
    from emergence.pipeline import parameters_reference as ref

    assert ref.main(["--check"]) == 0
    text = (REPO_ROOT / ref.REFERENCE).read_text()
    assert "| `linear_map.train.lr` | `0.001` |" in text and "AdamW learning rate" in text


def test_a_key_a_stage_does_not_declare_stops_the_stage_where_it_is_read():
    """A stage's params hold only the keys it declares: typed, the others are `Undeclared`,
    which raise naming the key when read (arithmetic, truth, the cache key), and a sweep's
    replacement of one is read as its own value."""
    from dataclasses import replace

    from emergence.common.schema import Undeclared, load, to_params
    from emergence.core.train import TrainArgs

    declared = {"n_seeds": 2, "first_seed": 0, "seeds_per_group": 2}
    train = load(TrainArgs, declared, "linear_map.train", declared_only=True)
    assert train.n_seeds == 2 and isinstance(train.steps, Undeclared)
    for read in (lambda: train.steps // 4, lambda: bool(train.lr), lambda: to_params(train)):
        with pytest.raises(ConfigError, match=r"linear_map\.train\.(steps|lr|batch_size)\b.*not among the keys"):
            read()
    with pytest.raises(ConfigError, match="linear_map.train.steps: missing"):
        load(TrainArgs, declared, "linear_map.train")
    assert replace(train, steps=8).steps // 4 == 2

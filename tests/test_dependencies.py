"""Deps by construction: dvc.yaml's library deps equal each stage's import closure, and a
cell's code version is the closure of what training it executes, nothing more."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from emergence.common import import_closure as ic
from emergence.pipeline import dependencies as deps
from emergence.pipeline.config import REPO_ROOT, load_params
from emergence.pipeline.stage import declared_params, stage_params
from emergence.runs import cells
from emergence.runs.sweeps.mixers import cells as mixer_cells
from emergence.runs.sweeps.sparsity import row_file

import typed_params as typed


def test_dvc_yaml_declares_exactly_what_each_stage_executes():
    assert deps.mismatches() == {}, "run `python -m emergence.pipeline.dependencies --write`"


def test_dvc_yaml_holds_what_the_experiments_declare():
    assert not deps.generated_out_of_date(), "run `python -m emergence.pipeline.dependencies --write`"


def test_an_experiment_with_generated_stages_is_written_rewritten_and_removed():
    from emergence.common.experiments import Experiment, experiments

    text = (REPO_ROOT / "dvc.yaml").read_text()
    toy = Experiment(name="toy", title="a toy", params="sweeps.toy", chapter="10_toy", figure="fig-toy",
                     files="m:files", summarize="m:summarize", reads=("linear_map.train",),
                     metrics="m:metrics", metrics_read=("toy_summary",), rules="m:rules", rules_read=("toy_summary",))
    declared = experiments() + (toy,)
    written = deps.with_experiments(text, declared)
    dvc = yaml.safe_load(written)
    paths = next(v["paths"] for v in dvc["vars"] if "paths" in v)
    assert paths["toy_cells"] == "data/experiments/toy/cells" and paths["toy_summary"] == "data/experiments/toy/summary.nc"
    assert dvc["stages"]["toy"]["cmd"] == "python -m stages.experiment toy ${paths.toy_cells}"
    assert dvc["stages"]["toy"]["params"] == ["profile", "execution", "linear_map.train", "sweeps.toy"]
    assert dvc["stages"]["toy_summary"]["deps"][-1] == "${paths.toy_cells}"
    for reader in ("summary_metrics", "claims_scorecard", "report_notebooks"):
        assert "${paths.toy_summary}" in dvc["stages"][reader]["deps"], reader
    assert list(dvc["stages"]).index("toy_summary") < list(dvc["stages"]).index("summary_metrics")
    assert deps.with_experiments(written, declared) == written  # idempotent
    renamed = deps.with_experiments(written, experiments() + (replace_title(toy),))
    assert "  # another title\n" in renamed and renamed.count("  toy:\n") == 1
    removed = deps.with_experiments(written, experiments())
    assert deps._without_library(removed) == deps._without_library(text)  # its stages, paths, readers' deps gone


def test_a_generated_stage_depends_on_its_own_declaration_and_a_reader_on_every_one():
    want = deps.expected_deps()
    declarations = {f"emergence/experiments/{p.stem}" + ".py" for p in (REPO_ROOT / "emergence" / "experiments").glob("[a-z]*.py")}
    assert {f for f in want["ca_state_size_summary"] if f in declarations} == {"emergence/experiments/ca_state_size.py"}
    assert "emergence/core/train.py" not in want["ca_state_size_summary"]  # a summary never runs the trainer
    for reader in ("summary_metrics", "claims_scorecard", "validate_params"):
        assert declarations <= set(want[reader]), reader


def replace_title(e):
    from dataclasses import replace
    return replace(e, title="another title")


def test_closure_follows_imports_at_any_depth(tmp_path):
    pkg = tmp_path / "emergence"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import numpy\nfrom emergence import b\n")
    (pkg / "b.py").write_text("def f():\n    from emergence.c import g\n")
    (pkg / "c.py").write_text("g = 1\n")
    (pkg / "d.py").write_text("x = 1\n")  # imported by nobody
    assert ic.module_closure("emergence.a", tmp_path) == [
        "emergence/__init__.py", "emergence/a.py", "emergence/b.py", "emergence/c.py"]


def test_rewrite_restores_a_missing_dependency(tmp_path):
    for name in ("dvc.yaml", "emergence", "stages", "report"):
        src = REPO_ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    text = (tmp_path / "dvc.yaml").read_text()
    broken = text.replace("      - emergence/core/hooks.py\n", "", 1)
    assert broken != text
    (tmp_path / "dvc.yaml").write_text(broken)
    bad = deps.mismatches(tmp_path)
    assert bad and all(d["missing"] == ["emergence/core/hooks.py"] for d in bad.values())
    assert deps.rewrite(tmp_path) and deps.mismatches(tmp_path) == {}
    assert (tmp_path / "dvc.yaml").read_text() == text


def test_an_empty_package_file_is_no_dep_until_it_holds_code(tmp_path):
    """DVC warns about every empty dep on every run; a bare __init__.py computes nothing."""
    for name in ("dvc.yaml", "emergence", "stages", "report"):
        src = REPO_ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    init = tmp_path / "stages" / "__init__.py"
    assert init.stat().st_size == 0 and "stages/__init__.py" not in (tmp_path / "dvc.yaml").read_text()
    init.write_text("CHUNK = 4\n")
    bad = deps.mismatches(tmp_path)
    assert set(bad) == set(deps.expected_deps(tmp_path)) - {"validate_params"}  # every stage script's package
    assert all(d["missing"] == ["stages/__init__.py"] for d in bad.values())


def _every_cell(params) -> list[dict]:
    setting, grid = typed.setting(params), typed.section(params, "sparsity")
    out = [c for f in typed.files(params, "architecture") + typed.files(params, "ca_architecture")
           + typed.files(params, "ca_state_size") for c in f.cells]
    out += [c for name in grid.grid for c in row_file(setting, grid, name).cells]
    out += [c for _, c in mixer_cells(setting, typed.section(params, "mixers"))]
    return out


def _keys(root: Path, params) -> list[str]:
    from emergence.common.io import config_hash

    training = {task: ic.code_version(ic.closure(
        [ic.module_path("emergence.runs.runner", root), ic.module_path(f"emergence.core.tasks.{task}", root)],
        root), root) for task in cells.TASKS}
    return [config_hash(dict(cells.cell_key(c), code=training[cells.task_of(c)])) for c in _every_cell(params)]


@pytest.fixture
def package_copy(tmp_path):
    for name in ("emergence", "stages"):
        shutil.copytree(REPO_ROOT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("edited", ["emergence/report/render.py", "emergence/analysis/events.py", "emergence/analysis/mirage.py",
                                    "emergence/pipeline/config.py", "emergence/report/report_index.py",
                                    "stages/report_render.py", "emergence/common/params.py", "emergence/pipeline/stage.py",
                                    "emergence/runs/cache.py", "emergence/pipeline/dependencies.py"])
def test_editing_code_that_training_does_not_run_keeps_every_cell_key(package_copy, edited):
    params = load_params()
    before = _keys(package_copy, params)
    (package_copy / edited).write_text((package_copy / edited).read_text() + "\n# an edit\n")
    assert _keys(package_copy, params) == before


def test_editing_the_trainer_changes_every_cell_key(package_copy):
    params = load_params()
    before = _keys(package_copy, params)
    (package_copy / "emergence/core/train.py").write_text((package_copy / "emergence/core/train.py").read_text() + "\n_x = 1\n")
    after = _keys(package_copy, params)
    assert len(before) > 10 and all(a != b for a, b in zip(before, after))


def test_comments_docstrings_and_layout_of_the_trainer_keep_every_cell_key(package_copy):
    """The keys follow what the code does: a corrected docstring or comment retrains nothing."""
    params = load_params()
    before = _keys(package_copy, params)
    train = package_copy / "emergence/core/train.py"
    source = train.read_text()
    head, _, rest = source.partition('"""')  # the module docstring, rewritten
    edited = head + '"""A docstring said otherwise.\n\n' + rest
    edited = edited.replace("def train_step(", "# a comment\n\n\ndef train_step(", 1)
    assert edited != source and "def train_step(" in source
    train.write_text(edited)
    assert _keys(package_copy, params) == before
    train.write_text(edited.replace("def train_step(", "def train_step_(", 1))  # code, not text
    assert all(a != b for a, b in zip(before, _keys(package_copy, params)))


def test_stages_declare_their_keys_of_params_yaml_and_the_active_overlay():
    """Every stage declares the keys of params.yaml it reads (DVC's own `params diff` and `exp
    show` list each key once, from the file the user edits) and the active overlay as a file:
    an edit to params.yaml reruns the stages whose keys changed, one to the overlay every stage.
    Validation depends on every overlay, so that an edit to one the profile does not select is
    seen (and refused in an experiment), and declares the active overlay's keys (`exp show` lists
    an edit to it under its file; none on the default profile, whose overlay is empty)."""
    dvc = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())
    for name, body in dvc["stages"].items():
        body = body.get("do", body)
        if name == "validate_params":  # and the active overlay's keys, each under its file, for `exp show`
            assert {"params.yaml", "profiles"} <= set(body["deps"])
            assert body["params"] == ["profile", {"profiles/${profile}.yaml": None}]
            continue
        assert not [e for e in body.get("params", []) if not isinstance(e, str)], name  # params.yaml's keys alone
        assert body["deps"].count("profiles/${profile}.yaml") == 1, name
        assert ("params.yaml" in body["deps"]) == (name == "report_render"), name  # its appendix prints the file
        assert declared_params(name) and "profile" in declared_params(name), name
        outs = [o if isinstance(o, str) else next(iter(o)) for o in body.get("outs", [])]  # `- path: {options}`
        assert not any(o.startswith("data/timings") for o in outs), name


def test_only_validation_depends_on_every_schema():
    """The schemas (config.py and what it composes) are validate_params' deps; every other stage
    depends on the code that computes its results and on the params validation writes, so an
    edit to the language model's code reruns no synthetic-task stage."""
    expected = deps.expected_deps()
    assert "emergence/pipeline/config.py" in expected["validate_params"]
    for name, files in expected.items():
        if name != "validate_params":
            assert "emergence/pipeline/config.py" not in files, name
    for name in ("linear_map_train", "sparsity", "ca_state_size", "architecture"):
        assert not {"emergence/runs/language_model.py", "emergence/core/tasks/corpus.py",
                    "emergence/claims/verdicts.py", "emergence/analysis/patching.py"} & set(expected[name]), name


def test_training_keys_leave_out_the_stage_glue():
    """A model's code version is its training module's closure: editing the stage helper, the
    params reader or the validation retrains nothing."""
    lm = ic.module_closure("emergence.runs.language_model")
    task = ic.closure([ic.module_path("emergence.runs.runner"),
                      ic.module_path("emergence.core.tasks.linear_map")])
    for files in (lm, task):
        assert not {"emergence/pipeline/stage.py", "emergence/common/params.py", "emergence/pipeline/config.py",
                    "emergence/pipeline/dependencies.py"} & set(files)
    assert "emergence/runs/cache.py" not in task
    assert "emergence/core/tasks/corpus.py" in lm and "emergence/core/train.py" in lm


def test_cells_meant_to_be_shared_train_once():
    """The same model on the same task, budget and seeds in two sweeps is one cache entry, as each
    stage sees its params (a key a stage forgets to declare would give it a different cell). The
    architecture sweeps train more seeds (their comparisons need them), so their cells are
    compared at the other sweep's seed count: equal keys there mean only the seeds differ."""
    from dataclasses import replace

    from emergence.common.io import config_hash

    def key(c, n_seeds=None):
        if n_seeds is not None:
            c = replace(c, train=replace(c.train, n_seeds=n_seeds))
        return config_hash(cells.cell_key(c))

    by_name = lambda files, name: next(c for f in files if f.name == name for c in f.cells)  # noqa: E731
    state = by_name(typed.files(stage_params("ca_state_size"), "ca_state_size"), "S0008")  # its c = 0 cell first
    automata = by_name(typed.files(stage_params("ca_architecture"), "ca_architecture"), "H4_dh16_L2")
    mixer = dict(mixer_cells(typed.setting(stage_params("mixers")), typed.section(stage_params("mixers"), "mixers")))
    transformer = next(c for name, c in mixer.items() if name.startswith("cellular_automata-S008-transformer"))
    assert state.bias.strength == 0.0
    seeds = state.train.n_seeds
    assert key(state) == key(transformer, seeds) == key(automata, seeds)
    # the comparison's transformer runs the architecture sweep's seed count there: that very cell
    assert key(transformer) == key(automata)
    # the sweep's own `examples`, not the task section's: per cell on the automata (the mirage
    # chapter's resolution test reads units), the whole answer on the linear-map sweeps
    assert state.train.examples == stage_params("ca_state_size")["sweeps"]["ca_state_size"]["examples"]
    row_params = stage_params("sparsity", key="S08")
    sparsity = next(c for c in row_file(typed.setting(row_params), typed.section(row_params, "sparsity"), "S08").cells
                    if c.task.sparsity == 2)
    linear = by_name(typed.files(stage_params("architecture"), "architecture"), "H8_dh8_L1")
    assert key(sparsity) == key(linear, sparsity.train.n_seeds)
    assert sparsity.train.examples == row_params["sweeps"]["sparsity"]["examples"]


def test_the_analysis_and_the_report_load_without_torch():
    """emergence/common/io.py holds no torch (checkpoints are emergence/common/torch_files.py's), so the stages
    that only read results, and every report chapter, start without torch's ~2 s import."""
    modules = ["emergence.report.reporting", "stages.linear_map_analyse", "stages.mirage_analyse",
               "stages.summary_metrics", "stages.claims_scorecard", "stages.report_notebooks"]
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print(sorted(m for m in sys.modules if m == 'torch'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_analysis_and_training_stages_do_not_depend_on_each_others_code():
    """A summary stage reanalyses cells, so an edit to the trainer, the cell cache or the executor
    (which cannot change a summary but for the cells it reads, a dep of its own) must not rerun
    it; a training stage finds its cells in the cache, so an edit to the analysis must not rerun
    it either."""
    expected = deps.expected_deps()
    training = {"emergence/core/train.py", "emergence/runs/cells.py", "emergence/runs/cache.py",
                "emergence/runs/executor.py", "emergence/runs/runner.py"}
    analysis = {"emergence/analysis/events.py", "emergence/analysis/survival.py"}
    summaries = [s for s in expected if s.endswith("_summary")]
    sweeps = [s[: -len("_summary")] for s in summaries]
    assert len(summaries) >= 7 and all(s in expected for s in sweeps)
    for stage in summaries:
        assert not training & set(expected[stage]), (stage, sorted(training & set(expected[stage])))
        assert "emergence/analysis/events.py" in expected[stage]
    for stage in sweeps:
        assert not analysis & set(expected[stage]), (stage, sorted(analysis & set(expected[stage])))
        assert "emergence/runs/cells.py" in expected[stage]

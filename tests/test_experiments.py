"""Every experiment's declaration (emergence/experiments/<name>.py) agrees with the files that
carry it out: its stages in dvc.yaml, the results its metrics and rules read as deps of the
stages that read them, its params section, its chapter. A step forgotten when adding an
experiment fails here, naming the file to edit."""
from dataclasses import is_dataclass

import pytest
import yaml

from emergence.common.import_closure import REPO_ROOT
from emergence.common.experiments import KINDS, Experiment, experiments, resolve
from emergence.pipeline import dependencies
from emergence.pipeline.stage import pipeline_paths, read_pipeline

# The pipeline's own stages: validation before everything, the stages that read every
# experiment's results (which of them each reads is its declaration's `*_read`), the renderer.
PIPELINE_STAGES = ("validate_params", *dependencies.READERS, "report_render")
READERS = {field: tuple(stage for stage, fields in dependencies.READERS.items() if field in fields)
           for field in ("metrics_read", "rules_read")}

DECLARED = experiments()


def _deps(stage: dict) -> list[str]:
    return [d for d in stage.get("do", stage).get("deps", []) if isinstance(d, str)]


def _section(params: dict, dotted: str):
    for part in dotted.split("."):
        if not isinstance(params, dict) or part not in params:
            return None
        params = params[part]
    return params


def declaration_problems(experiment: Experiment, root=REPO_ROOT) -> list[str]:
    """What in the repository disagrees with `experiment`'s declaration, each naming the file to edit."""
    own = f"emergence/experiments/{experiment.name}.py"
    stages, paths = read_pipeline(root)["stages"], pipeline_paths(root)
    problems = [f"dvc.yaml: no stage {s!r} ({own} declares it)" for s in experiment.stage_names() if s not in stages]
    if experiment.train_stage is not None and experiment.train_stage not in experiment.stage_names():
        problems.append(f"{own}: train_stage {experiment.train_stage!r} is not one of its stages")
    for field, readers in READERS.items():
        for result in getattr(experiment, field):
            if result not in paths:
                problems.append(f"dvc.yaml: no `paths.{result}` under vars ({own} reads it in {field})")
                continue
            for reader in readers:
                if reader in stages and f"${{paths.{result}}}" not in _deps(stages[reader]):
                    problems.append(f"dvc.yaml: stage {reader} lacks the dep ${{paths.{result}}} ({own}: {field})")
    if not (root / "report" / "chapters" / f"{experiment.chapter}.py").is_file():
        problems.append(f"report/chapters/{experiment.chapter}.py: missing ({own} names it as its chapter)")
    if _section(yaml.safe_load((root / "params.yaml").read_text()), experiment.params) is None:
        problems.append(f"params.yaml: no section {experiment.params} ({own} declares it)")
    return problems


@pytest.mark.parametrize("experiment", DECLARED, ids=[e.name for e in DECLARED])
def test_each_declaration_agrees_with_dvc_yaml_params_and_its_chapter(experiment):
    assert declaration_problems(experiment) == []


@pytest.mark.parametrize("experiment", DECLARED, ids=[e.name for e in DECLARED])
def test_each_declared_entry_resolves_to_what_its_reader_calls(experiment):
    for kind in KINDS:
        reference = experiment.entry(kind)
        if reference:
            target = resolve(reference)
            assert is_dataclass(target) if kind == "args" else callable(target), (experiment.name, kind, reference)
    assert (experiment.cells is None) == (experiment.train_stage is None), experiment.name
    assert experiment.generated == (experiment.summarize is not None) and not (experiment.generated and experiment.cells)
    assert experiment.generated != bool(experiment.stages), experiment.name  # its own stages, or generated ones
    assert bool(experiment.metrics) == bool(experiment.metrics_read), experiment.name
    assert bool(experiment.rules) == bool(experiment.rules_read), experiment.name


def test_every_stage_and_chapter_belongs_to_one_experiment():
    """A stage or chapter added without a declaration is invisible to the plan, the metrics and
    the scorecard: it fails here."""
    owners: dict[str, str] = {}
    for e in DECLARED:
        for stage in e.stage_names():
            assert stage not in owners, f"stage {stage}: declared by both {owners[stage]} and {e.name}"
            owners[stage] = e.name
    undeclared = set(read_pipeline()["stages"]) - set(owners) - set(PIPELINE_STAGES)
    assert not undeclared, f"dvc.yaml stages no emergence/experiments/ module declares: {sorted(undeclared)}"
    chapters = {p.stem for p in (REPO_ROOT / "report" / "chapters").glob("[0-9]*.py")}
    assert chapters == {e.chapter for e in DECLARED}, "report/chapters/: a chapter no experiment declares"


def test_a_forgotten_step_is_named_by_its_file(tmp_path):
    """An experiment declared but not wired in: each missing piece reported by the file to edit."""
    (tmp_path / "report" / "chapters").mkdir(parents=True)
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({
        "vars": [{"paths": {"lr_summary": "data/lr.nc"}}],
        "stages": {"lr": {"cmd": "python -m stages.lr"},
                   "summary_metrics": {"cmd": "python -m stages.summary_metrics", "deps": []}}}))
    (tmp_path / "params.yaml").write_text("sweeps: {}\n")
    toy = Experiment(name="lr", title="t", params="sweeps.lr", chapter="10_lr", figure="fig-lr",
                     stages=("lr", "lr_summary"), metrics="m:f", metrics_read=("lr_summary", "lr_curves"))
    assert declaration_problems(toy, tmp_path) == [
        "dvc.yaml: no stage 'lr_summary' (emergence/experiments/lr.py declares it)",
        "dvc.yaml: stage summary_metrics lacks the dep ${paths.lr_summary} (emergence/experiments/lr.py: metrics_read)",
        "dvc.yaml: no `paths.lr_curves` under vars (emergence/experiments/lr.py reads it in metrics_read)",
        "report/chapters/10_lr.py: missing (emergence/experiments/lr.py names it as its chapter)",
        "params.yaml: no section sweeps.lr (emergence/experiments/lr.py declares it)"]


def test_one_name_per_experiment():
    """The module, its params section's last part and its scorecard section share the name;
    its stages start with it (the language models' with `lm_`)."""
    for e in DECLARED:
        assert e.params.split(".")[-1] in (e.name, "language_model"), e
        assert all(s.startswith(e.name) for s in e.stage_names()) or e.name == "language_models", e

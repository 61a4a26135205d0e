"""What an experiment is, declared once: its name, its params section, its DVC stages, its
chapter, and where the code for each part lives, as `module:attribute` strings.

Every experiment is one module of emergence/experiments/ holding a literal
`EXPERIMENT = Experiment(...)`. The planner, the prebuild pool, the params validation,
dvc.yaml's generated stages and readers' deps, the summary metrics and the scorecard read
these declarations; no other list of experiments exists. tests/test_experiments.py checks
each against dvc.yaml, params.yaml and the chapters, naming the file to edit.

Declarations are read from the modules' source, not imported, and the code they name is
imported only by the reader of that kind of entry: the summary metrics import the `metrics`
modules, the scorecard the `rules` modules, so a summary never depends on training code that
its experiment keeps elsewhere. `python -m emergence.pipeline.dependencies --write` adds the
modules a stage resolves to its deps (it finds the `entry_points("kind")` calls in the
stage's import closure).

An experiment either names its own stages (`stages`, written in dvc.yaml by hand), or
declares `files` and `summarize` and has two stages generated, `<name>` (its cells, trained or
loaded from the cell cache, to `${paths.<name>_cells}`) and `<name>_summary` (one Dataset,
`${paths.<name>_summary}`), by stages/experiment.py and stages/experiment_summary.py.
"""
from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from emergence.common.params import REPO_ROOT
from emergence.common.schema import load

KINDS = ("args", "cells", "files", "summarize", "metrics", "rules")
PACKAGE = "emergence.experiments"


@dataclass(frozen=True, kw_only=True)
class Experiment:
    name: str                       # the module's, the params section's last part, the scorecard section's
    title: str                      # what it tests, in a few words
    params: str                     # its section of params.yaml, dotted
    chapter: str                    # report/chapters/<chapter>.py shows it
    figure: str                     # the chapter's figure its scorecard rows point to by default
    stages: tuple[str, ...] = ()    # its own DVC stages, in dvc.yaml; () where they are generated
    args: str | None = None         # the typed params section ("module:Class"), validated before any compute
    cells: str | None = None        # "module:function" (setting, section, name) -> [(cell, with_checkpoints)] its stages train
    train_stage: str | None = None  # the stage that trains `cells`
    files: str | None = None        # generated stages: "module:function" (setting, section, name) -> [SweepFile], the cells it trains
    summarize: str | None = None    # generated stages: "module:function" (params, name, cells_dir) -> Dataset
    reads: tuple[str, ...] = ()     # generated stages: the params keys the training reads besides its own section
    summary_reads: tuple[str, ...] = ()  # generated stages: the params keys the summary reads besides its section
    metrics: str | None = None      # "module:function" (*results) -> {key: number}, its summary metrics
    metrics_read: tuple[str, ...] = ()  # dvc.yaml `paths` the metrics function reads, in its argument order
    rules: str | None = None        # "module:function" (*results, ctx) -> [(claim id, Verdict)], its scorecard rows
    rules_read: tuple[str, ...] = ()    # dvc.yaml `paths` the rules read, in their argument order
    claims: dict = field(default_factory=dict)  # rows its rules decide that data/paper/claims.yaml lacks (its own)

    @property
    def generated(self) -> bool:
        return self.files is not None

    def stage_names(self) -> tuple[str, ...]:
        return (self.name, f"{self.name}_summary") if self.generated else self.stages

    def training_stage(self) -> str | None:
        return self.name if self.generated else self.train_stage

    def section(self, params: dict) -> Any:
        """Its own section of the merged params, typed by `args` (the `section` its `cells`
        and `files` take, beside the runs' Setting); as the mapping where it declares no args."""
        node = params
        for key in self.params.split("."):
            node = node[key]
        return load(resolve(self.args), node, self.params, declared_only=True) if self.args else node

    def entry(self, kind: str) -> str | None:
        if kind not in KINDS:
            raise ValueError(f"entry kind {kind!r}: one of {KINDS}")
        return getattr(self, kind)


def resolve(reference: str) -> Any:
    """"package.module:attribute" -> the attribute."""
    module, _, attribute = reference.partition(":")
    if not attribute:
        raise ValueError(f"{reference!r}: expected 'module:attribute'")
    return getattr(importlib.import_module(module), attribute)


def read_declaration(path: Path) -> Experiment:
    """The module's `EXPERIMENT = Experiment(...)`, read from its source (literal values only)."""
    rel = path.relative_to(path.parents[2]) if len(path.parents) > 2 else path
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXPERIMENT" for t in node.targets)):
            call = node.value
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Experiment"
                    and not call.args):
                break
            try:
                declared = Experiment(**{k.arg: ast.literal_eval(k.value) for k in call.keywords})
            except (ValueError, TypeError) as err:
                raise ValueError(f"{rel}: EXPERIMENT = Experiment(...) with literal keyword values only ({err})") from None
            if declared.name != path.stem:
                raise ValueError(f"{rel}: EXPERIMENT.name is {declared.name!r}; an experiment has one name, "
                                 f"its module's ({path.stem!r})")
            return declared
    raise ValueError(f"{rel}: declares no EXPERIMENT = Experiment(...)")


@lru_cache(maxsize=None)
def experiments(root: Path = REPO_ROOT) -> tuple[Experiment, ...]:
    """Every declared experiment, in report order (by chapter, then name)."""
    found = [read_declaration(p) for p in sorted((root / "emergence" / "experiments").glob("*.py"))
             if p.name != "__init__.py"]
    return tuple(sorted(found, key=lambda e: (e.chapter, e.name)))


def experiment(name: str, root: Path = REPO_ROOT) -> Experiment:
    """The experiment `name`, from its own module alone (a stage of one experiment reads no other)."""
    path = root / "emergence" / "experiments" / f"{name}.py"
    if not path.is_file():
        raise KeyError(f"no experiment {name!r}: declared are {[e.name for e in experiments(root)]}")
    return read_declaration(path)


def entry_points(kind: str) -> list[tuple[Experiment, Any]]:
    """(experiment, its resolved `kind` entry) for every experiment that declares one, in report order."""
    return [(e, resolve(e.entry(kind))) for e in experiments() if e.entry(kind)]


def entry_modules(kind: str, root: Path = REPO_ROOT) -> list[str]:
    """The modules named by every experiment's `kind` entry (without importing them)."""
    return sorted({e.entry(kind).partition(":")[0] for e in experiments(root) if e.entry(kind)})

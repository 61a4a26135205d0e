"""What an experiment is, declared once: its name, its params section, its DVC stages, its
chapter, and where the code for each part lives, as `module:attribute` strings.

Every experiment is one module of this package holding `EXPERIMENT = Experiment(...)`; the
planner, the prebuild pool, the params validation, the summary metrics and the scorecard
read these declarations (no other list of experiments exists), and tests/test_experiments.py
checks each against dvc.yaml, params.yaml, the chapters and the paper's claims, naming the
file a declaration and the rest disagree in.

The code is named, not imported: a stage that reads one kind of entry (the summary metrics
read `metrics`, the scorecard `rules`) executes only those modules, so a summary never
depends on the training code. `python -m emergence.pipeline.dependencies` adds the named
modules to the deps of each stage that resolves them (it finds the `entry_points("kind")`
calls in the stage's import closure).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

KINDS = ("args", "cells", "metrics", "rules")


@dataclass(frozen=True, kw_only=True)
class Experiment:
    name: str                       # the module's, the params section's last part, the scorecard section's
    title: str                      # what it tests, in a few words
    params: str                     # its section of params.yaml, dotted
    chapter: str                    # report/chapters/<chapter>.py shows it
    figure: str                     # the chapter's figure its scorecard rows point to by default
    stages: tuple[str, ...]         # its DVC stages (dvc.yaml)
    args: str | None = None         # the typed params section ("module:Class"), validated before any compute
    cells: str | None = None        # "module:function" (params, name) -> [(cell, with_checkpoints)] it trains
    train_stage: str | None = None  # the stage that trains `cells`
    metrics: str | None = None      # "module:function" (*results) -> {key: number}, its summary metrics
    metrics_read: tuple[str, ...] = ()  # dvc.yaml `paths` the metrics function reads, in its argument order
    rules: str | None = None        # "module:function" (*results, ctx) -> [(claim id, Verdict)], its scorecard rows
    rules_read: tuple[str, ...] = ()    # dvc.yaml `paths` the rules read, in their argument order

    def entry(self, kind: str) -> str | None:
        if kind not in KINDS:
            raise ValueError(f"entry kind {kind!r}: one of {KINDS}")
        return getattr(self, kind)

    def order(self) -> tuple[str, str]:
        return self.chapter, self.name


def resolve(reference: str) -> Any:
    """"package.module:attribute" -> the attribute."""
    module, _, attribute = reference.partition(":")
    if not attribute:
        raise ValueError(f"{reference!r}: expected 'module:attribute'")
    return getattr(importlib.import_module(module), attribute)


@lru_cache(maxsize=None)
def experiments() -> tuple[Experiment, ...]:
    """Every declared experiment, in report order (by chapter, then name)."""
    import emergence.experiments as package
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name == "declaration":
            continue
        declared = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "EXPERIMENT", None)
        if not isinstance(declared, Experiment):
            raise TypeError(f"emergence/experiments/{info.name}.py: declares no EXPERIMENT = Experiment(...)")
        if declared.name != info.name:
            raise ValueError(f"emergence/experiments/{info.name}.py: EXPERIMENT.name is {declared.name!r}; "
                             f"an experiment has one name, its module's")
        found.append(declared)
    return tuple(sorted(found, key=Experiment.order))


def experiment(name: str) -> Experiment:
    for declared in experiments():
        if declared.name == name:
            return declared
    raise KeyError(f"no experiment {name!r}: declared are {[e.name for e in experiments()]}")


def entry_points(kind: str) -> list[tuple[Experiment, Any]]:
    """(experiment, its resolved `kind` entry) for every experiment that declares one, in report order."""
    return [(e, resolve(e.entry(kind))) for e in experiments() if e.entry(kind)]


def entry_modules(kind: str) -> list[str]:
    """The modules named by every experiment's `kind` entry (without importing them)."""
    return sorted({e.entry(kind).partition(":")[0] for e in experiments() if e.entry(kind)})

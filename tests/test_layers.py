"""The package's architecture, stated once: subpackages in layers, each importing only from
itself and the layers below it. A module that reaches up (the statistics importing the
pipeline, the plan importing a stage script or the benchmark) fails here by name."""
import ast
from pathlib import Path

from emergence.common.import_closure import REPO_ROOT

# Lowest first. Packages on the same rank do not import each other: the verdict rules
# (claims) read results, they never train, and the runs never decide a claim.
LAYERS = {
    "common": 0,    # schema, I/O, params files, provenance, code versions
    "core": 1,      # the science: tasks, model, mixers, hooks, metrics, training
    "analysis": 2,  # event statistics, survival, mirage, patching
    "runs": 3,      # cells, the cell cache, the executor, sweeps, language models, Pythia
    "claims": 3,    # verdict rules, the scorecard, stability
    "experiments": 4,  # one declaration per experiment (and an added experiment's own code): nothing imports them
    "pipeline": 5,  # stages' plumbing, validated config, dependencies, the plan, the prebuild pool
    "report": 6,    # tables, index, rendering, the comparison of two runs
    "tools": 7,     # benchmark, plain loop, seed power, pilots: nothing imports them
}
PACKAGE = REPO_ROOT / "emergence"
MAX_MODULES = 12


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "emergence" and len(parts) > 1 else None


def _imports(path: Path, submodules: bool = False) -> set[str]:
    """What each import statement names: its module, or for `from emergence import module` the
    module (`submodules`: every `from X import y` also as X.y, which may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.count(".") >= 1 or node.module == "stages":
                found.add(node.module)
            if submodules or "." not in node.module:  # from emergence import x
                found.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in found if m.split(".")[0] in ("emergence", "stages")}


def _modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def upward_imports(root: Path = REPO_ROOT) -> list[str]:
    """'importer -> imported' for every import that breaks the layering."""
    bad = []
    for path in _modules(root / "emergence"):
        rel = path.relative_to(root)
        own = rel.parts[1] if len(rel.parts) > 2 else None
        for name in sorted(_imports(path)):
            if name.split(".")[0] == "stages":
                bad.append(f"{rel} -> {name} (nothing imports a stage script)")
                continue
            target = _package_of(name)
            if target is None or target not in LAYERS or target == own:
                continue
            if own is None or LAYERS[target] >= LAYERS[own]:
                bad.append(f"{rel} -> {name} ({target} is not below {own})")
    for path in _modules(root / "stages"):
        for name in sorted(_imports(path)):
            if name.split(".")[0] == "stages" or _package_of(name) == "tools":
                bad.append(f"{path.relative_to(root)} -> {name} (a stage imports the library, never a stage or a tool)")
    return bad


def test_no_module_imports_upward_or_a_stage():
    assert upward_imports() == []


def test_the_rule_catches_an_upward_import(tmp_path):
    for pkg in ("analysis", "pipeline"):
        (tmp_path / "emergence" / pkg).mkdir(parents=True)
    (tmp_path / "stages").mkdir()
    (tmp_path / "emergence" / "analysis" / "survival.py").write_text("from emergence.pipeline.stage import SCRATCH\n")
    (tmp_path / "emergence" / "pipeline" / "cost.py").write_text(
        "import emergence.analysis.survival\nfrom stages.lm_train import variant_requests\n")
    (tmp_path / "stages" / "a.py").write_text("from stages.b import summarize\n")
    bad = upward_imports(tmp_path)
    assert bad == ["emergence/analysis/survival.py -> emergence.pipeline.stage (pipeline is not below analysis)",
                   "emergence/pipeline/cost.py -> stages.lm_train (nothing imports a stage script)",
                   "stages/a.py -> stages.b (a stage imports the library, never a stage or a tool)"]


def test_every_module_lives_in_a_layer_and_no_layer_is_a_drawer():
    root_modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert root_modules == ["__init__.py"]
    packages = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert packages == sorted(LAYERS)
    for folder in [p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert (folder / "__init__.py").is_file(), folder
        assert len(modules) <= MAX_MODULES, (folder.relative_to(REPO_ROOT), len(modules))


def test_no_import_cycle_between_modules():
    graph = {}
    for path in _modules(PACKAGE):
        rel = path.relative_to(REPO_ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        graph[name] = {m for m in _imports(path, submodules=True) if m.split(".")[0] == "emergence"}
    graph = {n: {m for m in deps if m in graph and m != n} for n, deps in graph.items()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, " -> ".join(trail + [node, nxt])
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


# Who resolves each kind of an experiment's named code (emergence/common/experiments.py): the
# code sits in that layer or below, as if it were imported there, or in the experiment's own
# module (emergence/experiments/<name>.py), which only the reader of the kind imports.
RESOLVED_IN = {"rules": "claims", "metrics": "analysis", "args": "runs", "cells": "runs", "files": "runs",
               "summarize": "runs"}


def test_an_experiments_named_code_sits_where_its_reader_could_import_it():
    from emergence.common.experiments import KINDS, experiments

    assert set(RESOLVED_IN) == set(KINDS)
    for declared in experiments():
        for kind, reader in RESOLVED_IN.items():
            module = (declared.entry(kind) or "").partition(":")[0]
            if module and module != f"emergence.experiments.{declared.name}":
                layer = _package_of(module)
                assert layer in LAYERS and LAYERS[layer] <= LAYERS[reader], (
                    f"emergence/experiments/{declared.name}.py: its {kind} {module} is in {layer}, "
                    f"above {reader}, which reads it")


def test_nothing_imports_an_experiment_module():
    """Declarations are read from source and their code resolved by name, by the reader of
    each kind alone: an import would widen every importer's deps to every experiment."""
    importers = [f"{path.relative_to(REPO_ROOT)} -> {name}" for path in _modules(PACKAGE) + _modules(REPO_ROOT / "stages")
                 for name in _imports(path, submodules=True) if name.startswith("emergence.experiments.")
                 and path.parent.name != "experiments"]
    assert importers == []

"""dvc.yaml's library deps, by construction: each stage's are the import closure of its command
module (and of any Python files among its other deps, such as the report chapters), so
`dvc.yaml` cannot forget a file the stage runs. `python -m emergence.pipeline.dependencies --check`
compares them, `--write` rewrites the lists (tests/test_dependencies.py runs the check).
The closure itself is emergence/common/import_closure.py's, the one the cell cache keys by,
widened by what a stage resolves by name: every experiment's declaration where the closure
holds their reader (emergence/common/experiments.py), and the modules an experiment names for each kind of entry
the closure resolves (an `entry_points("rules")` call: every declared rules module).
"""
from __future__ import annotations

import ast
import re
import sys
from functools import lru_cache
from pathlib import Path

from emergence.common.import_closure import LOCAL_PACKAGES, REPO_ROOT, closure, module_path
from emergence.common.experiments import Experiment, entry_modules, experiment, experiments
from emergence.pipeline.stage import read_pipeline

DVC_FILE = "dvc.yaml"
# The stage scripts an experiment with generated stages runs, and the kind of its entry each resolves.
GENERIC_STAGES = {"stages.experiment": "files", "stages.experiment_summary": "summarize"}
# The stages that read every experiment's results: each gets the deps its readers declare.
READERS = {"summary_metrics": ("metrics_read",), "claims_scorecard": ("rules_read",),
           "report_notebooks": ("metrics_read", "rules_read")}


def _is_library(dep: str) -> bool:
    return dep.split("/")[0] in LOCAL_PACKAGES and dep.endswith(".py")


def stage_entries(cmd: str, deps: list[str], root: Path = REPO_ROOT) -> list[Path]:
    """What a stage executes: its `python -m` module and the Python files among its other deps
    (a folder of report chapters, say)."""
    match = re.search(r"python3? -m ([\w.]+)", cmd)
    if not match:
        raise ValueError(f"stage command {cmd!r}: expected `python -m <module>`")
    entries = [module_path(match.group(1), root)]
    if entries[0] is None:
        raise ValueError(f"stage command {cmd!r}: no module {match.group(1)} in this repository")
    if match.group(1) in GENERIC_STAGES:  # the experiment it is run for: its declaration and the code it names
        name = cmd[match.end():].split()[0]
        declared = experiment(name, root)
        entries += [root / "emergence" / "experiments" / f"{name}.py",
                    module_path(declared.entry(GENERIC_STAGES[match.group(1)]).partition(":")[0], root)]
    for dep in deps:
        path = root / dep
        if _is_library(dep) or "$" in dep:
            continue
        if path.is_dir():
            entries.extend(sorted(path.rglob("*.py")))
        elif path.suffix == ".py" and path.is_file():
            entries.append(path)
    return entries


DECLARATIONS = "emergence/common/experiments.py"  # reads every emergence/experiments/ module


EVERY_DECLARATION = ("experiments", "entry_points", "entry_modules")  # the readers of every declaration


def _reads_every_declaration(path: Path) -> bool:
    """Whether a module calls a reader of every experiment's declaration (`experiment(name)`, a
    generated stage's, reads its own alone: stage_entries adds it)."""
    return _calls_in(path.read_text()) & set(EVERY_DECLARATION) != set()


@lru_cache(maxsize=None)
def _calls_in(source: str) -> frozenset[str]:
    return frozenset(node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                     for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                     and isinstance(node.func, (ast.Name, ast.Attribute)))


def _resolved_kinds(path: Path) -> frozenset[str]:
    """The kinds of entry a module resolves: the constant argument of each `entry_points(...)` call."""
    return _kinds_in(path.read_text())


@lru_cache(maxsize=None)
def _kinds_in(source: str) -> frozenset[str]:
    kinds = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "entry_points":
                kinds.add(node.args[0].value)
    return frozenset(kinds)


def executed(entries: list[Path], root: Path = REPO_ROOT) -> list[str]:
    """The closure of `entries` with what it resolves by name (the experiments' declarations
    and the modules they name for each kind the closure resolves), to a fixed point."""
    entries = list(entries)
    while True:
        files = closure(entries, root)
        more = []
        readers = [f for f in files if f.endswith(".py") and f != DECLARATIONS and _reads_every_declaration(root / f)]
        if DECLARATIONS in files and readers:
            more += sorted((root / "emergence" / "experiments").glob("*.py"))
            for kind in set().union(*(_resolved_kinds(root / f) for f in files if f.endswith(".py"))):
                more += [module_path(m, root) for m in entry_modules(kind, root)]
        wider = closure(entries + more, root)
        if wider == files:
            return files
        entries += more


def _stages(root: Path) -> dict[str, dict]:
    """dvc.yaml's stages (a foreach stage's `do` body), with `${paths.*}` filled in."""
    dvc = read_pipeline(root)
    paths = next((v["paths"] for v in dvc.get("vars", []) if isinstance(v, dict) and "paths" in v), {})
    fill = lambda text: re.sub(r"\$\{paths\.(\w+)\}", lambda m: paths.get(m.group(1), m.group(0)), text)  # noqa: E731
    out = {}
    for name, body in dvc["stages"].items():
        body = body.get("do", body)
        out[name] = {"cmd": fill(body["cmd"]), "deps": [fill(d) for d in body.get("deps", [])]}
    return out


def expected_deps(root: Path = REPO_ROOT) -> dict[str, list[str]]:
    """Stage -> the library files it executes (sorted). An empty file (a package's bare
    `__init__.py`) is left out: it computes nothing, and DVC warns on every run about each
    empty dep. Once it holds code it is expected, and the check fails until it is declared."""
    out = {}
    for name, body in _stages(root).items():
        deps = [d for d in body.get("deps", [])]
        out[name] = [f for f in executed(stage_entries(body["cmd"], deps, root), root)
                     if _is_library(f) and (root / f).stat().st_size > 0]
    return out


def declared_deps(root: Path = REPO_ROOT) -> dict[str, list[str]]:
    return {name: sorted(d for d in body.get("deps", []) if _is_library(d)) for name, body in _stages(root).items()}


def mismatches(root: Path = REPO_ROOT) -> dict[str, dict[str, list[str]]]:
    """Stage -> {"missing": executed but not declared, "extra": declared but not executed}."""
    want, have = expected_deps(root), declared_deps(root)
    out = {}
    for stage in want:
        missing = sorted(set(want[stage]) - set(have[stage]))
        extra = sorted(set(have[stage]) - set(want[stage]))
        if missing or extra:
            out[stage] = {"missing": missing, "extra": extra}
    return out


def _begin(name: str) -> str:
    return f"  # >>> generated from emergence/experiments/{name}.py by `python -m emergence.pipeline.dependencies --write`\n"


def _end(name: str) -> str:
    return f"  # <<< emergence/experiments/{name}.py\n"


def generated_paths(e: Experiment) -> dict[str, str]:
    return {f"{e.name}_cells": f"data/experiments/{e.name}/cells", f"{e.name}_summary": f"data/experiments/{e.name}/summary.nc"}


def generated_stages(e: Experiment) -> str:
    """dvc.yaml's two stages of an experiment whose stages are generated, without library deps
    (the import closures add them)."""
    section = e.params
    train = ["profile", "execution", *e.reads, section]
    summary = ["profile", *e.summary_reads, section]
    lines = [_begin(e.name), f"  # {e.title}\n",
             f"  {e.name}:\n", f"    cmd: python -m stages.experiment {e.name} ${{paths.{e.name}_cells}}\n",
             "    deps:\n", "      - profiles/${profile}.yaml\n",
             "    params:\n", *(f"      - {k}\n" for k in train),
             "    outs:\n", f"      - ${{paths.{e.name}_cells}}\n", "\n",
             f"  {e.name}_summary:\n",
             f"    cmd: python -m stages.experiment_summary {e.name} ${{paths.{e.name}_cells}} ${{paths.{e.name}_summary}}\n",
             "    deps:\n", "      - profiles/${profile}.yaml\n", f"      - ${{paths.{e.name}_cells}}\n",
             "    params:\n", *(f"      - {k}\n" for k in summary),
             "    outs:\n", f"      - ${{paths.{e.name}_summary}}\n", _end(e.name)]
    return "".join(lines)


def with_experiments(text: str, declared: tuple[Experiment, ...]) -> str:
    """dvc.yaml's text with every generated experiment's paths and stages as its declaration
    says (without library deps: `rewrite` adds them), stale generated blocks removed, and each
    reader stage's deps holding every result the experiments' metrics and rules read."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    block = None
    for line in lines:  # drop the generated blocks
        m = re.match(r"^  # >>> generated from emergence/experiments/(\w+)\.py", line)
        if m:
            block = m.group(1)
            continue
        if block is not None:
            if line == _end(block):
                block = None
                if out and out[-1] == "\n":
                    out.pop()
            continue
        out.append(line)
    lines = out
    generated = [e for e in declared if e.generated]
    # paths: appended at the end of vars.paths where missing
    start = next(i for i, line in enumerate(lines) if re.match(r"^  - paths:\s*$", line)) + 1
    end = start
    while end < len(lines) and re.match(r"^      \S", lines[end]):
        end += 1
    wanted = {k: v for e in generated for k, v in generated_paths(e).items()}
    stale = {line.split(":")[0].strip() for line in lines[start:end]
             if re.match(r"^      \w+: data/experiments/", line) and line.split(":")[0].strip() not in wanted}
    kept = [line for line in lines[start:end] if line.split(":")[0].strip() not in stale]
    have = {line.split(":")[0].strip() for line in kept}
    lines[start:end] = kept + [f"      {k}: {v}\n" for k, v in wanted.items() if k not in have]
    # stages: before the first reader
    first_reader = next(i for i, line in enumerate(lines) if re.match(rf"^  ({'|'.join(READERS)}):\s*$", line))
    while first_reader > 0 and lines[first_reader - 1].startswith("  #"):
        first_reader -= 1
    blocks = [generated_stages(e) + "\n" for e in generated]
    lines[first_reader:first_reader] = blocks
    # readers' data deps
    return "".join(_reader_deps(lines, declared, stale))


def _reader_deps(lines: list[str], declared: tuple[Experiment, ...], stale: set[str]) -> list[str]:
    """Each reader's deps with every result the declarations' readers read added, and those of
    removed generated experiments (`stale` paths) dropped."""
    out: list[str] = []
    stage = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^  ([\w-]+):\s*$", line)
        if m:
            stage = m.group(1)
        out.append(line)
        i += 1
        if stage in READERS and re.match(r"^    deps:\s*$", line):
            items = []
            while i < len(lines) and re.match(r"^      - ", lines[i]):
                items.append(lines[i])
                i += 1
            items = [item for item in items if item.split("#")[0].strip()[2:].strip()
                     not in {f"${{paths.{k}}}" for k in stale}]
            have = {item.split("#")[0].strip()[2:].strip() for item in items}
            wanted = [f"${{paths.{r}}}" for e in declared for field in READERS[stage] for r in getattr(e, field)]
            missing = list(dict.fromkeys(w for w in wanted if w not in have))
            out.extend(items + [f"      - {w}\n" for w in missing])
    return out


def rewrite(root: Path = REPO_ROOT) -> bool:
    """Write the experiments' generated parts (`with_experiments`), then replace each stage's
    library deps in dvc.yaml by its closure, keeping every other line (comments, data deps,
    order). Returns whether the file changed."""
    path = root / DVC_FILE
    original = path.read_text()
    path.write_text(with_experiments(original, experiments(root)))
    text = path.read_text()
    want = expected_deps(root)
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    stage = None
    i = 0
    stage_re = re.compile(r"^  ([\w-]+):\s*$")
    while i < len(lines):
        line = lines[i]
        m = stage_re.match(line)
        if m:
            stage = m.group(1)
        dm = re.match(r"^(\s+)deps:\s*$", line)
        if dm and stage in want:
            out.append(line)
            i += 1
            items: list[str] = []
            indent = None
            while i < len(lines) and re.match(r"^\s+- ", lines[i]) and len(lines[i]) - len(lines[i].lstrip()) > len(dm.group(1)):
                indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
                items.append(lines[i].strip()[2:].strip())
                i += 1
            indent = indent or dm.group(1) + "  "
            others = [d for d in items if not _is_library(d)]
            out.extend(f"{indent}- {d}\n" for d in want[stage] + others)
            continue
        out.append(line)
        i += 1
    new = "".join(out)
    path.write_text(new)
    return new != original


def _without_library(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True)
                   if not (re.match(r"^\s+- (\S+)\s*$", line) and _is_library(line.strip()[2:])))


def generated_out_of_date(root: Path = REPO_ROOT) -> bool:
    """Whether dvc.yaml's experiment parts differ from what the declarations generate."""
    text = (root / DVC_FILE).read_text()
    return _without_library(with_experiments(text, experiments(root))) != _without_library(text)


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        print("dvc.yaml rewritten" if rewrite() else "dvc.yaml already matches the import closures")
        return 0
    if argv in ([], ["--check"]):
        bad = mismatches()
        if generated_out_of_date():
            bad["experiments"] = {"stale": ["the stages, paths or readers' deps emergence/experiments/ declares"]}
        for stage, diff in bad.items():
            for kind, files in diff.items():
                if files:
                    print(f"{stage}: {kind} {' '.join(files)}")
        if bad:
            print("run `python -m emergence.pipeline.dependencies --write` to fix dvc.yaml")
        return 1 if bad else 0
    print("usage: python -m emergence.pipeline.dependencies [--check | --write]")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

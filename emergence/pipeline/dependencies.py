"""dvc.yaml's library deps, by construction: each stage's are the import closure of its command
module (and of any Python files among its other deps, such as the report chapters), so
`dvc.yaml` cannot forget a file the stage runs. `python -m emergence.pipeline.dependencies --check`
compares them, `--write` rewrites the lists (tests/test_dependencies.py runs the check).
The closure itself is emergence/common/import_closure.py's, the one the cell cache keys by,
widened by what a stage resolves by name: every experiment's declaration where the closure
holds the declarations' reader, and the modules an experiment names for each kind of entry
the closure resolves (an `entry_points("rules")` call: every declared rules module).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from emergence.common.import_closure import LOCAL_PACKAGES, REPO_ROOT, closure, module_path
from emergence.experiments import declaration
from emergence.pipeline.stage import read_pipeline

DVC_FILE = "dvc.yaml"


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
    for dep in deps:
        path = root / dep
        if _is_library(dep) or "$" in dep:
            continue
        if path.is_dir():
            entries.extend(sorted(path.rglob("*.py")))
        elif path.suffix == ".py" and path.is_file():
            entries.append(path)
    return entries


DECLARATIONS = "emergence/experiments/declaration.py"


def _resolved_kinds(path: Path) -> set[str]:
    """The kinds of entry a module resolves: the constant argument of each `entry_points(...)` call."""
    kinds = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "entry_points":
                kinds.add(node.args[0].value)
    return kinds


def executed(entries: list[Path], root: Path = REPO_ROOT) -> list[str]:
    """The closure of `entries` with what it resolves by name (the experiments' declarations
    and the modules they name for each kind the closure resolves), to a fixed point."""
    entries = list(entries)
    while True:
        files = closure(entries, root)
        more = []
        if DECLARATIONS in files:
            more += sorted((root / DECLARATIONS).parent.glob("*.py"))
            for kind in set().union(*(_resolved_kinds(root / f) for f in files if f.endswith(".py"))):
                more += [module_path(m, root) for m in declaration.entry_modules(kind)]
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


def rewrite(root: Path = REPO_ROOT) -> bool:
    """Replace each stage's library deps in dvc.yaml by its closure, keeping every other line
    (comments, data deps, order). Returns whether the file changed."""
    path = root / DVC_FILE
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
    if new != text:
        path.write_text(new)
        return True
    return False


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        print("dvc.yaml rewritten" if rewrite() else "dvc.yaml already matches the import closures")
        return 0
    if argv in ([], ["--check"]):
        bad = mismatches()
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

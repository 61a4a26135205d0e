"""What a piece of code executes: the import closure of a module inside this repository, and
its code version (the hash of those files).

Two users, one definition:
- the cell cache: a trained cell's code version is the hash of the files its training
  imports, so editing the analysis, the report or the renderer retrains nothing (this module
  is in every such closure, so it holds nothing else);
- the pipeline: a DVC stage's library deps are the closure of its command module
  (emergence/pipeline/dependencies.py writes and checks them in dvc.yaml).

Imports are read from the source (every `import` statement, at any depth, so a
function-local import still counts); only modules of this repository are followed.
"""
from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

import emergence

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL_PACKAGES = ("emergence", "stages")


def module_path(name: str, root: Path = REPO_ROOT) -> Path | None:
    """emergence.core.tasks.corpus -> emergence/core/tasks/corpus.py (or a package's __init__.py)."""
    if name.split(".")[0] not in LOCAL_PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # submodules
    return names


def _with_parents(name: str) -> list[str]:
    """Importing a.b.c runs a/__init__.py and a/b/__init__.py first."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@lru_cache(maxsize=None)
def _direct(path: Path, root: Path) -> tuple[Path, ...]:
    found = set()
    for name in _imported_names(path):
        for module in _with_parents(name):
            target = module_path(module, root)
            if target is not None:
                found.add(target)
    return tuple(sorted(found))


def closure(entries: list[Path], root: Path = REPO_ROOT) -> list[str]:
    """Repository-relative paths of `entries` and every local module they import, transitively."""
    seen: set[Path] = set()
    todo = [Path(e).resolve() for e in entries]
    for entry in list(todo):  # an entry inside a package runs that package's __init__ files
        for parent in entry.parents:
            if parent == root.resolve() or not (parent / "__init__.py").is_file():
                break
            todo.append(parent / "__init__.py")
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(p for p in _direct(path, root.resolve()) if p not in seen)
    return sorted(str(p.relative_to(root.resolve())) for p in seen)


def module_closure(module: str, root: Path = REPO_ROOT) -> list[str]:
    path = module_path(module, root)
    if path is None:
        raise ValueError(f"{module}: not a module of this repository")
    return closure([path], root)


def executable_source(path: Path) -> str:
    """What of a Python file can change what it does: its syntax tree without line numbers, with
    comments, layout and string statements (docstrings) dropped. Training never reads a
    docstring, so correcting one (or a comment) retrains nothing; any change to code does.
    The dump's format is Python's: another minor version of Python may key the same code anew."""
    return _executable_source(path.read_text())


@lru_cache(maxsize=None)
def _executable_source(source: str) -> str:  # each text parsed once a process
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and any(map(_is_string_statement, statements)):
                setattr(node, field, [s for s in statements if not _is_string_statement(s)] or [ast.Pass()])
    return ast.dump(tree, include_attributes=False)


def _is_string_statement(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def code_version(files: list[str], root: Path = REPO_ROOT) -> str:
    """Package version plus a hash of these files' paths and executable source."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode())
        h.update(executable_source(root / rel).encode())
    return f"{emergence.__version__}+src.{h.hexdigest()[:12]}"


def module_code_version(module: str, root: Path = REPO_ROOT) -> str:
    """The code version of everything `module` executes (its import closure)."""
    return code_version(module_closure(module, root), root)

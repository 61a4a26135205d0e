"""docs/parameters-reference.md, written from the params schema: every key of params.yaml with
its value on each profile, what values it allows and what it means (the comment on its field,
where the key's meaning is written once). `python -m emergence.pipeline.parameters_reference
--write` rewrites it; `--check` fails where it is out of date (tests/test_config.py runs it).
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import sys
import tokenize
import typing
from functools import lru_cache
from pathlib import Path

from emergence.common.params import PROFILES, REPO_ROOT, merged_params
from emergence.common.schema import describe
from emergence.pipeline.config import Params

REFERENCE = Path("docs") / "parameters-reference.md"


def leaves(cls: type, key: str = "") -> list[tuple[str, type, dataclasses.Field]]:
    """(dotted key, the class declaring the field, the field) of every leaf of schema `cls`; a
    section keyed by names (`dict[str, Section]`) as `<name>`."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        name = f"{key}.{f.name}" if key else f.name
        tp = hints[f.name]
        args = typing.get_args(tp)
        if dataclasses.is_dataclass(tp):
            out += leaves(tp, name)
        elif typing.get_origin(tp) is dict and dataclasses.is_dataclass(args[1]):
            out += leaves(args[1], f"{name}.<name>")
        elif any(dataclasses.is_dataclass(a) for a in args):  # Section | None
            out += leaves(next(a for a in args if dataclasses.is_dataclass(a)), name)
        else:
            owner = next(c for c in cls.__mro__ if f.name in getattr(c, "__annotations__", {}))
            out.append((name, owner, f))
    return out


@lru_cache(maxsize=None)
def field_comments(owner: type) -> dict[str, str]:
    """Field name -> the comment on its line(s) in `owner`'s source."""
    try:
        lines, _ = inspect.getsourcelines(owner)
    except (OSError, TypeError):  # made at run time: the sweeps' section, whose fields are experiments
        return {}
    source = inspect.cleandoc("\n" + "".join(lines)) if lines[0].startswith(" ") else "".join(lines)
    comments = {t.start[0]: t.string.lstrip("#").strip()
                for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT}
    out = {}
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign):
            said = [comments[i] for i in range(node.lineno, node.end_lineno + 1) if i in comments]
            if said:
                out[node.target.id] = " ".join(said)
    return out


ABSENT = object()  # a key the profile leaves out (a mixer's key on a task model), or one per name


def _value(params: dict, key: str):
    node = params
    for part in key.split("."):
        if part == "<name>" or not isinstance(node, dict) or part not in node:
            return ABSENT
        node = node[part]
    return node


def _cell(value) -> str:
    if value is ABSENT:
        return "–"
    text = json.dumps(value) if not isinstance(value, str) else value
    return f"`{text}`" if len(text) <= 40 else f"`{text[:37]}...`"


def reference(root: Path = REPO_ROOT) -> str:
    profiles = {name: merged_params(root, name) for name in PROFILES}
    rows = ["# Parameters: the reference", "",
            "Written by `python -m emergence.pipeline.parameters_reference --write` from the params schema; do "
            "not edit. Each key's meaning is the comment on its field (the module named); its value on each "
            "profile is params.yaml merged with that profile's overlay. Why a value was chosen, and the "
            "measurements behind it: [parameters.md](parameters.md) and params.yaml's marks.", ""]
    section = None
    for key, owner, f in leaves(Params):
        top = key.split(".")[0]
        if top != section:
            section = top
            rows += ["", f"## `{top}`", "", "| key | default | smoke | paper | allowed | meaning (where) |",
                     "|---|---|---|---|---|---|"]
        hints = typing.get_type_hints(owner)
        meaning = field_comments(owner).get(f.name, "")
        where = f"{owner.__module__}.{owner.__name__}"
        allowed = describe(hints[f.name], f.metadata).replace("|", "\\|")
        values = [_cell(_value(profiles[p], key)) for p in PROFILES]
        rows.append(f"| `{key}` | {' | '.join(values)} | {allowed} | {meaning.replace('|', '/')} (`{where}`) |")
    return "\n".join(rows) + "\n"


def main(argv: list[str], root: Path = REPO_ROOT) -> int:
    text, path = reference(root), root / REFERENCE
    if argv == ["--write"]:
        path.write_text(text)
        return 0
    if argv == ["--check"]:
        if not path.is_file() or path.read_text() != text:
            print(f"{REFERENCE} is out of date: python -m emergence.pipeline.parameters_reference --write")
            return 1
        return 0
    print("usage: python -m emergence.pipeline.parameters_reference --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

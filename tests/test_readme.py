"""README.md is the user's entry point: its set-up block and the targets it names must be real."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(info string, lines) of every fenced code block. A closing fence is the bare fence:
    CommonMark reads "``` text" as an opening one, so such a line swallows what follows."""
    blocks, current, info = [], None, ""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("```"):
            if current is not None:
                current.append(line)
            continue
        if current is None:
            info, current = line[3:].strip(), []
            if " " in info:
                raise ValueError(f"README.md:{number}: text after an opening fence: {line!r}")
        elif line.strip() == "```":
            blocks.append((info, current))
            current = None
        else:
            raise ValueError(f"README.md:{number}: a fence inside a code block: {line!r}")
    if current is not None:
        raise ValueError("README.md: a code block is never closed")
    return blocks


def test_fences_parse_and_reject_trailing_text():
    assert fenced_blocks(README)
    with pytest.raises(ValueError, match="fence inside"):
        fenced_blocks("```bash\nmake\n``` then prose\n```\n")
    with pytest.raises(ValueError, match="never closed"):
        fenced_blocks("```bash\nmake\n")


def test_setup_block_is_exactly_the_two_commands():
    info, lines = fenced_blocks(README)[0]
    commands = [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]
    assert info == "bash"
    assert commands == ["make report", "make test"]


def test_every_make_target_named_exists():
    targets = set(re.findall(r"^([a-z][\w-]*):", MAKEFILE, flags=re.M))
    named = set(re.findall(r"`make ([a-z][\w-]*)", README)) | set(re.findall(r"^make ([a-z][\w-]*)", README, flags=re.M))
    assert named and named <= targets, sorted(named - targets)

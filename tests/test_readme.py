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


TALLY = re.compile(r"^- \*\*(?P<who>[^*]+)\*\* \((?P<rows>\d+) rows[^)]*\)?:?\s*(?P<counts>.*?)\.$", re.M | re.S)
COUNT = re.compile(r"(\d+) (reproduced|partly|not reproduced|inconclusive|needs? the paper profile)")


def readme_tallies(text: str) -> dict[str, tuple[int, dict[str, int]]]:
    """The two tally bullets of 'What the committed run found': who -> (rows, verdict -> count)."""
    out = {}
    for m in TALLY.finditer(text):
        counts = {v.replace("need the", "needs the"): int(n)
                  for n, v in COUNT.findall(" ".join(m.group("counts").split()))}
        out[m.group("who")] = (int(m.group("rows")), counts)
    return out


def test_the_tallies_readme_states_are_the_committed_scorecards():
    import json
    scorecard = json.loads((ROOT / "data" / "claims" / "scorecard.json").read_text())
    stated = readme_tallies(README)
    assert set(stated) == {"The paper's claims", "This report's own questions"}, stated
    for who, key in (("The paper's claims", "tally"), ("This report's own questions", "extensions_tally")):
        rows, counts = stated[who]
        assert counts == scorecard[key], (who, counts, scorecard[key])
        assert rows == sum(scorecard[key].values())
    # a count off by one is caught
    n = scorecard["tally"]["reproduced"]
    off = README.replace(f"{n} reproduced", f"{n + 1} reproduced", 1)
    assert readme_tallies(off)["The paper's claims"][1] != scorecard["tally"]


def test_readme_is_short_and_dates_nothing():
    assert len(README.splitlines()) <= 120
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", README)           # dated measurements live in docs/performance.md
    assert not re.search(r"\b[0-9a-f]{7,40}\b", README.replace("requirements.lock", ""))  # no commit hash
    for link in re.findall(r"\]\((docs/[\w.]+)\)", README):
        assert (ROOT / link).exists(), link

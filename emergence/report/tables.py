"""Pipe tables that stay legible in the typst PDF and the HTML.

Pandoc gives a wide pipe table's columns widths in proportion to its dash counts, and typst
cannot break a word: a column narrower than its longest word lets that word run into the
next column. The rule here: every column is at least as wide as its longest unbreakable
piece of visible text, the rest of the page's width goes to the columns with the most text,
and identifiers longer than `BREAK_AFTER` characters (dotted parameter names, cell labels)
get invisible break opportunities (U+200B) after their separators; numbers never do. A table
whose longest pieces alone exceed the page still overflows; tests/test_render.py checks the
smoke report's PDF for overlapping words.
"""
from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd

TEXT_WIDTH = 92    # characters of 10 pt text across the PDF's text width (A4, 2 cm margins)
INSET = 3          # characters a cell's insets take (typst: 5 pt each side)
BREAK_AFTER = 16   # identifiers longer than this get break opportunities after . _ / + , =
BREAK_TIGHT = 6    # ... and longer than this, where a table's columns cannot fit otherwise
MIN_SCALE = 0.7    # a table that still does not fit is set in smaller type, down to 7 pt
ZWSP = "\u200b"
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_RAW = re.compile(r"`([^`]*)`\{=(\w+)\}")  # pandoc raw inline: `...`{=html}, `...`{=typst}
_TAG = re.compile(r"<[^>]*>")
_SEPARATORS = re.compile(r"([._/+,=])(?=\w)")
_NUM = r"[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?%?"
_NUMBER = re.compile(f"{_NUM}(?:(?:--|\u2013){_NUM})?")  # a number, or a range of two
# The verdicts' colours, the same in the HTML and the PDF
VERDICT_COLOURS = {"reproduced": "#1a7f37", "partly": "#9a6700", "not reproduced": "#cf222e",
                   "inconclusive": "#57606a", "needs the paper profile": "#0969da"}


def coloured(text: str, verdict: str) -> str:
    """`text` in bold, in the colour of `verdict`, as raw HTML and raw typst side by side (each
    output format keeps its own)."""
    colour = VERDICT_COLOURS[verdict]
    typst_text = re.sub(r"([\\#\[\]*_$@<>`~])", r"\\\1", text)
    return (f'`<b style="color:{colour}">{html.escape(text, quote=False)}</b>`{{=html}}'
            f'`#text(fill: rgb("{colour}"), weight: "bold")[{typst_text}]`{{=typst}}')


def visible(text: str) -> str:
    """What a cell shows: raw typst dropped, raw HTML without its tags, link targets, emphasis
    and code marks removed."""
    text = _RAW.sub(lambda m: _TAG.sub("", m.group(1)) if m.group(2) == "html" else "", text)
    return _LINK.sub(r"\1", text).replace("**", "").replace("`", "")


def breakable(text: str, after: int = BREAK_AFTER) -> str:
    """Break opportunities after the separators of identifiers longer than `after`, outside
    link targets and raw markup."""
    out, last = [], 0
    for m in sorted([*_LINK.finditer(text), *_RAW.finditer(text)], key=lambda m: m.start()):
        if m.start() < last:
            continue
        out.append(_break_words(text[last:m.start()], after))
        if m.re is _LINK:
            out.append(f"[{_break_words(m.group(1), after)}]" + m.group(0)[len(m.group(1)) + 2:])
        else:
            out.append(m.group(0))
        last = m.end()
    out.append(_break_words(text[last:], after))
    return "".join(out)


def _break_words(text: str, after: int) -> str:
    """Numbers are never broken: a value split at its decimal point reads as two numbers."""
    return " ".join(_SEPARATORS.sub(r"\1" + ZWSP, w)
                    if len(w) > after and "://" not in w and not _NUMBER.fullmatch(w) else w
                    for w in text.split(" "))


def _longest_piece(text: str) -> int:
    return max((len(p) for p in re.split(f"[ {ZWSP}]", visible(text))), default=0)


def column_widths(columns: list[list[str]], width: int = TEXT_WIDTH) -> list[int]:
    """Relative widths (dash counts) for columns given as [header, cell, cell, ...] strings."""
    floor = [max(_longest_piece(c) for c in col) + INSET for col in columns]
    want = [max(len(visible(c)) for c in col) + INSET for col in columns]
    if sum(want) <= width:
        return want
    spare = width - sum(floor)
    if spare <= 0:
        return floor
    extra = [w - f for w, f in zip(want, floor)]
    total = sum(extra)
    return [f + math.floor(spare * e / total) if total else f for f, e in zip(floor, extra)]


def pipe_table(df: pd.DataFrame, index: bool = False, floatfmt: str = ".3g", max_scale: float = 1.0) -> str:
    """df as a pipe table sized by `column_widths` (empty frames as "_(none)_"); the PDF sets it
    in at most `max_scale` of the text size (smaller where it does not fit otherwise)."""
    if df.empty:
        return "_(none)_"
    frame = df.reset_index() if index else df
    fmt = lambda x: format(x, floatfmt) if isinstance(x, (float, np.floating)) else str(x)  # noqa: E731
    cells = [[str(c) for c in frame.columns]]
    cells += [[fmt(x).replace("|", "\\|").replace("\n", " ") for x in row] for row in frame.itertuples(index=False)]
    for after in (BREAK_AFTER, BREAK_TIGHT):  # break shorter identifiers only where the columns need it
        text = [[breakable(c, after) for c in row] for row in cells]
        columns = [list(col) for col in zip(*text)]
        widths = column_widths(columns)
        if sum(widths) <= TEXT_WIDTH:
            break
    # still too wide: the PDF sets this table in smaller type, down to MIN_SCALE of the text size
    scale = max(MIN_SCALE, min(max_scale, TEXT_WIDTH / sum(widths)))
    if scale < 1.0:
        widths = column_widths(columns, int(TEXT_WIDTH / scale))
    header, rows = text[0], text[1:]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(":" + "-" * max(w, 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    body = "\n".join(lines)
    if scale < 1.0:
        # indented: the renderer demotes headings by prefixing lines that start with "#"
        body = (f"```{{=typst}}\n #[\n #set text(size: {10 * scale:.1f}pt)\n```\n\n{body}\n\n"
                "```{=typst}\n ]\n```")
    return body

"""Legibility of the rendered PDF, checked mechanically: glyphs drawn over other glyphs.

Every character's box comes from the PDF itself (pdfminer.six). Two characters collide when
their boxes overlap by more than `min_overlap` of the narrower one's width and half the
shorter one's height: in typeset text neighbouring glyphs touch at most, so a collision is
a word running into another (a table column narrower than its longest word, a header laid
over its neighbour, a label printed on a label).
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from pdfminer.high_level import extract_pages
from pdfminer.layout import LTChar, LTContainer, LTTextContainer


def _chars(item):
    if isinstance(item, LTChar):
        if item.get_text().strip():
            yield item
    elif isinstance(item, LTContainer):
        for child in item:
            yield from _chars(child)


def collisions(boxes: np.ndarray, min_overlap: float = 0.3) -> list[tuple[int, int]]:
    """Index pairs of colliding boxes among rows (x0, y0, x1, y1)."""
    if len(boxes) < 2:
        return []
    heights = boxes[:, 3] - boxes[:, 1]
    band = max(float(np.median(heights)), 1.0)
    rows = defaultdict(list)  # boxes bucketed by their vertical position: only neighbours are compared
    for i, y in enumerate(boxes[:, 1]):
        rows[int(y // band)].append(i)
    out = []
    for key, members in rows.items():
        near = np.array(members + [j for k in (key - 1, key + 1) for j in rows.get(k, [])])
        a = np.array(members)
        A, B = boxes[a][:, None, :], boxes[near][None, :, :]
        ix = np.minimum(A[..., 2], B[..., 2]) - np.maximum(A[..., 0], B[..., 0])
        iy = np.minimum(A[..., 3], B[..., 3]) - np.maximum(A[..., 1], B[..., 1])
        w = np.minimum(A[..., 2] - A[..., 0], B[..., 2] - B[..., 0])
        h = np.minimum(A[..., 3] - A[..., 1], B[..., 3] - B[..., 1])
        hit = (ix > min_overlap * w) & (iy > 0.5 * h)
        for i, j in zip(*np.nonzero(hit)):
            p, q = int(a[i]), int(near[j])
            if p < q:
                out.append((p, q))
    return sorted(set(out))


def overlapping_text(pdf: Path) -> dict[int, list[str]]:
    """Page number (from 1) -> the colliding characters' text in context, for every page that has any."""
    found = {}
    for number, page in enumerate(extract_pages(str(pdf)), start=1):
        chars = list(_chars(page))
        boxes = np.array([c.bbox for c in chars], dtype=float).reshape(-1, 4)
        pairs = collisions(boxes)
        if pairs:
            found[number] = [f"{chars[i].get_text()}/{chars[j].get_text()} at ({chars[i].bbox[0]:.0f}, "
                             f"{chars[i].bbox[1]:.0f})" for i, j in pairs[:5]]
    return found


def page_text(pdf: Path, number: int) -> str:
    """The text of page `number` (from 1), whitespace collapsed to single spaces."""
    for page in extract_pages(str(pdf), page_numbers=[number - 1]):
        return " ".join(" ".join(item.get_text() for item in page if isinstance(item, LTTextContainer)).split())
    raise ValueError(f"{pdf} has no page {number}")


if __name__ == "__main__":  # python -m emergence.report.pdf_layout report/_output/report.pdf
    import sys

    bad = overlapping_text(Path(sys.argv[1]))
    for number, where in bad.items():
        print(f"page {number}: {', '.join(where)}")
    print(f"{len(bad)} pages with overlapping text")
    sys.exit(1 if bad else 0)

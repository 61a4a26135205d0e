"""Render executed report notebooks to a self-contained HTML site and one PDF.

Quarto renders the report where it is installed (`quarto render` on report/_quarto.yml).
Otherwise the offline route: each executed notebook becomes Markdown (figures as PNG with
their labels and captions, tables as pipe tables), pandoc writes self-contained HTML
(`--embed-resources`, no external URL) and typst compiles the PDF, from the same notebooks.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

import nbformat
import pypandoc
import typst

from emergence.common.io import atomic_dir, atomic_path

CSS = Path(__file__).with_name("report.css")
TYPST_HEADER = Path(__file__).with_name("report_header.typ")


def _cell_options(source: str) -> dict[str, str]:
    """Quarto cell options (`#| key: value`) at the top of a code cell."""
    opts = {}
    for line in source.splitlines():
        m = re.match(r"#\|\s*([\w-]+):\s*(.*)$", line)
        if not m:
            break
        opts[m.group(1)] = m.group(2).strip().strip('"').strip("'")
    return opts


def notebook_to_markdown(nb_path: Path, asset_dir: Path, asset_prefix: str) -> tuple[str, list[str]]:
    """Markdown of an executed notebook without code; figures written to asset_dir.

    Returns (markdown, figure labels)."""
    nb = nbformat.read(nb_path, as_version=4)
    asset_dir.mkdir(parents=True, exist_ok=True)
    parts, labels = [], []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            parts.append(cell.source)
            continue
        if cell.cell_type != "code":
            continue
        opts = _cell_options(cell.source)
        n_images = 0
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                raise RuntimeError(f"{nb_path.name}: cell {index} raised {output.get('ename')}: {output.get('evalue')}")
            data = output.get("data", {})
            if "image/png" in data:
                label = opts.get("label", f"fig-cell{index}")
                name = f"{label}.png" if n_images == 0 else f"{label}-{n_images}.png"
                (asset_dir / name).write_bytes(base64.b64decode(data["image/png"]))
                caption = opts.get("fig-cap", "")
                ident = f"{{#{label}}}" if n_images == 0 and label.startswith("fig-") else ""
                parts.append(f"![{caption}]({asset_prefix}/{name}){ident}")
                labels.append(label)
                n_images += 1
            elif "text/markdown" in data:
                parts.append(data["text/markdown"])
    return "\n\n".join(p.strip() for p in parts if p.strip()) + "\n", labels


_CODE = re.compile(r"(```.*?```|`[^`\n]*`(?:\{=\w+\})?)", flags=re.S)  # fenced blocks, inline code and raw spans
_POWER = re.compile(r"(?<![\w^])(\d+|[A-Za-z])\^(\d+|[A-Za-z])(?![\w^])")    # 10^4, p^L
_INDEX = re.compile(r"(?<![\w~])([A-Za-z])_(\d)(?![\w~])")                   # x_0, x_1


def typeset_scripts(markdown: str) -> str:
    """Plain-text powers and indices (10^4, p^L, x_0) as pandoc superscripts and subscripts, so
    that both the HTML and the typst PDF set them; code, raw blocks and identifiers
    (d_head, seeds_per_group) are left as they are."""
    parts = _CODE.split(markdown)
    return "".join(part if i % 2 else _INDEX.sub(r"\1~\2~", _POWER.sub(r"\1^\2^", part))
                   for i, part in enumerate(parts))


def _pandoc(markdown: str, to: str, out: Path, resource_dir: Path, title: str, extra: list[str]) -> None:
    args = ["--standalone", f"--resource-path={resource_dir}", "--metadata", f"title={title}", *extra]
    with atomic_path(out, out.suffix) as tmp:
        pypandoc.convert_text(typeset_scripts(markdown), to, format="markdown", outputfile=str(tmp), extra_args=args)


def html_page(markdown: str, out: Path, resource_dir: Path, title: str, toc: bool = True) -> None:
    _pandoc(markdown, "html5", out, resource_dir, title,
            ["--embed-resources", "--mathml", *(["--toc", "--toc-depth=2"] if toc else []), f"--css={CSS}"])


def pdf_document(markdown: str, out: Path, resource_dir: Path, title: str) -> None:
    typ = resource_dir / "report.typ"
    _pandoc(markdown, "typst", typ, resource_dir, title, [f"--include-in-header={TYPST_HEADER}"])
    with atomic_path(out, ".pdf") as tmp:
        typst.compile(str(typ), output=str(tmp), root=str(resource_dir))


def links_within_pdf(markdown: str, figures: dict[str, list[str]], pages: Iterable[str] = ()) -> str:
    """Links to a chapter page's figure (`](01_linear_map.html#fig-x)`, the scorecard's) as links
    to that figure inside the one PDF, which holds every chapter, and links to a whole page that
    the PDF holds (`](appendix.html)`) as links to its heading (`page_anchor`): the PDF then
    stands alone."""
    def to_figure(m: re.Match) -> str:
        return f"](#{m.group(2)})" if m.group(2) in figures.get(m.group(1), ()) else m.group(0)

    def to_page(m: re.Match) -> str:
        return f"](#{page_anchor(m.group(1))})" if m.group(1) in pages else m.group(0)

    markdown = re.sub(r"\]\(([\w-]+)\.html#([\w-]+)\)", to_figure, markdown)
    return re.sub(r"\]\(([\w-]+)\.html\)", to_page, markdown)


def page_anchor(stem: str) -> str:
    """The PDF's anchor of the page `stem` (a chapter, the appendix): its heading's identifier."""
    return f"page-{stem}"


def render_offline(chapters: list[Path], index_markdown: str, out_dir: Path, work_dir: Path, title: str,
                   appendix_markdown: str | None = None) -> dict:
    """The pandoc + typst route: index.html, a page per chapter, appendix.html (when given) and
    report.pdf (entry page, chapters, appendix). Returns {"html": [...], "pdf": path,
    "figures": {chapter: labels}}."""
    work_dir.mkdir(parents=True, exist_ok=True)
    chapter_md, figures = [], {}
    for nb in chapters:
        md, labels = notebook_to_markdown(nb, work_dir / f"{nb.stem}_files", f"{nb.stem}_files")
        heading = re.search(r"^#\s+(.+)$", md, flags=re.M)
        chapter_title = heading.group(1).strip() if heading else nb.stem
        body = re.sub(r"^#\s+.+$", "", md, count=1, flags=re.M) if heading else md
        chapter_md.append((nb.stem, chapter_title, body))
        figures[nb.stem] = labels
    toc = "\n".join(f"{i + 1}. [{t}]({stem}.html)" for i, (stem, t, _) in enumerate(chapter_md))
    # The PDF opens with the findings (the entry page's first section) and only then the
    # contents: the outline is placed by hand before the chapter list instead of pandoc's --toc.
    combined = index_markdown.replace("{{chapters}}", toc)  # its links become links within the PDF
    combined = combined.replace("## Chapters", "```{=typst}\n#pagebreak()\n#outline(depth: 2)\n```\n\n## Chapters", 1)
    pages = chapter_md + ([("appendix", "Appendix", appendix_markdown)] if appendix_markdown is not None else [])
    for stem, chapter_title, body in pages:
        combined += f"\n\n# {chapter_title} {{#{page_anchor(stem)}}}\n\n" + re.sub(r"^(#+)", r"#\1", body, flags=re.M)
    combined = links_within_pdf(combined, figures, [stem for stem, _, _ in pages])
    with atomic_dir(out_dir) as tmp_out:
        # no contents box on the entry page: its first screen is the scorecard
        html_page(index_markdown.replace("{{chapters}}", toc), tmp_out / "index.html", work_dir, title, toc=False)
        for stem, chapter_title, body in pages:
            html_page("[← report index](index.html)\n\n" + body, tmp_out / f"{stem}.html", work_dir, chapter_title)
        pdf_document(combined, tmp_out / "report.pdf", work_dir, title)
    return {"html": sorted(p.name for p in out_dir.glob("*.html")), "pdf": "report.pdf", "figures": figures,
            "renderer": "pandoc+typst"}


def render_quarto(report_dir: Path, build_dir: Path, index_markdown: str, out_dir: Path,
                  appendix_markdown: str | None = None) -> dict:
    """Quarto route: the executed notebooks plus index.qmd (and appendix.qmd) in one Quarto project."""
    chapters = sorted(p.name for p in build_dir.glob("*.ipynb"))
    (build_dir / "index.qmd").write_text(index_markdown.replace(
        "{{chapters}}", "\n".join(f"{i + 1}. [{c[:-6]}]({c[:-6]}.html)" for i, c in enumerate(chapters))))
    if appendix_markdown is not None:
        (build_dir / "appendix.qmd").write_text("# Appendix\n\n" + appendix_markdown)
        chapters.append("appendix.qmd")
    project = (report_dir / "_quarto.yml").read_text().replace("{{chapters}}", json.dumps(["index.qmd", *chapters]))
    (build_dir / "_quarto.yml").write_text(project)
    shutil.copy(CSS, build_dir / "report.css")
    with atomic_dir(out_dir) as tmp_out:
        subprocess.run(["quarto", "render", str(build_dir), "--output-dir", str(tmp_out.resolve()),
                        "--no-execute"], check=True)
    return {"html": sorted(p.name for p in out_dir.rglob("*.html")), "renderer": "quarto"}


def quarto_available() -> bool:
    return shutil.which("quarto") is not None

"""Stage report_render: executed notebooks -> report/_output/ (index.html, chapter pages, report.pdf).

Uses Quarto where it is installed, otherwise the offline pandoc + typst route.
"""
import datetime
import json
import os
from pathlib import Path

from emergence import render
from emergence.report_index import index_markdown
from emergence.stage import stage_run

REPORT = Path("report")
BUILD = REPORT / "_build"
OUTPUT = REPORT / "_output"
TITLE = "Emergent capabilities from sparse attention: a reproduction"

if __name__ == "__main__":
    # This stage's own timing lives in its output folder: data/timings is one of its deps.
    with stage_run("report_render", timing_path=OUTPUT / "timing.json") as params:
        use_quarto = render.quarto_available() and os.environ.get("EMERGENCE_RENDERER") != "pandoc"
        renderer = "quarto" if use_quarto else "pandoc + typst (offline)"
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        index = index_markdown(Path.cwd(), params["report"]["base_rev"], renderer, now)
        chapters = sorted(BUILD.glob("*.ipynb"))
        if use_quarto:
            info = render.render_quarto(REPORT, BUILD, index, OUTPUT)
        else:
            info = render.render_offline(chapters, index, OUTPUT, REPORT / "_build_md", TITLE)
        (OUTPUT / "manifest.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        print(f"report: {(OUTPUT / 'index.html').resolve()}")
        if (OUTPUT / "report.pdf").exists():
            print(f"report: {(OUTPUT / 'report.pdf').resolve()}")

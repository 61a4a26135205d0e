"""Stage report_render: executed notebooks -> the report (index.html, chapter pages, report.pdf).

    python -m stages.report_render BUILD_DIR OUTPUT_DIR

Uses Quarto where it is installed, otherwise the offline pandoc + typst route.
"""
import datetime
import json
import os
import sys
from pathlib import Path

from emergence.pipeline.stage import stage_run
from emergence.report import render
from emergence.report.report_index import appendix_markdown, index_markdown

REPORT = Path("report")
TITLE = "Emergent capabilities from sparse attention: a reproduction"

if __name__ == "__main__":
    build, output = map(Path, sys.argv[1:])
    with stage_run("report_render") as params:
        use_quarto = render.quarto_available() and os.environ.get("EMERGENCE_RENDERER") != "pandoc"
        renderer = "quarto" if use_quarto else "pandoc + typst (offline)"
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        index = index_markdown(Path.cwd(), params["report"]["base_rev"])
        appendix = appendix_markdown(Path.cwd(), renderer, now)
        if use_quarto:
            info = render.render_quarto(REPORT, build, index, output, appendix)
        else:
            info = render.render_offline(sorted(build.glob("*.ipynb")), index, output, REPORT / "_build_md", TITLE,
                                         appendix)
        (output / "manifest.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        print(f"report: {(output / 'index.html').resolve()}")
        if (output / "report.pdf").exists():
            print(f"report: {(output / 'report.pdf').resolve()}")

"""Stage report_notebooks: execute each report chapter with papermill (results in, figures out).

    python -m stages.report_notebooks CHAPTERS_DIR BUILD_DIR

Chapters are jupytext percent files (plain diffs); each is converted to a notebook and run
with its `parameters` cell filled from the stage's params. Chapters find their data through
emergence.reporting (dvc.yaml's `paths`). Chapters are independent, so they run side by side,
one process per core; executed notebooks go to BUILD_DIR atomically.
"""
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import jupytext
import papermill

from emergence.io import atomic_dir
from emergence.stage import stage_run


def chapter_parameters(params: dict) -> dict:
    report = params["report"]
    return {"attention_seeds": report["attention_seeds"], "max_figure_seeds": report["max_figure_seeds"]}


def execute_chapter(source: Path, out_dir: Path, parameters: dict) -> None:
    raw = out_dir / f"{source.stem}.raw.ipynb"
    jupytext.write(jupytext.read(source), raw)
    declared = papermill.inspect_notebook(str(raw))
    # The kernel's own log (a plain-TCP warning at start, an "ERROR | KeyboardInterrupt" at every
    # normal shutdown) read as failures in `dvc repro`'s output; a chapter that fails still
    # raises here with its traceback, and a dead kernel is still reported by papermill.
    papermill.execute_notebook(str(raw), str(out_dir / f"{source.stem}.ipynb"),
                               parameters={k: v for k, v in parameters.items() if k in declared},
                               kernel_name="python3", cwd=str(Path.cwd()), progress_bar=False, log_output=False,
                               extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    raw.unlink()


if __name__ == "__main__":
    chapters, build = map(Path, sys.argv[1:])
    with stage_run("report_notebooks") as params, atomic_dir(build) as tmp:
        sources = sorted(chapters.glob("*.py"))
        with ProcessPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
            for done in [pool.submit(execute_chapter, s, tmp, chapter_parameters(params)) for s in sources]:
                done.result()  # a failing chapter stops the stage with its error

"""Stage report_notebooks: execute each report chapter with papermill (results in, figures out).

    python -m stages.report_notebooks CHAPTERS_DIR BUILD_DIR

Chapters are jupytext percent files (plain diffs); each is converted to a notebook and run
with its `parameters` cell filled from the stage's params. Chapters find their data through
emergence.reporting (dvc.yaml's `paths`). Executed notebooks go to BUILD_DIR atomically.
"""
import sys
from pathlib import Path

import jupytext
import papermill

from emergence.io import atomic_dir
from emergence.stage import stage_run


def chapter_parameters(params: dict) -> dict:
    report = params["report"]
    return {"attention_seeds": report["attention_seeds"], "max_figure_seeds": report["max_figure_seeds"]}


if __name__ == "__main__":
    chapters, build = map(Path, sys.argv[1:])
    with stage_run("report_notebooks") as params, atomic_dir(build) as tmp:
        for source in sorted(chapters.glob("*.py")):
            raw = tmp / f"{source.stem}.raw.ipynb"
            jupytext.write(jupytext.read(source), raw)
            declared = papermill.inspect_notebook(str(raw))
            wanted = {k: v for k, v in chapter_parameters(params).items() if k in declared}
            papermill.execute_notebook(str(raw), str(tmp / f"{source.stem}.ipynb"),
                                       parameters=wanted, kernel_name="python3",
                                       cwd=str(Path.cwd()), progress_bar=False, log_output=False)
            raw.unlink()

"""Stage report_notebooks: execute each report chapter with papermill (results in, figures out).

Chapters live in report/chapters/ as jupytext percent files (plain diffs); each is converted
to a notebook and executed with the stage's report parameters injected into its
`parameters` cell. Executed notebooks go to report/_build/ atomically.
"""
import json
import shutil
from pathlib import Path

import jupytext
import papermill

from emergence.stage import stage_run

CHAPTERS = Path("report/chapters")
BUILD = Path("report/_build")


def chapter_parameters(params: dict) -> dict:
    report = params["report"]
    return {"attention_seeds": report["attention_seeds"], "max_figure_seeds": report["max_figure_seeds"],
            "lm_analysis": json.dumps(params["language_model"]["analysis"], sort_keys=True)}


if __name__ == "__main__":
    with stage_run("report_notebooks") as params:
        tmp = BUILD.with_name("_build.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for source in sorted(CHAPTERS.glob("*.py")):
            nb = jupytext.read(source)
            raw = tmp / f"{source.stem}.raw.ipynb"
            jupytext.write(nb, raw)
            declared = papermill.inspect_notebook(str(raw))
            wanted = {k: v for k, v in chapter_parameters(params).items() if k in declared}
            papermill.execute_notebook(str(raw), str(tmp / f"{source.stem}.ipynb"),
                                       parameters=wanted, kernel_name="python3",
                                       cwd=str(Path.cwd()), progress_bar=False, log_output=False)
            raw.unlink()
        shutil.rmtree(BUILD, ignore_errors=True)
        tmp.rename(BUILD)

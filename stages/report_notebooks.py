"""Stage report_notebooks: execute each report chapter with papermill (results in, figures out).

    python -m stages.report_notebooks CHAPTERS_DIR BUILD_DIR

Chapters are jupytext percent files (plain diffs); each is converted to a notebook and run
with its `parameters` cell filled from the stage's params. Chapters find their data through
emergence.report.reporting (dvc.yaml's `paths`). Chapters are independent, so they run side by side,
one process per core; executed notebooks go to BUILD_DIR atomically.
"""
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import jupytext
import nbformat
import papermill
from traitlets.config import Config

from emergence.common.io import atomic_dir
from emergence.pipeline.stage import stage_run


def chapter_parameters(params: dict) -> dict:
    report = params["report"]
    return {"attention_seeds": report["attention_seeds"], "max_figure_seeds": report["max_figure_seeds"]}


def kernel_config(socket_dir: Path) -> Config:
    """The chapter kernel's sockets as files in socket_dir, not TCP ports on localhost.

    jupyter_client picks a kernel's five TCP ports by binding port 0 and releasing it; until the
    kernel binds them, any process on the machine may take one (chapters start side by side, and
    every kernel client connects from ephemeral ports), and the kernel then dies with "Address
    already in use" before replying to kernel_info. Measured on 2 cores, 4 workers starting 25
    kernels each beside a process churning ephemeral ports: TCP failed 6 starts of 300 (3, 1, 2
    per 100; some as a 60 s hang rather than a death), IPC 0 of 300. Files in a fresh directory
    cannot collide."""
    config = Config()
    config.KernelManager.transport = "ipc"
    config.KernelManager.connection_file = str(socket_dir / "kernel.json")  # sockets: kernel-ipc-1..5 beside it
    return config


def socket_parent() -> str:
    """Where a kernel's socket directory goes: the system's temporary folder, or /tmp where that
    folder's path would make a socket's too long (a Unix socket's path holds 103 bytes on macOS,
    107 on Linux; the directory and socket names add 29)."""
    temporary = tempfile.gettempdir()
    return temporary if len(os.fsencode(temporary)) + len("/kernel-12345678/kernel-ipc-5") <= 103 else "/tmp"


RUN_TIMES = ("start_time", "end_time", "duration")  # papermill's, per notebook and per cell


def without_run_marks(notebook: nbformat.NotebookNode, source: Path) -> nbformat.NotebookNode:
    """The executed chapter without what differs between two executions of it on the same
    results: papermill's times, the kernel's message timestamps, nbformat's random cell ids
    (numbered instead) and the temporary paths it ran under (the chapter's source instead). Its
    bytes then change only where an output does, so the render after it reruns, and a comparison
    of two commits lists the executed report, only where the report did change."""
    run = notebook.metadata.get("papermill", {})
    for key in RUN_TIMES:
        run.pop(key, None)
    run.update(input_path=str(source), output_path=f"{source.stem}.ipynb")
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"
        cell.metadata.pop("execution", None)
        for key in RUN_TIMES:
            cell.metadata.get("papermill", {}).pop(key, None)
    return notebook


def execute_chapter(source: Path, out_dir: Path, parameters: dict) -> None:
    raw = out_dir / f"{source.stem}.raw.ipynb"
    jupytext.write(jupytext.read(source), raw)
    declared = papermill.inspect_notebook(str(raw))
    # The kernel's own log (an "ERROR | KeyboardInterrupt" at every normal shutdown) read as
    # failures in `dvc repro`'s output; a chapter that fails still raises here with its
    # traceback, and a dead kernel is still reported by papermill.
    executed = out_dir / f"{source.stem}.ipynb"
    with tempfile.TemporaryDirectory(prefix="kernel-", dir=socket_parent()) as socket_dir:
        papermill.execute_notebook(str(raw), str(executed),
                                   parameters={k: v for k, v in parameters.items() if k in declared},
                                   kernel_name="python3", cwd=str(Path.cwd()), progress_bar=False,
                                   log_output=False, extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
                                   config=kernel_config(Path(socket_dir)))
    nbformat.write(without_run_marks(nbformat.read(executed, as_version=4), source), executed)
    raw.unlink()


if __name__ == "__main__":
    chapters, build = map(Path, sys.argv[1:])
    with stage_run("report_notebooks") as params, atomic_dir(build) as tmp:
        sources = sorted(chapters.glob("*.py"))
        with ProcessPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
            for done in [pool.submit(execute_chapter, s, tmp, chapter_parameters(params)) for s in sources]:
                done.result()  # a failing chapter stops the stage with its error

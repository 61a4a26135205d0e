"""One smoke-profile build of the whole pipeline per test run, shared by the pipeline tests.

The build (a temporary copy of the repository, `dvc repro` on the smoke profile: minutes) runs
once per test run, in a process of its own: the first test that needs it claims the run's build
folder and starts it, and every pipeline test, on any pytest-xdist worker, waits for it. Tests
that only read the report read the build itself; tests that edit params, rerun stages or commit
work on a copy of their own, so they run on any worker in any order (tests/conftest.py puts
them last, where the workers share them).

    python tests/smoke_build.py FOLDER   # what the background process runs
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 3600
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//|url\(\s*["']?(?:https?:)?//""", re.I)
STALE = ("dvc.lock", "data/linear_map/metrics.json", "data/linear_map/plots")


def sh(args, cwd, check=True):
    """Run a command of the pipeline tests. Its torch runs one thread: the smoke build and the
    reruns share the cores with the pytest-xdist workers, where a two-thread step waits for its
    thread that another process holds up (measured on 2 cores: the build's stages took 238 s
    beside the unit tests against 113 s on one thread; the smoke cells gain nothing from a
    second thread, and in float32 the bytes do not depend on it)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               DVC_NO_ANALYTICS="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise AssertionError(f"{args} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


_BUILD: subprocess.Popen | None = None  # the build, where this process started it


def run_folder(basetemp: Path) -> Path:
    """The folder shared by every process of one test run: the controller's basetemp under
    pytest-xdist (a worker's is a subfolder of it), the run's own otherwise."""
    return (basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp) / "smoke-build"


def start(folder: Path) -> bool:
    """Start the build unless another process of this run has; True if this call started it."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(folder / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    global _BUILD
    with open(folder / "build.log", "wb") as log:
        _BUILD = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), str(folder)], cwd=REPO_ROOT,
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
    return True


def stop() -> None:
    """End the build this process started if it is still running (a test run interrupted): it
    runs in a session of its own, so nothing else would."""
    if _BUILD is not None and _BUILD.poll() is None:
        os.killpg(_BUILD.pid, signal.SIGTERM)
        _BUILD.wait()


def running(folder: Path) -> bool:
    return (folder / "claimed").is_file() and not (folder / "rc").is_file()


_LOWERED = False


def lower_priority() -> None:
    """This process, and the processes it starts from now on, at a lower CPU priority (once)."""
    global _LOWERED
    if not _LOWERED:
        os.nice(10)
        _LOWERED = True


def build(folder: Path) -> None:
    """Copy the working tree (tracked and untracked files git does not ignore) without the
    committed results, commit it, select the smoke profile and run the pipeline as `make report`
    does (the cells of every stage in one pool, then `dvc repro`); the exit status
    goes to folder/rc last, so a reader never sees a half-built repository."""
    root = folder / "repo"
    status = 1
    try:
        files = sh(["git", "ls-files", "-co", "--exclude-standard"], REPO_ROOT).stdout.split()
        for rel in files:
            src = REPO_ROOT / rel
            if src.is_file():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, root / rel)
        for stale in STALE:
            if (root / stale).is_file():
                (root / stale).unlink()
            elif (root / stale).is_dir():
                shutil.rmtree(root / stale)
        sh(["git", "init", "-q"], root)
        sh(["git", "add", "-A"], root)
        sh(["git", "commit", "-qm", "copy"], root)
        sh([sys.executable, "-m", "emergence.pipeline.config", "set-profile", "smoke"], root)
        sh([sys.executable, "-m", "emergence.pipeline.prebuild"], root)  # as `make report` runs it
        print(sh(["dvc", "repro"], root).stdout, flush=True)
        status = 0
    finally:
        (folder / "rc.tmp").write_text(str(status))
        (folder / "rc.tmp").replace(folder / "rc")


def wait(folder: Path, timeout_s: float = BUILD_TIMEOUT_S) -> Path:
    """The built repository, once the background build has finished; its log if it failed."""
    start(folder)
    deadline = time.monotonic() + timeout_s
    while not (folder / "rc").is_file():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the smoke build did not finish in {timeout_s:.0f} s; log: {folder / 'build.log'}")
        time.sleep(1.0)
    if (folder / "rc").read_text() != "0":
        raise AssertionError(f"the smoke build failed:\n{(folder / 'build.log').read_text()[-6000:]}")
    return folder / "repo"


def copy_of(built: Path, dest: Path) -> Path:
    """A copy to edit and rerun, DVC cache included, with the build's results committed
    ("results": the smoke profile line, dvc.lock, the effective params, metrics). Without
    .dvc/tmp, whose read-write lock may name a live process of the build's readers."""
    shutil.copytree(built, dest, symlinks=True,
                    ignore=lambda d, names: ["tmp"] if Path(d).name == ".dvc" else [])
    sh(["git", "add", "-A"], dest)
    sh(["git", "commit", "-qm", "results"], dest)
    return dest


def edit(path: Path, old: str, new: str) -> str:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
    return text


def changed(root: Path) -> set[str]:
    """Stages `dvc status` says would rerun."""
    return set(json.loads(sh(["dvc", "status", "--json"], root).stdout or "{}"))


def restore_params(root: Path, text: str, written: bytes) -> None:
    """Put params.yaml back, and the effective params validation had written from it (what the
    lock has), without a validation run."""
    (root / "params.yaml").write_text(text)
    (root / "data" / "params.json").write_bytes(written)


if __name__ == "__main__":
    build(Path(sys.argv[1]))

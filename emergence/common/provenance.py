"""Where a result came from: code version, git state, packages, hardware."""
from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import torch

from emergence.common.params import REPO_ROOT
import emergence

REPORTED_PACKAGES = ("torch", "numpy", "xarray", "netCDF4", "pandas", "scipy", "matplotlib", "seaborn",
                     "dvc", "papermill", "nbconvert", "jupytext", "pypandoc_binary", "typst")


def code_version() -> str:
    """Package version plus a hash of the library's source files (stable across commits
    that do not touch the code, unlike a commit hash)."""
    h = hashlib.sha256()
    pkg = Path(emergence.__file__).parent
    for path in sorted(pkg.rglob("*.py")):
        h.update(str(path.relative_to(pkg)).encode())
        h.update(path.read_bytes())
    return f"{emergence.__version__}+src.{h.hexdigest()[:12]}"


def _git(*args: str, root: Path = REPO_ROOT) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(root: Path = REPO_ROOT) -> dict:
    commit = _git("rev-parse", "HEAD", root=root)
    # Pipeline outputs (dvc.lock, metrics committed to git) change on every run; only
    # source changes make the tree dirty in the sense that matters here.
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!dvc.lock", ":!data", root=root)
    return {
        "commit": commit or "unknown (not a git checkout)",
        "short": (commit or "unknown")[:10],
        "dirty": bool(status) if status is not None else None,
        "dirty_files": status.splitlines() if status else [],
        "branch": _git("rev-parse", "--abbrev-ref", "HEAD", root=root),
    }


def git_show(rev: str, path: str, root: Path = REPO_ROOT) -> str | None:
    return _git("show", f"{rev}:{path}", root=root)


def commit_label(rev: str, root: Path = REPO_ROOT, width: int = 90) -> str | None:
    """`rev` resolved now: its short hash, date and subject (cut at `width`); None if no commit."""
    label = _git("log", "-1", "--date=short", "--format=%h (%ad): %s", rev, "--", root=root)
    return label if label is None or len(label) <= width else label[:width - 1].rstrip() + "…"


def package_versions() -> dict[str, str]:
    out = {}
    for name in REPORTED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo's, else the platform's): float32 results are the same
    bytes within a CPU family and differ across families, so each result says where it ran."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def hardware() -> dict:
    info = {"machine": platform.machine(), "processor": cpu_model(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "torch_threads": torch.get_num_threads(), "cuda": torch.cuda.is_available()}
    try:
        mem = Path("/proc/meminfo").read_text().split()
        info["memory_gib"] = round(int(mem[1]) / 2**20, 1)
    except OSError:
        pass
    if info["cuda"]:
        info["gpu"] = torch.cuda.get_device_name(0)
    return info

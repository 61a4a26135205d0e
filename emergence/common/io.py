"""Atomic, byte-stable writes of results (NetCDF, JSON, whole folders) and their reads. No torch:
the analysis and the report import this, and torch files live in emergence/common/torch_files.py."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import xarray as xr


@contextmanager
def atomic_path(path: Path | str, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it over `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextmanager
def atomic_dir(path: Path | str) -> Iterator[Path]:
    """Yield an empty temporary folder beside `path`; it replaces `path` only if the block
    succeeds, so a reader never sees a half-written folder (a kill leaves the old one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        old = path.with_name(f".{path.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if path.exists():
            path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def file_digest(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def config_hash(obj: Any) -> str:
    """Stable short hash of a JSON-able config (keys of the cell cache and the resume scratch)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def write_json(obj: Any, path: Path | str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def write_netcdf(ds: xr.Dataset, path: Path | str) -> None:
    """NetCDF4 via the netCDF4 engine (byte-stable for identical data; no timestamps)."""
    ds = ds.copy()
    ds.attrs = {k: _attr(v) for k, v in ds.attrs.items()}
    for name in ds.variables:
        ds[name].attrs = {k: _attr(v) for k, v in ds[name].attrs.items()}
    encoding = {name: {"zlib": True, "complevel": 4, "shuffle": True}
                for name, var in ds.data_vars.items() if var.dtype.kind in "fiub" and var.size > 64}
    with atomic_path(path, ".nc") as tmp:
        ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=encoding)


def _attr(v: Any) -> Any:
    if isinstance(v, (dict, list, tuple)) and not (isinstance(v, (list, tuple)) and all(isinstance(i, (int, float)) for i in v)):
        return json.dumps(v, sort_keys=True)
    if isinstance(v, bool):
        return int(v)
    return v


def read_netcdf(path: Path | str) -> xr.Dataset:
    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()

"""Numeric precision of the training pass: float32, or bfloat16 autocast where the hardware
runs it fast.

Under `bf16-autocast` the weights, the optimiser state, the loss and every evaluation stay in
float32; only the training forward's matmuls run in bfloat16 (torch.autocast). Everything the
claims are read from (evaluation metrics, attention statistics, patching) is computed outside
autocast, in float32. Where the device has no fast bfloat16 path (a CPU without AMX or
AVX512-BF16, a GPU below compute capability 8.0) training falls back to float32 with a message,
and the precision actually used joins the cell's cache key and its results' attributes.
"""
from __future__ import annotations

import contextlib
import functools
import warnings
from pathlib import Path
from typing import Literal

import torch

PRECISIONS = ("float32", "bf16-autocast")
Precision = Literal["float32", "bf16-autocast"]
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


@functools.lru_cache(maxsize=None)
def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def bf16_support(device: torch.device) -> tuple[bool, str]:
    """(fast bfloat16 matmuls on `device`?, why)."""
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        ok = major >= 8
        return ok, f"CUDA compute capability {major}.{minor} ({'>=' if ok else '<'} 8.0 for bfloat16 tensor cores)"
    found = sorted(set(CPU_BF16_FLAGS) & cpu_flags())
    if found:
        return True, f"CPU flags {', '.join(found)}"
    return False, f"the CPU has none of {', '.join(CPU_BF16_FLAGS)}"


def resolve(precision: str, device: torch.device) -> str:
    """The precision training will use: `precision`, or float32 where bfloat16 is not fast here."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision: expected one of {PRECISIONS}, got {precision!r}")
    if precision == "float32":
        return precision
    ok, why = bf16_support(device)
    if not ok:
        warnings.warn(f"train.precision: bf16-autocast asked for, but {why}; training in float32", stacklevel=2)
        return "float32"
    return precision


def training_autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    """The context the training forward runs in (a no-op for float32)."""
    if precision == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def float32_core(fn):
    """Run `fn` in float32 with autocast off, its tensor arguments cast up: for the recurrent
    mixers' scans, whose products of exponentiated cumulative decays and triangular solves
    lose too much in bfloat16 (and CPU has no bfloat16 triangular solve)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not (torch.is_autocast_enabled("cpu") or torch.is_autocast_enabled("cuda")):
            return fn(*args, **kwargs)
        up = lambda x: x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x  # noqa: E731
        with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
            return fn(*(up(a) for a in args), **{k: up(v) for k, v in kwargs.items()})
    return wrapper

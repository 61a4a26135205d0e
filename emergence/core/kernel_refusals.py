"""Where a mixer's library kernel is known to refuse to run on this device, found before any
compute (`model.kernels = cuda`; the kernels themselves: emergence/core/mixer_kernels.py).

Seen on an NVIDIA H200 with torch 2.11 (Triton 3.6.0) and flash-linear-attention 0.6.0: Gated
DeltaNet's forward runs, and its backward raises at the first training step, because fla knows
that Triton 3.4.0 up to (not including) 3.7.1 computes the gated `chunk_bwd_dqkwg` wrongly on
Hopper GPUs (fla issue #640) and refuses to use it unless its tilelang backend is installed. A
sweep would have trained its other cells first and stopped there; this check stops it at the
start, naming the way out. The rule is fla's own (fla/ops/common/chunk_o.py), so it applies
only where fla reports the same conditions.
"""
from __future__ import annotations

import importlib.util
import re

# (Triton releases from, to (excluded)): fla 0.6.0's range for the gated backward on Hopper.
HOPPER_GATED_BACKWARD_BROKEN = ((3, 4, 0), (3, 7, 1))


def release(version: str) -> tuple[int, ...]:
    """'3.6.0' -> (3, 6, 0); a local or pre-release suffix ('3.7.1+git4a2f') is dropped."""
    match = re.match(r"\d+(\.\d+)*", version)
    if not match:
        raise ValueError(f"not a release version: {version!r}")
    return tuple(int(part) for part in match.group(0).split("."))


def _dotted(parts: tuple[int, ...]) -> str:
    return ".".join(map(str, parts))


def is_hopper(device_name: str, capability: tuple[int, int]) -> bool:
    """fla's test for a Hopper GPU (fla/utils/hardware.py)."""
    return "NVIDIA H" in device_name or capability[0] == 9


def gated_backward_refused(device_name: str, capability: tuple[int, int], triton_version: str,
                           tilelang_installed: bool) -> bool:
    """Whether fla refuses Gated DeltaNet's backward on this GPU and Triton."""
    low, high = HOPPER_GATED_BACKWARD_BROKEN
    return (is_hopper(device_name, capability) and low <= release(triton_version) < high
            and not tilelang_installed)


def refusal(mixer: str) -> str | None:
    """Why `mixer`'s library kernel will refuse to train on the current CUDA device, or None."""
    if mixer != "gated_deltanet":
        return None
    import torch
    import triton

    name, capability = torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0)
    if not gated_backward_refused(name, capability, triton.__version__,
                                  importlib.util.find_spec("tilelang") is not None):
        return None
    low, high = HOPPER_GATED_BACKWARD_BROKEN
    return (f"flash-linear-attention refuses Gated DeltaNet's backward on {name} with Triton "
            f"{triton.__version__} (Triton >= {_dotted(low)} and < {_dotted(high)} computes it wrongly on Hopper "
            f"GPUs: fla issue #640); upgrade Triton to >= {_dotted(high)}, install tilelang, or set kernels: reference")

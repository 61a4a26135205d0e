"""Published CUDA kernels for the mixers' cores, behind `model.kernels` (reference | cuda).

With `kernels: cuda` a mixer's training path (no pattern hook) runs its core through the
library kernel instead of this package's reference form in emergence/core/mixers.py:

    mamba2          mamba-ssm        mamba_chunk_scan_combined   (SSD chunk scan, float32)
    gated_deltanet  fla (flash-linear-attention)  chunk_gated_delta_rule  (float32 inputs: fla
                    0.6 accepts them; releases before it refused float32 for this kernel)
    rwkv7           fla              chunk_dplr_delta_rule       (RWKV-7's DPLR chunk kernel,
                    called directly: chunk_rwkv7's signature has changed between fla releases)

A pattern hook (the effective mixing matrix, used by the analysis) always takes the reference
path, and the MLP-Mixer has no kernel to swap (its core is one matmul).

The adapters fold the seed axis into the batch and map this package's parameterisation onto
each library's. Each takes the kernel as an argument, so tests check the mapping on a CPU
against plain implementations of the libraries' documented recurrences
(tests/test_mixer_kernels.py), and compare the real kernels with the reference where CUDA and
the libraries are present. Install the libraries with `make cuda-kernels`.
"""
from __future__ import annotations

import importlib
from typing import Callable

import torch

KERNELS = ("reference", "cuda")
SSD_CHUNK = 64  # mamba-ssm's chunk length (a power of two; sequences here are 16-256 tokens)

# (mixer, module, function): the library function each mixer's core runs with kernels = cuda.
LIBRARY_KERNELS = {
    "mamba2": ("mamba_ssm.ops.triton.ssd_combined", "mamba_chunk_scan_combined"),
    "gated_deltanet": ("fla.ops.gated_delta_rule", "chunk_gated_delta_rule"),
    "rwkv7": ("fla.ops.generalized_delta_rule", "chunk_dplr_delta_rule"),
}


def library_kernel(mixer: str) -> Callable:
    """The library function behind `mixer`'s cuda kernel; ImportError naming the package if absent."""
    module, name = LIBRARY_KERNELS[mixer]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as err:
        package = "mamba-ssm" if module.startswith("mamba_ssm") else "flash-linear-attention"
        raise ImportError(f"model.kernels = cuda for {mixer} needs {package} ({module}.{name}); "
                          f"install it with `make cuda-kernels` or set kernels: reference") from err


def check_available(mixers: set[str], device: str) -> None:
    """Fail before any compute when kernels = cuda cannot run: no CUDA device, or a library absent."""
    if device != "cuda":
        raise ValueError(f"model.kernels = cuda needs a CUDA device (training device here: {device}); "
                         "set kernels: reference")
    for mixer in sorted(mixers & set(LIBRARY_KERNELS)):
        library_kernel(mixer)


def _fold(x: torch.Tensor) -> torch.Tensor:
    """[E, B, H, T, ...] -> [E*B, T, H, ...] (the libraries' batch, time, head layout)."""
    E, B, H, T = x.shape[:4]
    return x.transpose(2, 3).reshape(E * B, T, H, *x.shape[4:]).contiguous()


def _unfold(y: torch.Tensor, E: int) -> torch.Tensor:
    """[E*B, T, H, d] -> [E, B, H, T, d]."""
    EB, T, H, d = y.shape
    return y.view(E, EB // E, T, H, d).transpose(2, 3)


def mamba2_scan(xs: torch.Tensor, dt: torch.Tensor, A_log: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor,
                kernel: Callable) -> torch.Tensor:
    """Mamba-2's SSD term M @ xs (without the D skip): xs [E, B, H, T, P], dt [E, B, H, T] (after
    softplus), A_log [E, H], Bm and Cm [E, B, T, N] -> [E, B, H, T, P].
    mamba-ssm takes one A per head for the whole batch, but every seed has its own. With
    a = exp(A_log): A = -1, dt' = a dt and x' = x / a give exp(dt' A) = exp(-a dt) and
    dt' x' = dt x, so the scan is the seed's own."""
    E = xs.shape[0]
    rate = torch.exp(A_log)[:, None, :, None]                                  # [E, 1, H, 1]
    x = _fold(xs / rate.unsqueeze(-1))
    step = _fold((dt * rate).unsqueeze(-1)).squeeze(-1)                         # [E*B, T, H]
    A = -torch.ones(xs.shape[2], dtype=torch.float32, device=xs.device)
    group = lambda m: m.reshape(-1, *m.shape[2:]).unsqueeze(2).contiguous()     # [E*B, T, 1, N]
    y = kernel(x, step, A, group(Bm), group(Cm), chunk_size=SSD_CHUNK)
    return _unfold(y, E)


def gated_delta_rule(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                     log_decay: torch.Tensor, kernel: Callable, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Gated DeltaNet's output: q (normalised and already scaled), k (normalised), v
    [E, B, H, T, d]; beta and log_decay [E, B, H, T] -> [E, B, H, T, dv] in q's dtype. fla's
    chunk kernel computes S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T, o_t = scale S_t q_t;
    q is scaled here, so scale = 1. `dtype` (default: q's) is what q, k, v and beta enter the
    kernel as (bfloat16 for fla releases before 0.6); the log decays stay float32."""
    E = q.shape[0]
    low = lambda t: _fold(t).to(dtype or q.dtype)
    o, _ = kernel(low(q), low(k), low(v), _fold(log_decay.unsqueeze(-1)).squeeze(-1).float(),
                  _fold(beta.unsqueeze(-1)).squeeze(-1).to(dtype or q.dtype), scale=1.0)
    return _unfold(o, E).to(q.dtype)


def rwkv7_scan(r: torch.Tensor, log_decay: torch.Tensor, k: torch.Tensor, v: torch.Tensor, a: torch.Tensor,
               kk: torch.Tensor, kernel: Callable) -> torch.Tensor:
    """RWKV-7's state term (RWKV7.chunked's output), all [E, B, H, T, d] -> [E, B, H, T, dv].
    fla's DPLR rule is S_t = S_{t-1} (diag(exp(gk_t)) + alpha_t beta_t^T) + v_t k_t^T with
    o_t = scale S_t q_t; RWKV-7's transition diag(w_t) - kk_t (a_t kk_t)^T is alpha = -kk,
    beta = a kk, gk = log w."""
    E = r.shape[0]
    o, _ = kernel(q=_fold(r), k=_fold(k), v=_fold(v), a=_fold(-kk), b=_fold(a * kk), gk=_fold(log_decay),
                  scale=1.0, initial_state=None, output_final_state=False)
    return _unfold(o, E)

"""Layers with a leading seed axis: E independent copies of a layer in one module.

Shared by the transformer (emergence/core/model.py) and the other sequence mixers
(emergence/core/mixers.py); inputs are [E, N, d] and every parameter is [E, ...].
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SeedLinear(nn.Module):
    """E independent affine maps: x [E, N, d_in] -> [E, N, d_out]."""

    def __init__(self, n_seeds: int, d_in: int, d_out: int, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_seeds, d_in, d_out))
        self.bias = nn.Parameter(torch.zeros(n_seeds, d_out)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bias is None:
            return torch.bmm(x, self.weight)
        return torch.baddbmm(self.bias.unsqueeze(1), x, self.weight)


class SeedLayerNorm(nn.Module):
    def __init__(self, n_seeds: int, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n_seeds, d))
        self.bias = nn.Parameter(torch.zeros(n_seeds, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x [E, N, d]
        x = F.layer_norm(x, x.shape[-1:])
        return torch.addcmul(self.bias.unsqueeze(1), x, self.weight.unsqueeze(1))

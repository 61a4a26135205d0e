"""The baseline `make bench` measures against: the same transformer trained the way the
published reproduction and most research code train it, one seed at a time.

One `nn.Module` (nn.Embedding, nn.Linear, nn.LayerNorm, F.scaled_dot_product_attention), the
stock AdamW, no seed axis, no compile, float32: a nanoGPT-style block with the shapes of a
`ModelConfig`. It is written here so the ratio to it is measured in the same process layout,
never quoted from elsewhere.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from emergence.core.model import ModelConfig


class PlainBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.ln_1, self.ln_2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.fc, self.out = nn.Linear(cfg.d_model, cfg.d_mlp), nn.Linear(cfg.d_mlp, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).view(B, T, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, d)
        x = x + self.proj(z)
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


class PlainTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.wte, self.wpe = nn.Embedding(cfg.vocab_size, cfg.d_model), nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(PlainBlock(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def plain_step(model: PlainTransformer, opt: torch.optim.Optimizer, tokens: torch.Tensor,
               weights: torch.Tensor, grad_clip: float) -> float:
    """One AdamW step on next-token cross-entropy weighted by position (tokens [B, T])."""
    logits = model(tokens)[:, :-1]
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1), reduction="none")
    loss = (nll.view(tokens.shape[0], -1) * weights).sum() / (weights.sum() * tokens.shape[0])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()
    return loss.item()

"""A GPT-style transformer whose every parameter carries a leading seed axis.

One module holds E independent models (one per seed); activations are [E, B, T, d] and each
linear layer is a batched matmul, so one process trains many seeds at the speed of a
wider model. Seed k's initial weights depend only on k, so seed k trains the same alone or
in a batch of seeds.

Hook points (TransformerLens names) let callers read or rewrite activations through one
mechanism, `hooks={name: fn}` where fn(tensor, name) returns a replacement or None:

    blocks.{l}.attn.hook_scores   [E, B, H, T, T] pre-softmax scores, before the causal mask
    blocks.{l}.attn.hook_pattern  [E, B, H, T, T] attention probabilities
    blocks.{l}.attn.hook_z        [E, B, T, H, d_head] per-head outputs before the projection
    blocks.{l}.hook_resid_pre / hook_resid_mid / hook_resid_post   [E, B, T, d_model]

An attention bias is a hook on hook_scores, a pattern override a hook on hook_pattern,
recording a hook that stores (see emergence/core/hooks.py). Without hooks on a layer's scores or
pattern the layer uses fused scaled-dot-product attention (but under bfloat16 autocast on a
CPU, where the explicit product is faster); a scores hook that only adds a bias shared across
seeds and sequences (it carries `additive_bias`) keeps the fused path, the bias passed as the
kernel's additive mask.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Literal, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from emergence.common.schema import ConfigError, number, unset
from emergence.core.hooks import Hook
from emergence.core.hooks import apply_hook as _apply
from emergence.core.layers import SeedLayerNorm, SeedLinear
from emergence.core.mixer_kernels import KERNELS
from emergence.core.mixers import MIXER_CLASSES, MIXERS


@dataclass(frozen=True, kw_only=True)
class ModelArgs:
    """A task section's `model` parameters (the vocabulary and length come from the task). The
    mixer fields are absent from params.yaml (the transformer); the mixer comparison sets them."""
    n_layer: int = number(1, 64)                   # blocks
    d_model: int = number(1, 8192)                 # residual width
    n_head: int = number(1, 1024)                  # attention heads (d_head = d_model / n_head)
    d_mlp: int = number(0, 65536)                  # hidden width of each block's MLP (0: no MLP)
    norm: Literal["pre", "none"] = "pre"           # pre-LN, or no normalisation
    positional: Literal["learned"] = "learned"     # learned absolute position embeddings
    mixer: Literal[MIXERS] | None = unset()        # the token-mixing slot (None: attention)
    d_state: int | None = number(1, 4096, default=None, absent_when_none=True)     # mamba2: state size per head
    expand: int | None = number(1, 64, default=None, absent_when_none=True)        # mamba2: d_inner / d_model
    conv_kernel: int | None = number(1, 64, default=None, absent_when_none=True)   # short causal convolution width
    kernels: Literal[KERNELS] | None = unset()     # mixers' cores: this package's reference or the CUDA libraries

    def config(self, vocab_size: int, seq_len: int) -> "ModelConfig":
        """The model these parameters describe, for a task of this vocabulary and length."""
        mixer = {k: getattr(self, k) for k in MIXER_KEYS if getattr(self, k) is not None}
        return ModelConfig(vocab_size=vocab_size, seq_len=seq_len, n_layer=self.n_layer, d_model=self.d_model,
                           n_head=self.n_head, d_mlp=self.d_mlp, norm=self.norm, **mixer)

    def check(self, key: str) -> None:
        if self.d_model % self.n_head:
            raise ConfigError(f"{key}.n_head: must divide {key}.d_model ({self.d_model}), got {self.n_head}")


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    seq_len: int
    n_layer: int = 1
    d_model: int = 128
    n_head: int = 8
    d_mlp: int = 512
    norm: str = "pre"  # "pre" (pre-LN) or "none"
    mixer: str = "attention"  # the token-mixing slot: attention or one of emergence.core.mixers.MIXERS
    d_state: int = 16         # mamba2: state size N per head
    expand: int = 1           # mamba2: d_inner = expand * d_model
    conv_kernel: int = 4      # mamba2 / gated_deltanet: width of the short causal convolution
    kernels: str = "reference"  # mixers' cores: "reference" (this package) or "cuda" (emergence.core.mixer_kernels)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


# ModelArgs fields that choose and shape a non-attention mixer (None: the transformer).
MIXER_KEYS = ("mixer", "d_state", "expand", "conv_kernel", "kernels")


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig, n_seeds: int, layer: int):
        super().__init__()
        self.cfg, self.layer = cfg, layer
        self.qkv = SeedLinear(n_seeds, cfg.d_model, 3 * cfg.d_model)
        self.proj = SeedLinear(n_seeds, cfg.d_model, cfg.d_model)
        self.register_buffer("causal", torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x: torch.Tensor, batch: int, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        cfg = self.cfg
        E, N, _ = x.shape
        T, H, dh = N // batch, cfg.n_head, cfg.d_head
        qkv = self.qkv(x).view(E, batch, T, 3, H, dh)
        prefix = f"blocks.{self.layer}.attn."
        scores_hook = hooks.get(prefix + "hook_scores") if hooks else None
        additive = getattr(scores_hook, "additive_bias", None)
        # PyTorch's CPU flash attention is slow at these head sizes, worst in bfloat16: forward
        # and backward at the paper's shapes (256 sequences, 8 heads, T = 32, d_head = 16; one
        # AMD EPYC, 2 threads) take 78 ms in bfloat16 and 21 ms in float32, the explicit
        # product and softmax in bfloat16 8 ms. So CPU autocast takes the explicit path, its
        # softmax in float32. In float32 the fused kernel stays: it wins from ~8 seeds a batch.
        low_precision = torch.is_autocast_enabled("cpu") and x.device.type == "cpu"
        if (scores_hook is not None and additive is None) or (hooks and prefix + "hook_pattern" in hooks) \
                or low_precision:
            q, k, v = qkv.permute(3, 0, 1, 4, 2, 5).unbind(0)  # [E, B, H, T, dh]
            scores = (q * (1.0 / math.sqrt(dh))) @ k.transpose(-1, -2)
            future = ~self.causal[:T, :T]
            if scores_hook is None:
                scores = scores.masked_fill_(future, float("-inf"))  # nobody else holds these scores
            else:
                scores = _apply(hooks, prefix + "hook_scores", scores).masked_fill(future, float("-inf"))
            pattern = _apply(hooks, prefix + "hook_pattern", scores.float().softmax(dim=-1))
            z = pattern @ v
        else:
            # Strided views straight out of the fused projection: no copies before the kernel.
            q, k, v = qkv.view(E * batch, T, 3, H, dh).permute(2, 0, 3, 1, 4).unbind(0)  # [E*B, H, T, dh]
            mask = None if additive is None else additive(T, H, x).masked_fill(~self.causal[:T, :T], float("-inf"))
            z = _attend(q, k, v, mask)
            z = z.view(E, batch, H, T, dh)
        z = _apply(hooks, prefix + "hook_z", z.transpose(2, 3))  # [E, B, T, H, dh]
        return self.proj(z.reshape(E, N, cfg.d_model))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig, n_seeds: int):
        super().__init__()
        self.fc = SeedLinear(n_seeds, cfg.d_model, cfg.d_mlp)
        self.proj = SeedLinear(n_seeds, cfg.d_mlp, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, n_seeds: int, layer: int):
        super().__init__()
        self.layer = layer
        norm = (lambda: SeedLayerNorm(n_seeds, cfg.d_model)) if cfg.norm == "pre" else nn.Identity
        self.ln_1, self.ln_2 = norm(), norm()
        self.attn = (CausalSelfAttention(cfg, n_seeds, layer) if cfg.mixer == "attention"
                     else MIXER_CLASSES[cfg.mixer](cfg, n_seeds, layer))
        self.mlp = MLP(cfg, n_seeds) if cfg.d_mlp > 0 else None

    def forward(self, x: torch.Tensor, batch: int, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        name = f"blocks.{self.layer}."
        x = _apply(hooks, name + "hook_resid_pre", x)
        x = x + self.attn(self.ln_1(x), batch, hooks)
        x = _apply(hooks, name + "hook_resid_mid", x)
        if self.mlp is not None:
            x = x + self.mlp(self.ln_2(x))
        return _apply(hooks, name + "hook_resid_post", x)


class SeedTransformer(nn.Module):
    """E independent transformers; forward(tokens [E, B, T]) -> logits [E, B, T, vocab]."""

    def __init__(self, cfg: ModelConfig, seeds: list[int] | tuple[int, ...]):
        super().__init__()
        self.cfg, self.seeds = cfg, tuple(int(s) for s in seeds)
        E = len(self.seeds)
        self.wte = nn.Parameter(torch.empty(E, cfg.vocab_size, cfg.d_model))
        self.wpe = nn.Parameter(torch.empty(E, cfg.seq_len, cfg.d_model))
        self.blocks = nn.ModuleList(Block(cfg, E, layer) for layer in range(cfg.n_layer))
        self.ln_f = SeedLayerNorm(E, cfg.d_model) if cfg.norm == "pre" else nn.Identity()
        self.head = SeedLinear(E, cfg.d_model, cfg.vocab_size, bias=False)
        self.reset_parameters()

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    def hook_names(self) -> list[str]:
        names = []
        for layer in range(self.cfg.n_layer):
            scores = [f"blocks.{layer}.attn.hook_scores"] if self.cfg.mixer == "attention" else []
            names += [f"blocks.{layer}.hook_resid_pre", *scores,
                      f"blocks.{layer}.attn.hook_pattern", f"blocks.{layer}.attn.hook_z",
                      f"blocks.{layer}.hook_resid_mid", f"blocks.{layer}.hook_resid_post"]
        return names

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """nanoGPT init, drawn per seed from a generator seeded by that seed alone."""
        residual_std = 0.02 / math.sqrt(2 * self.cfg.n_layer)
        for k, seed in enumerate(self.seeds):
            gen = torch.Generator().manual_seed(seed)
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    p[k].zero_()
                elif ".ln_" in name or name.startswith("ln_"):
                    p[k].fill_(1.0)
                else:
                    std = residual_std if name.endswith("proj.weight") else 0.02
                    p[k].copy_(torch.randn(p.shape[1:], generator=gen) * std)
            for module in self.modules():  # mixers set their gates, decays and convolutions
                if hasattr(module, "reset_seed_"):
                    module.reset_seed_(k, gen)

    def forward(self, tokens: torch.Tensor, hooks: Mapping[str, Hook] | None = None) -> torch.Tensor:
        E, B, T = tokens.shape
        if E != self.n_seeds:
            raise ValueError(f"tokens carry {E} seeds, model has {self.n_seeds}")
        # A one-hot matmul instead of an embedding gather: the vocabulary is tiny and the
        # gather's backward (a scatter) is slow on CPU.
        onehot = F.one_hot(tokens.reshape(E, B * T), self.cfg.vocab_size).to(self.wte.dtype)
        x = torch.bmm(onehot, self.wte).view(E, B, T, -1) + self.wpe[:, None, :T]
        x = x.view(E, B * T, -1)
        for block in self.blocks:
            x = block(x, B, hooks)
        return self.head(self.ln_f(x)).view(E, B, T, -1)

    def run_with_cache(self, tokens: torch.Tensor, names: list[str] | None = None,
                       hooks: Mapping[str, Hook] | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Forward pass that also returns the activations at `names` (default: every pattern)."""
        if names is None:
            names = [n for n in self.hook_names() if n.endswith("hook_pattern")]
        cache: dict[str, torch.Tensor] = {}
        combined = dict(hooks or {})
        for name in names:
            inner = combined.get(name)

            def record(x, hook_name, inner=inner):
                if inner is not None:
                    out = inner(x, hook_name)
                    x = x if out is None else out
                cache[hook_name] = x.detach()
                return x

            combined[name] = record
        logits = self.forward(tokens, combined)
        return logits, cache

    def select_seeds(self, indices: list[int]) -> "SeedTransformer":
        """A new model holding copies of the given seeds (by position)."""
        out = SeedTransformer(self.cfg, [self.seeds[i] for i in indices]).to(self.wte.device)
        with torch.no_grad():
            for (name, p), (_, q) in zip(out.named_parameters(), self.named_parameters()):
                p.copy_(q[indices])
        return out


def parameter_count(cfg: ModelConfig) -> int:
    """Trainable parameters of one seed's model."""
    if cfg.mixer == "attention":
        d, V, T, L, m = cfg.d_model, cfg.vocab_size, cfg.seq_len, cfg.n_layer, cfg.d_mlp
        norms = 2 * d if cfg.norm == "pre" else 0
        attn = d * 3 * d + 3 * d + d * d + d
        mlp = (d * m + m + m * d + d) if m > 0 else 0
        return V * d + T * d + L * (attn + mlp + 2 * norms) + norms + d * V
    with torch.device("meta"):  # shapes only: no memory, init runs as no-ops
        model = SeedTransformer(cfg, [0])
    return sum(p[0].numel() for p in model.parameters())


def matched_d_mlp(cfg: ModelConfig, target: int) -> int:
    """The MLP width (>= 1) that brings this architecture's parameter count closest to `target`
    (the count is linear in d_mlp: each layer adds 2 d_model + 1 parameters per unit)."""
    base = parameter_count(replace(cfg, d_mlp=1))
    per_unit = cfg.n_layer * (2 * cfg.d_model + 1)
    return max(1, 1 + round((target - base) / per_unit))

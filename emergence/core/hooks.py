"""Hook factories: attention bias, pattern override, recording, and composition.

Every intervention in the project is a `{hook_name: fn}` dict passed to a model's forward;
fn(tensor, name) returns the replacement (or None to leave it). Layer/head selections use
model-agnostic names so the same helpers serve every architecture that exposes patterns.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import torch

from emergence.common.schema import number

Hook = Callable[[torch.Tensor, str], "torch.Tensor | None"]


def apply_hook(hooks: Mapping[str, Hook] | None, name: str, x: torch.Tensor) -> torch.Tensor:
    """Run the hook registered at `name` on x (if any); its non-None return replaces x."""
    if hooks and name in hooks:
        out = hooks[name](x, name)
        if out is not None:
            return out
    return x


def scores_name(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_scores"


def pattern_name(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_pattern"


def _head_mask(n_head: int, heads: Iterable[int] | None, like: torch.Tensor) -> torch.Tensor:
    mask = torch.zeros(n_head, dtype=torch.bool, device=like.device)
    mask[list(range(n_head)) if heads is None else list(heads)] = True
    return mask.view(n_head, 1, 1)


def attention_bias(bias: torch.Tensor, heads: Iterable[int] | None = None) -> Hook:
    """Add `bias` ([T, T], or broadcastable to [E, B, H, T, T]) to the pre-softmax scores of
    the selected heads (all by default). The causal mask is applied after, so a bias can
    never let a position see the future."""
    heads = None if heads is None else tuple(heads)

    def per_head(T: int, n_head: int, like: torch.Tensor) -> torch.Tensor:
        b = bias[..., :T, :T].to(device=like.device, dtype=like.dtype)
        return b if heads is None else b * _head_mask(n_head, heads, like)

    def hook(scores: torch.Tensor, name: str) -> torch.Tensor:
        return scores + per_head(scores.shape[-1], scores.shape[-3], scores)

    if bias.dim() <= 3:
        # A bias shared by every seed and sequence ([T, T] or [H, T, T]) can ride into the fused
        # attention kernel as an additive mask instead of forcing the explicit path (see
        # CausalSelfAttention); `additive_bias(T, n_head, like)` gives it.
        hook.additive_bias = per_head
    return hook


def override_pattern(pattern: torch.Tensor, heads: Iterable[int] | None = None,
                     query_positions: Iterable[int] | None = None) -> Hook:
    """Replace the attention probabilities of the selected heads (and query rows) by `pattern`
    (broadcastable to [E, B, H, T, T])."""
    heads = None if heads is None else tuple(heads)
    rows = None if query_positions is None else tuple(query_positions)

    def hook(current: torch.Tensor, name: str) -> torch.Tensor:
        new = pattern.to(current.dtype).expand_as(current)
        select = _head_mask(current.shape[-3], heads, current).expand(current.shape[-3:])
        if rows is not None:
            row_mask = torch.zeros(current.shape[-2], dtype=torch.bool, device=current.device)
            row_mask[list(rows)] = True
            select = select & row_mask.view(-1, 1)
        return torch.where(select, new, current)

    return hook


def record(store: dict, key: str | None = None) -> Hook:
    """Store the activation (detached) under `key` (default: the hook name); change nothing."""

    def hook(x: torch.Tensor, name: str) -> None:
        store[key or name] = x.detach()
        return None

    return hook


def compose(*hook_dicts: Mapping[str, Hook]) -> dict[str, Hook]:
    """Merge hook dicts; hooks on the same name run left to right."""
    merged: dict[str, list[Hook]] = {}
    for hooks in hook_dicts:
        for name, fn in hooks.items():
            merged.setdefault(name, []).append(fn)

    def chain(fns: list[Hook]) -> Hook:
        def run(x: torch.Tensor, name: str) -> torch.Tensor:
            for fn in fns:
                out = fn(x, name)
                x = x if out is None else out
            return x
        return run

    return {name: fns[0] if len(fns) == 1 else chain(fns) for name, fns in merged.items()}


def ground_truth_bias(pattern: torch.Tensor, strength: float, layers: Iterable[int],
                      heads: Iterable[int] | None = None) -> dict[str, Hook]:
    """The attention-bias intervention: strength * pattern added to the scores of the given
    layers (and heads; all by default). Empty when strength is 0."""
    if strength == 0:
        return {}
    bias = strength * pattern
    return {scores_name(layer): attention_bias(bias, heads) for layer in layers}


@dataclass(frozen=True, kw_only=True)
class BiasArgs:
    """A `bias` section: strength * M (the task's true parents) added to the pre-softmax scores
    of the chosen layers and heads (claim 5)."""
    strength: float = number(-1e4, 1e4)                        # 0: no intervention
    layers: list[int] | None = number(0, None, default=None)   # None: every layer
    heads: list[int] | None = number(0, None, default=None)    # None: every head
    at_eval: bool = True                                       # the bias stays on at evaluation

    def hooks(self, pattern: torch.Tensor, n_layer: int) -> tuple[dict[str, Hook], dict[str, Hook]]:
        """(training hooks, evaluation hooks) of this intervention on a model of `n_layer` layers."""
        layers = range(n_layer) if self.layers is None else self.layers
        hooks = ground_truth_bias(pattern, self.strength, layers, self.heads)
        return hooks, (hooks if self.at_eval else {})

"""Head-level attention patching, TransformerLens style, on any model with hook points.

Take an "old" model (a checkpoint before a capability emerges) and a "new" one (after). Record
the new model's attention on the probe prompts, write it into the old model's forward pass
one head at a time, and measure Δp: the rise in the old model's probability of the correct
answer. Heads are ranked by Δp, the top K are patched together, and the fraction of the
old -> new gap they recover is reported. `stage` says which activation carries the patch:
"pattern" (post-softmax probabilities, hook_pattern) or "scores" (pre-softmax, hook_scores; the
causal mask still applies after). Softmax acts row by row, so patching whole rows of scores is
the same intervention as patching those rows of the pattern (tested): the experiments patch the
pattern and offer no choice. `query_positions` restricts the patch to some query rows (None: all).

Two references bound what patching a few heads' attention can show (`all_heads_recovery`):
every head's pattern patched at once (the ceiling for attention patching: no choice of heads
recovers more, up to interactions), and every head's output `z` patched at once (value and
output paths included: how much of the gap the attention layers carry at all). A gap that the
second recovers and the first does not lives in what the heads read, not where they look.

Every function works on a SeedTransformer's leading seed axis: tensors are [E, B, ...] and
effects come out per seed.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import torch

from emergence.core.hooks import Hook, override_pattern, pattern_name, record, scores_name

STAGES = ("pattern", "scores")
WHOLE_LAYER = ("pattern", "z")  # what `all_heads_recovery` patches: every head's pattern, or its output


def z_name(layer: int) -> str:
    """Each head's output before the output projection, [E, B, T, H, d_head]."""
    return f"blocks.{layer}.attn.hook_z"


def override_output(z: torch.Tensor, query_positions: Sequence[int] | None = None) -> Hook:
    """Replace every head's output (hook_z) by `z`, at the given query positions only where
    given: what the attention layer hands on, value path included. (Here, not in
    emergence/core/hooks.py, which every training run imports: an edit there re-keys every cell.)"""
    rows = None if query_positions is None else tuple(query_positions)

    def hook(current: torch.Tensor, name: str) -> torch.Tensor:
        new = z.to(current.dtype).expand_as(current)
        if rows is None:
            return new
        select = torch.zeros(current.shape[-3], dtype=torch.bool, device=current.device)
        select[list(rows)] = True
        return torch.where(select.view(-1, 1, 1), new, current)

    return hook


def head_label(layer: int, head: int) -> str:
    """A head as the paper names it (L4H7: layer 4, head 7, both from 0)."""
    return f"L{layer}H{head}"


def hook_name(stage: str, layer: int) -> str:
    if stage == "pattern":
        return pattern_name(layer)
    if stage == "scores":
        return scores_name(layer)
    if stage == "z":
        return z_name(layer)
    raise ValueError(f"patching stage must be one of {STAGES}, got {stage!r}")


@torch.no_grad()
def record_attention(model, tokens: torch.Tensor, stage: str = "pattern") -> dict[int, torch.Tensor]:
    """layer -> attention activations of `model` on `tokens` [E, B, T]: [E, B, H, T, T] for the
    pattern or scores, [E, B, T, H, d_head] for `z`."""
    store: dict[str, torch.Tensor] = {}
    hooks = {hook_name(stage, layer): record(store) for layer in range(model.cfg.n_layer)}
    model(tokens, hooks)
    return {layer: store[hook_name(stage, layer)] for layer in range(model.cfg.n_layer)}


def patch_hooks(donor: dict[int, torch.Tensor], heads: Iterable[tuple[int, int]], stage: str = "pattern",
                query_positions: Sequence[int] | None = None) -> dict[str, Hook]:
    """Hooks that write the donor's activations into the given (layer, head) pairs."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(int(layer), []).append(int(head))
    return {hook_name(stage, layer): override_pattern(donor[layer], hs, query_positions)
            for layer, hs in by_layer.items()}


def answer_probability(logits: torch.Tensor, answer_positions: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """p(answer) at the position that predicts it: logits [E, B, T, V], positions and answers [B] -> [E, B]."""
    rows = torch.arange(logits.shape[1], device=logits.device)
    probs = logits[:, rows, answer_positions].softmax(-1)               # [E, B, V]
    return probs.gather(-1, answers.view(1, -1, 1).expand(probs.shape[0], -1, 1)).squeeze(-1)


@torch.no_grad()
def patched_probability(receiver, donor: dict[int, torch.Tensor], heads: Iterable[tuple[int, int]],
                        tokens: torch.Tensor, answer_positions: torch.Tensor, answers: torch.Tensor,
                        stage: str = "pattern", query_positions: Sequence[int] | None = None) -> torch.Tensor:
    """Mean p(answer) per seed [E] of `receiver` with the donor's heads patched in."""
    logits = receiver(tokens, patch_hooks(donor, heads, stage, query_positions))
    return answer_probability(logits, answer_positions, answers).mean(1)


@torch.no_grad()
def head_effects(receiver, donor: dict[int, torch.Tensor], tokens: torch.Tensor, answer_positions: torch.Tensor,
                 answers: torch.Tensor, stage: str = "pattern",
                 query_positions: Sequence[int] | None = None) -> torch.Tensor:
    """Δp of patching each head alone: [E, L, H] (mean over prompts)."""
    base = answer_probability(receiver(tokens), answer_positions, answers).mean(1)
    L, H = receiver.cfg.n_layer, receiver.cfg.n_head
    out = torch.zeros(base.shape[0], L, H)
    for layer in range(L):
        for head in range(H):
            out[:, layer, head] = patched_probability(receiver, donor, [(layer, head)], tokens, answer_positions,
                                                      answers, stage, query_positions) - base
    return out


def rank_heads(effects: torch.Tensor) -> list[tuple[int, int]]:
    """(layer, head) pairs of one seed's effects [L, H], largest Δp first (ties: lower index first)."""
    L, H = effects.shape
    order = sorted(range(L * H), key=lambda i: (-float(effects.view(-1)[i]), i))
    return [(i // H, i % H) for i in order]


@torch.no_grad()
def top_k_recovery(receiver, donor: dict[int, torch.Tensor], ranking: list[tuple[int, int]], ks: Sequence[int],
                   tokens: torch.Tensor, answer_positions: torch.Tensor, answers: torch.Tensor,
                   p_new: torch.Tensor, stage: str = "pattern",
                   query_positions: Sequence[int] | None = None) -> torch.Tensor:
    """Fraction of the gap p_new - p_old recovered by patching the top k heads of `ranking`
    together, for each k: [E, len(ks)]. `p_new` [E] is the donor model's own mean p(answer)."""
    p_old = answer_probability(receiver(tokens), answer_positions, answers).mean(1)
    gap = p_new - p_old
    rows = [patched_probability(receiver, donor, ranking[:k], tokens, answer_positions, answers, stage,
                                query_positions) for k in ks]
    # a zero gap gives NaN (nothing to recover), never a made-up 0 or a clipped infinity
    safe = torch.where(gap == 0, torch.full_like(gap, float("nan")), gap)
    return (torch.stack(rows, dim=1) - p_old[:, None]) / safe[:, None]


@torch.no_grad()
def all_heads_recovery(receiver, donor_model, tokens: torch.Tensor, answer_positions: torch.Tensor,
                       answers: torch.Tensor, what: str = "pattern",
                       query_positions: Sequence[int] | None = None) -> torch.Tensor:
    """Fraction of the gap p_new - p_old [E] recovered by patching every head of every layer at
    once with `donor_model`'s activation `what`: its attention pattern, or its per-head output
    `z` (the pattern applied to its own values). NaN where the gap is zero."""
    if what not in WHOLE_LAYER:
        raise ValueError(f"what: one of {WHOLE_LAYER}, got {what!r}")
    donor = record_attention(donor_model, tokens, what)
    if what == "pattern":
        hooks = {hook_name(what, layer): override_pattern(donor[layer], None, query_positions) for layer in donor}
    else:
        hooks = {hook_name(what, layer): override_output(donor[layer], query_positions) for layer in donor}
    p_old = answer_probability(receiver(tokens), answer_positions, answers).mean(1)
    p_new = answer_probability(donor_model(tokens), answer_positions, answers).mean(1)
    patched = answer_probability(receiver(tokens, hooks), answer_positions, answers).mean(1)
    gap = p_new - p_old
    return (patched - p_old) / torch.where(gap == 0, torch.full_like(gap, float("nan")), gap)


def previous_token_score(pattern: torch.Tensor) -> torch.Tensor:
    """Mean attention from each position t >= 1 to t - 1: pattern [..., H, T, T] -> [..., H]."""
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)


def induction_score(pattern: torch.Tensor, period: int) -> torch.Tensor:
    """On a random span repeated with the given period, mean attention from each position t of
    the repeats to t - period + 1 (the token after the previous occurrence of the current one):
    pattern [..., H, T, T] -> [..., H]."""
    T = pattern.shape[-1]
    if not 2 <= period < T:
        raise ValueError(f"period must be in [2, {T - 1}], got {period}")
    # entry i of this diagonal is (query i + period - 1, key i); the repeats start at query `period`
    return pattern.diagonal(offset=-(period - 1), dim1=-2, dim2=-1)[..., 1:].mean(-1)

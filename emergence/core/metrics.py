"""Pure metric functions on arrays: losses, accuracies and attention statistics.

All take torch tensors and reduce only the axes they say; callers own batching and seeds.
"""
from __future__ import annotations

import torch


def attention_entropy(pattern: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) of each (non-negative) attention row: [..., T_k] -> [...]; 0 log 0 = 0."""
    return -torch.xlogy(pattern, pattern).sum(-1)


def parent_mass(rows: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """Attention mass on the true parents.

    rows [..., n_bits, T_k] are the attention rows that predict each output bit; parents
    [n_bits, T_k] is 0/1 (the ground-truth pattern restricted to those rows)."""
    return (rows * parents.to(rows.dtype)).sum(-1)


def next_token_log_probs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log p(token_{t+1} | prefix) at every position t: logits [..., T, V], tokens [..., T] -> [..., T-1]."""
    logp = logits[..., :-1, :].log_softmax(-1)
    return logp.gather(-1, tokens[..., 1:].unsqueeze(-1)).squeeze(-1)


def weighted_mean_loss(token_log_probs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood averaged with per-position weights over the last two axes ([..., B, T-1] -> [...])."""
    w = weights.to(token_log_probs.dtype)
    return -(token_log_probs * w).sum((-1, -2)) / (w.sum() * token_log_probs.shape[-2])


def output_predictions(logits: torch.Tensor, tokens: torch.Tensor, prediction_positions: torch.Tensor,
                       n_output_tokens: int = 2) -> dict[str, torch.Tensor]:
    """Per output position, on each sequence: log p(correct), p(correct) and greedy correctness.

    Only the first `n_output_tokens` tokens compete (the linear map's two bits: a separator
    token's logit is ignored). logits [..., T, V], tokens [..., T]; returns tensors [..., n_positions]."""
    pred_logits = logits[..., prediction_positions, :n_output_tokens].log_softmax(-1)
    target = tokens[..., prediction_positions + 1]
    logp = pred_logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    correct = pred_logits.argmax(-1) == target
    return {"log_p": logp, "p": logp.exp(), "correct": correct}


def effective_distribution(mixing: torch.Tensor) -> torch.Tensor:
    """A mixer's signed M as a distribution over keys per row (|M| normalised), so entropy and
    parent mass read the same way as for softmax attention."""
    mass = mixing.abs()
    return mass / mass.sum(-1, keepdim=True).clamp_min(1e-12)

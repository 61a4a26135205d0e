import math

import torch

from emergence.core import metrics


def test_entropy_of_uniform_and_one_hot_rows():
    p = torch.tensor([[0.25, 0.25, 0.25, 0.25], [0.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]])
    torch.testing.assert_close(metrics.attention_entropy(p), torch.tensor([math.log(4), 0.0, math.log(2)]))


def test_parent_mass_hand_example():
    rows = torch.tensor([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    parents = torch.tensor([[0, 1, 1], [1, 0, 0]])
    torch.testing.assert_close(metrics.parent_mass(rows, parents), torch.tensor([0.9, 0.5]))


def test_next_token_log_probs_and_weighted_loss():
    logits = torch.log(torch.tensor([[[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]]))  # B=1, T=3
    tokens = torch.tensor([[0, 1, 0]])
    lp = metrics.next_token_log_probs(logits, tokens)
    torch.testing.assert_close(lp, torch.log(torch.tensor([[0.1, 0.2]])))
    loss = metrics.weighted_mean_loss(lp, torch.tensor([0.0, 1.0]))
    torch.testing.assert_close(loss, -torch.log(torch.tensor(0.2)))


def test_bit_predictions_ignore_separator_logit():
    # T=4 with a separator token (id 2) that has the largest logit everywhere
    logits = torch.tensor([[[0.0, 0.0, 9.0], [2.0, 0.0, 9.0], [0.0, 2.0, 9.0], [0.0, 0.0, 9.0]]])
    tokens = torch.tensor([[1, 2, 0, 0]])
    out = metrics.output_predictions(logits, tokens, torch.tensor([1, 2]))
    assert out["correct"].tolist() == [[True, False]]
    p0 = math.exp(2) / (math.exp(2) + 1)
    torch.testing.assert_close(out["p"], torch.tensor([[p0, 1 - p0]]))

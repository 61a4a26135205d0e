import math

import pytest
import torch
import torch.nn.functional as F

from emergence.core import hooks as hk
from emergence.core import metrics
from emergence.core.model import ModelConfig, SeedTransformer


def tokens_for(model, batch=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.cfg.vocab_size, (model.n_seeds, batch, model.cfg.seq_len), generator=g)


def test_seed_alone_equals_seed_in_batch_forward(tiny_cfg):
    batched = SeedTransformer(tiny_cfg, [3, 7, 11])
    alone = SeedTransformer(tiny_cfg, [7])
    tok = tokens_for(batched)
    out_b = batched(tok)
    out_a = alone(tok[1:2])
    torch.testing.assert_close(out_a[0], out_b[1], rtol=0, atol=1e-6)


def _train(model, steps, batch_tokens_fn):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=True)
    for step in range(steps):
        tok = batch_tokens_fn(step)
        loss = metrics.weighted_mean_loss(metrics.next_token_log_probs(model(tok), tok),
                                          torch.ones(tok.shape[-1] - 1))
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
    return model


def test_seed_trajectory_alone_equals_in_batch(tiny_cfg):
    seeds = [0, 1, 2]

    def data(seed, step):
        g = torch.Generator().manual_seed(seed * 100 + step)
        return torch.randint(0, 2, (4, tiny_cfg.seq_len), generator=g)

    batched = _train(SeedTransformer(tiny_cfg, seeds), 5, lambda t: torch.stack([data(s, t) for s in seeds]))
    alone = _train(SeedTransformer(tiny_cfg, [1]), 5, lambda t: data(1, t)[None])
    for (name, p), (_, q) in zip(batched.named_parameters(), alone.named_parameters()):
        torch.testing.assert_close(p[1], q[0], rtol=0, atol=1e-6, msg=name)


def test_init_depends_only_on_seed(tiny_cfg):
    a = SeedTransformer(tiny_cfg, [5, 6])
    b = SeedTransformer(tiny_cfg, [6, 9])
    assert torch.equal(a.wte[1], b.wte[0])
    assert not torch.equal(a.wte[0], a.wte[1])


def test_fused_attention_equals_explicit_path(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [0, 1])
    tok = tokens_for(model)
    fast = model(tok)
    slow, cache = model.run_with_cache(tok)  # recording patterns forces the explicit path
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)
    pattern = cache["blocks.0.attn.hook_pattern"]
    assert pattern.shape == (2, 3, tiny_cfg.n_head, tiny_cfg.seq_len, tiny_cfg.seq_len)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:-1]))
    assert torch.all(pattern.triu(diagonal=1) == 0)  # causal


def test_pattern_matches_hand_computed_softmax(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [0])
    tok = tokens_for(model, batch=1)
    _, cache = model.run_with_cache(tok, names=["blocks.0.hook_resid_pre", "blocks.0.attn.hook_pattern"])
    x = cache["blocks.0.hook_resid_pre"][0]  # [B*T, d]
    blk = model.blocks[0]
    h = F.layer_norm(x, (tiny_cfg.d_model,)) * blk.ln_1.weight[0] + blk.ln_1.bias[0]
    qkv = h @ blk.attn.qkv.weight[0] + blk.attn.qkv.bias[0]
    T, H, dh = tiny_cfg.seq_len, tiny_cfg.n_head, tiny_cfg.d_head
    q, k, _ = qkv.view(T, 3, H, dh).unbind(1)
    scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(dh)
    scores = scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    torch.testing.assert_close(cache["blocks.0.attn.hook_pattern"][0, 0], scores.softmax(-1), rtol=1e-5, atol=1e-6)


def test_large_bias_forces_the_ground_truth_pattern(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [0])
    T = tiny_cfg.seq_len
    mask = torch.zeros(T, T)
    mask[5, [1, 3]] = 1.0
    mask[7, [0]] = 1.0
    _, cache = model.run_with_cache(tokens_for(model), hooks={hk.scores_name(0): hk.attention_bias(1e4 * mask, heads=[2])})
    p = cache["blocks.0.attn.hook_pattern"][0, :, 2]
    torch.testing.assert_close(p[:, 5, [1, 3]], torch.full((3, 2), 0.5), rtol=0, atol=5e-3)  # float32 at 1e4
    torch.testing.assert_close(p[:, 7, 0], torch.ones(3))
    # other heads untouched: their row 5 is not concentrated on keys 1 and 3
    assert (cache["blocks.0.attn.hook_pattern"][0, :, 0, 5, [1, 3]].sum(-1) < 0.99).all()


@pytest.mark.parametrize("heads", [None, [1, 2]])
def test_bias_on_fused_path_equals_explicit_path(tiny_cfg, heads):
    """A shared additive bias rides into the fused kernel as a mask; values and gradients must
    match the explicit path (forced here by wrapping the hook, which hides `additive_bias`)."""
    T = tiny_cfg.seq_len
    bias = 3.0 * torch.rand(T, T, generator=torch.Generator().manual_seed(0))
    bias[2, 8] = 1e4  # a future position: the causal mask must still win
    hook = hk.attention_bias(bias, heads=heads)
    assert hasattr(hook, "additive_bias")
    results = []
    for hooks in ({hk.scores_name(0): hook}, {hk.scores_name(0): lambda s, n: hook(s, n)}):
        model = SeedTransformer(tiny_cfg, [0, 1])
        out = model(tokens_for(model), hooks)
        out.square().sum().backward()
        results.append((out.detach(), model.blocks[0].attn.qkv.weight.grad))
    (fast, g_fast), (slow, g_slow) = results
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g_fast, g_slow, rtol=1e-4, atol=1e-5)
    assert not torch.equal(fast, SeedTransformer(tiny_cfg, [0, 1])(tokens_for(model)))  # the bias acted


def test_bias_cannot_break_causality(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [0])
    future = torch.zeros(tiny_cfg.seq_len, tiny_cfg.seq_len)
    future[2, 8] = 1e4
    _, cache = model.run_with_cache(tokens_for(model), hooks={hk.scores_name(0): hk.attention_bias(future)})
    assert cache["blocks.0.attn.hook_pattern"][..., 2, 8].abs().max() == 0


def test_pattern_override_replaces_selected_heads_only(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [0, 1])
    tok = tokens_for(model)
    T = tiny_cfg.seq_len
    uniform = torch.ones(T, T).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    _, base = model.run_with_cache(tok)
    _, cache = model.run_with_cache(tok, hooks={hk.pattern_name(1): hk.override_pattern(uniform, heads=[0, 3])})
    p = cache["blocks.1.attn.hook_pattern"]
    torch.testing.assert_close(p[:, :, 0], uniform.expand_as(p[:, :, 0]))
    torch.testing.assert_close(p[:, :, 3], uniform.expand_as(p[:, :, 3]))
    torch.testing.assert_close(p[:, :, 1], base["blocks.1.attn.hook_pattern"][:, :, 1])


def test_overriding_with_own_pattern_changes_nothing(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [0])
    tok = tokens_for(model)
    logits, cache = model.run_with_cache(tok)
    patched = model(tok, hooks={hk.pattern_name(l): hk.override_pattern(cache[hk.pattern_name(l)])
                                for l in range(tiny_cfg.n_layer)})
    torch.testing.assert_close(patched, logits, rtol=0, atol=1e-6)


def test_causality_of_the_whole_model(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [0])
    tok = tokens_for(model, batch=2)
    changed = tok.clone()
    changed[..., 6:] = 1 - changed[..., 6:]
    torch.testing.assert_close(model(tok)[..., :6, :], model(changed)[..., :6, :])


def test_wrong_seed_axis_is_rejected(tiny_cfg):
    with pytest.raises(ValueError, match="seeds"):
        SeedTransformer(tiny_cfg, [0, 1])(torch.zeros(3, 2, tiny_cfg.seq_len, dtype=torch.long))


def test_select_seeds_copies_weights(tiny_cfg):
    model = SeedTransformer(tiny_cfg, [4, 5, 6])
    sub = model.select_seeds([2, 0])
    assert sub.seeds == (6, 4)
    tok = tokens_for(model)
    torch.testing.assert_close(sub(tok[[2, 0]]), model(tok)[[2, 0]])


@pytest.mark.parametrize("norm, d_mlp", [("pre", 32), ("none", 0)])
def test_parameter_count_matches_the_module(norm, d_mlp):
    from emergence.core.model import parameter_count

    cfg = ModelConfig(vocab_size=3, seq_len=7, n_layer=2, d_model=8, n_head=2, d_mlp=d_mlp, norm=norm)
    model = SeedTransformer(cfg, [0])
    assert parameter_count(cfg) == sum(p[0].numel() for p in model.parameters())

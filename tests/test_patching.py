import torch

from emergence.analysis import patching as pt
from emergence.core.model import ModelConfig, SeedTransformer


def sharpened(model, scale=25.0):
    """nanoGPT's 0.02-std init makes attention nearly uniform and its output tiny; scale it up."""
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale)
    return model


def tokens_for(model, B=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.cfg.vocab_size, (model.n_seeds, B, model.cfg.seq_len), generator=g)


def test_patching_a_models_own_pattern_changes_nothing():
    model = SeedTransformer(ModelConfig(vocab_size=11, seq_len=9, n_layer=2, d_model=16, n_head=4, d_mlp=32), [0, 1])
    tok = tokens_for(model)
    every_head = [(l, h) for l in range(2) for h in range(4)]
    for stage in pt.STAGES:
        own = pt.record_attention(model, tok, stage)
        torch.testing.assert_close(model(tok, pt.patch_hooks(own, every_head, stage)), model(tok), rtol=0, atol=1e-6)


def test_patching_every_head_of_an_attention_only_layer_reproduces_the_new_attention_output():
    cfg = ModelConfig(vocab_size=7, seq_len=8, n_layer=1, d_model=12, n_head=3, d_mlp=0, norm="none")
    old = sharpened(SeedTransformer(cfg, [0]))
    new = sharpened(SeedTransformer(cfg, [0]))
    with torch.no_grad():  # the new model differs only in its queries and keys
        new.blocks[0].attn.qkv.weight[..., :2 * cfg.d_model] += torch.randn(1, 12, 24, generator=torch.Generator().manual_seed(5))
    tok = tokens_for(old, B=4)
    donor = pt.record_attention(new, tok)
    assert not torch.allclose(old(tok), new(tok), atol=1e-4)
    patched = old(tok, pt.patch_hooks(donor, [(0, h) for h in range(3)]))
    torch.testing.assert_close(patched, new(tok), rtol=0, atol=1e-5)
    # one head alone moves the output only part of the way
    one = old(tok, pt.patch_hooks(donor, [(0, 1)]))
    assert not torch.allclose(one, new(tok), atol=1e-4)


def test_head_effects_rank_and_top_k_recovery():
    cfg = ModelConfig(vocab_size=7, seq_len=8, n_layer=1, d_model=12, n_head=3, d_mlp=0, norm="none")
    old, new = sharpened(SeedTransformer(cfg, [0])), sharpened(SeedTransformer(cfg, [0]))
    with torch.no_grad():
        new.blocks[0].attn.qkv.weight[..., :2 * cfg.d_model] *= 3.0  # sharper attention
    tok = tokens_for(old, B=6)
    positions, answers = torch.full((6,), 7), tok[0, :, 0]
    donor = pt.record_attention(new, tok)
    effects = pt.head_effects(old, donor, tok, positions, answers)
    assert effects.shape == (1, 1, 3)
    ranking = pt.rank_heads(effects[0])
    assert sorted(ranking) == [(0, 0), (0, 1), (0, 2)] and effects[0, 0, ranking[0][1]] >= effects[0, 0, ranking[-1][1]]
    p_new = pt.answer_probability(new(tok), positions, answers).mean(1)
    rec = pt.top_k_recovery(old, donor, ranking, [0, 3], tok, positions, answers, p_new)
    torch.testing.assert_close(rec, torch.tensor([[0.0, 1.0]]), rtol=0, atol=1e-4)


def test_query_positions_limit_the_patch():
    cfg = ModelConfig(vocab_size=7, seq_len=8, n_layer=1, d_model=12, n_head=2, d_mlp=0, norm="none")
    old, new = SeedTransformer(cfg, [0]), SeedTransformer(cfg, [3])
    tok = tokens_for(old, B=2)
    donor = pt.record_attention(new, tok)
    store = {}
    from emergence.core.hooks import compose, pattern_name, record

    old(tok, compose(pt.patch_hooks(donor, [(0, 0), (0, 1)], query_positions=[5]), {pattern_name(0): record(store)}))
    got, mine = store[pattern_name(0)], pt.record_attention(old, tok)[0]
    torch.testing.assert_close(got[..., 5, :], donor[0][..., 5, :])
    torch.testing.assert_close(got[..., 4, :], mine[..., 4, :])


def test_previous_token_and_induction_scores_of_hand_written_patterns():
    T, period = 8, 4
    prev = torch.zeros(1, T, T)
    prev[0, 0, 0] = 1
    for t in range(1, T):
        prev[0, t, t - 1] = 1
    induction = torch.zeros(1, T, T)
    for t in range(T):
        induction[0, t, t - period + 1 if t >= period else 0] = 1
    assert pt.previous_token_score(prev).item() == 1.0
    assert pt.induction_score(induction, period).item() == 1.0
    assert pt.induction_score(prev, period).item() == 0.0
    assert pt.previous_token_score(induction).item() < 0.5


def test_patching_whole_rows_of_scores_is_patching_the_pattern():
    # softmax acts row by row: which is why the experiments offer no `stage` choice
    cfg = ModelConfig(vocab_size=7, seq_len=8, n_layer=2, d_model=12, n_head=3, d_mlp=16)
    old, new = sharpened(SeedTransformer(cfg, [0])), sharpened(SeedTransformer(cfg, [1]))
    tok = tokens_for(old, B=4)
    heads = [(0, 1), (1, 2)]
    by_pattern = old(tok, pt.patch_hooks(pt.record_attention(new, tok, "pattern"), heads, "pattern"))
    by_scores = old(tok, pt.patch_hooks(pt.record_attention(new, tok, "scores"), heads, "scores"))
    torch.testing.assert_close(by_scores, by_pattern, rtol=0, atol=1e-5)
    assert not torch.allclose(by_pattern, old(tok), atol=1e-4)


def test_a_zero_gap_recovers_nothing_measurable():
    cfg = ModelConfig(vocab_size=7, seq_len=8, n_layer=1, d_model=12, n_head=3, d_mlp=0, norm="none")
    model = sharpened(SeedTransformer(cfg, [0]))
    tok = tokens_for(model, B=6)
    positions, answers = torch.full((6,), 7), tok[0, :, 0]
    own = pt.record_attention(model, tok)
    p = pt.answer_probability(model(tok), positions, answers).mean(1)
    rec = pt.top_k_recovery(model, own, [(0, 0), (0, 1), (0, 2)], [1, 3], tok, positions, answers, p)
    assert torch.isnan(rec).all()  # old = new: the fraction is undefined, not 0


def test_patching_every_heads_output_recovers_a_gap_that_lives_in_the_values_and_the_pattern_cannot():
    # an attention-only layer whose new model differs only in its value weights: where the heads
    # look is the same, so patching every pattern recovers nothing, and patching every head's
    # output z (what the heads read, through the shared output projection) recovers the whole gap
    cfg = ModelConfig(vocab_size=7, seq_len=8, n_layer=1, d_model=12, n_head=3, d_mlp=0, norm="none")
    old = sharpened(SeedTransformer(cfg, [0]))
    new = sharpened(SeedTransformer(cfg, [0]))
    with torch.no_grad():
        new.blocks[0].attn.qkv.weight[..., 2 * cfg.d_model:] += torch.randn(1, 12, 12, generator=torch.Generator().manual_seed(3))
    tok = tokens_for(old, B=6)
    positions, answers = torch.full((6,), 7), new(tok)[0, :, 7].argmax(-1)
    assert not torch.allclose(old(tok), new(tok), atol=1e-4)
    pattern = pt.all_heads_recovery(old, new, tok, positions, answers, "pattern")
    output = pt.all_heads_recovery(old, new, tok, positions, answers, "z")
    torch.testing.assert_close(pattern, torch.tensor([0.0]), rtol=0, atol=1e-5)
    torch.testing.assert_close(output, torch.tensor([1.0]), rtol=0, atol=1e-5)
    # and where the new model differs in its queries and keys only, both recover it all
    new2 = sharpened(SeedTransformer(cfg, [0]))
    with torch.no_grad():
        new2.blocks[0].attn.qkv.weight.copy_(old.blocks[0].attn.qkv.weight)
        new2.blocks[0].attn.qkv.weight[..., :2 * cfg.d_model] *= 3.0
        for a, b in zip(new2.parameters(), old.parameters()):
            if a.shape == b.shape and a is not new2.blocks[0].attn.qkv.weight:
                a.copy_(b)
    answers = new2(tok)[0, :, 7].argmax(-1)
    for what in pt.WHOLE_LAYER:
        torch.testing.assert_close(pt.all_heads_recovery(old, new2, tok, positions, answers, what),
                                   torch.tensor([1.0]), rtol=0, atol=1e-4)


def test_patching_every_heads_output_at_some_query_rows_only():
    from emergence.analysis.patching import override_output, z_name
    from emergence.core.hooks import compose, record

    cfg = ModelConfig(vocab_size=7, seq_len=8, n_layer=1, d_model=12, n_head=2, d_mlp=0, norm="none")
    old, new = SeedTransformer(cfg, [0]), SeedTransformer(cfg, [3])
    tok = tokens_for(old, B=2)
    donor = pt.record_attention(new, tok, "z")
    assert donor[0].shape == (1, 2, 8, 2, 6)
    store = {}
    old(tok, compose({z_name(0): override_output(donor[0], [5])}, {z_name(0): record(store)}))
    mine = pt.record_attention(old, tok, "z")[0]
    torch.testing.assert_close(store[z_name(0)][:, :, 5], donor[0][:, :, 5])
    torch.testing.assert_close(store[z_name(0)][:, :, 4], mine[:, :, 4])

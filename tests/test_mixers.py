"""The non-attention sequence mixers against their published recurrences and the model contract."""
import math

import pytest
import torch
import torch.nn.functional as F

from emergence.core import hooks as hk
from emergence.core.metrics import effective_distribution
from emergence.core.mixers import CAUSAL_MIXERS, MIXERS, GatedDeltaNet, RWKV7, TokenMLP, causal_conv, decay_matrix
from emergence.core.model import ModelConfig, SeedTransformer, matched_d_mlp, parameter_count

OTHERS = [m for m in MIXERS if m != "attention"]
CAUSAL = [m for m in CAUSAL_MIXERS if m != "attention"]
# Mixers whose pattern hook may replace the mixing (the token MLP's is a Jacobian, to read only).
LINEAR = [m for m in CAUSAL if m != "token_mlp"]


def cfg_for(mixer, **kw):
    base = dict(vocab_size=3, seq_len=12, n_layer=2, d_model=16, n_head=2, d_mlp=32, mixer=mixer, d_state=4)
    return ModelConfig(**{**base, **kw})


def tokens(cfg, E=2, B=3, seed=0):
    return torch.randint(0, cfg.vocab_size, (E, B, cfg.seq_len), generator=torch.Generator().manual_seed(seed))


def perturbed_gates(model):
    """Push gates away from their init so the tests exercise decays, betas and the bonus."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name))))
    return model


def test_causal_conv_matches_conv1d():
    E, B, T, C, K = 2, 3, 7, 5, 4
    x, w = torch.randn(E, B, T, C), torch.randn(E, C, K)
    for e in range(E):
        ref = F.conv1d(F.pad(x[e].transpose(1, 2), (K - 1, 0)), w[e].unsqueeze(1), groups=C).transpose(1, 2)
        torch.testing.assert_close(causal_conv(x, w)[e], ref, rtol=1e-5, atol=1e-6)


def test_decay_matrix_by_hand():
    log_a = torch.log(torch.tensor([0.5, 0.25, 0.1]))
    expected = torch.tensor([[1.0, 0.0, 0.0],
                             [0.25, 1.0, 0.0],
                             [0.025, 0.1, 1.0]])
    torch.testing.assert_close(decay_matrix(log_a), expected)


@pytest.mark.parametrize("T", [7, 2])  # T < K: taps past the start read nothing
def test_causal_conv_gradients_match_conv1d(T):
    E, B, C, K = 2, 3, 5, 4
    x = torch.randn(E, B, T, C, dtype=torch.float64, requires_grad=True)
    w = torch.randn(E, C, K, dtype=torch.float64, requires_grad=True)

    def reference(x, w):
        return torch.stack([F.conv1d(F.pad(x[e].transpose(1, 2), (K - 1, 0)), w[e].unsqueeze(1), groups=C)
                            .transpose(1, 2) for e in range(E)])

    grad = torch.randn(E, B, T, C, dtype=torch.float64)
    ours = torch.autograd.grad(causal_conv(x, w), (x, w), grad)
    ref = torch.autograd.grad(reference(x, w), (x, w), grad)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b)


def _decay_reference(log_decay):  # the plain autograd chain the fast version replaces
    T = log_decay.shape[-1]
    cum = log_decay.cumsum(-1)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return (cum.unsqueeze(-1) - cum.unsqueeze(-2)).masked_fill(~causal, float("-inf")).exp()


def test_decay_matrix_gradient_matches_autograd():
    log_a = -torch.rand(3, 2, 9, dtype=torch.float64).requires_grad_()
    grad = torch.randn(3, 2, 9, 9, dtype=torch.float64)
    torch.testing.assert_close(decay_matrix(log_a), _decay_reference(log_a))
    ours, = torch.autograd.grad(decay_matrix(log_a), log_a, grad)
    ref, = torch.autograd.grad(_decay_reference(log_a), log_a, grad)
    torch.testing.assert_close(ours, ref)


def test_decay_matrix_floors_vanishing_decays_and_stays_finite():
    # Strong decays drive the exponent far below float32's range: values stay >= 0 and finite,
    # entries below the floor are ~0, and gradients are finite.
    log_a = torch.full((12,), -30.0, requires_grad=True)
    D = decay_matrix(log_a)
    assert torch.isfinite(D).all() and (D >= 0).all()
    assert D[11, 0].item() < 1e-30 and D[1, 0].item() == pytest.approx(math.exp(-30.0), rel=1e-4)
    D.sum().backward()
    assert torch.isfinite(log_a.grad).all()


@pytest.mark.parametrize("mixer", CAUSAL)
def test_mixer_is_causal(mixer):
    cfg = cfg_for(mixer)
    model = perturbed_gates(SeedTransformer(cfg, [0, 1]))
    tok = tokens(cfg)
    t = 5
    changed = tok.clone()
    changed[..., t + 1:] = (changed[..., t + 1:] + 1) % cfg.vocab_size
    a, b = model(tok), model(changed)
    torch.testing.assert_close(a[..., :t + 1, :], b[..., :t + 1, :], rtol=0, atol=1e-5)
    assert not torch.allclose(a[..., t + 1:, :], b[..., t + 1:, :])


@pytest.mark.parametrize("mixer", CAUSAL)
def test_mixing_matrix_path_equals_fast_path_and_is_causal(mixer):
    cfg = cfg_for(mixer)
    model = perturbed_gates(SeedTransformer(cfg, [0, 1]))
    tok = tokens(cfg)
    fast = model(tok)
    slow, cache = model.run_with_cache(tok)  # recording M takes the explicit path
    torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-5)
    M = cache["blocks.1.attn.hook_pattern"]
    assert M.shape == (2, 3, cfg.n_head, cfg.seq_len, cfg.seq_len)
    assert torch.all(M.triu(diagonal=1) == 0)


@pytest.mark.parametrize("mixer", OTHERS)
def test_seed_alone_equals_seed_in_batch(mixer):
    cfg = cfg_for(mixer)
    batched, alone = SeedTransformer(cfg, [3, 7, 11]), SeedTransformer(cfg, [7])
    tok = tokens(cfg, E=3)
    torch.testing.assert_close(alone(tok[1:2])[0], batched(tok)[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("mixer", OTHERS)
def test_forward_and_backward_are_finite(mixer):
    cfg = cfg_for(mixer)
    model = SeedTransformer(cfg, [0, 1])
    out = model(tokens(cfg))
    out.logsumexp(-1).mean().backward()
    assert torch.isfinite(out).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("mixer", LINEAR)
def test_pattern_override_sets_the_mixing(mixer):
    """Overriding M with the identity makes every position mix only itself: the layer's
    per-head output equals its values, so changing earlier tokens cannot reach position t
    through this layer (one layer, no MLP)."""
    cfg = cfg_for(mixer, n_layer=1, d_mlp=0)
    model = perturbed_gates(SeedTransformer(cfg, [0]))
    T = cfg.seq_len
    identity = {hk.pattern_name(0): hk.override_pattern(torch.eye(T))}
    tok = tokens(cfg, E=1)
    changed = tok.clone()
    changed[..., :3] = (changed[..., :3] + 1) % cfg.vocab_size
    # Short convolutions and token shift still see the previous few tokens, so compare far after them.
    a, b = model(tok, identity), model(changed, identity)
    torch.testing.assert_close(a[..., 8:, :], b[..., 8:, :], rtol=0, atol=1e-5)
    assert not torch.allclose(model(tok)[..., 8:, :], model(changed)[..., 8:, :])


def test_mamba2_mixing_matches_the_ssd_recurrence():
    cfg = cfg_for("mamba2")
    model = perturbed_gates(SeedTransformer(cfg, [0, 1]))
    mixer = model.blocks[0].attn
    x = torch.randn(2, 3 * cfg.seq_len, cfg.d_model)
    _, xs, Bm, Cm, dt = mixer.gates(x, 3)
    A = -torch.exp(mixer.A_log)                                             # [E, H]
    E, B, H, T, P = xs.shape
    h = torch.zeros(E, B, H, P, cfg.d_state)
    ys = []
    for t in range(T):
        decay = torch.exp(dt[..., t] * A[:, None])                          # [E, B, H]
        h = decay[..., None, None] * h + (dt[..., t, None, None] * xs[..., t, :, None]) * Bm[:, :, None, t, None, :]
        ys.append((h @ Cm[:, :, None, t, :, None]).squeeze(-1))
    torch.testing.assert_close(mixer.mixing(Bm, Cm, dt) @ xs, torch.stack(ys, dim=-2), rtol=1e-4, atol=1e-5)


def _delta_rule_reference(q, k, v, beta, log_decay):
    """Gated delta rule, one step at a time: S_t = a_t S_{t-1} (I - b k k^T) + b v k^T, o_t = S_t q_t."""
    S = torch.zeros(*q.shape[:-2], v.shape[-1], k.shape[-1])
    eye = torch.eye(k.shape[-1])
    outs = []
    for t in range(q.shape[-2]):
        kt, vt, qt, bt = k[..., t, :], v[..., t, :], q[..., t, :], beta[..., t, None, None]
        a = torch.exp(log_decay[..., t, None, None])
        S = a * S @ (eye - bt * kt.unsqueeze(-1) * kt.unsqueeze(-2)) + bt * vt.unsqueeze(-1) * kt.unsqueeze(-2)
        outs.append((S @ qt.unsqueeze(-1)).squeeze(-1))
    return torch.stack(outs, dim=-2)


def test_gated_deltanet_wy_form_matches_the_recurrence():
    g = torch.Generator().manual_seed(0)
    shape = (2, 3, 2, 9)
    q = F.normalize(torch.randn(*shape, 4, generator=g), dim=-1)
    k = F.normalize(torch.randn(*shape, 4, generator=g), dim=-1)
    v = torch.randn(*shape, 5, generator=g)
    beta = torch.rand(*shape, generator=g)
    log_decay = -torch.rand(*shape, generator=g)
    ref = _delta_rule_reference(q, k, v, beta, log_decay)
    fast, _ = GatedDeltaNet.core(q, k, v, beta, log_decay, want_mixing=False)
    out, M = GatedDeltaNet.core(q, k, v, beta, log_decay, want_mixing=True)
    torch.testing.assert_close(fast, ref, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    assert torch.all(M.triu(1) == 0)


def test_rwkv7_recurrence_matches_the_reference_kernel_form():
    """RWKV-7's reference loop: state = state * w + state @ (-kk)(kk * a)^T + v k^T; out = state @ r."""
    g = torch.Generator().manual_seed(1)
    H, T, N = 2, 7, 4
    r, k, v, kk = (torch.randn(H, T, N, generator=g) for _ in range(4))
    kk = F.normalize(kk, dim=-1)
    w = torch.rand(H, T, N, generator=g) * 0.4 + 0.55
    a = torch.rand(H, T, N, generator=g)
    state = torch.zeros(H, N, N)
    ref = []
    for t in range(T):
        vk = v[:, t].view(H, N, 1) @ k[:, t].view(H, 1, N)
        ab = (-kk[:, t]).view(H, N, 1) @ (kk[:, t] * a[:, t]).view(H, 1, N)
        state = state * w[:, t].view(H, 1, N) + state @ ab + vk
        ref.append((state @ r[:, t].view(H, N, 1)).view(H, N))
    torch.testing.assert_close(RWKV7.recurrence(r, w, k, v, a, kk), torch.stack(ref, dim=1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("chunk", [32, 5, 1])  # one chunk, chunks with a carried state, token by token
@pytest.mark.parametrize("strongest", [False, True])  # decays at RWKV-7's bound e^{-e^{-0.5}} ~ 0.545
def test_rwkv7_chunked_form_matches_the_recurrence(chunk, strongest):
    g = torch.Generator().manual_seed(2)
    shape = (2, 3, 2, 23)
    r, k, v = (torch.randn(*shape, 4, generator=g, dtype=torch.float64) for _ in range(3))
    kk = F.normalize(torch.randn(*shape, 4, generator=g, dtype=torch.float64), dim=-1)
    a = torch.rand(*shape, 4, generator=g, dtype=torch.float64)
    log_decay = -math.exp(-0.5) * (torch.ones(*shape, 4, dtype=torch.float64) if strongest
                                   else torch.rand(*shape, 4, generator=g, dtype=torch.float64))
    inputs = [t.requires_grad_() for t in (r, log_decay, k, v, a, kk)]
    ref = RWKV7.recurrence(r, log_decay.exp(), k, v, a, kk)
    out = RWKV7.chunked(*inputs, chunk=chunk)
    torch.testing.assert_close(out, ref)
    grad = torch.randn(ref.shape, generator=g, dtype=torch.float64)
    for x, y in zip(torch.autograd.grad(out, inputs, grad), torch.autograd.grad(ref, inputs, grad)):
        torch.testing.assert_close(x, y)


def test_rwkv7_chunked_form_is_accurate_in_float32_at_the_strongest_decay():
    g = torch.Generator().manual_seed(3)
    shape = (4, 2, 64)
    r, k, v = (torch.randn(*shape, 8, generator=g) for _ in range(3))
    kk = F.normalize(torch.randn(*shape, 8, generator=g), dim=-1)
    a = torch.rand(*shape, 8, generator=g)
    log_decay = torch.full((*shape, 8), -math.exp(-0.5))
    ref = RWKV7.recurrence(*(t.double() for t in (r, log_decay.exp(), k, v, a, kk)))
    torch.testing.assert_close(RWKV7.chunked(r, log_decay, k, v, a, kk).double(), ref, rtol=1e-4, atol=1e-4)


def test_static_mixing_is_its_masked_weight():
    cfg = cfg_for("static_mixing", n_layer=1)
    model = SeedTransformer(cfg, [0])
    _, cache = model.run_with_cache(tokens(cfg, E=1, B=2))
    W = model.blocks[0].attn.token_mixing.detach()
    torch.testing.assert_close(cache["blocks.0.attn.hook_pattern"][0, 1], W[0].tril())


def test_unmasked_mixing_reads_the_future_and_is_otherwise_the_static_mixer():
    """The control: the same layer without its mask, so a later token reaches an earlier position."""
    cfg = cfg_for("unmasked_mixing", n_layer=1)
    model = perturbed_gates(SeedTransformer(cfg, [0]))
    tok = tokens(cfg, E=1)
    changed = tok.clone()
    changed[..., -1] = (changed[..., -1] + 1) % cfg.vocab_size
    assert not torch.allclose(model(tok)[..., 0, :], model(changed)[..., 0, :])
    _, cache = model.run_with_cache(tok)
    W = model.blocks[0].attn.token_mixing.detach()
    torch.testing.assert_close(cache["blocks.0.attn.hook_pattern"][0, 1], W[0])
    static = SeedTransformer(cfg_for("static_mixing", n_layer=1), [0])
    static.load_state_dict(model.state_dict())
    with torch.no_grad():
        static.blocks[0].attn.token_mixing.copy_(model.blocks[0].attn.token_mixing.tril())
        model.blocks[0].attn.token_mixing.copy_(model.blocks[0].attn.token_mixing.tril())
    torch.testing.assert_close(model(tok), static(tok), rtol=0, atol=0)


def _token_mlp_by_hand(layer, x):
    """Per channel, per position t: W2[t, :t+1] . gelu(W1[:t+1, :] x + b1) + b2[t], by loops."""
    w1, b1, w2, b2 = (p[0].double() for p in (layer.w1, layer.b1, layer.w2, layer.b2))
    x = x.double()
    B, T, C = x.shape
    out = torch.zeros(B, T, C, dtype=torch.float64)
    for b in range(B):
        for c in range(C):
            hidden = [F.gelu(sum(w1[j, s] * x[b, s, c] for s in range(j + 1)) + b1[j]) for j in range(T)]
            for t in range(T):
                out[b, t, c] = sum(w2[t, j] * hidden[j] for j in range(t + 1)) + b2[t]
    return out


def test_token_mlp_is_the_causal_token_mixing_mlp_by_hand():
    cfg = cfg_for("token_mlp", n_layer=1, seq_len=5, d_model=4, n_head=1)
    layer = TokenMLP(cfg, n_seeds=1, layer=0)
    layer.reset_seed_(0, torch.Generator().manual_seed(0))
    x = torch.randn(1, 2 * 5, 4, generator=torch.Generator().manual_seed(1))
    got = layer(x, batch=2, hooks=None).view(2, 5, 4)
    torch.testing.assert_close(got.double(), _token_mlp_by_hand(layer, x.view(2, 5, 4)), rtol=1e-5, atol=1e-6)


def test_token_mlp_pattern_is_its_channel_mean_jacobian_and_cannot_be_replaced():
    cfg = cfg_for("token_mlp", n_layer=1, seq_len=6, d_model=4, n_head=2)
    layer = TokenMLP(cfg, n_seeds=1, layer=0)
    layer.reset_seed_(0, torch.Generator().manual_seed(0))
    x = torch.randn(1, 6, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float32)
    seen = {}
    layer(x, batch=1, hooks={"blocks.0.attn.hook_pattern": lambda M, name: seen.setdefault("M", M)})
    J = torch.autograd.functional.jacobian(lambda v: layer(v, batch=1, hooks=None), x)[0, :, :, 0, :, :]
    per_channel = torch.stack([J[:, c, :, c] for c in range(4)])  # [C, T, T]: dz[t, c] / dx[s, c]
    assert seen["M"].shape == (1, 1, 2, 6, 6)
    torch.testing.assert_close(seen["M"][0, 0, 0], per_channel.mean(0), rtol=1e-5, atol=1e-6)
    assert torch.all(seen["M"].triu(diagonal=1) == 0)
    with pytest.raises(ValueError, match="Jacobian"):
        layer(x, batch=1, hooks={"blocks.0.attn.hook_pattern": lambda M, name: torch.eye(6).expand_as(M)})


@pytest.mark.parametrize("mixer", OTHERS)
def test_mixers_reject_an_attention_bias(mixer):
    cfg = cfg_for(mixer)
    model = SeedTransformer(cfg, [0])
    with pytest.raises(ValueError, match="hook_scores"):
        model(tokens(cfg, E=1), {hk.scores_name(0): hk.attention_bias(torch.ones(12, 12))})


@pytest.mark.parametrize("mixer", MIXERS)
def test_parameter_count_and_matching(mixer):
    cfg = cfg_for(mixer)
    model = SeedTransformer(cfg, [0])
    assert parameter_count(cfg) == sum(p[0].numel() for p in model.parameters())
    target = parameter_count(cfg_for("attention", d_mlp=64))
    matched = ModelConfig(**{**cfg.to_dict(), "d_mlp": matched_d_mlp(cfg, target)})
    assert abs(parameter_count(matched) - target) <= cfg.n_layer * (2 * cfg.d_model + 1)


def test_effective_distribution_normalises_absolute_mass():
    M = torch.tensor([[2.0, 0.0], [-1.0, 3.0]])
    torch.testing.assert_close(effective_distribution(M), torch.tensor([[1.0, 0.0], [0.25, 0.75]]))

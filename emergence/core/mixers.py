"""Sequence mixers other than softmax attention, each with a leading seed axis (claim 8).

Every mixer fills the transformer block's token-mixing slot (`blocks.{l}.attn`), so the
embedding, MLPs, head, trainer and hooks are shared with the transformer. Each mixer's core
but the token MLP's is linear in its values given the gates, `z = M @ v` per head, with an
effective token-mixing matrix M [E, B, H, T, T] (causal: M[t, s] = 0 for s > t):

    static_mixing   M = tril(W)                 one learned T x T matrix per head, the same
                                                for every sequence (one reading of the paper's
                                                causal MLP-Mixer; no softmax, no content)
    token_mlp       z = W2 gelu(W1 x + b1) + b2 across positions, per channel, W1 and W2
                    lower-triangular T x T (Tolstikhin et al. 2021's token-mixing MLP, the
                    paper's citation, made causal); M is its Jacobian averaged over channels,
                    W2 diag(mean_c gelu'(W1 x + b1)) W1, which hooks may read, not replace
    unmasked_mixing static_mixing with the full T x T matrix: a control, not causal (a
                    position sees the token it predicts), that must look "faster" for the
                    wrong reason (claim 8's comparison is only as good as its masking)
    mamba2          M[t, s] = (C_t . B_s) exp(sum_{s<r<=t} dt_r A) dt_s      Mamba-2's SSD
    gated_deltanet  S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T,  o_t = S_t q_t
    rwkv7           S_t = S_{t-1} (diag(w_t) - kk_t (a_t * kk_t)^T) + v_t k_t^T, o_t = S_t r_t

`blocks.{l}.attn.hook_pattern` carries M (raw, signed), and a hook that returns a new M
overrides the mixing exactly as it overrides attention probabilities; `hook_z` carries the
per-head outputs. Mixers have no pre-softmax scores, so a hook on hook_scores is an error.

Fast paths avoid M where it is not needed: Gated DeltaNet solves its triangular system
against the values; RWKV-7 runs a chunked WY form (32 tokens a chunk, a state carried
between chunks; its per-channel decays rule out one T x T decay matrix, but RWKV-7 bounds
them, so decayed keys stay within float32 inside a chunk). With a pattern hook both build M
(RWKV-7 by running the chunked form on one-hot values). Each is tested against its
published recurrence (RWKV-7: `RWKV7.recurrence`, the reference kernel's loop) in
tests/test_mixers.py. With `kernels: cuda` the training path runs the published CUDA kernels
instead (emergence/core/mixer_kernels.py).
"""
from __future__ import annotations

import math
from typing import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from emergence.core import mixer_kernels
from emergence.core.hooks import Hook
from emergence.core.hooks import apply_hook as _hook
from emergence.core.layers import SeedLinear
from emergence.core.precision import float32_core

MIXERS = ("attention", "static_mixing", "token_mlp", "unmasked_mixing", "mamba2", "gated_deltanet", "rwkv7")
# Mixers whose output at t reads no input after t; the others are controls that break it.
CAUSAL_MIXERS = tuple(m for m in MIXERS if m != "unmasked_mixing")


class _CausalConv(torch.autograd.Function):
    """Depthwise causal convolution with a hand-written backward: autograd's version of the
    shifted multiply-adds reduces each tap's weight gradient over a broadcast, ~2x slower on CPU."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        K, T = weight.shape[-1], x.shape[2]
        tap = lambda j: weight[:, None, None, :, K - 1 - j]  # the tap that reads x[t - j]
        out = x * tap(0)
        for j in range(1, min(K, T)):
            out[:, :, j:].addcmul_(x[:, :, :T - j], tap(j))
        ctx.save_for_backward(x, weight)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor):
        x, weight = ctx.saved_tensors
        K, T = weight.shape[-1], x.shape[2]
        tap = lambda j: weight[:, None, None, :, K - 1 - j]
        grad_x = grad * tap(0)
        grad_w = torch.zeros_like(weight)
        grad_w[..., K - 1] = (grad * x).sum((1, 2))
        for j in range(1, min(K, T)):
            grad_x[:, :, :T - j].addcmul_(grad[:, :, j:], tap(j))
            grad_w[..., K - 1 - j] = (grad[:, :, j:] * x[:, :, :T - j]).sum((1, 2))
        return grad_x, grad_w


def causal_conv(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Depthwise causal convolution along time: x [E, B, T, C], weight [E, C, K] -> [E, B, T, C];
    output t sees inputs t-K+1..t (zeros before the start), weight[..., K-1] on x[t]."""
    return _CausalConv.apply(x, weight)


# exp() of an argument below about -87 (float32's normal range ends at e^-87.3), or of -inf,
# takes a scalar slow path on CPU, 5-50x slower than the vectorised one; e^-80 ~ 2e-35 is zero
# for every use here, so log-decay sums are floored there before the exponential.
LOG_DECAY_FLOOR = -80.0


def causal_mask(T: int, like: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    """[T, T] float mask, 1 where s <= t + diagonal: multiplying by it is several times faster
    on CPU than masked_fill or tril on [.., T, T] tensors, forward and backward."""
    return torch.ones(T, T, dtype=like.dtype, device=like.device).tril(diagonal)


class _DecayMatrix(torch.autograd.Function):
    """D = exp(clamp(cum_t - cum_s)) masked to s <= t, with a hand-written backward: autograd's
    chain (clamp, exp, mask) would allocate several T x T temporaries per call."""

    @staticmethod
    def forward(ctx, log_decay: torch.Tensor) -> torch.Tensor:
        T = log_decay.shape[-1]
        cum = log_decay.cumsum(-1)
        D = (cum.unsqueeze(-1) - cum.unsqueeze(-2)).clamp_(LOG_DECAY_FLOOR, 0.0).exp_()
        D.mul_(causal_mask(T, D))
        ctx.save_for_backward(D)
        return D

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (D,) = ctx.saved_tensors
        g = grad * D                                   # d/d(cum_t - cum_s); 0 where masked
        g_cum = g.sum(-1) - g.sum(-2)                  # cum_t enters row t with +, column t with -
        return g_cum.flip(-1).cumsum(-1).flip(-1)      # cum = cumsum(log_decay)


def decay_matrix(log_decay: torch.Tensor) -> torch.Tensor:
    """[..., T] per-step log decays (<= 0) -> [..., T, T] with D[t, s] = exp(sum_{s<r<=t} log_decay_r)
    for s <= t and 0 above the diagonal. A difference of cumulative sums, clamped to
    [LOG_DECAY_FLOOR, 0] before the exponential (above the diagonal the difference is >= 0 and
    would overflow) and masked after it. A clamped entry's gradient is at most e^-80 times the
    incoming one."""
    return _DecayMatrix.apply(log_decay)


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class SeedParams(nn.Module):
    """Shared helpers: per-seed parameters and the block's hook names."""

    def __init__(self, cfg, n_seeds: int, layer: int):
        super().__init__()
        self.cfg, self.layer, self.n_seeds = cfg, layer, n_seeds
        self.prefix = f"blocks.{layer}.attn."

    def param(self, *shape: int) -> nn.Parameter:
        return nn.Parameter(torch.zeros(self.n_seeds, *shape))

    def check_hooks(self, hooks: Mapping[str, Hook] | None) -> None:
        if hooks and self.prefix + "hook_scores" in hooks:
            raise ValueError(f"{self.prefix}hook_scores: the {self.cfg.mixer} mixer has no pre-softmax scores "
                             "(an attention bias applies to attention only)")

    def wants_pattern(self, hooks: Mapping[str, Hook] | None) -> bool:
        return bool(hooks) and self.prefix + "hook_pattern" in hooks

    def library_kernel(self, hooks: Mapping[str, Hook] | None):
        """The library kernel for this mixer's core under kernels = cuda, else None (the reference
        path; always taken when a hook reads or replaces the mixing matrix)."""
        if self.cfg.kernels != "cuda" or self.wants_pattern(hooks):
            return None
        return mixer_kernels.library_kernel(self.cfg.mixer)

    def finish(self, z: torch.Tensor, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        """z [E, B, H, T, dh] -> hook_z [E, B, T, H, dh] -> [E, B*T, H*dh]."""
        z = _hook(hooks, self.prefix + "hook_z", z.transpose(2, 3))
        E, B, T = z.shape[:3]
        return z.reshape(E, B * T, -1)


def _linear(n_seeds: int, d_in: int, d_out: int, bias: bool = False) -> SeedLinear:
    return SeedLinear(n_seeds, d_in, d_out, bias=bias)


def _uniform_(p: torch.Tensor, low: float, high: float, gen: torch.Generator) -> None:
    p.copy_(low + (high - low) * torch.rand(p.shape, generator=gen))


def _reset_ssm_gates(module: nn.Module, k: int, gen: torch.Generator) -> None:
    """Mamba-style init of seed k: conv U(+-1/sqrt(K)), A in -[1, 16], dt log-uniform in
    [1e-3, 0.1] stored as softplus^-1(dt), norm weight 1."""
    bound = 1.0 / math.sqrt(module.cfg.conv_kernel)
    _uniform_(module.conv_weight[k], -bound, bound, gen)
    _uniform_(module.A_log[k], 0.0, math.log(16.0), gen)
    dt = torch.exp(torch.rand(module.dt_bias.shape[1:], generator=gen) * (math.log(0.1) - math.log(1e-3))
                   + math.log(1e-3))
    module.dt_bias[k].copy_(dt + torch.log(-torch.expm1(-dt)))
    module.norm_weight[k].fill_(1.0)


def _heads(x: torch.Tensor, batch: int, n_head: int) -> torch.Tensor:
    """[E, B*T, H*dh] -> [E, B, H, T, dh]."""
    E, N, C = x.shape
    return x.view(E, batch, N // batch, n_head, C // n_head).transpose(2, 3)


class StaticMixing(SeedParams):
    """Token mixing by a learned lower-triangular T x T matrix per head on projected values,
    then an output projection (the block's MLP does the channel mixing)."""

    masked = True  # lower-triangular; the unmasked control sets False

    def __init__(self, cfg, n_seeds: int, layer: int):
        super().__init__(cfg, n_seeds, layer)
        d, T = cfg.d_model, cfg.seq_len
        self.value = _linear(n_seeds, d, d, bias=True)
        self.token_mixing = self.param(cfg.n_head, T, T)
        self.proj = _linear(n_seeds, d, d, bias=True)
        allowed = torch.ones(T, T, dtype=torch.bool)
        self.register_buffer("causal", allowed.tril() if self.masked else allowed, persistent=False)

    @torch.no_grad()
    def reset_seed_(self, k: int, gen: torch.Generator) -> None:
        # Start from the running mean over the positions each may read (causal: its prefix) plus noise.
        mean = self.causal.float() / self.causal.float().sum(-1, keepdim=True)
        self.token_mixing[k].copy_(mean + 0.02 * torch.randn(self.token_mixing.shape[1:], generator=gen))

    def mixing(self, T: int) -> torch.Tensor:
        return self.token_mixing[:, :, :T, :T].masked_fill(~self.causal[:T, :T], 0.0)  # [E, H, T, T]

    def forward(self, x: torch.Tensor, batch: int, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        self.check_hooks(hooks)
        v = _heads(self.value(x), batch, self.cfg.n_head)                  # [E, B, H, T, dh]
        M = self.mixing(v.shape[3]).unsqueeze(1)                            # [E, 1, H, T, T]
        if self.wants_pattern(hooks):
            M = _hook(hooks, self.prefix + "hook_pattern", M.expand(-1, batch, -1, -1, -1))
        return self.proj(self.finish(M @ v, hooks))


class UnmaskedMixing(StaticMixing):
    """The static mixing matrix without its mask: position t reads every position, the token it
    predicts among them. A control for claim 8: a Mixer that learns 'faster' this way learns to
    copy, so the comparison's Mixers are shown to gain nothing from the future."""

    masked = False


def _gelu_slope(h: torch.Tensor) -> torch.Tensor:
    """d gelu(h) / dh for the exact (erf) GELU: Phi(h) + h phi(h)."""
    return 0.5 * (1.0 + torch.erf(h * math.sqrt(0.5))) + h * torch.exp(-0.5 * h * h) / math.sqrt(2.0 * math.pi)


class TokenMLP(SeedParams):
    """Tolstikhin et al. (2021)'s token-mixing MLP made causal: for every channel c of the
    normalised input, z[:, c] = W2 gelu(W1 x[:, c] + b1) + b2 across positions, with W1 and W2
    lower-triangular T x T (hidden unit j reads positions <= j and output t hidden units <= t,
    so output t reads positions <= t; hidden width T), shared over channels. As in the Mixer
    there is no value or output projection: the block's MLP mixes channels. The pattern hook
    reads the layer's Jacobian averaged over channels, W2 diag(mean_c gelu'(h_c)) W1 [E, B, H,
    T, T] (the same for every head of one layer), the mixing the MLP applies at that input."""

    def __init__(self, cfg, n_seeds: int, layer: int):
        super().__init__(cfg, n_seeds, layer)
        T = cfg.seq_len
        self.w1, self.b1 = self.param(T, T), self.param(T)
        self.w2, self.b2 = self.param(T, T), self.param(T)
        self.register_buffer("causal", torch.ones(T, T, dtype=torch.bool).tril(), persistent=False)

    @torch.no_grad()
    def reset_seed_(self, k: int, gen: torch.Generator) -> None:
        # nn.Linear's init, U(+-1/sqrt(fan_in)), with each row's fan-in the positions it reads.
        T = self.w1.shape[-1]
        bound = 1.0 / torch.arange(1, T + 1, dtype=torch.float32).sqrt()
        for w, b in ((self.w1, self.b1), (self.w2, self.b2)):
            w[k].copy_((2 * torch.rand(T, T, generator=gen) - 1) * bound[:, None])
            b[k].copy_((2 * torch.rand(T, generator=gen) - 1) * bound)

    def weights(self, T: int) -> tuple[torch.Tensor, ...]:
        mask = self.causal[:T, :T]
        return (self.w1[:, :T, :T].masked_fill(~mask, 0.0), self.b1[:, :T],
                self.w2[:, :T, :T].masked_fill(~mask, 0.0), self.b2[:, :T])

    def forward(self, x: torch.Tensor, batch: int, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        self.check_hooks(hooks)
        E, N, C = x.shape
        T, H = N // batch, self.cfg.n_head
        w1, b1, w2, b2 = self.weights(T)
        x = x.view(E, batch, T, C)
        h = torch.einsum("ejs,ebsc->ebjc", w1, x) + b1[:, None, :, None]   # [E, B, T, C]
        z = torch.einsum("etj,ebjc->ebtc", w2, F.gelu(h)) + b2[:, None, :, None]
        if self.wants_pattern(hooks):
            slope = _gelu_slope(h).mean(-1)                                  # [E, B, T]
            M = torch.einsum("etj,ebj,ejs->ebts", w2, slope, w1).unsqueeze(2).expand(-1, -1, H, -1, -1)
            if _hook(hooks, self.prefix + "hook_pattern", M) is not M:
                raise ValueError(f"{self.prefix}hook_pattern: the token MLP's pattern is its Jacobian, "
                                 "to read; replacing it has no meaning for a non-linear mixer")
        return self.finish(z.view(E, batch, T, H, C // H).transpose(2, 3), hooks)


class Mamba2(SeedParams):
    """Mamba-2 (Dao & Gu 2024) with one B/C group: in-projection to (z, x, B, C, dt), causal
    depthwise conv + SiLU on (x, B, C), the SSD mixing per head, D skip, gated RMSNorm, and the
    out-projection. d_inner = expand * d_model, split into n_head heads."""

    def __init__(self, cfg, n_seeds: int, layer: int):
        super().__init__(cfg, n_seeds, layer)
        d, H, N = cfg.d_model, cfg.n_head, cfg.d_state
        self.d_inner = cfg.expand * d
        if self.d_inner % H:
            raise ValueError(f"mamba2: expand * d_model = {self.d_inner} must divide into n_head = {H} heads")
        self.in_proj = _linear(n_seeds, d, 2 * self.d_inner + 2 * N + H)
        self.conv_weight = self.param(self.d_inner + 2 * N, cfg.conv_kernel)
        self.conv_bias = self.param(self.d_inner + 2 * N)
        self.dt_bias = self.param(H)
        self.A_log = self.param(H)
        self.D = self.param(H)
        self.norm_weight = self.param(self.d_inner)
        self.proj = _linear(n_seeds, self.d_inner, d)

    @torch.no_grad()
    def reset_seed_(self, k: int, gen: torch.Generator) -> None:
        _reset_ssm_gates(self, k, gen)
        self.D[k].fill_(1.0)

    def gates(self, x: torch.Tensor, batch: int):
        """(z, xs [E,B,H,T,P], B [E,B,T,N], C [E,B,T,N], dt [E,B,H,T])."""
        cfg, E = self.cfg, x.shape[0]
        H, N, Di = cfg.n_head, cfg.d_state, self.d_inner
        T = x.shape[1] // batch
        zxbcdt = self.in_proj(x).view(E, batch, T, -1)
        z, xbc, dt = zxbcdt.split([Di, Di + 2 * N, H], dim=-1)
        xbc = F.silu(causal_conv(xbc, self.conv_weight) + self.conv_bias[:, None, None])
        xs, Bm, Cm = xbc.split([Di, N, N], dim=-1)
        dt = F.softplus(dt + self.dt_bias[:, None, None]).permute(0, 1, 3, 2)  # [E, B, H, T]
        xs = xs.view(E, batch, T, H, Di // H).transpose(2, 3)
        return z, xs, Bm, Cm, dt

    @float32_core
    def mixing(self, Bm, Cm, dt) -> torch.Tensor:
        A = -torch.exp(self.A_log)[:, None, :, None]                        # [E, 1, H, 1]
        decay = decay_matrix(dt * A)                                        # [E, B, H, T, T]
        return (Cm @ Bm.transpose(-1, -2)).unsqueeze(2) * decay * dt.unsqueeze(-2)

    def forward(self, x: torch.Tensor, batch: int, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        self.check_hooks(hooks)
        z, xs, Bm, Cm, dt = self.gates(x, batch)
        kernel = self.library_kernel(hooks)
        if kernel is None:
            y = _hook(hooks, self.prefix + "hook_pattern", self.mixing(Bm, Cm, dt)) @ xs
        else:
            y = mixer_kernels.mamba2_scan(xs, dt, self.A_log, Bm, Cm, kernel)
        y = y + self.D[:, None, :, None, None] * xs                         # [E, B, H, T, P]
        E, B, H, T, P = y.shape
        y = _hook(hooks, self.prefix + "hook_z", y.transpose(2, 3)).reshape(E, B, T, H * P)
        y = _rms_norm(y * F.silu(z), self.norm_weight[:, None, None])
        return self.proj(y.view(E, B * T, -1))


class GatedDeltaNet(SeedParams):
    """Gated DeltaNet (Yang, Kautz & Hatamizadeh 2025): q, k, v projections with short causal
    convs + SiLU, L2-normalised q and k (q scaled by 1/sqrt(d_head)), write strength
    b = sigmoid(.), decay a = exp(-exp(A_log) softplus(. + dt_bias)), per-head RMSNorm of
    the output gated by SiLU(x W_g), out-projection."""

    def __init__(self, cfg, n_seeds: int, layer: int):
        super().__init__(cfg, n_seeds, layer)
        d, H = cfg.d_model, cfg.n_head
        self.qkv = _linear(n_seeds, d, 3 * d)
        self.conv_weight = self.param(3 * d, cfg.conv_kernel)
        self.beta_proj = _linear(n_seeds, d, H)
        self.decay_proj = _linear(n_seeds, d, H)
        self.dt_bias = self.param(H)
        self.A_log = self.param(H)
        self.gate = _linear(n_seeds, d, d)
        self.norm_weight = self.param(d // H)
        self.proj = _linear(n_seeds, d, d)

    @torch.no_grad()
    def reset_seed_(self, k: int, gen: torch.Generator) -> None:
        _reset_ssm_gates(self, k, gen)

    def gates(self, x: torch.Tensor, batch: int):
        """(q, k, v [E,B,H,T,dh], beta [E,B,H,T], log_decay [E,B,H,T])."""
        cfg, E = self.cfg, x.shape[0]
        H, T = cfg.n_head, x.shape[1] // batch
        qkv = F.silu(causal_conv(self.qkv(x).view(E, batch, T, -1), self.conv_weight))
        q, k, v = (_heads(t.reshape(E, batch * T, -1), batch, H) for t in qkv.chunk(3, dim=-1))
        q = F.normalize(q, dim=-1) / math.sqrt(q.shape[-1])
        k = F.normalize(k, dim=-1)
        beta = torch.sigmoid(self.beta_proj(x)).view(E, batch, T, H).permute(0, 1, 3, 2)
        rate = F.softplus(self.decay_proj(x).view(E, batch, T, H) + self.dt_bias[:, None, None])
        log_decay = (-torch.exp(self.A_log)[:, None, None] * rate).permute(0, 1, 3, 2)
        return q, k, v, beta, log_decay

    @staticmethod
    @float32_core
    def core(q, k, v, beta, log_decay, want_mixing: bool):
        """(output [.., T, dv], M or None) via the WY form: with D the decay matrix,
        U = (I + diag(b) strict(D*KK^T))^-1 diag(b) V and O = tril(D*QK^T) U."""
        D = decay_matrix(log_decay)
        # The system is unit lower triangular: the solver reads only the strictly lower part of
        # diag(b) (D * KK^T), so neither the diagonal nor the (zero) upper part needs masking.
        system = (beta.unsqueeze(-1) * k) @ k.transpose(-1, -2) * D
        read = D * (q @ k.transpose(-1, -2))                                # tril through D
        solve = lambda rhs: torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)
        if want_mixing:
            M = read @ solve(torch.diag_embed(beta))
            return M @ v, M
        return read @ solve(beta.unsqueeze(-1) * v), None

    def forward(self, x: torch.Tensor, batch: int, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        self.check_hooks(hooks)
        q, k, v, beta, log_decay = self.gates(x, batch)
        kernel = self.library_kernel(hooks)
        if self.wants_pattern(hooks):
            _, M = self.core(q, k, v, beta, log_decay, want_mixing=True)
            o = _hook(hooks, self.prefix + "hook_pattern", M) @ v
        elif kernel is not None:
            o = mixer_kernels.gated_delta_rule(q, k, v, beta, log_decay, kernel)
        else:
            o, _ = self.core(q, k, v, beta, log_decay, want_mixing=False)
        o = _rms_norm(o, self.norm_weight[:, None, None, None])
        o = self.finish(o, hooks) * F.silu(self.gate(x))
        return self.proj(o)


class RWKV7(SeedParams):
    """RWKV-7 "Goose" time mixing (Peng et al. 2025) without the value-residual path: token
    shift, r/k/v projections, data-dependent per-channel decay w (low-rank), in-context
    learning rate a (low-rank), removal key kk = normalise(k * k_k), replacement key
    k * (1 + (a - 1) k_a), the generalised delta-rule state, the r.(k * r_k) bonus, per-head
    GroupNorm, a low-rank sigmoid gate and the out-projection."""

    def __init__(self, cfg, n_seeds: int, layer: int):
        super().__init__(cfg, n_seeds, layer)
        d = cfg.d_model
        rank = max(4, d // 8)
        self.shift_mix = self.param(6, d)                                   # r, w, k, v, a, g
        self.receptance = _linear(n_seeds, d, d)
        self.key = _linear(n_seeds, d, d)
        self.value = _linear(n_seeds, d, d)
        self.w0, self.w1, self.w2 = self.param(d), _linear(n_seeds, d, rank), _linear(n_seeds, rank, d)
        self.a0, self.a1, self.a2 = self.param(d), _linear(n_seeds, d, rank), _linear(n_seeds, rank, d)
        self.g1, self.g2 = _linear(n_seeds, d, rank), _linear(n_seeds, rank, d)
        self.k_k, self.k_a, self.r_k = self.param(d), self.param(d), self.param(d)
        self.ln_x_weight, self.ln_x_shift = self.param(d), self.param(d)
        self.proj = _linear(n_seeds, d, d)

    @torch.no_grad()
    def reset_seed_(self, k: int, gen: torch.Generator) -> None:
        d = self.cfg.d_model
        _uniform_(self.shift_mix[k], 0.0, 1.0, gen)
        n = torch.arange(d, dtype=torch.float32) / max(1, d - 1)
        self.w0[k].copy_(-7.0 + 5.0 * n ** 0.85 + 0.5)                      # slow to fast decays
        self.a0[k].zero_()
        self.k_k[k].fill_(0.85)
        self.k_a[k].fill_(1.0)
        self.r_k[k].zero_()
        self.ln_x_weight[k].fill_(1.0)
        self.ln_x_shift[k].zero_()

    def gates(self, x: torch.Tensor, batch: int):
        """(r, log_decay, k, v, a, kk [E,B,H,T,dh], g [E, B*T, d])."""
        E, N, d = x.shape
        T, H = N // batch, self.cfg.n_head
        xt = x.view(E, batch, T, d)
        delta = (F.pad(xt, (0, 0, 1, 0))[:, :, :T] - xt).view(E, N, d)
        xr, xw, xk, xv, xa, xg = (x + delta * self.shift_mix[:, i, None] for i in range(6))
        r, k, v = self.receptance(xr), self.key(xk), self.value(xv)
        log_w = -F.softplus(-(self.w0[:, None] + self.w2(torch.tanh(self.w1(xw))))) - 0.5
        log_decay = -torch.exp(log_w)                             # in [-e^-0.5, 0): decay in (0.545, 1)
        a = torch.sigmoid(self.a0[:, None] + self.a2(self.a1(xa)))
        g = self.g2(torch.sigmoid(self.g1(xg)))
        kk = F.normalize(_heads(k * self.k_k[:, None], batch, H), dim=-1)
        k = k * (1 + (a - 1) * self.k_a[:, None])
        heads = [_heads(t, batch, H) for t in (r, log_decay, k, v, a)]
        return (*heads, kk, g)

    @staticmethod
    def recurrence(r, w, k, v, a, kk) -> torch.Tensor:
        """o_t = S_t r_t with S_t = S_{t-1} (diag(w_t) - kk_t (a_t kk_t)^T) + v_t k_t^T (S: [dv, dk])."""
        T = r.shape[-2]
        S = r.new_zeros(*r.shape[:-2], v.shape[-1], r.shape[-1])
        outs = []
        for t in range(T):
            rt, wt, kt, vt, at, kkt = (x[..., t, :] for x in (r, w, k, v, a, kk))
            removal = (S @ kkt.unsqueeze(-1)) @ (at * kkt).unsqueeze(-2)
            S = S * wt.unsqueeze(-2) - removal + vt.unsqueeze(-1) * kt.unsqueeze(-2)
            outs.append((S @ rt.unsqueeze(-1)).squeeze(-1))
        return torch.stack(outs, dim=-2)

    @staticmethod
    @float32_core
    def chunked(r, log_decay, k, v, a, kk, chunk: int = 32) -> torch.Tensor:
        """`recurrence`'s output a chunk of tokens at a time (the WY form of diagonal-plus-rank-one
        transitions, as flash-linear-attention's DPLR chunk kernels). With S_t = S_{t-1} diag(w_t)
        + u_t b_t^T + v_t k_t^T, where u_t = S_{t-1}(-kk_t) and b_t = a_t kk_t, and c_t the
        cumulative log decay within the chunk (S0 the state before it):
            S_t = S0 diag(e^{c_t}) + sum_{s<=t} (u_s b_s^T + v_s k_s^T) diag(e^{c_t - c_s}),
        so U solves (I - A_ub) U = A_uk V + S0-term and O = R_b U + R_k V + S0-term, with T x T
        matrices pairing decayed vectors, e.g. A_ub[t, s] = (-kk_t e^{c_{t-1}}) . (b_s e^{-c_s}), s < t.
        The decayed vectors are referenced to the chunk's middle; RWKV-7 bounds each log decay to
        [-e^-0.5, 0), so e^{+-c} stays within float32 for chunks up to ~100 tokens."""
        T = r.shape[-2]
        S = None
        outs = []
        for start in range(0, T, chunk):
            rc, lc, kc, vc, ac, kkc = (x[..., start:start + chunk, :] for x in (r, log_decay, k, v, a, kk))
            C = rc.shape[-2]
            cum = lc.cumsum(-2)                                             # c_t
            prev = cum - lc                                                 # c_{t-1}
            mid = cum[..., C // 2:C // 2 + 1, :]
            inv = torch.exp(mid - cum)
            u_read = kkc * torch.exp(prev - mid)                            # u_t reads with -kk_t: sign below
            o_read = rc * torch.exp(cum - mid)
            b_write, k_write = ac * kkc * inv, kc * inv
            upto = causal_mask(C, r)
            strict = causal_mask(C, r, diagonal=-1)
            # (I - A_ub) = (I + u_read b_write^T): unit lower triangular, read below the diagonal only.
            neg_A_ub = u_read @ b_write.mT
            rhs = -((u_read @ k_write.mT) * strict) @ vc
            out = ((o_read @ k_write.mT) * upto) @ vc
            if S is not None:
                rhs = rhs - (kkc * prev.exp()) @ S.mT
                out = out + (rc * cum.exp()) @ S.mT
            U = torch.linalg.solve_triangular(neg_A_ub, rhs, upper=False, unitriangular=True)
            outs.append(out + ((o_read @ b_write.mT) * upto) @ U)
            if start + chunk < T:
                last = cum[..., -1:, :]
                to_end = torch.exp(last - cum)
                carried = 0.0 if S is None else S * last.exp()
                S = carried + U.mT @ (ac * kkc * to_end) + vc.mT @ (kc * to_end)
        return torch.cat(outs, dim=-2)

    def bonus(self, r, k) -> torch.Tensor:
        """The diagonal term r_t . (k_t * r_k) per head [E, B, H, T]."""
        r_k = self.r_k.view(self.n_seeds, 1, self.cfg.n_head, 1, -1)
        return (r * k * r_k).sum(-1)

    def forward(self, x: torch.Tensor, batch: int, hooks: Mapping[str, Hook] | None) -> torch.Tensor:
        self.check_hooks(hooks)
        r, log_decay, k, v, a, kk, g = self.gates(x, batch)
        bonus = self.bonus(r, k)
        if self.wants_pattern(hooks):
            T = r.shape[-2]
            eye = torch.eye(T, dtype=x.dtype, device=x.device).expand(*r.shape[:-2], T, T)
            M = self.chunked(r, log_decay, k, eye, a, kk) + torch.diag_embed(bonus)
            o = _hook(hooks, self.prefix + "hook_pattern", M) @ v
        else:
            kernel = self.library_kernel(hooks)
            state = (self.chunked(r, log_decay, k, v, a, kk) if kernel is None
                     else mixer_kernels.rwkv7_scan(r, log_decay, k, v, a, kk, kernel))
            o = state + bonus.unsqueeze(-1) * v
        o = F.layer_norm(o, o.shape[-1:], eps=64e-5)                         # GroupNorm, one group per head
        o = self.finish(o, hooks)
        o = o * self.ln_x_weight[:, None] + self.ln_x_shift[:, None]
        return self.proj(o * g)


MIXER_CLASSES = {"static_mixing": StaticMixing, "token_mlp": TokenMLP, "unmasked_mixing": UnmaskedMixing,
                 "mamba2": Mamba2, "gated_deltanet": GatedDeltaNet, "rwkv7": RWKV7}


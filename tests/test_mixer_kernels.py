"""The CUDA-kernel switch (model.kernels = cuda): the adapters' mapping onto each library's
parameterisation, checked on a CPU against plain implementations of the libraries' documented
recurrences (written here from their docstrings and naive references), and the real kernels
against the reference mixers where CUDA and the libraries are present."""
import importlib.util

import pytest
import torch

from emergence.core import kernel_refusals, mixer_kernels
from emergence.core.mixers import RWKV7, GatedDeltaNet
from emergence.core.model import SeedTransformer
from tests.test_mixers import cfg_for, perturbed_gates, tokens


def ssd_scan(x, dt, A, B, C, chunk_size):
    """mamba-ssm's mamba_chunk_scan_combined: x [b, T, H, P], dt [b, T, H], A [H] (one per head,
    shared by the batch), B, C [b, T, G, N]; h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T, y_t = h_t C_t."""
    assert A.dim() == 1 and A.shape[0] == x.shape[2], "mamba-ssm takes one A per head"
    assert chunk_size & (chunk_size - 1) == 0
    b, T, H, P = x.shape
    Bh, Ch = B.expand(-1, -1, H, -1), C.expand(-1, -1, H, -1)            # one group for every head
    h = x.new_zeros(b, H, P, B.shape[-1])
    ys = []
    for t in range(T):
        decay = torch.exp(dt[:, t] * A)[..., None, None]
        h = decay * h + (dt[:, t, :, None] * x[:, t])[..., None] * Bh[:, t, :, None, :]
        ys.append((h @ Ch[:, t, :, :, None]).squeeze(-1))
    return torch.stack(ys, dim=1)


def gated_delta(q, k, v, g, beta, scale):
    """fla's chunk_gated_delta_rule ([b, T, H, d], g and beta [b, T, H]), as its fused recurrent
    kernel: S = exp(g) S; v' = beta (v - S^T k); S += k v'^T; o = scale S^T q."""
    assert q.dtype == k.dtype == v.dtype == beta.dtype and g.dtype == torch.float32
    qf, kf, vf, bf = (t.double() for t in (q, k, v, beta))
    b, T, H, K = q.shape
    S = qf.new_zeros(b, H, K, v.shape[-1])
    outs = []
    for t in range(T):
        S = S * g[:, t].double().exp()[..., None, None]
        new = bf[:, t, :, None] * (vf[:, t] - (S * kf[:, t, :, :, None]).sum(-2))
        S = S + kf[:, t, :, :, None] * new[:, :, None, :]
        outs.append((S * qf[:, t, :, :, None]).sum(-2) * scale)
    return torch.stack(outs, dim=1).to(q.dtype), None


def dplr(q, k, v, a, b, gk, scale, initial_state, output_final_state):
    """fla's chunk_dplr_delta_rule, as its naive dplr_recurrence (state [K, V]):
    S = S * exp(gk) + k v^T + b (a^T S_prev); o = scale q^T S."""
    assert initial_state is None and not output_final_state
    bsz, T, H, K = q.shape
    S = q.new_zeros(bsz, H, K, v.shape[-1])
    outs = []
    for t in range(T):
        removal = b[:, t, :, :, None] * (S * a[:, t, :, :, None]).sum(-2, keepdim=True)
        S = S * gk[:, t].exp()[..., None] + k[:, t, :, :, None] * v[:, t, :, None, :] + removal
        outs.append((S * q[:, t, :, :, None]).sum(-2) * scale)
    return torch.stack(outs, dim=1), None


FAKES = {"mamba2": ssd_scan, "gated_deltanet": gated_delta, "rwkv7": dplr}


def _gates(mixer, seeds=(0, 1), B=3, dtype=torch.float64):
    cfg = cfg_for(mixer, expand=2 if mixer == "mamba2" else 1)
    model = perturbed_gates(SeedTransformer(cfg, list(seeds))).to(dtype)
    block = model.blocks[0].attn
    x = torch.randn(len(seeds), B * cfg.seq_len, cfg.d_model, dtype=dtype, generator=torch.Generator().manual_seed(1))
    return block, block.gates(x, B)


def test_mamba2_adapter_is_the_reference_ssd_per_seed():
    block, (z, xs, Bm, Cm, dt) = _gates("mamba2")
    ours = mixer_kernels.mamba2_scan(xs, dt, block.A_log, Bm, Cm, ssd_scan)
    torch.testing.assert_close(ours, block.mixing(Bm, Cm, dt) @ xs)
    # The seeds' A differ, so a scan that used one seed's A for both would not match.
    assert not torch.allclose(block.A_log[0], block.A_log[1])


def test_gated_deltanet_adapter_is_the_reference_and_can_run_in_bfloat16():
    block, (q, k, v, beta, log_decay) = _gates("gated_deltanet")
    reference, _ = GatedDeltaNet.core(q, k, v, beta, log_decay, want_mixing=False)
    torch.testing.assert_close(mixer_kernels.gated_delta_rule(q, k, v, beta, log_decay, gated_delta), reference)
    low = mixer_kernels.gated_delta_rule(q.float(), k.float(), v.float(), beta.float(), log_decay.float(),
                                         gated_delta, dtype=torch.bfloat16)  # fla releases before 0.6
    assert low.dtype == torch.float32
    torch.testing.assert_close(low.double(), reference, rtol=0.05, atol=0.05)


def test_rwkv7_adapter_is_the_chunked_form():
    block, (r, log_decay, k, v, a, kk, g) = _gates("rwkv7")
    ours = mixer_kernels.rwkv7_scan(r, log_decay, k, v, a, kk, dplr)
    torch.testing.assert_close(ours, RWKV7.chunked(r, log_decay, k, v, a, kk))


@pytest.mark.parametrize("mixer", sorted(FAKES))
def test_kernels_cuda_routes_the_training_path_and_not_pattern_hooks(mixer, monkeypatch):
    """A model with kernels = cuda calls the library kernel on its plain forward (here a CPU
    stand-in with the library's semantics: the outputs equal the reference model's) and keeps the
    reference path when a hook reads the mixing matrix."""
    calls = []

    def fake(name):
        def kernel(*args, **kwargs):
            calls.append(name)
            return FAKES[name](*args, **kwargs)
        return kernel

    monkeypatch.setattr(mixer_kernels, "library_kernel", fake)
    dtype = torch.float64
    ref_cfg = cfg_for(mixer)
    cuda_cfg = cfg_for(mixer, kernels="cuda")
    reference = perturbed_gates(SeedTransformer(ref_cfg, [0, 1])).to(dtype)
    switched = SeedTransformer(cuda_cfg, [0, 1]).to(dtype)
    switched.load_state_dict(reference.state_dict())
    tok = tokens(ref_cfg)
    torch.testing.assert_close(switched(tok), reference(tok))
    assert calls == [mixer] * ref_cfg.n_layer
    calls.clear()
    seen = []
    switched(tok, {"blocks.0.attn.hook_pattern": lambda m, name: seen.append(m.shape)})
    assert seen and calls == [mixer]  # layer 0 took the reference path, layer 1 the kernel


def test_check_available_names_what_is_missing():
    with pytest.raises(ValueError, match="kernels = cuda needs a CUDA device"):
        mixer_kernels.check_available({"mamba2"}, "cpu")
    if importlib.util.find_spec("mamba_ssm") is None:
        with pytest.raises(ImportError, match="needs mamba-ssm"):
            mixer_kernels.check_available({"mamba2", "static_mixing"}, "cuda")
    mixer_kernels.check_available({"static_mixing", "attention"}, "cuda")  # no library kernel to need


def _library_missing(mixer: str) -> str | None:
    """Why `mixer`'s library kernel cannot run here, or None where it can."""
    if not torch.cuda.is_available():
        return "no CUDA device on this machine"
    package = mixer_kernels.LIBRARY_KERNELS[mixer][0].split(".")[0]
    if importlib.util.find_spec(package) is None:
        return f"{package} is not installed (make cuda-kernels)"
    return kernel_refusals.refusal(mixer)  # the library's own refusal on this GPU: not ours to test


@pytest.mark.parametrize("mixer", sorted(FAKES))
def test_library_kernels_match_the_reference_on_cuda(mixer):
    """Outputs and parameter gradients of a 2-layer model on the kernels against the reference
    forms, on the same GPU, float32 (relative error; the kernels may use TF32 tensor cores)."""
    if why := _library_missing(mixer):
        pytest.skip(why)
    seq_len = 80  # more than one 64-token kernel chunk
    ref_cfg, cuda_cfg = cfg_for(mixer, seq_len=seq_len), cfg_for(mixer, seq_len=seq_len, kernels="cuda")
    reference = perturbed_gates(SeedTransformer(ref_cfg, [0, 1, 2])).cuda()
    switched = SeedTransformer(cuda_cfg, [0, 1, 2]).cuda()
    switched.load_state_dict(reference.state_dict())
    tok = tokens(ref_cfg, E=3, B=4).cuda()
    tol = 0.01
    outs = []
    for model in (reference, switched):
        logits = model(tok)
        grads = torch.autograd.grad(logits.square().mean(), list(model.parameters()))
        outs.append((logits, grads))
    rel = lambda a, b: float((a - b).norm() / b.norm().clamp_min(1e-12))
    errors = {"logits": rel(outs[1][0], outs[0][0])}
    errors.update({name: rel(g_cuda, g_ref)
                   for (name, _), g_cuda, g_ref in zip(reference.named_parameters(), outs[1][1], outs[0][1])})
    print(f"{mixer}: relative error, logits {errors['logits']:.2e}, worst gradient "
          f"{max(v for k, v in errors.items() if k != 'logits'):.2e}")
    assert errors.pop("logits") < tol
    assert max(errors.values()) < 2 * tol, max(errors, key=errors.get)


def test_the_hopper_triton_refusal_follows_fla():
    assert kernel_refusals.release("3.7.1+git4a2f") == (3, 7, 1)
    refused = kernel_refusals.gated_backward_refused
    assert refused("NVIDIA H200", (9, 0), "3.6.0", tilelang_installed=False)            # seen on the device
    assert refused("NVIDIA H100 80GB HBM3", (9, 0), "3.4.0", tilelang_installed=False)
    assert not refused("NVIDIA H200", (9, 0), "3.7.1", tilelang_installed=False)        # fixed release
    assert not refused("NVIDIA H200", (9, 0), "3.3.1", tilelang_installed=False)        # before the defect
    assert not refused("NVIDIA H200", (9, 0), "3.6.0", tilelang_installed=True)         # fla's other backend
    assert not refused("NVIDIA A100-SXM4-80GB", (8, 0), "3.6.0", tilelang_installed=False)
    assert kernel_refusals.refusal("rwkv7") is None and kernel_refusals.refusal("mamba2") is None

"""train.precision: bfloat16 autocast where it is fast, float32 everywhere the claims are read."""
import copy
import json
from dataclasses import replace
import math
import warnings

import numpy as np
import pytest
import torch
import xarray as xr

from emergence.analysis.precision_agreement import (STATISTICS, Comparison, agreement, forecast, precision_statistics,
                                                    seeds_to_fit, smallest_p)
from emergence.common.io import read_netcdf
from emergence.core import precision
from emergence.core.hooks import attention_bias, scores_name
from emergence.core.model import ModelConfig, SeedTransformer
from emergence.core.tasks import linear_map
from emergence.core.train import make_optimizer, train_step
from emergence.pipeline.config import load_params
from emergence.pipeline.stage import pipeline_paths
from emergence.runs.cells import Budget, Setting, cell_key, with_budget
from emergence.tools.precision_record import precision_record

import typed_params as typed
from training_reference import train_task

CPU = torch.device("cpu")
HAS_BF16 = precision.bf16_support(CPU)[0]
OPT = replace(Setting.of(load_params(profile="smoke")).linear_map.train, lr=1e-3, beta1=0.9, beta2=0.999,
              weight_decay=0.0)


def test_float32_is_never_changed():
    assert precision.resolve("float32", CPU) == "float32"
    with pytest.raises(ValueError, match="bf16-autocast"):
        precision.resolve("fp16", CPU)


def test_bf16_falls_back_to_float32_with_a_message_where_the_cpu_lacks_it(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    with pytest.warns(UserWarning, match="amx_bf16, avx512_bf16; training in float32"):
        assert precision.resolve("bf16-autocast", CPU) == "float32"
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "amx_bf16"}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert precision.resolve("bf16-autocast", CPU) == "bf16-autocast"


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx512_bf16 amx_tile\n")
    precision.cpu_flags.cache_clear()
    try:
        assert precision.cpu_flags(str(info)) == {"fpu", "sse", "avx512_bf16", "amx_tile"}
        assert precision.cpu_flags(str(tmp_path / "missing")) == frozenset()
    finally:
        precision.cpu_flags.cache_clear()


@pytest.mark.skipif(not HAS_BF16, reason="no fast bfloat16 on this CPU")
@pytest.mark.parametrize("mixer", ["attention", "static_mixing", "token_mlp", "unmasked_mixing", "mamba2", "gated_deltanet", "rwkv7"])
def test_weights_optimiser_and_loss_stay_float32_under_autocast(mixer):
    cfg = ModelConfig(vocab_size=2, seq_len=40, n_layer=1, d_model=16, n_head=2, d_mlp=32, mixer=mixer)
    tokens = torch.randint(0, 2, (2, 4, 40), generator=torch.Generator().manual_seed(0))
    losses = {}
    for name in precision.PRECISIONS:
        model = SeedTransformer(cfg, [0, 1])
        opt = make_optimizer(model, OPT)
        losses[name] = torch.stack([train_step(model, opt, tokens, torch.ones(39), 1.0, precision=name)
                                    for _ in range(3)])
        assert losses[name].dtype == torch.float32
        assert all(p.dtype == torch.float32 for p in model.parameters())
        assert all(v.dtype == torch.float32 for state in opt.state.values() for v in state.values()
                   if isinstance(v, torch.Tensor) and v.is_floating_point())
    # bf16 really ran (not bit-equal) and stays close over the first steps
    assert not torch.equal(losses["float32"], losses["bf16-autocast"])
    torch.testing.assert_close(losses["float32"], losses["bf16-autocast"], rtol=0, atol=2e-3)


@pytest.mark.skipif(not HAS_BF16, reason="no fast bfloat16 on this CPU")
@pytest.mark.parametrize("bias", [False, True])
def test_cpu_autocast_attention_is_the_explicit_product_and_follows_the_fused_float32_kernel(monkeypatch, bias):
    """Under CPU autocast the layer skips the fused kernel (slow there in bfloat16 at these head
    sizes) for the explicit product, softmax in float32; its output and gradients stay within
    bfloat16's precision of the float32 kernel's, with an additive attention bias too."""
    cfg = ModelConfig(vocab_size=2, seq_len=32, n_layer=1, d_model=32, n_head=4, d_mlp=64)
    tokens = torch.randint(0, 2, (2, 8, 32), generator=torch.Generator().manual_seed(0))
    hooks = {scores_name(0): attention_bias(torch.randn(32, 32))} if bias else None
    fused = torch.nn.functional.scaled_dot_product_attention

    def run(autocast: bool):
        model = SeedTransformer(cfg, [0, 1])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = model(tokens, hooks=hooks)
        logits.float().square().mean().backward()
        return logits.float(), model.blocks[0].attn.qkv.weight.grad

    calls = []
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or fused(*a, **k))
    reference, reference_grad = run(False)
    assert calls == [1]  # float32 keeps the fused kernel (the additive bias as its mask)
    out, grad = run(True)
    assert calls == [1]
    torch.testing.assert_close(out, reference, rtol=0, atol=0.05)
    torch.testing.assert_close(grad, reference_grad, rtol=0.05, atol=2e-3)
    assert not torch.equal(out, reference)


def test_recurrent_scans_run_in_float32_under_autocast():
    seen = []
    core = precision.float32_core(lambda x, *, y: seen.append((x.dtype, y.dtype, torch.is_autocast_enabled("cpu"))))
    x = torch.ones(2, dtype=torch.bfloat16)
    core(x, y=x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        core(x, y=x)
    assert seen == [(torch.bfloat16, torch.bfloat16, False), (torch.float32, torch.float32, False)]


@pytest.fixture
def smoke_params():
    params = load_params(profile="smoke")
    params["linear_map"]["train"].update(steps=48, eval_every=8, checkpoint_every=48, resume_every=48,
                                         checkpoint_log_until=4, n_seeds=2, seeds_per_group=2)
    return params


def _run(params, root):
    return train_task(linear_map, params["linear_map"], root, checkpoints=False)


@pytest.mark.skipif(not HAS_BF16, reason="no fast bfloat16 on this CPU")
def test_bf16_training_follows_float32_on_the_smoke_cell(tmp_path, smoke_params):
    """Tolerance: 1e-3 nats on every training loss of the first 48 steps (measured here: 4e-5
    over 200 steps), and the same seed alone or in a group gives the same bytes in bf16 too."""
    f32 = _run(smoke_params, tmp_path / "f32")
    bf16_params = copy.deepcopy(smoke_params)
    bf16_params["linear_map"]["train"]["precision"] = "bf16-autocast"
    bf16 = _run(bf16_params, tmp_path / "bf16")
    assert (f32.attrs["precision"], bf16.attrs["precision"]) == ("float32", "bf16-autocast")
    # evaluation runs outside autocast: before the first step both precisions measure the same model
    for name in ("loss", "accuracy", "attention_entropy", "parent_mass"):
        np.testing.assert_array_equal(f32[name].isel(step=0).values, bf16[name].isel(step=0).values)
    gap = np.abs(f32["train_loss"].values - bf16["train_loss"].values)
    assert 0 < gap.max() < 1e-3
    np.testing.assert_allclose(f32["accuracy"].values, bf16["accuracy"].values, atol=0.05)
    alone_params = copy.deepcopy(bf16_params)
    alone_params["linear_map"]["train"]["seeds_per_group"] = 1
    alone = _run(alone_params, tmp_path / "alone")
    np.testing.assert_array_equal(alone["train_loss"].values, bf16["train_loss"].values)


def test_thread_count_keys_bf16_cells_only(smoke_params):
    """Under CPU bf16 the thread count changes the numbers, so it is in the key; in float32 it
    does not, and changing it must not retrain."""
    budget = Budget(n_seeds=2, steps=10, eval_every=5, eval_sequences=8, examples="answer")
    cell = with_budget(Setting.of(smoke_params).linear_map, {}, budget, batch_size=4)

    def key(prec, threads):
        return cell_key(replace(cell, train=replace(cell.train, precision=prec, threads=threads)))

    assert key("float32", 1)["runs_on"] == {"device": "cpu", "precision": "float32"}
    if HAS_BF16:
        assert key("bf16-autocast", 1)["runs_on"]["threads"] == 1
        assert key("bf16-autocast", 1) != key("bf16-autocast", 2)


def _rows(n: int, rng: np.random.Generator, shift: float = 1.0, rho: float = 1.0) -> tuple[dict, dict]:
    """Both precisions' seed rows for n seeds: lognormal times, losses and [seed, 8] widths;
    bf16's are float32's times `shift`, correlated `rho` with them over the seeds."""
    a, b = {}, {}
    for name, units, mu in (("plateau_end_step", 1, 6.5), ("emergence_step", 1, 6.7), ("final_loss", 1, -1.0),
                            ("unit_transition_width", 8, 5.0)):
        z, e = rng.standard_normal((n, units)), rng.standard_normal((n, units))
        none = np.zeros((n, units), bool)
        a[name] = (np.exp(mu + 0.3 * z), none)
        b[name] = (np.exp(mu + 0.3 * (rho * z + math.sqrt(1 - rho ** 2) * e)) * shift, none)
    return a, b


def _decide(a, b, **kw):
    return agreement(a, b, alpha=0.1, margin=1.25, n_perm=1000, n_boot=400, **kw)


def test_precisions_agree_differ_and_cannot_decide():
    rng = np.random.default_rng(0)
    a, b = _rows(8, rng, shift=1.0, rho=0.99)  # bf16 tracks float32 seed by seed
    assert _decide(a, b)[0] == "agree"
    a, b = _rows(8, rng, shift=1.5, rho=0.99)  # every statistic 1.5x: found
    verdict, why, comparisons = _decide(a, b)
    assert verdict == "differ" and len(why) == len(STATISTICS)
    assert all(c.ratio == pytest.approx(1.5, rel=0.1) and c.p <= 2 / 2 ** 8 for c in comparisons)
    # 4 seeds: a sign-flip test cannot reach alpha / 4, so even 1.5x is undecided, and it says why
    a, b = _rows(4, rng, shift=1.5, rho=0.99)
    verdict, why, _ = _decide(a, b)
    assert verdict == "undecided" and "smallest p is 0.125" in why[-1] and "7 seeds can" in why[-1]
    # unreached in one precision: nothing to compare on that statistic
    a, b = _rows(8, rng, rho=0.99)
    b["emergence_step"] = (b["emergence_step"][0], np.ones_like(b["emergence_step"][1]))
    verdict, why, _ = _decide(a, b)
    assert verdict == "undecided" and why[0].startswith("emergence_step")


def test_identical_runs_agree_exactly():
    a, _ = _rows(6, np.random.default_rng(1))
    verdict, _, comparisons = _decide(a, a)
    assert verdict == "agree" and all((c.ratio, c.low, c.high, c.p) == (1.0, 1.0, 1.0, 1.0) for c in comparisons)


def test_a_harmless_precision_is_rarely_said_to_differ():
    """Uncorrelated pairs of one distribution (the precision makes no difference, the seeds'
    trajectories diverged): the permutation test keeps "differ" near or below alpha; the rule it
    replaced said "differ" for most such tasks."""
    rng = np.random.default_rng(2)
    verdicts = [_decide(*_rows(8, rng, rho=0.0), seed=k)[0] for k in range(40)]
    assert verdicts.count("differ") <= 6 and verdicts.count("agree") == 0


def test_the_forecast_narrows_the_interval_as_one_over_root_n():
    c = Comparison("emergence_step", 1.0, 1 / 1.5, 1.5, 0.5)
    assert seeds_to_fit(c, 8, 1.25) == math.ceil(8 * (math.log(1.5) / math.log(1.25)) ** 2)
    assert seeds_to_fit(Comparison("x", 1.3, 1.2, 1.4, 0.5), 8, 1.25) is None  # the estimate is outside
    assert smallest_p(4) == 0.125 and smallest_p(8) == 2 / 256
    assert forecast(c, 8, 1.25).startswith(f"~{seeds_to_fit(c, 8, 1.25)} seeds")
    assert forecast(Comparison("x", 1.249, 1.1, 1.4, 0.5), 8, 1.25).startswith("more than 1,000 seeds")
    assert forecast(Comparison("x", 1.3, 1.2, 1.4, 0.5), 8, 1.25) == "the estimate lies outside the margin"


def _analysed(widths: np.ndarray, plateau_end: float, budget: float) -> xr.Dataset:
    """An analysed run of [seed, unit] jump widths, NaN: a jump unfinished at the budget."""
    done = np.isfinite(widths)
    seed_vars = {name: (("seed",), np.full(len(widths), value)) for name, value in (
        ("plateau_end_step", plateau_end), ("emergence_step", plateau_end + 10), ("final_loss", 0.3),
        ("plateau_end_censored", 0), ("emergence_censored", 0))}
    return xr.Dataset({**seed_vars,
                       "unit_plateau_end_step": (("seed", "unit"), np.full(widths.shape, plateau_end)),
                       "unit_plateau_end_censored": (("seed", "unit"), np.zeros(widths.shape, np.int8)),
                       "unit_solved_step": (("seed", "unit"), np.where(done, plateau_end + widths, budget)),
                       "unit_solved_censored": (("seed", "unit"), (~done).astype(np.int8))},
                      attrs={"budget_step": budget})


def test_unfinished_jumps_stay_in_the_width_as_censored():
    # one seed finishes its four jumps in 50 steps; three never finish within the budget
    widths = np.array([[50.0] * 4] + [[np.nan] * 4] * 3)
    value, low, high = precision_statistics(_analysed(widths, 600.0, 1000.0), n_boot=400, level=0.9)[
        "unit_transition_width"]
    # 4 events among 16 jumps: the KM median is unreached; the finished ones' median (50) was the
    # survivor-biased answer, and resamples without the first seed had no value at all
    assert value == math.inf and high == math.inf and low == 50.0
    # every jump finished: the plain median of the widths
    assert precision_statistics(_analysed(np.full((4, 4), 50.0), 600.0, 1000.0), 400, 0.9)[
        "unit_transition_width"] == (50.0, 50.0, 50.0)


def test_budget_factor_lengthens_both_cells_of_its_task_only(smoke_params):
    params = copy.deepcopy(smoke_params)
    params["sweeps"]["precision"]["budget_factor"] = {"cellular_automata": 3}
    files = {f.name: f for f in typed.files(params, "precision")}
    steps = {task: [cell.train.steps for cell in files[task].cells] for task in files}
    assert steps["cellular_automata"] == [3 * params["cellular_automata"]["train"]["steps"]] * 2
    assert steps["linear_map"] == [params["linear_map"]["train"]["steps"]] * 2
    # the linear map's cell in its own precision is the one linear_map_train trains (one cache entry)
    own = next(c for c in files["linear_map"].cells if c.train.precision == params["linear_map"]["train"]["precision"])
    assert own == typed.setting(params).linear_map


def test_a_task_may_compare_its_own_seed_count(smoke_params):
    params = copy.deepcopy(smoke_params)
    params["sweeps"]["precision"]["n_seeds"] = {"cellular_automata": 7}
    files = {f.name: f for f in typed.files(params, "precision")}
    seeds = {task: [cell.train.n_seeds for cell in files[task].cells] for task in files}
    assert seeds["cellular_automata"] == [7, 7]
    assert seeds["linear_map"] == [params["linear_map"]["train"]["n_seeds"]] * 2
    params["sweeps"]["precision"]["n_seeds"] = {}
    files = {f.name: f for f in typed.files(params, "precision")}
    assert [c.train.n_seeds for c in files["cellular_automata"].cells] == \
        [params["cellular_automata"]["train"]["n_seeds"]] * 2


def test_the_kept_check_that_decided_the_default_is_consistent_with_the_rule_and_the_defaults():
    """The default profile compares no task; its chapter shows the kept run instead. Its verdicts
    must follow from its own p-values and intervals under the rule's thresholds, and a record that
    says any task differs or is undecided cannot sit beside a bf16 default."""
    record = read_netcdf(pipeline_paths()["precision_record"])
    params = load_params(profile="default")
    alpha, margin = params["linear_map"]["analysis"]["alpha"], float(record.attrs["margin"])
    for task in record["task"].values:
        p = record["p_value"].sel(task=task).values
        low, high = record["ratio"].sel(task=task, bound="low").values, record["ratio"].sel(task=task, bound="high").values
        expected = ("differ" if (p < alpha / len(STATISTICS)).any()
                    else "agree" if ((1 / margin <= low) & (high <= margin)).all() else "undecided")
        assert str(record["verdict"].sel(task=task).values) == expected
    if any(str(v) != "agree" for v in record["verdict"].values):
        assert all(params[t]["train"]["precision"] == "float32" for t in ("linear_map", "cellular_automata"))
    assert set(json.loads(record.attrs["n_seeds"])) == {str(t) for t in record["task"].values}


def test_a_record_reads_its_provenance_from_the_run():
    summary = xr.Dataset({"verdict": (("task",), np.array(["differ", "agree"]))},
                         coords={"task": ["linear_map", "cellular_automata"]}, attrs={"margin": 1.25})
    params = {"profile": "default",
              "sweeps": {"precision": {"tasks": ["linear_map", "cellular_automata"], "n_seeds": {"linear_map": 40}}},
              "linear_map": {"train": {"n_seeds": 8}}, "cellular_automata": {"train": {"n_seeds": 4}}}
    timing = {"cpus": {"a": "AMD EPYC", "b": "AMD EPYC"}, "workers": 2, "build_wall_seconds": 5653.76}
    record = precision_record(summary, params, timing, "ec31c25")
    assert json.loads(record.attrs["n_seeds"]) == {"linear_map": 40, "cellular_automata": 4}
    assert record.attrs["machine"] == "AMD EPYC; 2 workers" and record.attrs["build_wall_seconds"] == 5653.76
    assert record.attrs["source_commit"] == "ec31c25" and record.attrs["margin"] == 1.25
    assert summary.attrs == {"margin": 1.25}  # the summary itself untouched

"""make bench's pieces: GEMM shapes that add up to the analytic FLOP count, and the plain loop."""
import math

import torch

from emergence.core.model import ModelConfig
from emergence.core.train import train_flops_per_step
from emergence.pipeline.config import load_params
from emergence.runs.cells import Setting
from emergence.tools.bench import (alternating_ratio, ceiling_fractions, configurations, evaluation_share, gemm_bound_ratio,
                                   gemm_shapes, measure_alternating, per_core_scaling, process_scaling, shape_ceiling,
                                   training_gemms, worker_slowdown)
from emergence.tools.plain_loop import PlainTransformer, plain_step


def test_gemm_shapes_are_the_analytic_count_less_attention_scores_and_embedding():
    cfg = ModelConfig(vocab_size=3, seq_len=33, n_layer=2, d_model=64, n_head=8, d_mlp=256)
    B, E = 16, 4
    gemm = 3 * sum(2 * e * m * k * n for e, m, k, n in gemm_shapes(cfg, B, E))
    d, T = cfg.d_model, cfg.seq_len
    scores = 3 * cfg.n_layer * 2 * T * d * B * T * E          # causal, counted at half, both matmuls
    embedding = 3 * 2 * cfg.vocab_size * d * B * T * E
    assert math.isclose(gemm + scores + embedding, train_flops_per_step(cfg, B) * E)


def test_the_ceiling_times_the_products_autograd_runs():
    a = torch.randn(2, 12, 5, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 5, 7, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(2, 12, 7, dtype=torch.float64)
    out = torch.bmm(a, b)
    out.backward(dy)
    forward, input_grad, weight_grad = (f() for f in training_gemms(a.detach(), b.detach(), dy))
    assert torch.allclose(forward, out) and torch.allclose(input_grad, a.grad) and torch.allclose(weight_grad, b.grad)


def test_the_gemm_bound_is_the_ceiling_over_the_plain_loops_gemm_rate():
    # plain loop 10 seed-steps/s doing 1 GFLOP of GEMMs each: 10 GFLOP/s; a 50 GFLOP/s ceiling allows 5x
    assert math.isclose(gemm_bound_ratio(10.0, 1.0, 50.0), 5.0)
    # the paper configuration here: 122.7 ms a plain float32 step, 9.68 GFLOP, ceiling 151: 1.9x at most
    assert 1.8 < gemm_bound_ratio(1 / 0.1227, 9.68, 151.0) < 2.0


def test_a_rate_is_timed_at_least_once_however_short_the_budget():
    from emergence.tools.bench import _best_gflops
    assert _best_gflops(lambda: sum(range(1000)), 1e3, seconds=0.0) > 0


def test_shape_ceiling_is_a_rate():
    rate = shape_ceiling([(2, 64, 16, 48), (2, 64, 16, 48), (2, 64, 48, 16)], torch.float32, seconds=0.05)
    assert 0 < rate < 1e6


def test_every_configuration_comes_in_each_precision_asked():
    names = configurations(("default", "max-autotune-no-cudagraphs"), precisions=("float32", "bf16-autocast"))
    assert {"default", "default+bf16", "default+compiled", "default+compiled+bf16", "paper+bf16",
            "paper+autotuned", "paper+autotuned+bf16"} <= set(names)
    task, section, all_groups = names["default+compiled+bf16"]
    assert section.train.precision == "bf16-autocast" and section.train.compile == "default"
    assert names["cellular_automata+autotuned"][1].train.compile == "max-autotune-no-cudagraphs"
    assert all_groups and names["default"][2]  # compiled and eager alike at every seeds-a-batch asked
    assert not any("mixers/" in n and ("+compiled" in n or "+autotuned" in n) for n in names)
    assert not any("+compiled" in n or "+autotuned" in n for n in configurations((), precisions=("float32",)))


def test_plain_loop_starts_at_chance_and_learns():
    cfg = ModelConfig(vocab_size=2, seq_len=12, n_layer=1, d_model=16, n_head=2, d_mlp=32)
    model = PlainTransformer(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    tokens = torch.randint(0, 2, (8, 12), generator=torch.Generator().manual_seed(0))
    losses = [plain_step(model, opt, tokens, torch.ones(11), 1.0) for _ in range(40)]
    assert abs(losses[0] - math.log(2)) < 0.2 and losses[-1] < losses[0] - 0.1


def test_alternating_ratio_is_the_plain_median_over_the_variants_per_seed():
    # plain steps of 100-120 ms (median 110), a 4-seed variant's of 200-220 (median 210, 52.5 per seed)
    assert math.isclose(alternating_ratio([0.10, 0.12, 0.11], [0.20, 0.22, 0.21], 4), 0.11 / 0.0525)
    assert math.isclose(alternating_ratio([0.1, 0.5, 0.1], [0.1, 0.1, 0.9], 1), 1.0)   # one slow step moves no median


def test_the_plain_loop_and_a_variant_alternate_in_one_process():
    section = Setting.of(load_params(profile="smoke")).linear_map
    pair = measure_alternating(("smoke", "linear_map", section, 2, 1, 0.05, "cpu"))
    assert pair["steps"] >= 5 and pair["seeds_per_group"] == 2
    assert pair["plain_step_ms"] > 0 and pair["step_ms"] > 0
    assert math.isclose(pair["ratio"], pair["plain_step_ms"] / (pair["step_ms"] / 2))


def test_evaluation_share_is_the_extra_time_over_the_whole_run():
    # 1000 steps of 10 ms and 20 evaluations of 50 ms: an 11 s run; 5 ms more per evaluation adds 0.1 s
    assert math.isclose(evaluation_share(1000, 20, 0.01, 0.05, 0.005), 0.1 / 11)
    assert evaluation_share(1000, 0, 0.01, 0.05, 0.005) == 0


def test_worker_slowdown_from_the_process_layout():
    # two one-thread processes with 1.24 times one two-thread process's throughput: each cell
    # runs at 0.62 of the two-thread speed, 1.61 times as long
    assert math.isclose(worker_slowdown(1.24, 2), 2 / 1.24)
    assert worker_slowdown(2.0, 2) == 1.0                   # perfect scaling: no slowdown


def test_per_core_scaling():
    assert per_core_scaling(20.0, 10.0, 2) == 1.0            # two processes, twice the work
    assert math.isclose(per_core_scaling(16.0, 10.0, 2), 0.6)
    assert math.isclose(per_core_scaling(34.0, 10.0, 4), 0.8)  # three added cores add 2.4 cores' worth


def test_process_scaling_times_one_process_alone_then_several_at_once():
    section = Setting.of(load_params(profile="smoke")).linear_map
    out = process_scaling("linear_map", section, [1, 2], seconds=0.2)
    one, two = out["rows"]
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["per_added_process"] == 1.0 and one["seed_steps_per_s"]["median"] > 0
    assert math.isclose(two["per_added_process"], per_core_scaling(two["seed_steps_per_s"]["median"],
                                                                one["seed_steps_per_s"]["median"], 2))


def test_a_step_above_its_ceiling_is_flagged_not_hidden():
    # a 40 GFLOP/s step against 190 at 2048^2 and 160 at its shapes: fractions, nothing flagged
    ok = ceiling_fractions(40.0, 190.0, 160.0)
    assert math.isclose(ok["fraction_of_matmul_ceiling"], 40 / 190)
    assert math.isclose(ok["fraction_of_shape_ceiling"], 0.25)
    assert not ok["above_ceiling"]
    # the shape ceiling measured while another process held the cores (9 GFLOP/s): 444%, flagged
    assert ceiling_fractions(40.0, 190.0, 9.0)["above_ceiling"]
    assert ceiling_fractions(200.0, 190.0, 400.0)["above_ceiling"]
    # a mixer has no analytic FLOP count: NaN is never above
    assert not ceiling_fractions(float("nan"), 190.0, float("nan"))["above_ceiling"]

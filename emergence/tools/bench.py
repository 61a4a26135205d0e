"""Training throughput against the machine's measured matmul ceilings, and against a plain loop.

    python -m emergence.tools.bench --out data/bench/throughput.json [--seconds 4] [--groups 1,2,4,8] [--rounds 3]
                              [--configs paper,default,cellular_automata,mixers/]
                              [--compile none|default,max-autotune-no-cudagraphs,reduce-overhead]

Configurations: the paper's linear-map setting, this repo's default one, the default
cellular-automata one and every architecture of the mixer comparison (sweeps.mixers, at its
first linear-map setting). Each runs in float32 and under bfloat16 autocast (`+bf16`), and the
three attention configurations also with `train.compile` in each mode asked (`+compiled`:
default, `+autotuned`: max-autotune-no-cudagraphs, and on request `+graphs`: reduce-overhead,
CUDA graphs; at every seeds-a-batch asked, as eager; the cold compile is timed apart as
warmup_s). For each number of seeds sharing
a batch it times the real training step (emergence.core.train.train_step): steps/s, seed-steps/s,
analytic FLOP/s (attention models only) as a fraction of two ceilings measured in each round,
in the run's own dtype: a 2048^2 matmul and the model's own GEMM shapes (its projections and MLP
as the seed-batched matmuls the step runs); a step above either is listed in `above_ceiling`
(that round's ceiling was measured in a slow moment). Also measured, in the same process layout:
- `plain_loop`: the same transformer trained one seed at a time the way most research code
  does (emergence/tools/plain_loop.py), and the ratio of the best configuration to it; that ratio
  again from the two alternating step by step in one process (`alternating`), which a
  machine whose speed drifts between measurements cannot skew;
- `process_layout`: one process with every thread against one single-thread process per
  thread, run at once, in seed-steps/s summed over processes, and the `execution.slowdown`
  that implies (a cell's time in a one-thread worker over its time alone with every thread),
  and against one one-thread process alone, what each added core adds (`per_added_core`);
- `worker_start_s`: how long a pool of one-thread workers, one per thread, takes to start and
  import what a cell build imports (`execution.worker_start_s`);
- `evaluation`: the periodic evaluation (emergence.core.train.evaluate) with and without the
  per-example answers, and the share of a whole run (its steps and its evaluation schedule)
  that keeping them adds.
Each measurement runs in a fresh process so its peak memory is its own.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import time
from dataclasses import replace
from pathlib import Path

import torch

from emergence.common.io import write_json
from emergence.common.schema import load
from emergence.core.model import ModelConfig, SeedTransformer
from emergence.core.precision import PRECISIONS, bf16_support
from emergence.core.train import TrainArgs, batch_generator, make_optimizer, schedules, train_flops_per_step, train_step, training_forward
from emergence.pipeline.config import load_params
from emergence.runs.cores import usable_cores
from emergence.runs.executor import Plan, worker_start_seconds
from emergence.runs.cells import Cell, Setting
from emergence.runs.sweeps.mixers import MixerSweepArgs, cell_config, settings
from emergence.runs.timing import (MIN_TIMED_STEPS, WARMUP_STEPS, median, model_of, prepared,
                                   step_and_evaluation_seconds, synchronizer, timed)
from emergence.tools.plain_loop import PlainTransformer, plain_step

DTYPES = {"float32": torch.float32, "bf16-autocast": torch.bfloat16}


def _best_gflops(f, flops: float, seconds: float, sync=lambda: None) -> float:
    for _ in range(3):
        f()
    sync()
    best, start = 0.0, time.perf_counter()
    while True:  # at least one timed call, even where the process was descheduled past `seconds`
        t = time.perf_counter()
        f()
        sync()
        best = max(best, flops / (time.perf_counter() - t) / 1e9)
        if time.perf_counter() - start >= seconds:
            return best


def matmul_ceiling(threads: int, dtype: torch.dtype = torch.float32, n: int = 2048, seconds: float = 2.0,
                   device: str = "cpu") -> float:
    """Best GFLOP/s of an n x n matmul in `dtype` (the roofline this machine can reach)."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    sync = synchronizer(device)
    return _best_gflops(lambda: a @ b, 2 * n**3, seconds, sync)


def gemm_shapes(cfg: ModelConfig, batch: int, n_seeds: int) -> list[tuple[int, int, int, int]]:
    """(seeds, rows, inner, cols) of the forward's seed-batched matmuls: per layer the fused QKV
    projection, the output projection and the two MLP matmuls, then the unembedding. (The
    backward runs the same products transposed; attention scores run inside SDPA.)"""
    M, d = batch * cfg.seq_len, cfg.d_model
    per_layer = [(n_seeds, M, d, 3 * d), (n_seeds, M, d, d), (n_seeds, M, d, cfg.d_mlp), (n_seeds, M, cfg.d_mlp, d)]
    return per_layer * cfg.n_layer + [(n_seeds, M, d, cfg.vocab_size)]


def training_gemms(a: torch.Tensor, b: torch.Tensor, dy: torch.Tensor) -> tuple:
    """The three products a seed-batched linear layer x @ W runs in a training step, in the layouts
    autograd runs them: the forward a @ b, the input's gradient dy @ b^T and the weight's a^T @ dy
    (a transposed view whose inner dimension is the long one, batch x positions: in bfloat16 on
    an AMX Xeon it ran at ~40% of the forward's rate at the paper configuration's shapes)."""
    return (lambda: torch.bmm(a, b), lambda: torch.bmm(dy, b.transpose(1, 2)), lambda: torch.bmm(a.transpose(1, 2), dy))


def shape_ceiling(shapes: list[tuple[int, int, int, int]], dtype: torch.dtype, seconds: float = 0.5,
                  device: str = "cpu") -> float:
    """GFLOP/s of running every training GEMM of `shapes` (each shape's forward, input-gradient
    and weight-gradient product) at its own best speed: total FLOPs over the summed best times
    (the ceiling a step made only of these GEMMs could reach)."""
    total_flops = total_time = 0.0
    sync = synchronizer(device)
    for E, M, K, N in dict.fromkeys(shapes):
        tensors = [torch.randn(*shape, device=device, dtype=dtype) for shape in ((E, M, K), (E, K, N), (E, M, N))]
        flops, count = 2.0 * E * M * K * N, shapes.count((E, M, K, N))
        for product in training_gemms(*tensors):
            total_flops += flops * count
            total_time += flops * count / (_best_gflops(product, flops, seconds / 3, sync) * 1e9)
    return total_flops / total_time / 1e9


def _peak_mib(device: str) -> float:
    return round(torch.cuda.max_memory_allocated() / 2**20 if device == "cuda"
                 else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _seed_step(task, cfg: ModelConfig, train: TrainArgs, seeds: list[int], device: str):
    """The project's training step of one seed group, as a function of the step number."""
    model = SeedTransformer(cfg, seeds).to(device)
    opt = make_optimizer(model, train)
    forward = training_forward(model, train, None)
    B = train.batch_size

    def step(i: int) -> None:
        tokens = torch.stack([task.sampler(B, batch_generator(s, i)) for s in seeds])
        train_step(forward, opt, tokens, task.loss_weights, train.grad_clip, precision=train.precision)
    return step


def _plain_loop_step(task, cfg: ModelConfig, train: TrainArgs, device: str):
    """The plain loop's step: one seed, one nn.Module, stock AdamW, float32, eager."""
    model = PlainTransformer(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=train.lr, betas=(train.beta1, train.beta2),
                            weight_decay=train.weight_decay)
    B = train.batch_size

    def step(i: int) -> None:
        plain_step(model, opt, task.sampler(B, batch_generator(0, i)), task.loss_weights, train.grad_clip)
    return step


def measure_steps(args: tuple) -> dict:
    """Training steps of one seed group timed after warm-up: (name, task, section, seeds in the
    group, threads, seconds, device) -> steps/s, seed-steps/s, GFLOP/s, peak memory."""
    config_name, task_name, section, n_group, threads, seconds, device = args
    train, task, cfg = prepared(section, threads, device)
    B = train.batch_size
    n, elapsed, warmup_s = timed(_seed_step(task, cfg, train, list(range(n_group)), device), seconds, device)
    # The analytic count covers attention blocks only; other mixers report throughput alone.
    flops = train_flops_per_step(cfg, B) * n_group if cfg.mixer == "attention" else float("nan")
    return {"config": config_name, "task": task_name, "seeds_per_group": n_group, "steps": n,
            "steps_per_s": n / elapsed, "seed_steps_per_s": n * n_group / elapsed,
            "gflop_per_s": flops * n / elapsed / 1e9, "peak_memory_mib": _peak_mib(device),
            "model": cfg.to_dict(), "batch_size": B, "compile": train.compile, "precision": train.precision,
            "threads": threads, "warmup_s": round(warmup_s, 1)}


def _measure_plain(args: tuple) -> dict:
    """The plain loop: one seed, one nn.Module, stock AdamW, float32, eager."""
    config_name, task_name, section, threads, seconds, device = args
    train, task, cfg = prepared(section, threads, device)
    n, elapsed, _ = timed(_plain_loop_step(task, cfg, train, device), seconds, device)
    return {"config": config_name, "steps": n, "seed_steps_per_s": n / elapsed, "threads": threads,
            "gflop_per_s": train_flops_per_step(cfg, train.batch_size) * n / elapsed / 1e9,
            "peak_memory_mib": _peak_mib(device)}


def alternating_ratio(plain_seconds: list[float], step_seconds: list[float], seeds: int) -> float:
    """Seed-steps of a variant per seed-step of the plain loop, from their step times taken
    alternately: the plain loop's median step over the variant's median step per seed."""
    return median(plain_seconds) / (median(step_seconds) / seeds)


def measure_alternating(args: tuple) -> dict:
    """The plain loop and one variant in the same process, step for step in turn, so both see the
    same machine: a shared VM's speed swung twofold within minutes on one AMD EPYC, which
    measurements in separate processes fold into their ratio. (name, task, section, seeds in
    the group, threads, seconds, device) -> median step times and `alternating_ratio`."""
    config_name, task_name, section, n_group, threads, seconds, device = args
    train, task, cfg = prepared(section, threads, device)
    steps = {"plain": _plain_loop_step(task, cfg, train, device),
             "variant": _seed_step(task, cfg, train, list(range(n_group)), device)}
    sync = synchronizer(device)
    for i in range(WARMUP_STEPS):
        for step in steps.values():
            step(i)
    sync()
    times: dict[str, list[float]] = {name: [] for name in steps}
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or n < MIN_TIMED_STEPS:
        for name in (("plain", "variant") if n % 2 else ("variant", "plain")):
            t = time.perf_counter()
            steps[name](n)
            sync()
            times[name].append(time.perf_counter() - t)
        n += 1
    return {"variant": config_name, "seeds_per_group": n_group, "steps": n,
            "plain_step_ms": median(times["plain"]) * 1e3, "step_ms": median(times["variant"]) * 1e3,
            "ratio": alternating_ratio(times["plain"], times["variant"], n_group)}


def worker_slowdown(ratio: float, threads: int) -> float:
    """execution.slowdown from a process-layout ratio: `threads` one-thread processes train
    `ratio` times the seed-steps of one process with every thread, so each cell takes
    threads / ratio times as long in a worker as it would alone with every core."""
    return threads / ratio


def evaluation_share(steps: int, n_evals: int, step_s: float, eval_s: float, extra_s: float) -> float:
    """What `extra_s` more seconds per evaluation add to a run of `steps` training steps of
    `step_s` and `n_evals` evaluations of `eval_s`, as a fraction of that run's time."""
    return n_evals * extra_s / (steps * step_s + n_evals * eval_s)


def _measure_evaluation(args: tuple) -> dict:
    """Seconds per evaluation of one seed group without and with the per-example answers
    (alternated, medians of 5 each), the training step's seconds in the same process, and the
    share of a whole run the per-example answers add."""
    config_name, task_name, section, threads, seconds, device = args
    train = section.train
    step_s, evals = step_and_evaluation_seconds(section, threads, seconds, device, ("none", "units"))
    without, with_ = evals["none"], evals["units"]
    n_evals = len(schedules(train)[0])
    return {"config": config_name, "seeds_per_group": train.seeds_per_group,
            "eval_sequences": int(section.task.eval_sequences),
            "evaluations_per_run": n_evals, "steps_per_run": train.steps, "step_s": step_s,
            "evaluation_s": without, "evaluation_with_examples_s": with_,
            "examples_share_of_run": evaluation_share(train.steps, n_evals, step_s, without, with_ - without),
            "evaluation_share_of_run": evaluation_share(train.steps, n_evals, step_s, 0.0, without)}


BASE_CONFIGS = ("paper", "default", "cellular_automata")
LAYOUT_CONFIGS = ("paper", "default")


# torch.compile mode -> the variant's name. Both are measured at every seeds-a-batch asked: on
# one AMX CPU (2 threads, paper configuration, bf16) the seeds a batch mattered more than the
# mode (default / max-autotune 28.4 / 28.8 seed-steps/s at one seed, 22.3 / 22.7 at eight;
# eager 22.1 at one), so a compiled variant timed at its profile's eight alone looked no faster.
# CUDA graphs (`reduce-overhead`) only when asked: a CPU does not use them, and on an H200 a
# step of the paper's configuration waits on kernel launches (5.4 ms at one seed a batch, 7.8 at
# eight, 20% of the float32 ceiling), the cost graphs remove. Measured here with the training
# step's own torch.compile call; `train.compile` does not offer the mode yet.
COMPILE_SUFFIX = {"default": "+compiled", "max-autotune-no-cudagraphs": "+autotuned", "reduce-overhead": "+graphs"}
DEFAULT_COMPILE = ("default", "max-autotune-no-cudagraphs")


def configurations(compile_modes: tuple[str, ...] = (), precisions=PRECISIONS) -> dict[str, tuple[str, Cell, bool]]:
    """name -> (task section, its params, every group size?): the base configurations in each
    precision (`+bf16`), their variants under each torch.compile mode asked (`+compiled`,
    `+autotuned`) at every group size too, and every mixer architecture in each precision."""
    paper, default = load_params(profile="paper"), load_params(profile="default")
    on_paper, on_default = Setting.of(paper), Setting.of(default)
    base = {"paper": ("linear_map", on_paper.linear_map), "default": ("linear_map", on_default.linear_map),
            "cellular_automata": ("cellular_automata", on_default.cellular_automata)}
    sweep = load(MixerSweepArgs, default["sweeps"]["mixers"], "sweeps.mixers")
    task, overrides, _ = settings(sweep)[0]
    for name, arch in sweep.architectures.items():  # every architecture, whatever its profiles
        base[f"mixers/{name}"] = (task, cell_config(on_default, sweep, task, overrides, arch))
    out = {}
    for name, (task, section) in base.items():
        for precision in precisions:
            suffix = "+bf16" if precision != "float32" else ""
            train = replace(section.train, precision=precision)
            out[name + suffix] = (task, replace(section, train=train), True)
            for mode in compile_modes if name in BASE_CONFIGS else ():  # at every group size, as eager: the
                # per-seed falloff with the seeds a batch is what a compiled step has to beat
                out[f"{name}{COMPILE_SUFFIX[mode]}{suffix}"] = (task, replace(section, train=replace(train, compile=mode)),
                                                                 True)
    return out


def _gpu_ceiling(dtype: torch.dtype = torch.float32) -> float:
    return matmul_ceiling(torch.get_num_threads(), dtype, n=8192, seconds=2.0, device="cuda")


def _summary(values: list[float]) -> dict:
    return {"median": median(values), "range": [min(values), max(values)]}


def _process_layout(ctx, task: str, section: Cell, threads: int, seconds: float, device: str) -> dict:
    """Seed-steps/s of one process with `threads` threads, of one one-thread process alone, and
    of `threads` one-thread processes training at once (summed), at the section's seeds_per_group."""
    g = section.train.seeds_per_group
    with ctx.Pool(1) as pool:
        one = pool.apply(measure_steps, (("layout", task, section, g, threads, seconds, device),))["seed_steps_per_s"]
        alone = pool.apply(measure_steps, (("layout", task, section, g, 1, seconds, device),))["seed_steps_per_s"]
    return {"one_process": one, "one_thread_alone": alone,
            "one_thread_processes": _at_once(ctx, ("layout", task, section, g, 1, seconds, device), threads)}


def _at_once(ctx, args: tuple, n: int) -> float:
    """Seed-steps/s of n processes running `measure_steps(args)` at once, summed."""
    with ctx.Pool(n) as pool:
        return sum(r["seed_steps_per_s"] for r in pool.map(measure_steps, [args] * n))


def process_scaling(task: str, section: Cell, counts: list[int], seconds: float, rounds: int = 1,
                    device: str = "cpu") -> dict:
    """Seed-steps/s of n one-thread processes training at once (summed), for each n in `counts`,
    against one alone (`per_added_process`, as `per_core_scaling` computes it). On the CPU: what a
    pool of n one-thread workers gets from n cores when it has at least n cells. On CUDA: what n
    processes sharing the one GPU get from it (a step of the paper's configuration there waits
    on kernel launches more than on arithmetic, so processes may overlap). Rounds interleaved,
    medians."""
    ctx = mp.get_context("spawn")
    g = section.train.seeds_per_group
    args = ("scaling", task, section, g, 1, seconds, device)
    together: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(rounds):
        for n in counts:
            together[n].append(_at_once(ctx, args, n))
            print(f"{n:3d} one-thread processes on {device}: {together[n][-1]:8.2f} seed-steps/s", flush=True)
    alone = median(together[1]) if 1 in together else None
    return {"device": device, "seeds_per_group": g, "seconds": seconds, "rounds": rounds,
            "rows": [{"processes": n, "seed_steps_per_s": _summary(v),
                      "per_added_process": per_core_scaling(median(v), alone, n) if alone else None}
                     for n, v in together.items()]}


ABOVE_CEILING = ("above its ceiling: a step runs these GEMMs and other work beside them, so it cannot outrun "
                 "them alone; that round's ceiling was likely measured while the machine ran slower (another "
                 "process, a speed swing)")


def ceiling_fractions(gflop_per_s: float, matmul_ceiling: float, shape_ceiling: float) -> dict:
    """A step's analytic rate as a fraction of the round's two ceilings, and whether either is
    above 1 (`ABOVE_CEILING`). The analytic count adds the attention scores and the embedding to
    the GEMMs (a few percent), so a step could pass 1 only if all its other work took no time.
    NaN (a mixer without an analytic count, or no shape ceiling) is never above."""
    fractions = {"fraction_of_matmul_ceiling": gflop_per_s / matmul_ceiling,
                 "fraction_of_shape_ceiling": gflop_per_s / shape_ceiling}
    return {**fractions, "above_ceiling": any(f > 1.0 for f in fractions.values())}


def gemm_bound_ratio(plain_seed_steps_per_s: float, gemm_gflop_per_seed_step: float, ceiling_gflop_per_s: float) -> float:
    """The most any loop could gain over the plain one with its GEMMs alone at the training-GEMM
    ceiling and everything else free: ceiling / GEMM work per seed-step / the plain loop's rate.
    A target ratio above it cannot be reached in that precision on this machine."""
    return ceiling_gflop_per_s / gemm_gflop_per_seed_step / plain_seed_steps_per_s


def per_core_scaling(together: float, alone: float, processes: int) -> float:
    """What each added core adds, as a fraction of the first one's throughput: `processes`
    one-thread processes training `together` seed-steps/s (summed) against one alone at `alone`
    (1.0: perfect scaling; 0.5 on two cores: the second core adds half a core)."""
    return (together / alone - 1) / (processes - 1) if processes > 1 else 1.0


def _gemm_bounds(config: tuple, shape_ceilings: dict, plain_rate: float) -> dict[str, float]:
    """`gemm_bound_ratio` per precision, at the best training-GEMM ceiling over the seed-group sizes measured."""
    task_name, section, _ = config
    _, cfg = model_of(section)
    model, batch = json.dumps(cfg.to_dict()), section.train.batch_size
    gemm = 3 * sum(2 * e * m * k * n for e, m, k, n in gemm_shapes(cfg, batch, 1)) / 1e9
    best: dict[str, float] = {}
    for (precision, _, key_model, key_batch), ceiling in shape_ceilings.items():
        if key_model == model and key_batch == batch:
            best[precision] = max(best.get(precision, 0.0), ceiling)
    return {p: gemm_bound_ratio(plain_rate, gemm, c) for p, c in best.items()}


def run(groups: list[int], seconds: float, threads: int, device: str, rounds: int = 3,
        only: list[str] | None = None, compile_modes: tuple[str, ...] = ()) -> dict:
    """Every (configuration, seeds per batch) is measured once per round, rounds interleaved, and
    the ceilings (2048^2 and each configuration's own GEMM shapes) once per round: a shared VM's
    speed drifts by +-15% over minutes, so each round's throughput is divided by that round's
    ceilings and the medians over rounds reported."""
    ctx = mp.get_context("spawn")
    dev = torch.device(device)
    bf16_ok, bf16_why = bf16_support(dev)
    precisions = [p for p in PRECISIONS if p == "float32" or bf16_ok]
    configs = {name: c for name, c in configurations(compile_modes, precisions).items()
               if not only or any(name.startswith(prefix) for prefix in only)}
    torch.set_num_threads(threads)
    shape_sets: dict[tuple[str, int, str, int], list] = {}  # (precision, seeds, model, batch) -> its GEMM shapes
    for name, (task_name, section, _) in configs.items():
        _, cfg = model_of(section)
        if cfg.mixer == "attention":
            for g in groups + [section.train.seeds_per_group]:
                key = (section.train.precision, g, json.dumps(cfg.to_dict()), section.train.batch_size)
                shape_sets.setdefault(key, gemm_shapes(cfg, section.train.batch_size, g))
    shape_rounds: dict[tuple[str, int, str, int], list[float]] = {key: [] for key in shape_sets}
    samples: dict[tuple[str, int], list[dict]] = {}
    ceilings: dict[str, list[float]] = {p: [] for p in precisions}
    plain: dict[str, list[float]] = {}
    layout: dict[str, list[dict]] = {}
    evaluation: dict[str, list[dict]] = {}
    worker_start: list[float] = []
    for r in range(rounds):
        for p in precisions:
            ceilings[p].append(matmul_ceiling(threads, DTYPES[p]) if device == "cpu" else _gpu_ceiling(DTYPES[p]))
        for key, shapes in shape_sets.items():
            shape_rounds[key].append(shape_ceiling(shapes, DTYPES[key[0]], device=device))
        for name, (task_name, section, all_groups) in configs.items():
            precision = section.train.precision
            for g in (groups if all_groups else sorted({1, section.train.seeds_per_group})):
                with ctx.Pool(1) as pool:
                    row = pool.apply(measure_steps, ((name, task_name, section, g, threads, seconds, device),))
                key = (precision, g, json.dumps(row["model"]), row["batch_size"])
                row.update(ceiling_fractions(row["gflop_per_s"], ceilings[precision][-1],
                                             shape_rounds[key][-1] if key in shape_rounds else float("nan")))
                samples.setdefault((name, g), []).append(row)
                print(f"round {r + 1}/{rounds} {name:32s} seeds/batch {g:3d}: {row['steps_per_s']:7.2f} steps/s  "
                      f"{row['seed_steps_per_s']:8.2f} seed-steps/s  {row['gflop_per_s']:7.1f} GFLOP/s "
                      f"({row['fraction_of_matmul_ceiling']:.0%} of {ceilings[precision][-1]:.0f}, "
                      f"{row['fraction_of_shape_ceiling']:.0%} at its shapes)  peak {row['peak_memory_mib']:.0f} MiB"
                      + (f"  [{ABOVE_CEILING}]" if row["above_ceiling"] else ""), flush=True)
        for name in BASE_CONFIGS:
            if name in configs:
                task_name, section, _ = configs[name]
                with ctx.Pool(1) as pool:
                    row = pool.apply(_measure_plain, ((name, task_name, section, threads, seconds, device),))
                plain.setdefault(name, []).append(row["seed_steps_per_s"])
                print(f"round {r + 1}/{rounds} plain loop {name:21s}: {row['seed_steps_per_s']:8.2f} seed-steps/s",
                      flush=True)
        for name in BASE_CONFIGS:
            if name in configs:
                task_name, section, _ = configs[name]
                with ctx.Pool(1) as pool:
                    row = pool.apply(_measure_evaluation, ((name, task_name, section, threads, seconds, device),))
                evaluation.setdefault(name, []).append(row)
                print(f"round {r + 1}/{rounds} evaluation {name:21s}: {row['evaluation_s'] * 1e3:7.1f} ms, "
                      f"{row['evaluation_with_examples_s'] * 1e3:7.1f} ms with per-example answers "
                      f"(+{row['examples_share_of_run']:.1%} of a run)", flush=True)
        if device == "cpu" and threads > 1:
            worker_start.append(worker_start_seconds(Plan(threads, 1)))
            print(f"round {r + 1}/{rounds} {threads} workers start in {worker_start[-1]:.2f} s", flush=True)
            for name in LAYOUT_CONFIGS:
                for p in precisions:
                    full = name + ("+bf16" if p != "float32" else "")
                    if full in configs:
                        task_name, section, _ = configs[full]
                        layout.setdefault(full, []).append(
                            _process_layout(ctx, task_name, section, threads, seconds, device))
    rows = []
    for (name, g), runs in samples.items():
        row = dict(runs[0])
        for key in ("steps_per_s", "seed_steps_per_s", "gflop_per_s", "fraction_of_matmul_ceiling",
                    "fraction_of_shape_ceiling"):
            values = [x[key] for x in runs]
            row[key] = median(values)
            row[key + "_range"] = [min(values), max(values)]
        row["rounds_above_ceiling"] = sum(x["above_ceiling"] for x in runs)
        del row["above_ceiling"]
        row["peak_memory_mib"] = max(x["peak_memory_mib"] for x in runs)
        row["steps"] = sum(x["steps"] for x in runs)
        rows.append(row)
    for r in rows:
        solo = samples.get((r["config"], 1))
        if solo:
            # per round, then the median: the speed-up compares measurements taken minutes apart at most
            mine = samples[(r["config"], r["seeds_per_group"])]
            r["per_seed_speedup_vs_one"] = median([m["seed_steps_per_s"] / s["seed_steps_per_s"]
                                                    for m, s in zip(mine, solo)])
    best = {}
    for name in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == name]
        top = max(mine, key=lambda r: r["seed_steps_per_s"])
        best[name] = {"compile": top["compile"], "precision": top["precision"], "seeds_per_group": top["seeds_per_group"],
                      "seed_steps_per_s": top["seed_steps_per_s"],
                      "fraction_of_matmul_ceiling": top["fraction_of_matmul_ceiling"],
                      "fraction_of_shape_ceiling": top["fraction_of_shape_ceiling"],
                      "per_seed_speedup_vs_one": top.get("per_seed_speedup_vs_one"),
                      "slower_per_seed_than_one": [r["seeds_per_group"] for r in mine
                                                   if r.get("per_seed_speedup_vs_one", 1.0) < 1.0]}
    shape_ceilings = {key: median(values) for key, values in shape_rounds.items()}
    vs_plain = {}
    for name, values in plain.items():
        variants = {k: v for k, v in best.items() if k == name or k.startswith(name + "+")}
        top = max(variants, key=lambda k: variants[k]["seed_steps_per_s"])
        vs_plain[name] = {"plain_loop_seed_steps_per_s": _summary(values), "best_variant": top,
                          "ratio": variants[top]["seed_steps_per_s"] / median(values),
                          "float32_eager_ratio": variants[name]["seed_steps_per_s"] / median(values)
                          if name in variants else None,
                          "gemm_bound_ratio": _gemm_bounds(configs[name], shape_ceilings, median(values))}
        task_name, section, _ = configs[top]
        with ctx.Pool(1) as pool:
            pair = pool.apply(measure_alternating, ((top, task_name, section, best[top]["seeds_per_group"], threads,
                                                     seconds * rounds, device),))
        vs_plain[name]["alternating"] = pair
        print(f"{top} and the plain loop in turn: {pair['step_ms']:.1f} ms a step ({pair['seeds_per_group']} seeds a "
              f"batch) against {pair['plain_step_ms']:.1f} ms: {pair['ratio']:.2f}x the seed-steps", flush=True)
    layouts = {name: {"one_process_seed_steps_per_s": _summary([x["one_process"] for x in runs]),
                      "one_thread_processes_seed_steps_per_s": _summary([x["one_thread_processes"] for x in runs]),
                      "ratio": median([x["one_thread_processes"] / x["one_process"] for x in runs]),
                      "slowdown": worker_slowdown(median([x["one_thread_processes"] / x["one_process"] for x in runs]),
                                                  threads),
                      "one_thread_alone_seed_steps_per_s": _summary([x["one_thread_alone"] for x in runs]),
                      "per_added_core": median([per_core_scaling(x["one_thread_processes"], x["one_thread_alone"],
                                                                  threads) for x in runs])}
               for name, runs in layout.items()}
    return {"device": device, "threads": threads, "machine": platform.processor() or platform.machine(),
            "torch": torch.__version__, "rounds": rounds, "bf16": {"fast": bf16_ok, "why": bf16_why},
            "matmul_ceiling_gflop_per_s": {p: _summary(v) for p, v in ceilings.items()},
            "shape_ceilings_gflop_per_s": [{"precision": k[0], "seeds_per_group": k[1], "model": json.loads(k[2]),
                                            "batch_size": k[3], "gflop_per_s": _summary(v)}
                                           for k, v in shape_rounds.items()],
            "above_ceiling": {"what": ABOVE_CEILING, "measurements": [
                {"config": r["config"], "seeds_per_group": r["seeds_per_group"], "rounds": r["rounds_above_ceiling"]}
                for r in rows if r["rounds_above_ceiling"]]},
            "flop_counting": "analytic: 3 x forward matmul FLOPs (2 per multiply-add), causal attention counted at half",
            "results": rows, "best": best, "vs_plain_loop": vs_plain, "process_layout": layouts,
            "worker_start_s": _summary(worker_start) if worker_start else None,
            "evaluation": {name: {**runs[0], **{k: _summary([x[k] for x in runs]) for k in (
                "step_s", "evaluation_s", "evaluation_with_examples_s", "examples_share_of_run",
                "evaluation_share_of_run")}} for name, runs in evaluation.items()}}


def _json_safe(x):
    """NaN (FLOP/s of a mixer without an analytic count) -> null, recursively."""
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="data/bench/throughput.json")
    parser.add_argument("--seconds", type=float, default=4.0, help="timed seconds per measurement")
    parser.add_argument("--groups", default="1,2,4,8", help="seeds per batch to try")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved repetitions; medians are reported")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--configs", default="", help="comma-separated name prefixes to run (default: all), "
                                                       "e.g. paper,default,cellular_automata,mixers/")
    parser.add_argument("--compile", default=",".join(DEFAULT_COMPILE),
                        help="comma-separated torch.compile modes of the attention configurations' compiled "
                             "variants (default: '+compiled', max-autotune-no-cudagraphs: '+autotuned'; "
                             "reduce-overhead: '+graphs', CUDA graphs, asked only; none: skip them)")
    parser.add_argument("--scaling", default="", metavar="N1,N2,...",
                        help="measure only how training scales with processes on --device: 1 and then N one-thread "
                             "processes at once (on the CPU, one a core; on CUDA, sharing the GPU), for each "
                             "configuration --configs selects among " + ", ".join(LAYOUT_CONFIGS)
                             + " (float32), written as {'process_scaling': ...}")
    args = parser.parse_args()
    only = [c for c in args.configs.split(",") if c]
    modes = tuple(m for m in args.compile.split(",") if m and m != "none")
    unknown = sorted(set(modes) - set(COMPILE_SUFFIX))
    if unknown:
        parser.error(f"--compile: unknown mode(s) {', '.join(unknown)}; allowed: none, {', '.join(COMPILE_SUFFIX)}")
    if args.scaling:
        counts = sorted({1, *(int(n) for n in args.scaling.split(","))})
        if counts[0] < 1:
            parser.error(f"--scaling: process counts of at least 1, got {args.scaling}")
        chosen = [name for name in LAYOUT_CONFIGS if not only or any(name.startswith(p) for p in only)]
        configs = configurations()
        result = {"device": args.device, "machine": platform.processor() or platform.machine(),
                  "usable_cores": usable_cores(), "torch": torch.__version__,
                  "process_scaling": {name: process_scaling(configs[name][0], configs[name][1], counts, args.seconds,
                                                            args.rounds, args.device) for name in chosen}}
        write_json(_json_safe(result), Path(args.out))
        print("process scaling: " + json.dumps(_json_safe(result["process_scaling"]), indent=1))
        print(f"wrote {args.out}")
        return
    result = run([int(g) for g in args.groups.split(",")], args.seconds, args.threads, args.device, args.rounds,
                 only, modes)
    result = _json_safe(result)
    write_json(result, Path(args.out))
    print("matmul ceilings (GFLOP/s): " + json.dumps(result["matmul_ceiling_gflop_per_s"]))
    print("against the plain loop: " + json.dumps(result["vs_plain_loop"], indent=1))
    print("process layout: " + json.dumps(result["process_layout"], indent=1))
    print("worker start-up (s): " + json.dumps(result["worker_start_s"]))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

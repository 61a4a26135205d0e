"""Training throughput against the machine's measured float32 matmul ceiling.

    python -m emergence.bench --out data/bench/throughput.json [--seconds 4] [--groups 1,2,4,8] [--rounds 3]
                              [--configs paper,default,cellular_automata,mixers/]
                              [--compile none|default|max-autotune-no-cudagraphs]

For the paper's linear-map configuration, this repo's default one, the default
cellular-automata one and every architecture of the mixer comparison (sweeps.mixers, at its
first linear-map setting, with the architecture's train.compile; FLOP/s for attention models only), and for each number of seeds
sharing a batch, it times the real training step (emergence.train.train_step) and reports
steps/s, seed-steps/s, analytic FLOP/s, that as a fraction of the matmul ceiling measured
in the same run, the per-seed speed-up over one seed at a time, and peak memory. The three
attention configurations are also measured with `train.compile` (names `<config>+compiled`;
the cold compile is timed apart as warmup_s). Each measurement runs in a fresh process so its
peak memory is its own.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import time
from pathlib import Path

import torch

from emergence.allocator import keep_freed_memory
from emergence.config import load_params
from emergence.experiments.cells import task_module
from emergence.experiments.mixer_comparison import cell_config, settings
from emergence.io import write_json
from emergence.model import SeedTransformer
from emergence.train import batch_generator, make_optimizer, train_flops_per_step, train_step, training_forward


def matmul_ceiling(threads: int, n: int = 2048, seconds: float = 2.0) -> float:
    """Best float32 GFLOP/s of an n x n matmul (the roofline this machine can reach)."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        a @ b
        best = max(best, 2 * n**3 / (time.perf_counter() - t) / 1e9)
    return best


def _measure(args: tuple) -> dict:
    config_name, task_name, section, n_group, threads, seconds, device = args
    keep_freed_memory()
    torch.set_num_threads(threads)
    module = task_module(task_name)
    train = section["train"]
    task = module.task_tensors(module.build_task(section["task"]), section["task"]).to(torch.device(device))
    cfg = module.model_config(section["model"], module.layout_of(section["task"]))
    seeds = list(range(n_group))
    model = SeedTransformer(cfg, seeds).to(device)
    opt = make_optimizer(model, train)
    forward = training_forward(model, train, None)
    B = train["batch_size"]

    def step(i: int) -> None:
        tokens = torch.stack([task.sampler(B, batch_generator(s, i)) for s in seeds])
        train_step(forward, opt, tokens, task.loss_weights, train["grad_clip"])

    warm = time.perf_counter()
    for i in range(3):  # with train.compile, the first steps compile (timed apart)
        step(i)
    if device == "cuda":
        torch.cuda.synchronize()
    warmup_s = time.perf_counter() - warm
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or n < 5:
        step(n)
        n += 1
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    # The analytic count covers attention blocks only; other mixers report throughput alone.
    flops = train_flops_per_step(cfg, B) * n_group if cfg.mixer == "attention" else float("nan")
    peak = (torch.cuda.max_memory_allocated() / 2**20 if device == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"config": config_name, "task": task_name, "seeds_per_group": n_group, "steps": n,
            "steps_per_s": n / elapsed, "seed_steps_per_s": n * n_group / elapsed,
            "gflop_per_s": flops * n / elapsed / 1e9, "peak_memory_mib": round(peak, 1),
            "model": cfg.to_dict(), "batch_size": B, "compile": train["compile"], "warmup_s": round(warmup_s, 1)}


def configurations(compile_mode: str = "none") -> dict[str, tuple[str, dict]]:
    """name -> (task section, its params): the paper's linear-map setting, this repo's default
    one, the default cellular-automata setting, each also as `<name>+compiled` (train.compile =
    compile_mode) unless that is "none", and every architecture of the mixer comparison."""
    paper, default = load_params(profile="paper"), load_params(profile="default")
    out = {"paper": ("linear_map", paper["linear_map"]), "default": ("linear_map", default["linear_map"]),
           "cellular_automata": ("cellular_automata", default["cellular_automata"])}
    if compile_mode != "none":
        for name, (task, section) in list(out.items()):
            out[f"{name}+compiled"] = (task, {**section, "train": {**section["train"], "compile": compile_mode}})
    # Every architecture of the mixer comparison at its first linear-map setting (default profile).
    sweep = default["sweeps"]["mixers"]
    task, overrides, _ = settings(sweep)[0]
    for name, arch in sweep["architectures"].items():  # every architecture, whatever its profiles
        out[f"mixers/{name}"] = (task, cell_config(default, task, overrides, arch)[task])
    return out


def _gpu_ceiling() -> float:
    a = torch.randn(8192, 8192, device="cuda")
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(10):
        a @ a
    torch.cuda.synchronize()
    return 10 * 2 * 8192**3 / (time.perf_counter() - t) / 1e9


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def run(groups: list[int], seconds: float, threads: int, device: str, rounds: int = 3,
        only: list[str] | None = None, compile_mode: str = "none") -> dict:
    """Every (configuration, seeds per batch) is measured once per round, rounds interleaved, and
    the matmul ceiling once per round: a shared VM's speed drifts by +-15% over minutes, so each
    round's throughput is divided by that round's ceiling and the medians over rounds reported."""
    ctx = mp.get_context("spawn")
    samples: dict[tuple[str, int], list[dict]] = {}
    ceilings = []
    for r in range(rounds):
        ceiling = matmul_ceiling(threads) if device == "cpu" else _gpu_ceiling()
        ceilings.append(ceiling)
        for name, (task_name, section) in configurations(compile_mode).items():
            if only and not any(name.startswith(prefix) for prefix in only):
                continue
            for g in groups:
                with ctx.Pool(1) as pool:
                    row = pool.apply(_measure, ((name, task_name, section, g, threads, seconds, device),))
                row["fraction_of_matmul_ceiling"] = row["gflop_per_s"] / ceiling
                samples.setdefault((name, g), []).append(row)
                print(f"round {r + 1}/{rounds} {name:26s} seeds/batch {g:3d}: {row['steps_per_s']:7.2f} steps/s  "
                      f"{row['seed_steps_per_s']:8.2f} seed-steps/s  {row['gflop_per_s']:7.1f} GFLOP/s "
                      f"({row['fraction_of_matmul_ceiling']:.0%} of {ceiling:.0f})  peak {row['peak_memory_mib']:.0f} MiB",
                      flush=True)
    rows = []
    for (name, g), runs in samples.items():
        row = dict(runs[0])
        for key in ("steps_per_s", "seed_steps_per_s", "gflop_per_s", "fraction_of_matmul_ceiling"):
            values = [x[key] for x in runs]
            row[key] = _median(values)
            row[key + "_range"] = [min(values), max(values)]
        row["peak_memory_mib"] = max(x["peak_memory_mib"] for x in runs)
        row["steps"] = sum(x["steps"] for x in runs)
        rows.append(row)
    for r in rows:
        solo = samples.get((r["config"], 1))
        if solo:
            # per round, then the median: the speed-up compares measurements taken minutes apart at most
            mine = samples[(r["config"], r["seeds_per_group"])]
            r["per_seed_speedup_vs_one"] = _median([m["seed_steps_per_s"] / s["seed_steps_per_s"]
                                                    for m, s in zip(mine, solo)])
    best = {}
    for name in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == name]
        top = max(mine, key=lambda r: r["seed_steps_per_s"])
        best[name] = {"compile": top["compile"], "seeds_per_group": top["seeds_per_group"], "seed_steps_per_s": top["seed_steps_per_s"],
                      "fraction_of_matmul_ceiling": top["fraction_of_matmul_ceiling"],
                      "per_seed_speedup_vs_one": top.get("per_seed_speedup_vs_one"),
                      "slower_per_seed_than_one": [r["seeds_per_group"] for r in mine
                                                   if r.get("per_seed_speedup_vs_one", 1.0) < 1.0]}
    return {"device": device, "threads": threads, "machine": platform.processor() or platform.machine(),
            "torch": torch.__version__, "rounds": rounds, "matmul_ceiling_gflop_per_s": _median(ceilings),
            "matmul_ceiling_range": [min(ceilings), max(ceilings)],
            "flop_counting": "analytic: 3 x forward matmul FLOPs (2 per multiply-add), causal attention counted at half",
            "results": rows, "best": best}


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
    parser.add_argument("--compile", default="max-autotune-no-cudagraphs",
                        help="torch.compile mode of the '+compiled' variants of the attention configurations "
                             "(none: skip them)")
    args = parser.parse_args()
    only = [c for c in args.configs.split(",") if c]
    result = run([int(g) for g in args.groups.split(",")], args.seconds, args.threads, args.device, args.rounds,
                 only, args.compile)
    result = _json_safe(result)
    write_json(result, Path(args.out))
    print(f"matmul ceiling {result['matmul_ceiling_gflop_per_s']:.0f} GFLOP/s; best: "
          + json.dumps(result["best"], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

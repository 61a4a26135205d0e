"""Training throughput against the machine's measured float32 matmul ceiling.

    python -m emergence.bench --out data/bench/throughput.json [--seconds 4] [--groups 1,2,4,8]

For the paper's configuration and this repo's default one, and for each number of seeds
sharing a batch, it times the real training step (emergence.train.train_step) and reports
steps/s, seed-steps/s, analytic FLOP/s, that as a fraction of the matmul ceiling measured
in the same run, the per-seed speed-up over one seed at a time, and peak memory. Each
measurement runs in a fresh process so its peak memory is its own.
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

from emergence.config import load_params
from emergence.io import write_json


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
    config_name, section, n_group, threads, seconds, device = args
    from emergence.experiments.linear_map import layout_of, model_config
    from emergence.model import SeedTransformer
    from emergence.tasks.linear_map import loss_weights, sample_batch, sample_sparse_matrix
    from emergence.train import batch_generator, make_optimizer, train_flops_per_step, train_step

    torch.set_num_threads(threads)
    task, train = section["task"], section["train"]
    layout = layout_of(task)
    cfg = model_config(section["model"], layout)
    seeds = list(range(n_group))
    model = SeedTransformer(cfg, seeds).to(device)
    opt = make_optimizer(model, train)
    A = torch.tensor(sample_sparse_matrix(task["state_size"], task["sparsity"], 0), dtype=torch.float32, device=device)
    weights = torch.tensor(loss_weights(layout, task["loss_positions"]), device=device)
    B = train["batch_size"]

    def step(i: int) -> None:
        tokens = torch.stack([sample_batch(A, B, layout, batch_generator(s, i)) for s in seeds])
        train_step(model, opt, tokens, weights, train["grad_clip"])

    for i in range(3):
        step(i)
    if device == "cuda":
        torch.cuda.synchronize()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or n < 5:
        step(n)
        n += 1
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    flops = train_flops_per_step(cfg, B) * n_group
    peak = (torch.cuda.max_memory_allocated() / 2**20 if device == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"config": config_name, "seeds_per_group": n_group, "steps": n,
            "steps_per_s": n / elapsed, "seed_steps_per_s": n * n_group / elapsed,
            "gflop_per_s": flops * n / elapsed / 1e9, "peak_memory_mib": round(peak, 1),
            "model": cfg.to_dict(), "batch_size": B}


def configurations() -> dict[str, dict]:
    return {"paper": load_params(profile="paper")["linear_map"],
            "default": load_params(profile="default")["linear_map"]}


def run(groups: list[int], seconds: float, threads: int, device: str) -> dict:
    ceiling = matmul_ceiling(threads) if device == "cpu" else None
    if device == "cuda":
        a = torch.randn(8192, 8192, device="cuda")
        for _ in range(3):
            a @ a
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
        ceiling = 10 * 2 * 8192**3 / (time.perf_counter() - t) / 1e9
    ctx = mp.get_context("spawn")
    rows = []
    for name, section in configurations().items():
        for g in groups:
            with ctx.Pool(1) as pool:
                row = pool.apply(_measure, ((name, section, g, threads, seconds, device),))
            row["fraction_of_matmul_ceiling"] = row["gflop_per_s"] / ceiling
            rows.append(row)
            print(f"{name:8s} seeds/group {g:3d}: {row['steps_per_s']:7.2f} steps/s  {row['seed_steps_per_s']:8.2f} "
                  f"seed-steps/s  {row['gflop_per_s']:7.1f} GFLOP/s ({row['fraction_of_matmul_ceiling']:.0%} of "
                  f"ceiling)  peak {row['peak_memory_mib']:.0f} MiB", flush=True)
    for name in {r["config"] for r in rows}:
        base = next((r for r in rows if r["config"] == name and r["seeds_per_group"] == 1), None)
        for r in rows:
            if r["config"] == name and base:
                r["per_seed_speedup_vs_one"] = r["seed_steps_per_s"] / base["seed_steps_per_s"]
    best = {}
    for name in {r["config"] for r in rows}:
        mine = [r for r in rows if r["config"] == name]
        top = max(mine, key=lambda r: r["seed_steps_per_s"])
        best[name] = {"seeds_per_group": top["seeds_per_group"], "seed_steps_per_s": top["seed_steps_per_s"],
                      "fraction_of_matmul_ceiling": top["fraction_of_matmul_ceiling"],
                      "per_seed_speedup_vs_one": top.get("per_seed_speedup_vs_one")}
    return {"device": device, "threads": threads, "machine": platform.processor() or platform.machine(),
            "torch": torch.__version__, "matmul_ceiling_gflop_per_s": ceiling,
            "flop_counting": "analytic: 3 x forward matmul FLOPs (2 per multiply-add), causal attention counted at half",
            "results": rows, "best": best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="data/bench/throughput.json")
    parser.add_argument("--seconds", type=float, default=4.0, help="timed seconds per measurement")
    parser.add_argument("--groups", default="1,2,4,8", help="seeds per batch to try")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    result = run([int(g) for g in args.groups.split(",")], args.seconds, args.threads, args.device)
    write_json(result, Path(args.out))
    print(f"matmul ceiling {result['matmul_ceiling_gflop_per_s']:.0f} GFLOP/s; best: "
          + json.dumps(result["best"], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

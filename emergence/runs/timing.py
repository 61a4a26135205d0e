"""How long a training step and an evaluation take on this machine, timed after warm-up in the
calling process: what the plan (emergence/pipeline/cost.py) calibrates its forecast with, and
what the benchmark (emergence/tools/bench.py) builds its measurements on.
"""
from __future__ import annotations

import time
from dataclasses import replace

import torch

from emergence.core.model import ModelConfig, SeedTransformer
from emergence.core.train import (Task, TrainArgs, batch_generator, evaluate, make_optimizer, schedules, train_step,
                                  training_forward)
from emergence.runs import language_model as lm
from emergence.runs.allocator import keep_freed_memory
from emergence.runs.cells import Cell, task_module, task_of
from emergence.runs.runner import seed_groups


def synchronizer(device: str):
    """What waits for the device's queued work: a timed region ends only when its kernels have."""
    return torch.cuda.synchronize if device == "cuda" else (lambda: None)


def model_of(cell: Cell):
    module = task_module(task_of(cell))
    task = module.task_tensors(module.build_task(cell.task), cell.task)
    return task, module.model_config(cell.model, module.layout_of(cell.task))


def prepared(cell: Cell, threads: int, device: str):
    """(train section, task on the device, model config) in a fresh measuring process."""
    keep_freed_memory()
    torch.set_num_threads(threads)
    task, cfg = model_of(cell)
    return cell.train, task.to(torch.device(device)), cfg


WARMUP_STEPS, MIN_TIMED_STEPS = 3, 5


def timed(step, seconds: float, device: str) -> tuple[int, float, float]:
    sync = synchronizer(device)
    warm = time.perf_counter()
    for i in range(WARMUP_STEPS):  # with train.compile, the first steps compile (timed apart)
        step(i)
    sync()
    warmup_s = time.perf_counter() - warm
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or n < MIN_TIMED_STEPS:
        step(n)
        n += 1
    sync()
    return n, time.perf_counter() - start, warmup_s


def step_and_evaluation_seconds(cell: Cell, threads: int, seconds: float, device: str,
                                examples: tuple[str, ...] = ("none",), repeats: int = 5) -> tuple[float, dict[str, float]]:
    """Seconds per training step of one seed group (timed after warm-up) and, in the same
    process, the median seconds per evaluation (emergence.core.train.evaluate, no attention maps) of
    that group at each per-example setting of `examples`, alternated."""
    train, task, cfg = prepared(cell, threads, device)
    return timed_step_and_evaluation(train, task, cfg, seconds, device, examples, repeats)


def timed_step_and_evaluation(train: TrainArgs, task: Task, cfg: ModelConfig, seconds: float, device: str,
                              examples: tuple[str, ...] = ("none",), repeats: int = 5,
                              want_maps: bool = False) -> tuple[float, dict[str, float]]:
    """`step_and_evaluation_seconds` for a task already on `device` (`want_maps`: evaluations
    that also read the attention maps, as a checkpoint's do)."""
    seeds = list(range(train.seeds_per_group))
    model = SeedTransformer(cfg, seeds).to(device)
    opt = make_optimizer(model, train)
    forward = training_forward(model, train, None)

    def step(i: int) -> None:
        tokens = torch.stack([task.sampler(train.batch_size, batch_generator(s, i)) for s in seeds])
        train_step(forward, opt, tokens, task.loss_weights, train.grad_clip, precision=train.precision)

    n, elapsed, _ = timed(step, seconds, device)
    times: dict[str, list[float]] = {e: [] for e in examples}
    if examples:
        evaluate(model, task, want_maps=want_maps)
    for _ in range(repeats):
        for e in examples:
            start = time.perf_counter()
            evaluate(model, task, want_maps=want_maps, examples=e)
            times[e].append(time.perf_counter() - start)
    return elapsed / n, {e: median(t) for e, t in times.items()}


def language_model_seconds(section: lm.LanguageModelTraining, size: str, pretraining: str | None, seconds: float, device: str,
                           seeds: int | None = None) -> float:
    """Seconds this process, with its threads, takes to train one language-model variant (every
    seed group): its corpus steps (the corpus windows drawn in Python count: a third of a small
    model's step on 2 cores) and evaluations, each with the attention maps its checkpoint keeps,
    and for a pre-pretrained twin its steps on the synthetic task (a neural-CA batch takes twice
    a Dyck one to draw), each timed here after warm-up. Writing checkpoints is not timed.
    `seeds`: time batches of that many seeds and scale to the group (a paper-scale model's
    step on a CPU takes minutes for a whole group)."""
    train, dev = section.train, torch.device(device)
    group = train.seeds_per_group
    timed = replace(train, seeds_per_group=min(seeds or group, group))
    cfg = lm.model_config(section.sizes[size], lm.layout_of(section))
    task = lm.task_tensors(lm.build_task(section), section).to(dev)
    step_s, eval_s = timed_step_and_evaluation(timed, task, cfg, seconds, device, (train.examples,), repeats=3,
                                               want_maps=True)
    total = train.steps * step_s + len(schedules(train)[0]) * eval_s[train.examples]
    if pretraining is not None:
        pre_task = lm.pretraining_task(section.corpus, section.pretraining, pretraining, section.seq_len, 16).to(dev)
        pre_step_s, _ = timed_step_and_evaluation(timed, pre_task, cfg, seconds, device, examples=())
        total += section.pretraining.steps[pretraining] * pre_step_s
    return len(seed_groups(train)) * total * group / timed.seeds_per_group


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2

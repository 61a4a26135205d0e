"""Training and evaluation of many seeds at once, with resumable state and checkpoints.

Seeds are split into groups of `seeds_per_group`; each group is one SeedTransformer trained
in one batched loop. Batches are drawn from a generator keyed by (seed, step), so a seed's
data does not depend on its group or on where a run was interrupted. A group's state is
snapshotted to a scratch directory every `resume_every` steps; rerunning resumes from it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal, Mapping

import numpy as np
import torch
from tqdm.auto import tqdm

from emergence.common.io import atomic_dir
from emergence.common.schema import ConfigError, number
from emergence.common.torch_files import torch_load, torch_save
from emergence.core import metrics
from emergence.core.hooks import BiasArgs, Hook, compose, pattern_name
from emergence.core.model import ModelArgs, ModelConfig, SeedTransformer
from emergence.core.precision import Precision, resolve, training_autocast

# Evaluation sequences per forward pass: at most 128, fewer for long sequences so one layer's
# attention patterns (seeds x sequences x heads x T x T) stay under this many elements.
EVAL_CHUNK = 128
EVAL_PATTERN_ELEMENTS = 2**26
# Stored attention maps keep the first MAX_MAP_LEN query and key positions (the whole map for
# the linear map and small automata; a full map at the paper's S = 512 would be ~GBs a checkpoint).
MAX_MAP_LEN = 256
# Per evaluation example (float32, NaN where a seed diverged), as `train.examples` asks: the
# whole answer's log p (the sum over its output tokens of log p(correct token)) and whether all
# of it is right ("answer"), and also the same per unit ("units": a bit of x_1, a cell over all
# states). Test-set subsampling (the mirage chapter's resolution analysis) draws from these.
EXAMPLE_METRICS = {"none": (), "answer": ("example_answer_log_p", "example_exact"),
                   "units": ("example_answer_log_p", "example_exact", "example_unit_log_p", "example_unit_correct")}
Examples = Literal["none", "answer", "units"]
# Fault injection for the resume tests: raise after this many completed steps of a group.
FAULT_ENV = "EMERGENCE_FAULT_AFTER_STEP"


class InjectedFault(RuntimeError):
    pass


COMPILE_MODES = ("none", "default", "max-autotune-no-cudagraphs")
CompileMode = Literal["none", "default", "max-autotune-no-cudagraphs"]


@dataclass(frozen=True, kw_only=True)
class TrainArgs:
    """A `train` section: which seeds, the optimiser (AdamW), the budget and the schedules."""
    n_seeds: int = number(1, 4096)                 # independent training runs (the unit of every statistic)
    first_seed: int = number(0, 2**31 - 1)         # seeds first_seed .. first_seed + n_seeds - 1
    seeds_per_group: int = number(1, 4096)         # seeds trained together as one batched model
    steps: int = number(1, 10_000_000)             # optimiser steps per seed
    batch_size: int = number(1, 1_000_000)         # sequences per step per seed
    lr: float = number(0.0, 10.0)                  # AdamW learning rate (after warmup, constant)
    beta1: float = number(0.0, 1.0)                # AdamW's first-moment decay
    beta2: float = number(0.0, 1.0)                # AdamW's second-moment decay
    weight_decay: float = number(0.0, 10.0)        # AdamW's decoupled weight decay
    warmup_steps: int = number(0, 10_000_000)      # linear warmup from 0 (0: none)
    grad_clip: float = number(0.0, 1e6)            # each seed's global gradient norm clipped to this (0: not)
    eval_every: int = number(1, 10_000_000)        # evaluation spacing (plus powers of two before it)
    checkpoint_log_until: int = number(0, 10_000_000)  # checkpoints at 1, 2, 4, ... up to this step
    checkpoint_every: int = number(1, 10_000_000)  # then every this many steps, and at the end
    resume_every: int = number(1, 10_000_000)      # resumable state written every this many steps
    divergence_loss: float = number(0.0, None)     # a seed whose batch loss exceeds this counts as diverged
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto: CUDA where available
    threads: int = number(0, 1024)                 # torch threads in this process (0: torch's default)
    compile: CompileMode = "none"                  # torch.compile of the training forward
    precision: Precision = "float32"               # bf16-autocast where the device supports it (sweeps.precision)
    examples: Examples = "answer"                  # per-example answers kept at each evaluation (EXAMPLE_METRICS)

    def check(self, key: str) -> None:
        if self.seeds_per_group > self.n_seeds:
            raise ConfigError(f"{key}.seeds_per_group: must be <= {key}.n_seeds ({self.n_seeds}), "
                              f"got {self.seeds_per_group}")


@dataclass(frozen=True, kw_only=True)
class TrainingSection:
    """What a synthetic task's section trains from besides its `task`, which each task module's
    `Section` adds: the model, its training, and the attention-bias intervention."""
    model: ModelArgs
    train: TrainArgs
    bias: BiasArgs

    def check(self, key: str) -> None:
        for name, limit in (("layers", self.model.n_layer), ("heads", self.model.n_head)):
            chosen = getattr(self.bias, name)
            if chosen is not None and (not chosen or max(chosen) >= limit):
                raise ConfigError(f"{key}.bias.{name}: null (all) or indices in [0, {limit - 1}], got {chosen}")


def checkpoint_steps(total: int, log_until: int, every: int) -> list[int]:
    """Pythia-like: 0, 1, 2, 4, ... up to log_until, then multiples of `every`, and the last step."""
    steps = {0, total}
    p = 1
    while p <= min(log_until, total):
        steps.add(p)
        p *= 2
    steps.update(range(every, total + 1, every))
    return sorted(steps)


def eval_steps(total: int, every: int) -> list[int]:
    """0, powers of two below `every` (resolves the start), multiples of `every`, and the last step."""
    steps = {0, total}
    p = 1
    while p < min(every, total):
        steps.add(p)
        p *= 2
    steps.update(range(every, total + 1, every))
    return sorted(steps)


def schedules(train: TrainArgs) -> tuple[list[int], list[int]]:
    """(evaluation steps, checkpoint steps). Every checkpoint step is also evaluated, so the
    attention maps stored at checkpoints sit on the same step axis as the metrics."""
    ckpts = checkpoint_steps(train.steps, train.checkpoint_log_until, train.checkpoint_every)
    evals = sorted(set(eval_steps(train.steps, train.eval_every)) | set(ckpts))
    return evals, ckpts


def batch_generator(seed: int, step: int) -> torch.Generator:
    return torch.Generator().manual_seed((seed * 1_000_003 + step * 7919 + 17) % (2**63 - 1))


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("linear_map.train.device: cuda requested but torch.cuda.is_available() is False")
    return torch.device(name)


@dataclass
class Task:
    """What the trainer needs to know about a task, as tensors (task-agnostic).

    `output_positions` [G, K] groups the prediction positions by output unit (a bit of x_1
    for the linear map; a cell index, over all states, for cellular automata): per-unit
    metrics average over K. `sampler(batch, generator)` draws training sequences."""
    eval_tokens: torch.Tensor       # [N, T] int64
    loss_weights: torch.Tensor      # [T-1]
    gt_pattern: torch.Tensor        # [T, T] 0/1
    output_positions: torch.Tensor  # [G, K] int64
    n_output_tokens: int            # tokens that compete for an output (the others are ignored)
    sampler: Callable[[int, torch.Generator], torch.Tensor]

    @property
    def seq_len(self) -> int:
        return self.eval_tokens.shape[1]

    @property
    def n_units(self) -> int:
        return self.output_positions.shape[0]

    def to(self, device: torch.device) -> "Task":
        sampler = self.sampler
        return Task(self.eval_tokens.to(device), self.loss_weights.to(device), self.gt_pattern.to(device),
                    self.output_positions.to(device), self.n_output_tokens,
                    lambda batch, gen: sampler(batch, gen).to(device))


class Recorder:
    """Preallocated metric arrays for one group of seeds (numpy, NaN until written)."""

    def __init__(self, n_seeds: int, n_eval: int, n_ckpt: int, n_steps: int, cfg: ModelConfig, task: Task,
                 examples: Examples):
        S, L, H, T, N = task.n_units, cfg.n_layer, cfg.n_head, task.seq_len, task.eval_tokens.shape[0]
        nan = lambda *shape: np.full(shape, np.nan, dtype=np.float32)  # noqa: E731
        self.arrays = {
            "loss": nan(n_seeds, n_eval),
            "output_loss": nan(n_seeds, n_eval),
            "accuracy": nan(n_seeds, n_eval),
            "exact_match": nan(n_seeds, n_eval),
            "p_correct": nan(n_seeds, n_eval),
            "unit_loss": nan(n_seeds, n_eval, S),
            "unit_accuracy": nan(n_seeds, n_eval, S),
            "attention_entropy": nan(n_seeds, n_eval, L, H, S),
            "parent_mass": nan(n_seeds, n_eval, L, H, S),
            "attention_map": nan(n_seeds, n_ckpt, L, H, min(T, MAX_MAP_LEN), min(T, MAX_MAP_LEN)),
            "train_loss": nan(n_seeds, n_steps),
            **{name: nan(n_seeds, n_eval, N, *([S] if name.startswith("example_unit") else []))
               for name in EXAMPLE_METRICS[examples]},
        }
        self.diverged_step = np.full(n_seeds, -1, dtype=np.int64)

    def state(self) -> dict:
        """Tensors in plain dicts, so resume state loads with weights_only=True."""
        return {"arrays": {k: torch.from_numpy(v) for k, v in self.arrays.items()},
                "diverged_step": torch.from_numpy(self.diverged_step)}

    def load(self, state: dict) -> None:
        self.arrays = {k: v.numpy() for k, v in state["arrays"].items()}
        self.diverged_step = state["diverged_step"].numpy()


@torch.no_grad()
def evaluate(model: SeedTransformer, task: Task, want_maps: bool,
             extra_hooks: Mapping[str, Hook] | None = None, examples: str = "units") -> dict[str, np.ndarray]:
    """Metrics of every seed on the fixed evaluation set (same sequences for every seed): means
    over the set, and each example's answer as `examples` asks (EXAMPLE_METRICS), so that a
    smaller test set can be drawn from it afterwards."""
    cfg = model.cfg
    E = model.n_seeds
    G, K = task.output_positions.shape
    pred = task.output_positions.reshape(-1)                        # [G*K]
    parents = task.gt_pattern[pred].float()                         # [G*K, T]
    sums: dict[str, torch.Tensor] = {}
    kept: dict[str, list[torch.Tensor]] = {name: [] for name in EXAMPLE_METRICS[examples]}
    n_total = task.eval_tokens.shape[0]

    def add(name: str, value: torch.Tensor) -> None:
        sums[name] = sums[name] + value if name in sums else value

    def per_unit(x: torch.Tensor) -> torch.Tensor:  # [..., G*K] -> [..., G] (mean over the unit's positions)
        return x.reshape(*x.shape[:-1], G, K).mean(-1)

    T, M = task.seq_len, min(task.seq_len, MAX_MAP_LEN)
    chunk = max(1, min(EVAL_CHUNK, EVAL_PATTERN_ELEMENTS // (E * cfg.n_head * T * T)))
    for start in range(0, n_total, chunk):
        tokens = task.eval_tokens[start:start + chunk]
        n = tokens.shape[0]
        tokens = tokens.unsqueeze(0).expand(E, -1, -1)
        per_layer: dict[str, list] = {"attention_entropy": [], "parent_mass": [], "attention_map": []}

        def attention_metrics(pattern: torch.Tensor, name: str) -> None:  # [E, n, H, T, T], layers in order
            if cfg.mixer != "attention":  # a signed mixing matrix: read it as |M| normalised per row
                pattern = metrics.effective_distribution(pattern)
            entropy = metrics.attention_entropy(pattern)[..., pred]        # [E, n, H, G*K]
            per_layer["attention_entropy"].append(per_unit(entropy).sum(1))
            # Parent mass is linear in the pattern: sum over sequences first (cheap at large T).
            summed = pattern.sum(1)                                         # [E, H, T, T]
            per_layer["parent_mass"].append(per_unit(metrics.parent_mass(summed[..., pred, :], parents)))
            if want_maps:
                per_layer["attention_map"].append(summed[..., :M, :M])

        hooks = compose(extra_hooks or {}, {pattern_name(l): attention_metrics for l in range(cfg.n_layer)})
        logits = model(tokens, hooks)
        logp = metrics.next_token_log_probs(logits, tokens)           # [E, n, T-1]
        add("loss", metrics.weighted_mean_loss(logp, task.loss_weights) * n)
        outputs = metrics.output_predictions(logits, tokens, pred, task.n_output_tokens)  # [E, n, G*K]
        add("unit_loss", -per_unit(outputs["log_p"]).sum(1))
        add("unit_accuracy", per_unit(outputs["correct"].float()).sum(1))
        add("exact_match", outputs["correct"].all(-1).float().sum(1))
        add("p_correct", outputs["p"].mean(-1).sum(1))
        if kept:
            unit_log_p = outputs["log_p"].reshape(E, n, G, K).sum(-1)             # [E, n, G]
            unit_correct = outputs["correct"].reshape(E, n, G, K).all(-1)
            for name, value in (("example_answer_log_p", unit_log_p.sum(-1)), ("example_exact", unit_correct.all(-1)),
                                ("example_unit_log_p", unit_log_p), ("example_unit_correct", unit_correct)):
                if name in kept:
                    kept[name].append(value.float())
        for name, layers in per_layer.items():
            if layers:
                add(name, torch.stack(layers, dim=1))                     # [E, L, H, ...]
    out = {k: (v / n_total).cpu().numpy() for k, v in sums.items()}
    out.update({k: torch.cat(v, dim=1).cpu().numpy() for k, v in kept.items()})
    out["output_loss"] = out["unit_loss"].mean(-1)
    out["accuracy"] = out["unit_accuracy"].mean(-1)
    return out


def _lr_at(step: int, lr: float, warmup: int) -> float:
    return lr * min(1.0, (step + 1) / warmup) if warmup > 0 else lr


def _clip_per_seed(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Clip each seed's gradient to global norm `max_norm` separately; returns norms [E]."""
    grads = [p.grad for p in params if p.grad is not None]
    sq = torch.stack([g.pow(2).flatten(1).sum(1) for g in grads]).sum(0)
    norms = sq.sqrt()
    if max_norm > 0:
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norms


def train_step(model: SeedTransformer, opt: torch.optim.Optimizer, tokens: torch.Tensor, weights: torch.Tensor,
               grad_clip: float, hooks: Mapping[str, Hook] | None = None,
               precision: str = "float32") -> torch.Tensor:
    """One optimisation step of every seed; returns the per-seed training loss [E] (detached).

    The summed loss gives each seed exactly its own gradient (seeds share no parameters).
    `hooks` (e.g. an attention bias) apply to the training forward pass. Under `bf16-autocast`
    (already resolved for this device) the forward runs under autocast; the loss is float32."""
    with training_autocast(precision, tokens.device):
        logits = model(tokens, hooks)
    loss = metrics.weighted_mean_loss(metrics.next_token_log_probs(logits.float(), tokens), weights)  # [E]
    opt.zero_grad(set_to_none=True)
    loss.sum().backward()
    _clip_per_seed([p for g in opt.param_groups for p in g["params"]], grad_clip)
    opt.step()
    return loss.detach()


def training_forward(model: SeedTransformer, train: TrainArgs, hooks: Mapping[str, Hook] | None):
    """What the training steps call: the model, or torch.compile's wrapper of it (the same
    parameters, graphs specialised to the training shapes) when `train.compile` asks for it and
    no hook acts on the training pass (hooks stay eager, as evaluation does)."""
    mode = train.compile
    if mode == "none" or hooks:
        return model
    return torch.compile(model, mode=mode, dynamic=False)


def make_optimizer(model: SeedTransformer, train: TrainArgs) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=train.lr, betas=(train.beta1, train.beta2),
                             weight_decay=train.weight_decay, fused=True)


def train_group(seeds: list[int], model_cfg: ModelConfig, task: Task, train: TrainArgs, scratch: Path,
                group_index: int, n_groups: int, device: torch.device,
                train_hooks: Mapping[str, Hook] | None = None,
                eval_hooks: Mapping[str, Hook] | None = None,
                init_model: SeedTransformer | None = None) -> Recorder:
    """Train one group of seeds to the end, resuming from scratch/state.pt if present.

    `train_hooks` act on every training forward pass, `eval_hooks` on evaluation (an
    attention bias that stays on at evaluation is passed as both). `init_model` (holding
    these seeds, e.g. after pre-pretraining) replaces the fresh initialisation."""
    steps = train.steps
    evals, ckpts = schedules(train)
    eval_index = {s: i for i, s in enumerate(evals)}
    ckpt_index = {s: i for i, s in enumerate(ckpts)}
    recorder = Recorder(len(seeds), len(evals), len(ckpts), steps, model_cfg, task, train.examples)

    model = SeedTransformer(model_cfg, seeds).to(device)
    if init_model is not None:
        source = init_model.select_seeds([init_model.seeds.index(s) for s in seeds])
        model.load_state_dict(source.state_dict())
    opt = make_optimizer(model, train)
    state_path, ckpt_dir = scratch / "state.pt", scratch / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    start = 0
    if state_path.exists():
        state = torch_load(state_path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        recorder.load(state["recorder"])
        start = state["step"]

    def snapshot(step: int) -> None:
        torch_save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "recorder": recorder.state(), "step": step}, state_path)

    def observe(step: int) -> None:
        if step in ckpt_index:
            torch_save({"seeds": list(seeds), "model_config": model_cfg.to_dict(), "step": step,
                        "state_dict": model.state_dict()}, ckpt_dir / f"step{step:08d}.pt")
        if step in eval_index:
            m = evaluate(model, task, want_maps=step in ckpt_index, extra_hooks=eval_hooks, examples=train.examples)
            i = eval_index[step]
            for name, value in m.items():
                if name == "attention_map":
                    recorder.arrays[name][:, ckpt_index[step]] = value
                else:
                    recorder.arrays[name][:, i] = value
            dead = recorder.diverged_step >= 0
            if dead.any():
                for name, arr in recorder.arrays.items():
                    if name not in ("train_loss", "attention_map"):
                        arr[dead, i] = np.nan

    weights = task.loss_weights
    B = train.batch_size
    precision = resolve(train.precision, device)
    fault_after = int(os.environ.get(FAULT_ENV, "-1"))
    bar = tqdm(total=steps, initial=start, desc=f"train group {group_index + 1}/{n_groups}",
               unit="step", mininterval=2.0, dynamic_ncols=True)
    forward = training_forward(model, train, train_hooks)
    if start == 0:
        observe(0)
    for step in range(start, steps):
        tokens = torch.stack([task.sampler(B, batch_generator(seed, step)) for seed in seeds])
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, train.lr, train.warmup_steps)
        loss = train_step(forward, opt, tokens, weights, train.grad_clip, train_hooks, precision)
        loss_np = loss.cpu().numpy()
        recorder.arrays["train_loss"][:, step] = loss_np
        bad = (~np.isfinite(loss_np) | (loss_np > train.divergence_loss)) & (recorder.diverged_step < 0)
        recorder.diverged_step[bad] = step
        if bad.any():
            tqdm.write(f"seeds {[seeds[i] for i in np.flatnonzero(bad)]} diverged at step {step} "
                       f"(loss {loss_np[bad]}); their metrics are NaN from here on")
        done = step + 1
        observe(done)
        bar.update(1)
        if done % 50 == 0:
            bar.set_postfix(loss=f"{np.nanmean(loss_np):.4f}")
        if done % train.resume_every == 0 and done < steps:
            snapshot(done)
        if done == fault_after:
            raise InjectedFault(f"{FAULT_ENV}={fault_after}: simulated crash after step {done}")
    bar.close()
    snapshot(steps)
    return recorder


def merge_checkpoints(group_dirs: list[Path], out_dir: Path) -> None:
    """Stack the groups' checkpoints along the seed axis: out_dir/step{N}.pt holds every seed."""
    names = sorted(p.name for p in (group_dirs[0] / "checkpoints").glob("step*.pt"))
    with atomic_dir(out_dir) as tmp:
        for name in names:
            parts = [torch_load(d / "checkpoints" / name) for d in group_dirs]
            state = {k: torch.cat([p["state_dict"][k] for p in parts]) for k in parts[0]["state_dict"]}
            torch.save({"seeds": [s for p in parts for s in p["seeds"]], "model_config": parts[0]["model_config"],
                        "step": parts[0]["step"], "state_dict": state}, tmp / name)


def load_checkpoint(path: Path | str, device: str | torch.device = "cpu") -> SeedTransformer:
    blob = torch_load(path, map_location=device)
    model = SeedTransformer(ModelConfig(**blob["model_config"]), blob["seeds"]).to(device)
    model.load_state_dict(blob["state_dict"])
    return model


def flops_per_token(cfg: ModelConfig) -> float:
    """Forward multiply-adds x 2 per token at full context (matmuls only)."""
    d, T = cfg.d_model, cfg.seq_len
    per_layer = 2 * (3 * d * d + d * d + 2 * d * cfg.d_mlp) + 2 * 2 * T * d / 2  # causal: half the scores
    return cfg.n_layer * per_layer + 2 * (cfg.vocab_size * d) * 2


def train_flops_per_step(cfg: ModelConfig, batch: int) -> float:
    return 3.0 * flops_per_token(cfg) * batch * cfg.seq_len


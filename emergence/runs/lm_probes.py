"""Probes of the small language models at every checkpoint, emergence brackets by binary
search, and head-level attention patching across each bracket (claims 1-3 at CPU scale)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import xarray as xr

from emergence.analysis import patching as pt
from emergence.analysis.events import bracket_emergence, jump_start, steepest_interval
from emergence.common.schema import ConfigError, number, to_params
from emergence.core.metrics import attention_entropy
from emergence.core.model import parameter_count
from emergence.core.tasks import corpus as cp
from emergence.core.tasks.corpus import CorpusArgs
from emergence.core.train import load_checkpoint
from emergence.runs.language_model import LanguageModelTraining, variants, vocab_of


# Pattern completion of one cycle period (patterns_period2, ...): cycles of period 2 and 3 are two
# skills, learned at different steps, so a probe that mixes them climbs in two steps and reads as
# gradual (claim 1's abruptness); each period is its own capability.
PERIOD_PROBE = "patterns_period"


def probe_kinds(corpus: CorpusArgs) -> list[str]:
    """The capabilities a probe set can name: the corpus's probes and one pattern probe a period."""
    return [*cp.PROBES, *(f"{PERIOD_PROBE}{period}" for period in range(2, corpus.max_period + 1))]


@dataclass(frozen=True, kw_only=True)
class ProbeArgs:
    kinds: list[str]  # from probe_kinds (checked against the corpus by LanguageModelArgs)
    n_prompts: int = number(1, 100_000)        # held-out prompts per capability
    solved_accuracy: float = number(0.0, 1.0)  # greedy accuracy at which a capability counts as solved

    def check(self, key: str) -> None:
        if not self.kinds:
            raise ConfigError(f"{key}.kinds: at least one of {list(cp.PROBES)} or {PERIOD_PROBE}<period>")
        if len(set(self.kinds)) != len(self.kinds):
            raise ConfigError(f"{key}.kinds: each capability once, got {self.kinds}")


@dataclass(frozen=True, kw_only=True)
class PatchingArgs:
    top_k: list[int] = number(1, None)  # heads patched together, ranked by their single-head effect
    positions: Literal["all", "answer"] = "all"  # query rows patched: every one, or the answer's
    bracket: Literal["steepest", "jump", "last_unsolved"] = "steepest"  # the checkpoint interval patched across
    min_gap: float = number(0.0, 1.0)           # brackets whose p(correct) rises by less are not patched


@dataclass(frozen=True, kw_only=True)
class LanguageModelArgs(LanguageModelTraining):
    """The `language_model` section: what trains the family, and how it is probed and patched."""
    probes: ProbeArgs
    patching: PatchingArgs

    def check(self, key: str) -> None:
        super().check(key)
        allowed = probe_kinds(self.corpus)
        unknown = [k for k in self.probes.kinds if k not in allowed]
        if unknown:
            raise ConfigError(f"{key}.probes.kinds: names from {allowed} (periods 2..{key}.corpus.max_period), "
                              f"got {unknown}")
        if self.corpus.longest_prompt > self.seq_len:
            raise ConfigError(f"{key}.seq_len: the longest probe prompt has {self.corpus.longest_prompt} tokens, "
                              f"got {self.seq_len}")


@torch.no_grad()
def probe_model(model, probes: dict[str, tuple[np.ndarray, np.ndarray]], per_prompt: bool = False) -> dict:
    """kind -> (greedy accuracy [E], mean p(correct) [E]) of every seed of `model` on each probe
    set; with `per_prompt`, (correct [E, prompt], p(correct) [E, prompt]) instead."""
    out = {}
    for kind, (prompts, answers) in probes.items():
        x = torch.from_numpy(prompts).unsqueeze(0).expand(model.n_seeds, -1, -1)
        logits = model(x)
        pos = torch.full((len(answers),), prompts.shape[1] - 1)
        y = torch.from_numpy(answers)
        p = pt.answer_probability(logits, pos, y)
        greedy = logits[:, torch.arange(len(y)), pos].argmax(-1) == y
        out[kind] = (greedy.numpy(), p.numpy()) if per_prompt else (greedy.float().mean(1).numpy(), p.mean(1).numpy())
    return out


def period_probe_set(period: int, n: int, vocab, corpus: CorpusArgs) -> tuple[np.ndarray, np.ndarray]:
    """n held-out pattern-completion probes whose cycle has `period` tokens: the first n of that
    period among the corpus's pattern probes (drawn in its fixed order, as many as it takes)."""
    drawn = n
    while True:
        prompts, answers, keys = cp.probe_set("patterns", drawn, vocab, corpus, seed=0)
        mine = [i for i, key in enumerate(keys) if len(key.split(":", 1)[1].split()) == period]
        if len(mine) >= n:
            return prompts[mine[:n]], answers[mine[:n]]
        drawn *= 2   # cp.probe_set says so where the held-out patterns run out


def make_probes(corpus: CorpusArgs, probe_params: ProbeArgs) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    vocab = vocab_of(corpus)
    n = probe_params.n_prompts
    return {kind: period_probe_set(int(kind[len(PERIOD_PROBE):]), n, vocab, corpus) if kind.startswith(PERIOD_PROBE)
            else cp.probe_set(kind, n, vocab, corpus, seed=0)[:2] for kind in probe_params.kinds}


def probe_checkpoints(checkpoints: dict[int, object], probes: dict) -> xr.Dataset:
    """Probe every checkpoint (step -> model): accuracy and p_correct [capability, seed,
    checkpoint_step], and per prompt whether the greedy answer is right and its p(correct)
    (the mirage chapter's resolution analysis subsamples them)."""
    steps = sorted(checkpoints)
    kinds = list(probes)
    first = checkpoints[steps[0]]
    n_prompts = len(next(iter(probes.values()))[1])
    correct = np.zeros((len(kinds), first.n_seeds, len(steps), n_prompts), dtype=np.uint8)
    p_prompt = np.zeros(correct.shape, dtype=np.float32)
    acc = np.zeros(correct.shape[:3], dtype=np.float32)
    pc = np.zeros_like(acc)
    for j, step in enumerate(steps):
        res = probe_model(checkpoints[step], probes, per_prompt=True)
        for i, kind in enumerate(kinds):
            greedy, p = res[kind]
            correct[i, :, j], p_prompt[i, :, j] = greedy, p
            acc[i, :, j] = torch.from_numpy(greedy).float().mean(1).numpy()   # the means as torch takes them
            pc[i, :, j] = torch.from_numpy(p).mean(1).numpy()
    dims = ("capability", "seed", "checkpoint_step")
    return xr.Dataset({"probe_accuracy": (dims, acc), "probe_p_correct": (dims, pc),
                       "probe_prompt_correct": (dims + ("prompt",), correct),
                       "probe_prompt_p_correct": (dims + ("prompt",), p_prompt)},
                      coords={"capability": kinds, "seed": list(first.seeds), "checkpoint_step": steps,
                              "prompt": np.arange(n_prompts)})


def load_checkpoints(ckpt_dir) -> dict[int, object]:
    return {int(p.stem[4:]): load_checkpoint(p) for p in sorted(ckpt_dir.glob("step*.pt"))}


def brackets(ckpts: dict[int, object], probes: dict, solved_accuracy: float) -> dict[str, np.ndarray]:
    """Per (capability, seed): the emergence bracket found by binary search over checkpoints, as
    the paper locates emergence in Pythia (each probe of a checkpoint is one evaluation)."""
    steps = sorted(ckpts)
    kinds = list(probes)
    n_seed = ckpts[steps[0]].n_seeds
    out = {k: np.full((len(kinds), n_seed), -1, dtype=np.int64) for k in ("old_step", "new_step", "evaluations")}
    out["censored"] = np.zeros((len(kinds), n_seed), dtype=np.int8)
    for i, kind in enumerate(kinds):
        for k in range(n_seed):
            cache: dict[int, bool] = {}

            def solved(step: int) -> bool:
                if step not in cache:
                    model = ckpts[step].select_seeds([k])
                    cache[step] = bool(probe_model(model, {kind: probes[kind]})[kind][0][0] >= solved_accuracy)
                return cache[step]

            b = bracket_emergence(steps, solved)
            out["old_step"][i, k] = -1 if b.old is None else b.old
            out["new_step"][i, k] = -1 if b.new is None else b.new
            out["censored"][i, k] = b.censored
            out["evaluations"][i, k] = b.evaluations
    return out


def jump_brackets(ds: xr.Dataset) -> np.ndarray:
    """Per (capability, seed): the checkpoint at which the jump to the first solved checkpoint
    starts (`jump_start` on the dense probe table), the pre-emergence end of a patching bracket;
    -1 where the run is censored or has no such checkpoint."""
    steps = ds["checkpoint_step"].values
    acc = ds["probe_accuracy"].values
    out = np.full(acc.shape[:2], -1, dtype=np.int64)
    for i in range(acc.shape[0]):
        for k in range(acc.shape[1]):
            new = int(ds["bracket_new_step"].values[i, k])
            if ds["bracket_censored"].values[i, k] or new < 0:
                continue
            start, _ = jump_start(steps, acc[i, k], new)
            out[i, k] = int(start) if np.isfinite(start) else -1
    return out


def steepest_brackets(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Per (capability, seed): (old, new) checkpoints of the steepest single rise of p(correct)
    at or before the first solved checkpoint (`steepest_interval`), the paper's patching bracket;
    -1 where the run is censored."""
    steps = ds["checkpoint_step"].values
    pc = ds["probe_p_correct"].values
    old, new = (np.full(pc.shape[:2], -1, dtype=np.int64) for _ in range(2))
    for i in range(pc.shape[0]):
        for k in range(pc.shape[1]):
            end = int(ds["bracket_new_step"].values[i, k])
            if ds["bracket_censored"].values[i, k] or end < 0:
                continue
            a, b = steepest_interval(steps, pc[i, k], end)
            if np.isfinite(a):
                old[i, k], new[i, k] = int(a), int(b)
    return old, new


def patch_bracket(sel: xr.Dataset, bracket: str) -> tuple[np.ndarray, np.ndarray]:
    """(old, new) checkpoint steps [capability, seed] that patching compares, by `bracket`:
    steepest (the steepest single rise of p(correct) before the first solved checkpoint, the
    paper's), jump (from where the jump starts to the first solved) or last_unsolved (from the
    last unsolved to the first solved); -1 where there is none."""
    if bracket == "steepest":
        return steepest_brackets(sel)
    new = sel["bracket_new_step"].values.astype(np.int64)
    old = sel["bracket_jump_old_step" if bracket == "jump" else "bracket_old_step"].values.astype(np.int64)
    return old, new


def training_record(model_dir, checkpoint_steps: np.ndarray) -> tuple[int, str, xr.DataArray]:
    """What a trained variant's train.nc records beside its checkpoints: its pre-pretraining
    steps (0: from scratch), what it carried into the corpus phase ("": nothing) and its
    held-out corpus loss [seed, checkpoint_step] (every checkpoint is also an evaluation step)."""
    with xr.open_dataset(model_dir / "train.nc") as ds:
        pre = json.loads(ds.attrs["config"])["language_model"]["pretraining"]
        loss = ds["loss"].sel(step=checkpoint_steps).rename(step="checkpoint_step").load()
    return (int(pre["steps"]) if pre else 0), (pre["transfer"] if pre else ""), loss


def probe_sizes(section: LanguageModelArgs, lm_root) -> xr.Dataset:
    """Dense probe table and binary-search brackets of every size: [size, capability, seed, checkpoint_step]."""
    probes = make_probes(section.corpus, section.probes)
    threshold = section.probes.solved_accuracy
    per_size = []
    names = list(variants(section))
    for name in names:
        ckpts = load_checkpoints(lm_root / name / "checkpoints")
        ds = probe_checkpoints(ckpts, probes)
        for key, arr in brackets(ckpts, probes, threshold).items():
            ds[f"bracket_{key}"] = (("capability", "seed"), arr)
        ds["bracket_jump_old_step"] = (("capability", "seed"), jump_brackets(ds))
        cfg = ckpts[min(ckpts)].cfg
        ds["n_params"] = ((), parameter_count(cfg))
        steps, transfer, loss = training_record(lm_root / name, ds["checkpoint_step"].values)
        ds["pretraining_steps"] = ((), steps)
        ds["pretraining_transfer"] = ((), transfer)
        ds["corpus"] = ((), variants(section)[name].corpus or "main")
        ds["corpus_loss"] = loss.sel(seed=ds["seed"].values).drop_vars(
            [c for c in loss.coords if c not in ("seed", "checkpoint_step")])
        per_size.append(ds)
    out = xr.concat(per_size, dim=xr.DataArray(names, dims="size", name="size"))
    out.attrs = {"experiment": "language_model:probes", "solved_accuracy": threshold,
                 "config": json.dumps(to_params({"probes": section.probes, "corpus": section.corpus,
                                                 "rare_skills": section.rare_skills}), sort_keys=True)}
    return out


@torch.no_grad()
def patch_size(section: LanguageModelArgs, lm_root, size_name: str, probe_ds: xr.Dataset) -> xr.Dataset:
    """Head-level patching of every (capability, seed) with an emergence bracket of one size,
    across the checkpoints `patch_bracket` picks by `bracket`. Brackets whose p(correct) rises by
    less than `min_gap` are not patched (a recovered fraction of a vanishing gap is noise); `gap`
    records every bracket's rise. Beside the top-k heads: every head's pattern patched at once
    (the ceiling for attention patching) and every head's output (how much of the gap the
    attention layers carry at all). The sharpening test's heads are ranked on the even-numbered
    prompts and their entropy read on the odd-numbered ones, so that the ranking does not pick
    the heads whose entropy happened to move on the prompts it is measured on."""
    pcfg = section.patching
    probes = make_probes(section.corpus, section.probes)
    ckpts = load_checkpoints(lm_root / size_name / "checkpoints")
    cfg = ckpts[min(ckpts)].cfg
    L, H = cfg.n_layer, cfg.n_head
    kinds, seeds = list(probes), list(ckpts[min(ckpts)].seeds)
    ks = [k for k in pcfg.top_k if k <= L * H]
    nan = lambda *shape: np.full(shape, np.nan, dtype=np.float32)  # noqa: E731
    effects, reverse, prev_score, ind_score, ent_old, ent_new = (nan(len(kinds), len(seeds), L, H) for _ in range(6))
    ranking_delta, held_old, held_new = (nan(len(kinds), len(seeds), L, H) for _ in range(3))
    recovery = nan(len(kinds), len(seeds), len(ks))
    p_old, p_new, gap_of, pattern_roof, output_roof = (nan(len(kinds), len(seeds)) for _ in range(5))
    sel = probe_ds.sel(size=size_name)
    old_steps, new_steps = patch_bracket(sel, pcfg.bracket)
    # previous-token and induction scores on a random span repeated twice
    g = torch.Generator().manual_seed(0)
    period = cfg.seq_len // 2
    first_random = vocab_of(section.corpus).id("r000")
    span = torch.randint(first_random, first_random + section.corpus.n_random, (16, period), generator=g)
    repeated = torch.cat([span, span], dim=1)
    for i, kind in enumerate(kinds):
        prompts, answers = (torch.from_numpy(a) for a in probes[kind])
        pos = torch.full((len(answers),), prompts.shape[1] - 1)
        rows = None if pcfg.positions == "all" else [prompts.shape[1] - 1]
        for k, seed in enumerate(seeds):
            old_step, new_step = int(old_steps[i, k]), int(new_steps[i, k])
            if sel["bracket_censored"].values[i, k] or old_step < 0 or new_step < 0:
                continue
            old, new = ckpts[old_step].select_seeds([k]), ckpts[new_step].select_seeds([k])
            x = prompts.unsqueeze(0)
            pn = pt.answer_probability(new(x), pos, answers).mean(1)
            po = pt.answer_probability(old(x), pos, answers).mean(1)
            p_new[i, k], p_old[i, k], gap_of[i, k] = float(pn), float(po), float(pn - po)
            if not float(pn - po) >= pcfg.min_gap:
                continue
            donor = pt.record_attention(new, x)
            e = pt.head_effects(old, donor, x, pos, answers, query_positions=rows)[0]
            effects[i, k] = e.numpy()
            ranking = pt.rank_heads(e)
            recovery[i, k] = pt.top_k_recovery(old, donor, ranking, ks, x, pos, answers, pn,
                                               query_positions=rows)[0].numpy()
            pattern_roof[i, k] = float(pt.all_heads_recovery(old, new, x, pos, answers, "pattern", rows)[0])
            output_roof[i, k] = float(pt.all_heads_recovery(old, new, x, pos, answers, "z", rows)[0])
            answer_row = prompts.shape[1] - 1

            def entropies(model, tokens):
                return {layer: attention_entropy(pat[0, :, :, answer_row]).mean(0).numpy()
                        for layer, pat in pt.record_attention(model, tokens, "pattern").items()}

            ranking, held = x[:, 0::2], x[:, 1::2]
            ranking_delta[i, k] = pt.head_effects(old, pt.record_attention(new, ranking), ranking, pos[0::2],
                                                  answers[0::2], query_positions=rows)[0].numpy()
            for store, model, tokens in ((ent_new, new, x), (ent_old, old, x), (held_new, new, held),
                                         (held_old, old, held)):
                for layer, value in entropies(model, tokens).items():
                    store[i, k, layer] = value
            back = pt.record_attention(old, x)
            reverse[i, k] = pt.head_effects(new, back, x, pos, answers, query_positions=rows)[0].numpy()
            pats = pt.record_attention(new, repeated.unsqueeze(0), "pattern")
            for layer in range(L):
                prev_score[i, k, layer] = pt.previous_token_score(pats[layer][0]).mean(0).numpy()
                ind_score[i, k, layer] = pt.induction_score(pats[layer][0], period).mean(0).numpy()
    dims = ("capability", "seed", "layer", "head")
    return xr.Dataset(
        {"delta_p": (dims, effects, {"long_name": "rise in the old model's p(correct) when this head takes the new model's attention"}),
         "reverse_delta_p": (dims, reverse, {"long_name": "change in the new model's p(correct) when this head takes the old model's attention"}),
         "top_k_recovery": (("capability", "seed", "k"), recovery,
                            {"long_name": "fraction of the old -> new gap recovered by patching the top k heads together"}),
         "all_heads_pattern_recovery": (("capability", "seed"), pattern_roof,
                                        {"long_name": "fraction of the gap recovered by patching every head's pattern at once"}),
         "all_heads_output_recovery": (("capability", "seed"), output_roof,
                                       {"long_name": "fraction of the gap recovered by patching every head's output z at once"}),
         "ranking_delta_p": (dims, ranking_delta,
                             {"long_name": "delta_p on the even-numbered prompts only (ranks the head whose sharpening is read)"}),
         "held_out_entropy_old": (dims, held_old, {"long_name": "entropy_old on the odd-numbered prompts only"}),
         "held_out_entropy_new": (dims, held_new, {"long_name": "entropy_new on the odd-numbered prompts only"}),
         "p_old": (("capability", "seed"), p_old), "p_new": (("capability", "seed"), p_new),
         "gap": (("capability", "seed"), gap_of, {"long_name": "p_new - p_old across the bracket (patched where >= min_gap)"}),
         "old_step": (("capability", "seed"), old_steps),
         "new_step": (("capability", "seed"), new_steps),
         "entropy_old": (dims, ent_old, {"long_name": "old model: entropy (nats) of the answer row's attention"}),
         "entropy_new": (dims, ent_new, {"long_name": "new model: entropy (nats) of the answer row's attention"}),
         "previous_token_score": (dims, prev_score, {"long_name": "new model: attention from t to t-1"}),
         "induction_score": (dims, ind_score, {"long_name": "new model: attention to the token after the previous occurrence"})},
        coords={"capability": kinds, "seed": seeds, "layer": np.arange(L), "head": np.arange(H), "k": ks},
        attrs={"experiment": "language_model:patching", "size": size_name, "stage": "pattern",
               "positions": pcfg.positions, "bracket": pcfg.bracket, "min_gap": pcfg.min_gap})

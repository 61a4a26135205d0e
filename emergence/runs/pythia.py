"""Real Pythia / PolyPythia checkpoints behind the hook points of emergence.core.model.

`HookedNeoX` wraps a Hugging Face GPT-NeoX causal LM so the patching and probing code that
runs on SeedTransformer runs on it unchanged: forward(tokens [1, B, T], hooks) -> logits
[1, B, T, V], with `blocks.{l}.attn.hook_scores` (pre-softmax, before the causal mask) and
`blocks.{l}.attn.hook_pattern` (post-softmax) on every layer. It does this by registering an
attention function with transformers' AttentionInterface that is the eager computation plus
the two hook calls; without hooks it gives the eager logits exactly (tested).

Nothing here downloads unless asked: `load_checkpoint` reads a local directory, or, when
given a hub name, `EleutherAI/pythia-{size}[-seed{k}]` at revision `step{N}`. Switched on by
`pythia.enabled`; tested offline on a tiny GPT-NeoX saved by the test.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Literal, Mapping

import numpy as np
import torch
import xarray as xr

from emergence.analysis import patching as pt
from emergence.analysis.events import bracket_emergence
from emergence.common.schema import number
from emergence.core.hooks import Hook, apply_hook, pattern_name, scores_name

@dataclass(frozen=True, kw_only=True)
class PythiaArgs:
    """The `pythia` section (hub downloads; off unless `enabled`)."""
    enabled: bool                                # downloads checkpoints from the hub: off unless the user turns it on
    sizes: list[Literal["14m", "31m", "70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b"]]  # Pythia sizes
    seeds: list[int] = number(0, 9)              # PolyPythia: 0 = the original, 1-9 = -seed{k}
    max_step: int = number(0, 143000)            # the last released checkpoint searched
    capability: Literal["digits", "words"] = "digits"  # repeated digit strings, or repeated words
    n_prompts: int = number(1, 100_000)          # probe prompts
    solved_accuracy: float = number(0.0, 1.0)    # greedy accuracy at which the capability counts as solved
    top_k: list[int] = number(1, None)           # heads patched together, ranked by their single-head effect
    device: Literal["cpu", "cuda"] = "cuda"      # where the checkpoints run


ATTENTION_NAME = "emergence_hooked"
_ACTIVE_HOOKS: contextvars.ContextVar[Mapping[str, Hook] | None] = contextvars.ContextVar("hooks", default=None)
# Pythia's released checkpoints: 0, 1, 2, 4, ..., 512, then every 1000 steps to 143000.
PROBE_WORDS = ("apple", "river", "stone", "cloud", "green", "music", "paper", "light", "table", "horse")
PYTHIA_STEPS = [0] + [2**i for i in range(10)] + list(range(1000, 143001, 1000))


def _apply(hooks, name: str, x: torch.Tensor) -> torch.Tensor:
    """The project's hook helper, with the leading seed axis (of 1) that hooks expect."""
    return apply_hook(hooks, name, x.unsqueeze(0)).squeeze(0)


def hooked_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """transformers' eager attention with the two hook points in between."""
    hooks, layer = _ACTIVE_HOOKS.get(), module.layer_idx
    scores = _apply(hooks, scores_name(layer), torch.matmul(query, key.transpose(2, 3)) * scaling)
    if attention_mask is None:  # no mask built for us: apply the causal mask here
        T, S = scores.shape[-2:]
        causal = torch.ones(T, S, dtype=torch.bool, device=scores.device).tril(S - T)
        scores = scores.masked_fill(~causal, float("-inf"))
    elif attention_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attention_mask[..., : key.shape[-2]], float("-inf"))
    else:
        scores = scores + attention_mask[..., : key.shape[-2]]
    pattern = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    pattern = _apply(hooks, pattern_name(layer), pattern)
    pattern = torch.nn.functional.dropout(pattern, p=dropout, training=module.training)
    return torch.matmul(pattern, value).transpose(1, 2).contiguous(), pattern


def _register() -> None:
    # transformers loads only where the hub path runs (the pythia stage is off by default).
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    AttentionInterface.register(ATTENTION_NAME, hooked_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, eager_mask)  # additive float masks, as eager


@dataclass(frozen=True)
class NeoXShape:
    n_layer: int
    n_head: int
    seq_len: int
    vocab_size: int


class HookedNeoX:
    """A GPT-NeoX causal LM as a one-seed model with hook points."""

    def __init__(self, hf_model, seed: int = 0):
        _register()
        hf_model.config._attn_implementation = ATTENTION_NAME
        self.hf = hf_model.eval()
        c = hf_model.config
        self.cfg = NeoXShape(c.num_hidden_layers, c.num_attention_heads, c.max_position_embeddings, c.vocab_size)
        self.seeds = (seed,)

    @property
    def n_seeds(self) -> int:
        return 1

    def select_seeds(self, indices: list[int]) -> "HookedNeoX":
        if list(indices) != [0]:
            raise IndexError(f"a Pythia checkpoint holds one seed; asked for {indices}")
        return self

    def __call__(self, tokens: torch.Tensor, hooks: Mapping[str, Hook] | None = None) -> torch.Tensor:
        if tokens.dim() != 3 or tokens.shape[0] != 1:
            raise ValueError(f"tokens must be [1, B, T], got {tuple(tokens.shape)}")
        token = _ACTIVE_HOOKS.set(hooks)
        try:
            with torch.no_grad():
                logits = self.hf(input_ids=tokens[0].to(self.hf.device)).logits
        finally:
            _ACTIVE_HOOKS.reset(token)
        return logits.unsqueeze(0).float().cpu()


def hub_name(size: str, seed: int) -> str:
    """PolyPythia: seed 0 is the original `EleutherAI/pythia-{size}`, seeds 1-9 are `-seed{k}`."""
    return f"EleutherAI/pythia-{size}" + (f"-seed{seed}" if seed else "")


def load_checkpoint(source: str, step: int | None, seed: int = 0, device: str = "cpu") -> HookedNeoX:
    """A local directory (step None) or a hub repository at revision step{N}; float32, eval mode."""
    from transformers import GPTNeoXForCausalLM

    kwargs = {} if step is None else {"revision": f"step{step}"}
    model = GPTNeoXForCausalLM.from_pretrained(source, dtype=torch.float32, **kwargs).to(device)
    return HookedNeoX(model, seed)


def text_probes(kind: str, n: int, seed: int = 0) -> list[tuple[str, str]]:
    """(prompt, answer) text pairs for Pythia: the paper's digit-string repetition ("0 7 3 1 2 0 2
    3 0 7 3 1 2 0 2" -> " 3") and in-context repetition of random words."""
    rng = np.random.default_rng([seed, {"digits": 0, "words": 1}[kind]])
    out = []
    for _ in range(n):
        if kind == "digits":
            s = [str(d) for d in rng.integers(0, 10, size=8)]
            out.append((" ".join(s + s[:-1]), " " + s[-1]))
        else:
            s = [PROBE_WORDS[i] for i in rng.integers(0, len(PROBE_WORDS), size=6)]
            out.append((" ".join(s + s[:-1]), " " + s[-1]))
    return out


def encode_probes(tokenizer, pairs: list[tuple[str, str]]) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Tokenised probes grouped by prompt length: length -> (prompts [n, L], answers [n]); pairs whose
    answer is not a single token are dropped (the paper scores single-token answers)."""
    groups: dict[int, tuple[list, list]] = {}
    for prompt, answer in pairs:
        p, a = tokenizer(prompt)["input_ids"], tokenizer(answer)["input_ids"]
        if len(a) != 1:
            continue
        groups.setdefault(len(p), ([], []))
        groups[len(p)][0].append(p)
        groups[len(p)][1].append(a[0])
    return {L: (torch.tensor(ps), torch.tensor(ans)) for L, (ps, ans) in groups.items()}


def probe_accuracy(model: HookedNeoX, encoded: dict[int, tuple[torch.Tensor, torch.Tensor]]) -> tuple[float, float]:
    """(greedy accuracy, mean p(correct)) over every probe group."""
    hits, probs, n = 0.0, 0.0, 0
    for L, (prompts, answers) in encoded.items():
        logits = model(prompts.unsqueeze(0))
        pos = torch.full((len(answers),), L - 1)
        hits += float((logits[0, torch.arange(len(answers)), pos].argmax(-1) == answers).sum())
        probs += float(pt.answer_probability(logits, pos, answers).sum())
        n += len(answers)
    return hits / max(n, 1), probs / max(n, 1)


def load_tokenizer(source: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


def run(pythia: PythiaArgs, loader=load_checkpoint, tokenizer_loader=load_tokenizer):
    """The paper's Pythia analysis for every (size, seed) of `pythia` (the params section):
    emergence of the capability bracketed by binary search over the released checkpoints
    (each evaluation loads one checkpoint), then head-level patching across the bracket.
    Returns an xarray Dataset over (size, seed). `loader(source, step, seed, device)` and
    `tokenizer_loader(source)` default to the hub; tests pass local ones."""
    sizes, seeds = pythia.sizes, pythia.seeds
    steps = [s for s in PYTHIA_STEPS if s <= pythia.max_step]
    ks = pythia.top_k
    shape = (len(sizes), len(seeds))
    out = {name: np.full(shape, -1, dtype=np.int64) for name in ("old_step", "new_step", "evaluations")}
    out["censored"] = np.zeros(shape, dtype=np.int8)
    p_old, p_new = np.full(shape, np.nan), np.full(shape, np.nan)
    recovery = np.full(shape + (len(ks),), np.nan)
    top_heads = np.full(shape, "", dtype=object)
    for i, size in enumerate(sizes):
        for j, seed in enumerate(seeds):
            source = hub_name(size, seed)
            encoded = encode_probes(tokenizer_loader(source), text_probes(pythia.capability, pythia.n_prompts))
            accuracy: dict[int, float] = {}

            def solved(step: int) -> bool:
                if step not in accuracy:
                    accuracy[step] = probe_accuracy(loader(source, step, seed, pythia.device), encoded)[0]
                return accuracy[step] >= pythia.solved_accuracy

            b = bracket_emergence(steps, solved)
            out["old_step"][i, j] = -1 if b.old is None else b.old
            out["new_step"][i, j] = -1 if b.new is None else b.new
            out["censored"][i, j], out["evaluations"][i, j] = b.censored, b.evaluations
            if b.censored or b.old is None:
                continue
            old, new = loader(source, b.old, seed, pythia.device), loader(source, b.new, seed, pythia.device)
            L = max(encoded, key=lambda n: len(encoded[n][1]))  # the largest group of equal-length prompts
            prompts, answers = encoded[L]
            x, pos = prompts.unsqueeze(0), torch.full((len(answers),), L - 1)
            donor = pt.record_attention(new, x)
            effects = pt.head_effects(old, donor, x, pos, answers)[0]
            ranking = pt.rank_heads(effects)
            pn = pt.answer_probability(new(x), pos, answers).mean(1)
            p_new[i, j] = float(pn)
            p_old[i, j] = float(pt.answer_probability(old(x), pos, answers).mean(1))
            recovery[i, j] = pt.top_k_recovery(old, donor, ranking, ks, x, pos, answers, pn)[0].numpy()
            top_heads[i, j] = " ".join(f"{pt.head_label(l, h)}:{float(effects[l, h]):+.3f}" for l, h in ranking[:5])
    return xr.Dataset(
        {**{k: (("size", "seed"), v) for k, v in out.items()},
         "p_old": (("size", "seed"), p_old), "p_new": (("size", "seed"), p_new),
         "top_k_recovery": (("size", "seed", "k"), recovery),
         "top_heads": (("size", "seed"), top_heads.astype(str),
                       {"long_name": "top 5 heads by single-head Δp, as layer.head:Δp"})},
        coords={"size": sizes, "seed": seeds, "k": ks},
        attrs={"experiment": "pythia", "status": "ran", "capability": pythia.capability,
               "solved_accuracy": pythia.solved_accuracy, "stage": "pattern"})

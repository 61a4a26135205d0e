"""Small language models trained on the generated corpus (the paper's Section 2 at CPU scale).

The paper studies Pythia checkpoints; here each size is a SeedTransformer family trained with
the shared trainer (seeds together, Pythia-like checkpoints, resumable), optionally after
pre-pretraining on a synthetic task (claim 9: Dyck-k, neural cellular automata, or the control,
i.i.d. random tokens), written with tokens of its own that the corpus never uses. The trainer's per-position evaluation runs on held-out
corpus windows (its "parents" are the previous token, so `parent_mass` is the previous-token
attention); capabilities are measured on the held-out probe sets by
emergence/runs/lm_probes.py. A trained variant (results and checkpoints) goes through
the cell cache, keyed by its configuration and this module's import closure.
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, fields, replace
from typing import Literal, NamedTuple

import numpy as np
import torch
import xarray as xr

from emergence.common.import_closure import module_code_version
from emergence.common.lm_variants import RARE, variant_name
from emergence.common.schema import ConfigError, load, number, to_params
from emergence.core.model import ModelConfig, SeedTransformer
from emergence.core.tasks import corpus as cp
from emergence.core.tasks.corpus import CorpusArgs, Mixture
from emergence.core.tasks.dyck import sample_dyck
from emergence.core.tasks.neural_ca import sample_neural_ca
from emergence.core.train import Task, TrainArgs, load_checkpoint
from emergence.runs.runner import PreparedTraining, prepare, runs_on, train_prepared, train_seeds

@dataclass(frozen=True, kw_only=True)
class SizeArgs:
    """One model size: d_model = n_head * d_head, d_mlp = mlp_ratio * d_model."""
    n_layer: int = number(1, 64)      # blocks
    n_head: int = number(1, 1024)     # attention heads
    d_head: int = number(1, 1024)     # width of each head
    mlp_ratio: int = number(0, 64)    # MLP width over d_model


PRETRAINING_TASKS = ("dyck", "neural_ca", "random")
# The keys each pre-pretraining task reads: a twin's cache key holds only its own, so adding a
# task to `tasks` retrains nothing that was trained before.
PRETRAINING_KEYS = {"dyck": ("dyck_k", "max_depth"), "neural_ca": ("nca_states", "nca_width", "nca_hidden"),
                    "random": ()}
# What a twin carries from pre-pretraining into the corpus phase: the attention and MLP weights
# (positions, norms, token embeddings and read-out as the from-scratch twin starts them), those
# and the positions and norms too (body), or everything (all).
TRANSFERS = ("attention_mlp", "body", "all")


@dataclass(frozen=True, kw_only=True)
class PretrainingArgs:
    """Claim 9: sizes that get a twin per pre-pretraining task ('<size>+<task>')."""
    sizes: list[str]                               # sizes that get a twin per task ('small+dyck', ...)
    tasks: list[Literal[PRETRAINING_TASKS]]        # the synthetic tasks; random is the control
    transfer: Literal[TRANSFERS] = "attention_mlp"  # what a twin carries into the corpus phase (TRANSFERS)
    steps: dict[str, int]  # pre-pretraining steps per task (each its own piloted length)
    dyck_k: int = number(1, 64)                    # Dyck: bracket types (2k synthetic tokens)
    max_depth: int = number(1, 1024)               # Dyck: deepest nesting
    nca_states: int = number(2, 64)                # neural CA: states a cell takes
    nca_width: int = number(3, 4096)               # neural CA: cells per row (rows flattened into the sequence)
    nca_hidden: int = number(1, 4096)              # neural CA: tanh units of the random rule network

    def check(self, key: str) -> None:
        if len(set(self.tasks)) != len(self.tasks):
            raise ConfigError(f"{key}.tasks: each task once, got {self.tasks}")
        unknown = sorted(set(self.steps) - set(PRETRAINING_TASKS))
        if unknown:
            raise ConfigError(f"{key}.steps: keys from {list(PRETRAINING_TASKS)}, got {unknown}")
        missing = [t for t in self.tasks if t not in self.steps]
        if missing:
            raise ConfigError(f"{key}.steps: a step count for every task of {key}.tasks, missing {missing}")
        bad = {t: n for t, n in self.steps.items() if isinstance(n, bool) or not isinstance(n, int) or not
               1 <= n <= 10_000_000}
        if bad:
            raise ConfigError(f"{key}.steps: whole numbers in [1, 10000000], got {bad}")


@dataclass(frozen=True, kw_only=True)
class RareSkillsArgs:
    """Claim 1 where a skill has to emerge from a weak signal: sizes that also train from scratch
    on a corpus whose mixture makes some document kinds rare ('<size>@rare'), same seeds."""
    sizes: list[str]                               # sizes that get a rare-skills twin ('small@rare')
    mixture: Mixture                               # the twin's document weights


@dataclass(frozen=True, kw_only=True)
class LanguageModelTraining:
    """What training the language models reads of the `language_model` section (its probes and
    patching are emergence/runs/lm_probes.py's, whose LanguageModelArgs adds them)."""
    corpus: CorpusArgs                         # the generated corpus every size trains on
    seq_len: int = number(16, 100_000)         # tokens per training window
    sizes: dict[str, SizeArgs]                 # the model family, by name
    train: TrainArgs                           # every size and twin trains with it
    pretraining: PretrainingArgs
    rare_skills: RareSkillsArgs

    @classmethod
    def of(cls, section: dict, key: str = "language_model") -> "LanguageModelTraining":
        """The training part of the validated `language_model` section (the whole of it, or the keys
        a stage declares), typed (`load`'s declared_only)."""
        return load(cls, {f.name: section[f.name] for f in fields(cls) if f.name in section}, key, declared_only=True)

    def check(self, key: str) -> None:
        if not self.sizes:
            raise ConfigError(f"{key}.sizes: at least one size")
        for name, chosen in (("pretraining", self.pretraining.sizes), ("rare_skills", self.rare_skills.sizes)):
            unknown = [s for s in chosen if s not in self.sizes]
            if unknown:
                raise ConfigError(f"{key}.{name}.sizes: names from {key}.sizes ({', '.join(self.sizes)}), "
                                  f"got {unknown}")
        pre, alphabet = self.pretraining, self.corpus.synthetic_tokens
        needs = {"dyck": ("dyck_k", 2 * pre.dyck_k), "neural_ca": ("nca_states", pre.nca_states),
                 "random": ("tasks", 1)}
        for task in pre.tasks:
            name, n = needs[task]
            if n > alphabet:
                raise ConfigError(f"{key}.pretraining.{name}: {task} is written with the synthetic tokens, so it "
                                  f"needs {key}.corpus.synthetic_tokens >= {n} (got {alphabet})")


class Variant(NamedTuple):
    """One model directory: a size, pre-pretrained on a synthetic task or not, on a corpus."""
    size: str
    pretraining: str | None = None
    corpus: str | None = None  # None: the main corpus; RARE: the rare-skills mixture


EVAL_SEED = 10**6  # the trainer's evaluation windows come from a stream no training seed uses


def vocab_of(corpus: CorpusArgs) -> cp.Vocab:
    return cp.Vocab(corpus.n_random, corpus.synthetic_tokens)


def previous_token_pattern(T: int) -> np.ndarray:
    m = np.zeros((T, T), dtype=np.uint8)
    m[np.arange(1, T), np.arange(T - 1)] = 1
    m[0, 0] = 1
    return m


# --- the corpus as a task of the shared runner's protocol (emergence/runs/runner.py) -----
# Its task section is the whole LanguageModelTraining (the corpus and seq_len) and its model
# section one entry of `sizes`; the evaluation windows come from a stream no training seed uses.

NAME = "language_model"
UNIT_DIM = "position"
UNIT_TEXT = "the next token at position i of a held-out window"
EVAL_WINDOWS = 32  # held-out windows of the trainer's per-position evaluation


class Layout(NamedTuple):
    seq_len: int
    vocab_size: int


def layout_of(section: LanguageModelTraining) -> Layout:
    return Layout(section.seq_len, vocab_of(section.corpus).size)


def build_task(section: LanguageModelTraining, n_eval: int = EVAL_WINDOWS) -> xr.Dataset:
    """The evaluation windows and the ground-truth pattern (the previous token), as a Dataset."""
    layout = layout_of(section)
    T = layout.seq_len
    tokens = cp.sample_batch(EVAL_SEED, 0, n_eval, vocab_of(section.corpus), section.corpus, T)
    return xr.Dataset({"eval_tokens": (("sequence", "position"), tokens),
                       "ground_truth_pattern": (("query", "key"), previous_token_pattern(T))},
                      attrs={"vocab_size": layout.vocab_size})


def task_tensors(task_ds: xr.Dataset, section: LanguageModelTraining) -> Task:
    corpus, T = section.corpus, section.seq_len
    vocab = vocab_of(corpus)

    def sampler(batch: int, gen: torch.Generator) -> torch.Tensor:
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=gen)))
        return torch.from_numpy(np.stack([cp.sample_window(rng, vocab, corpus, T) for _ in range(batch)]))

    return Task(eval_tokens=torch.from_numpy(task_ds["eval_tokens"].values), loss_weights=torch.ones(T - 1),
                gt_pattern=torch.from_numpy(task_ds["ground_truth_pattern"].values).float(),
                output_positions=torch.arange(T - 1)[:, None], n_output_tokens=vocab.size, sampler=sampler)


def model_config(size: SizeArgs, layout: Layout) -> ModelConfig:
    d_model = size.n_head * size.d_head
    return ModelConfig(vocab_size=layout.vocab_size, seq_len=layout.seq_len, n_layer=size.n_layer,
                       d_model=d_model, n_head=size.n_head, d_mlp=size.mlp_ratio * d_model, norm="pre")


def identity(task_ds: xr.Dataset) -> dict:
    return {}  # the corpus is fixed by its params alone


def result_layout(task_ds: xr.Dataset) -> dict:
    V = int(task_ds.attrs["vocab_size"])
    return {"extra_attrs": {"chance_loss": float(np.log(V)), "chance_accuracy": 1.0 / V}}


def pretraining_sequences(rng: np.random.Generator, pre: PretrainingArgs, kind: str, batch: int, seq_len: int,
                          alphabet: int) -> np.ndarray:
    """[batch, seq_len] symbols 0 .. alphabet - 1 of one pre-pretraining task: Dyck-k brackets
    (2k symbols), neural-CA states (nca_states symbols) or i.i.d. uniform symbols over the whole
    alphabet (the control: the same tokens and steps with no structure to learn)."""
    if kind == "dyck":
        rows = [sample_dyck(rng, pre.dyck_k, seq_len, pre.max_depth) for _ in range(batch)]
    elif kind == "neural_ca":
        rows = [sample_neural_ca(rng, pre.nca_states, pre.nca_width, seq_len, pre.nca_hidden)
                for _ in range(batch)]
    elif kind == "random":
        return rng.integers(0, alphabet, (batch, seq_len))
    else:
        raise ValueError(f"pre-pretraining task: one of {PRETRAINING_TASKS}, got {kind!r}")
    return np.asarray(rows, dtype=np.int64)


def pretraining_task(corpus: CorpusArgs, pre: PretrainingArgs, kind: str, seq_len: int, n_eval: int) -> Task:
    """A pre-pretraining task written with the synthetic tokens s000, s001, ... (same embedding table)."""
    vocab = vocab_of(corpus)
    first = vocab.id("s000")

    def draw(rng: np.random.Generator, batch: int) -> torch.Tensor:
        symbols = pretraining_sequences(rng, pre, kind, batch, seq_len, corpus.synthetic_tokens)
        return torch.from_numpy(first + symbols).to(torch.int64)

    def sampler(batch: int, gen: torch.Generator) -> torch.Tensor:
        return draw(np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=gen))), batch)

    return Task(eval_tokens=draw(np.random.default_rng(EVAL_SEED), n_eval), loss_weights=torch.ones(seq_len - 1),
                gt_pattern=torch.from_numpy(previous_token_pattern(seq_len)).float(),
                output_positions=torch.arange(seq_len - 1)[:, None], n_output_tokens=vocab.size,
                sampler=sampler)


def variants(section: LanguageModelTraining) -> dict[str, Variant]:
    """Model directories to train, by name (emergence/common/lm_variants.py): every size,
    each pre-pretrained twin '<size>+<task>' and each rare-skills twin '<size>@rare'."""
    out = {name: Variant(name) for name in section.sizes}
    for name in section.pretraining.sizes:
        for kind in section.pretraining.tasks:
            out[variant_name(name, pretraining=kind)] = Variant(name, pretraining=kind)
    for name in section.rare_skills.sizes:
        out[variant_name(name, corpus=RARE)] = Variant(name, corpus=RARE)
    return out


def corpus_of(section: LanguageModelTraining, corpus: str | None) -> CorpusArgs:
    """The corpus a variant trains on: the main one, or it with the rare-skills mixture."""
    if corpus is None:
        return section.corpus
    if corpus != RARE:
        raise ValueError(f"corpus: None (the main corpus) or {RARE!r}, got {corpus!r}")
    return replace(section.corpus, mixture=section.rare_skills.mixture)


def on_corpus(section: LanguageModelTraining, corpus: str | None) -> LanguageModelTraining:
    """The language_model section as a variant on `corpus` reads it."""
    return section if corpus is None else replace(section, corpus=corpus_of(section, corpus))


def pretraining_of(section: LanguageModelTraining, kind: str | None) -> dict | None:
    """What a twin's pre-pretraining reads, as its cache key and results record it: its task, its
    steps, its transfer and the task's own keys (PRETRAINING_KEYS) alone."""
    if kind is None:
        return None
    pre = section.pretraining
    return {"task": kind, "steps": pre.steps[kind], "transfer": pre.transfer,
            **{k: getattr(pre, k) for k in PRETRAINING_KEYS[kind]}}


def pretraining_steps(section: LanguageModelTraining, kind: str | None) -> int:
    """The pre-pretraining steps of a variant (0 from scratch)."""
    return 0 if kind is None else int(section.pretraining.steps[kind])


def pretrain(section: LanguageModelTraining, size_name: str, kind: str, scratch, device):
    """Pre-pretrain every seed of a size on one synthetic task; returns the model holding all seeds."""
    pre, steps, seq_len = section.pretraining, section.pretraining.steps[kind], section.seq_len
    cfg = model_config(section.sizes[size_name], layout_of(section))
    train = replace(section.train, steps=steps, eval_every=steps, checkpoint_log_until=0, checkpoint_every=steps,
                    resume_every=max(1, steps // 2))
    where = scratch / f"lm-pretrain-{size_name}-{kind}"
    key = {"pre": pretraining_of(section, kind), "train": to_params(train), "size": size_name,
           "corpus": to_params(section.corpus)}
    train_seeds(pretraining_task(section.corpus, pre, kind, seq_len, 16).to(device), cfg, train, scratch,
                f"lm-{kind}-{size_name}", trajectory_key=key, code=module_code_version(__name__), checkpoint_dir=where,
                device=device)
    model = load_checkpoint(where / f"step{steps:08d}.pt", device)
    shutil.rmtree(where, ignore_errors=True)
    if pre.transfer == "all":
        return model
    # the synthetic tokens' embeddings and read-out mean nothing to the corpus: start those where
    # the from-scratch twin starts (with "all" the first corpus steps are spent unlearning a
    # read-out peaked on the synthetic alphabet). attention_mlp starts the positions and norms
    # there too, so the twin inherits only the circuits the claim is about: learned positions and
    # norm gains tuned to a 4-symbol task are a handicap that grows with how well it was learned
    fresh = SeedTransformer(cfg, list(model.seeds)).to(device)
    with torch.no_grad():
        if pre.transfer == "body":
            model.wte.copy_(fresh.wte)
            model.head.weight.copy_(fresh.head.weight)
            return model
        for learned, start in zip(model.blocks, fresh.blocks):
            start.attn.load_state_dict(learned.attn.state_dict())
            if learned.mlp is not None:
                start.mlp.load_state_dict(learned.mlp.state_dict())
    return fresh


def prepare_size(section: LanguageModelTraining, size_name: str, pretraining: str | None = None,
                 corpus: str | None = None) -> PreparedTraining:
    """One size (or its twin) set up to train on this device: what training it whole
    (`train_size`) and training one of its seed groups apart (emergence/runs/lm_builds.py) share."""
    section = on_corpus(section, corpus)
    size = section.sizes[size_name]
    run_config = {"language_model": {"corpus": to_params(section.corpus), "seq_len": section.seq_len,
                                     "size": to_params(size), "train": to_params(section.train),
                                     "pretraining": pretraining_of(section, pretraining)}}
    return prepare(sys.modules[__name__], build_task(section), section, size, section.train, run_config,
                   code=module_code_version(__name__), name=f"lm-{variant_name(size_name, corpus=corpus)}")


def train_size(section: LanguageModelTraining, size_name: str, out_dir, scratch, pretraining: str | None = None,
               corpus: str | None = None) -> xr.Dataset:
    """Train every seed of one size (after pre-pretraining on the task `pretraining`, if given;
    on the rare-skills corpus if `corpus` is RARE); write out_dir/train.nc and out_dir/checkpoints/."""
    run = prepare_size(section, size_name, pretraining, corpus)
    init = pretrain(section, size_name, pretraining, scratch, run.device) if pretraining else None
    return train_prepared(run, out_dir / "train.nc", out_dir / "checkpoints", scratch, init_model=init,
                          attrs={"size": size_name, "pretraining": pretraining or "none", "corpus": corpus or "main"})


def training_key(section: LanguageModelTraining, size_name: str, pretraining: str | None,
                 corpus: str | None = None) -> dict:
    """What fixes a variant's results: its configuration and the code training it executes
    (this module's import closure), where it runs. The cell cache's key of the variant."""
    return {"corpus": to_params(corpus_of(section, corpus)), "seq_len": section.seq_len,
            "size": to_params(section.sizes[size_name]), "train": to_params(section.train),
            "pretraining": pretraining_of(section, pretraining),
            "name": variant_name(size_name, corpus=corpus), "code": module_code_version(__name__),
            "runs_on": runs_on(section.train)}

"""A generated corpus for small language models, and held-out probe sets for the paper's
capabilities (Section 2: digit-string repetition, in-context repetition of random tokens,
pattern completion, indirect-object identification).

Documents are token lists over a word-level vocabulary; a training sequence packs documents
separated by <eos> into a window of fixed length. Every document has a *key* (the digit
string, the repeated span, the cycle, or the IOI names and object); a key is held out when
its CRC32 is divisible by `holdout_mod`. The corpus never uses a held-out key and every probe
uses one, so no probe prompt's content is ever seen in training (tested).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from emergence.common.schema import ConfigError, number

NAMES = ("Mary", "John", "Alice", "Bob", "Sarah", "David", "Emma", "James", "Laura", "Peter", "Anna", "Tom",
         "Kate", "Paul", "Lucy", "Mark", "Rose", "Sam", "Nina", "Jack")
OBJECTS = ("book", "ball", "cup", "key", "pen", "hat", "box", "coin", "card", "bag", "apple", "lamp")
PLACES = ("store", "park", "school", "office", "garden", "station")
TEMPLATE_WORDS = ("When", "and", "went", "to", "the", ",", "gave", "a", ".", "Then", "handed", "at")
KINDS = ("digits", "spans", "patterns", "ioi", "noise")


@dataclass(frozen=True, kw_only=True)
class Mixture:
    """Relative weights of the document kinds (at least one positive)."""
    digits: float = number(0.0, None)    # a digit string repeated
    spans: float = number(0.0, None)     # random tokens repeated after a filler (in-context repetition)
    patterns: float = number(0.0, None)  # a short cycle continued
    ioi: float = number(0.0, None)       # indirect-object identification sentences
    noise: float = number(0.0, None)     # random tokens, no key

    def check(self, key: str) -> None:
        if self.digits + self.spans + self.patterns + self.ioi + self.noise <= 0:
            raise ConfigError(f"{key}: at least one weight must be positive")


@dataclass(frozen=True, kw_only=True)
class CorpusArgs:
    """The generated corpus."""
    corpus_seed: int = number(0, 2**31 - 1)    # draws every document and probe set
    holdout_mod: int = number(2, 1_000_000)    # a key is held out (probes only) when CRC32(key) % this == 0
    n_random: int = number(4, 100_000)         # random-word tokens r000, r001, ...
    synthetic_tokens: int = number(0, 4096)    # tokens no document uses (the pre-pretraining alphabet)
    digit_length: int = number(2, 64)          # digits of a repeated digit string
    repeats: int = number(2, 16)               # times a digit string repeats in its document
    span_length: int = number(2, 64)           # random tokens of a span repeated in context
    filler_length: int = number(0, 256)        # random tokens between a span and its repeat
    max_period: int = number(2, 16)            # longest cycle of a pattern document
    pattern_length: int = number(4, 256)       # tokens of a pattern document
    noise_length: int = number(2, 256)         # tokens of a noise document (no key, never held out)
    mixture: Mixture                           # relative weights of the document kinds

    @property
    def longest_prompt(self) -> int:
        return max(2 * self.digit_length, 2 * self.span_length + self.filler_length, self.pattern_length, 14)



@dataclass(frozen=True)
class Vocab:
    """The corpus's word-level vocabulary, then `n_synthetic` tokens (s000, s001, ...) that no
    corpus document uses: the alphabet of the synthetic pre-pretraining tasks (claim 9), so that
    what a model learns on them cannot be a head start on the corpus's own tokens."""
    n_random: int
    n_synthetic: int = 0

    @property
    def tokens(self) -> tuple[str, ...]:
        return (("<eos>",) + tuple(str(d) for d in range(10)) + tuple(f"r{i:03d}" for i in range(self.n_random))
                + NAMES + OBJECTS + PLACES + TEMPLATE_WORDS + tuple(f"s{i:03d}" for i in range(self.n_synthetic)))

    def id(self, token: str) -> int:
        return self._index[token]

    @property
    def _index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.tokens)}

    @property
    def size(self) -> int:
        return len(self.tokens)

    def ids(self, tokens: list[str]) -> list[int]:
        index = self._index
        return [index[t] for t in tokens]

    def text(self, ids) -> str:
        return " ".join(self.tokens[int(i)] for i in ids)


def held_out(key: str, holdout_mod: int) -> bool:
    return zlib.crc32(key.encode()) % holdout_mod == 0


def _cyclic_key(kind: str, tokens: list[str]) -> str:
    """Key of a repeated block, the same for every rotation: a block repeated in training
    contains all its rotations, so holding out one rotation must hold out all of them."""
    rotations = [tokens[i:] + tokens[:i] for i in range(len(tokens))]
    return f"{kind}:" + " ".join(min(rotations))


def _random_tokens(rng: np.random.Generator, vocab: Vocab, n: int) -> list[str]:
    return [f"r{i:03d}" for i in rng.integers(0, vocab.n_random, size=n)]


def _draw(rng: np.random.Generator, kind: str, vocab: Vocab, p: CorpusArgs) -> tuple[str, list[str], list[str], str]:
    """One instance of `kind`: (key, full document, probe prompt, probe answer)."""
    if kind == "digits":
        s = [str(d) for d in rng.integers(0, 10, size=p.digit_length)]
        return _cyclic_key("digits", s), s * p.repeats, s + s[:-1], s[-1]
    if kind == "spans":
        span = _random_tokens(rng, vocab, p.span_length)
        filler = _random_tokens(rng, vocab, p.filler_length)
        return "spans:" + " ".join(span), span + filler + span, span + filler + span[:-1], span[-1]
    if kind == "patterns":
        cycle = _random_tokens(rng, vocab, int(rng.integers(2, p.max_period + 1)))
        n = p.pattern_length
        seq = (cycle * (n // len(cycle) + 2))[:n + 1]
        return _cyclic_key("patterns", cycle), seq, seq[:-1], seq[-1]
    if kind == "ioi":
        a, b = (NAMES[i] for i in rng.choice(len(NAMES), size=2, replace=False))
        obj, place = OBJECTS[int(rng.integers(len(OBJECTS)))], PLACES[int(rng.integers(len(PLACES)))]
        prompt = ["When", a, "and", b, "went", "to", "the", place, ",", b, "gave", "a", obj, "to"]
        return f"ioi:{a}:{b}:{obj}", prompt + [a, "."], prompt, a
    if kind == "noise":
        doc = _random_tokens(rng, vocab, p.noise_length)
        return "noise:" + " ".join(doc), doc, doc[:-1], doc[-1]
    raise ValueError(f"unknown document kind {kind!r}; expected one of {KINDS}")


def draw_document(rng: np.random.Generator, kind: str, vocab: Vocab, p: CorpusArgs) -> tuple[str, list[str]]:
    """A training document of `kind` whose key is not held out."""
    while True:
        key, doc, _, _ = _draw(rng, kind, vocab, p)
        if kind == "noise" or not held_out(key, p.holdout_mod):
            return key, doc


def sample_window(rng: np.random.Generator, vocab: Vocab, p: CorpusArgs, seq_len: int) -> np.ndarray:
    """One training sequence: documents drawn by the mixture weights, joined by <eos>, cut to seq_len."""
    kinds = list(KINDS)
    w = np.array([getattr(p.mixture, k) for k in kinds], dtype=float)
    w /= w.sum()
    out: list[str] = []
    while len(out) < seq_len:
        _, doc = draw_document(rng, kinds[int(rng.choice(len(kinds), p=w))], vocab, p)
        out += doc + ["<eos>"]
    return np.array(vocab.ids(out[:seq_len]), dtype=np.int64)


def sample_batch(seed: int, step: int, batch: int, vocab: Vocab, p: CorpusArgs, seq_len: int) -> np.ndarray:
    """[batch, seq_len] training tokens, a pure function of (seed, step): a seed's data order."""
    rng = np.random.default_rng([p.corpus_seed, seed, step])
    return np.stack([sample_window(rng, vocab, p, seq_len) for _ in range(batch)])


PROBES = ("digits", "spans", "patterns", "ioi")


def probe_set(kind: str, n: int, vocab: Vocab, p: CorpusArgs, seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """n held-out probes of one capability: (prompts [n, L] int64, answers [n], keys). Every
    prompt of a kind has the same length L, so the answer is predicted at position L - 1."""
    if kind not in PROBES:
        raise ValueError(f"unknown probe {kind!r}; expected one of {PROBES}")
    rng = np.random.default_rng([p.corpus_seed, 7919, seed, PROBES.index(kind)])
    prompts, answers, keys, seen = [], [], [], set()
    for _ in range(1000 * n):
        key, _, prompt, answer = _draw(rng, kind, vocab, p)
        if not held_out(key, p.holdout_mod) or key in seen:
            continue
        seen.add(key)
        prompts.append(vocab.ids(prompt))
        answers.append(vocab.id(answer))
        keys.append(key)
        if len(prompts) == n:
            break
    if len(prompts) < n:
        raise ValueError(f"only {len(prompts)} distinct held-out {kind} probes exist; ask for fewer or lower holdout_mod")
    lengths = {len(x) for x in prompts}
    if len(lengths) != 1:  # the pattern probe's cycle length varies, its prompt length does not
        raise AssertionError(f"{kind} prompts differ in length: {sorted(lengths)}")
    return np.array(prompts, dtype=np.int64), np.array(answers, dtype=np.int64), keys

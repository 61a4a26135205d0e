"""The language-model variants' names, readable without torch: the scorecard, the comparison
and the mirage analysis select from them.

A variant is a size trained from scratch on the corpus ('small'), that size pre-pretrained on a
synthetic task first ('small+dyck', claim 9), or that size trained from scratch on the
rare-skills corpus ('small@rare': claim 1 where a skill has to emerge from a weak signal).
"""
from __future__ import annotations

from typing import Iterable

TWIN = "+"      # '<size>+<task>': pre-pretrained on a synthetic task
CORPUS = "@"    # '<size>@<corpus>': trained on another corpus
RARE = "rare"


def variant_name(size: str, pretraining: str | None = None, corpus: str | None = None) -> str:
    if pretraining and corpus:
        raise ValueError("a variant is pre-pretrained or trained on another corpus, not both")
    return size + (f"{TWIN}{pretraining}" if pretraining else "") + (f"{CORPUS}{corpus}" if corpus else "")


def is_size(name: str) -> bool:
    """A size trained from scratch on the main corpus (the family the size comparisons read)."""
    return TWIN not in name and CORPUS not in name


def sizes(names: Iterable) -> list[str]:
    return [str(n) for n in names if is_size(str(n))]


def rare_twins(names: Iterable) -> dict[str, str]:
    """size -> its variant on the rare-skills corpus."""
    return {str(n).split(CORPUS)[0]: str(n) for n in names if str(n).endswith(f"{CORPUS}{RARE}")}


def document_kind(capability: str) -> str:
    """The corpus document kind that teaches a probed capability (patterns_period2 -> patterns)."""
    return "patterns" if capability.startswith("patterns") else capability


def rare_capabilities(capabilities: Iterable, main: dict, rare: dict) -> list[str]:
    """The capabilities whose document kind is a smaller share of the rare mixture than of the
    main one (mixtures: document kind -> weight)."""
    share = lambda m, k: m.get(k, 0.0) / sum(m.values())  # noqa: E731
    return [str(c) for c in capabilities if share(rare, document_kind(str(c))) < share(main, document_kind(str(c)))]

"""A pilot of the rare-skills corpus (claim 1 where a skill has to emerge from a weak signal).

On the main corpus spans and patterns are each a fifth of the documents and every seed learns
them at about the same step; the rare-skills twin trains the same size, seeds and steps on a
corpus where those document kinds are rare. How rare is chosen here, for the power to decide,
never for the spread it gives: the rule, fixed before the pilot ran, is the smallest weight of
the grid at which every rare capability is solved within the budget by at least
`min_solved` of the seeds (a capability most seeds never learn is censored and its spread
cannot be read). Each weight's seeds are trained exactly as the twin is (lm.train_size with
the rare corpus) and bracketed by the probes' binary search; the rows printed, with the weight
chosen from them, go into docs/pilots.md.

    python -m emergence.tools.rare_skills_pilot --weights 0.05 0.1 0.25 [--min-solved 0.8]
        [--size small] [--profile default]
"""
from __future__ import annotations

import argparse
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from emergence.analysis.survival import km_median
from emergence.common.lm_variants import RARE, rare_capabilities
from emergence.common.schema import load
from emergence.pipeline.config import load_params
from emergence.runs import language_model as lm
from emergence.runs.language_model import RareSkillsArgs
from emergence.runs.lm_probes import LanguageModelArgs, brackets, load_checkpoints, make_probes

RARE_KINDS = ("spans", "patterns")


def rare_section(section: LanguageModelArgs, size: str, weight: float) -> LanguageModelArgs:
    """The section with `size` alone as a rare-skills twin whose spans and patterns weigh `weight`."""
    mixture = replace(section.corpus.mixture, **{k: weight for k in RARE_KINDS})
    return replace(section, rare_skills=RareSkillsArgs(sizes=[size], mixture=mixture))


def pilot_row(weight: float, capabilities: list[str], new_step: np.ndarray, censored: np.ndarray,
              budget: int) -> list[dict]:
    """One row a capability: seeds solved, their first solved checkpoints, the KM median."""
    rows = []
    for i, cap in enumerate(capabilities):
        times = np.where(censored[i] == 1, budget, new_step[i]).astype(float)
        rows.append({"weight": weight, "capability": cap, "solved": f"{int((censored[i] == 0).sum())}/{len(times)}",
                     "first_solved": [None if c else int(t) for t, c in zip(times, censored[i])],
                     "km_median": km_median(times, censored[i].astype(bool))})
    return rows


def chosen_weight(rows: list[dict], min_solved: float) -> float | None:
    """The smallest weight whose every row has at least `min_solved` of its seeds solved."""
    ok = {}
    for row in rows:
        k, n = map(int, row["solved"].split("/"))
        ok[row["weight"]] = ok.get(row["weight"], True) and k >= min_solved * n
    good = [w for w, fine in ok.items() if fine]
    return min(good) if good else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", type=float, nargs="+", required=True)
    parser.add_argument("--min-solved", type=float, default=0.8)
    parser.add_argument("--size", default="small")
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    params = load_params(profile=args.profile)
    section = load(LanguageModelArgs, params["language_model"], "language_model")
    probes = make_probes(section.corpus, section.probes)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for weight in args.weights:
            rare = rare_section(section, args.size, weight)
            caps = rare_capabilities(probes, asdict(section.corpus.mixture), asdict(rare.rare_skills.mixture))
            folder = Path(tmp) / f"{args.size}@{RARE}-{weight:g}"
            lm.train_size(rare, args.size, folder, Path(tmp) / "scratch", corpus=RARE)
            found = brackets(load_checkpoints(folder / "checkpoints"), {c: probes[c] for c in caps},
                             section.probes.solved_accuracy)
            for row in pilot_row(weight, caps, found["new_step"], found["censored"], section.train.steps):
                print(row, flush=True)
                rows.append(row)
    print({"chosen_weight": chosen_weight(rows, args.min_solved), "min_solved": args.min_solved,
           "rare_kinds": list(RARE_KINDS)})


if __name__ == "__main__":
    main()

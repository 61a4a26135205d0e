"""How many seeds would decide a claim: this run's seeds resampled at other sizes, the claim's
rule applied again.

    python -m emergence.tools.seed_power CLAIM_ID [--seeds 4,8,16] [--draws 200] [--resamples 200]
                                            [--profile default] [--result NAME=PATH ...] [--out FILE.json]
                                            [--workers N]

Reads the results the claims_scorecard stage reads (dvc.yaml's `paths`; `--result` reads one
from elsewhere, e.g. an earlier commit's from the DVC cache). For each size n it
draws `draws` samples of n seeds with replacement from every result dataset the claim's rule
reads (the same seeds for every cell of a dataset, as a run at n seeds trains them), re-applies
the rule with the run's thresholds (`claims` in params.yaml; its bootstrap and permutation
counts lowered to `resamples` for speed) and counts the verdicts. The share of draws that
decide (reproduced or not reproduced) estimates the power at n. Datasets with the same number of
seeds share one draw (the language models' probes and patching results are the same trained
seeds). It is the pilot that chooses a profile's seed count before the run: a guide, not a test,
and a rough one from few seeds, since a resample can only repeat the values the run's seeds took.
Above the run's own seed count it is optimistic, and the output says so: a draw of 10 from 5
seeds repeats each about twice, so its spread and its intervals are narrower than 10 new seeds'.
Measured on the language models: from the run at 5 seeds a size it forecast the seed-dependence
(lm-random-times) decided in 98.5% of draws at 10 and the metric rule (mirage-metric-lm) in 42%;
the run at 10 seeds left both undecided, and its own resamples at 10 decide them in 18% and 16%.
At the run's own seed counts the same resampling gives each verdict's stability, which the
scorecard reports (emergence/claims/stability.py).
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np

from emergence.claims.scorecard import Context, read_paper_claims, read_result, rule_sections
from emergence.claims.stability import Result, resampled_verdicts
from emergence.claims.thresholds import ClaimsArgs
from emergence.common.schema import load
from emergence.common.io import write_json
from emergence.pipeline.config import load_params
from emergence.pipeline.stage import pipeline_paths
from emergence.runs.cores import usable_cores

DECIDED = ("reproduced", "not reproduced")


def section_of(claim_id: str, results: dict[str, Result], ctx: Context):
    """The scorecard section whose rules return `claim_id`, applied once to find it."""
    known = []
    for name, rules, inputs in rule_sections():
        if all(i in results for i in inputs):
            keys = [key for key, _ in rules(*(results[i] for i in inputs), ctx)]
            if claim_id in keys:
                return name, rules, inputs
            known += keys
    raise SystemExit(f"seed_power: no rule here decides {claim_id!r}; one of {sorted(known)}")


def claim_verdict(sample: dict[str, Result], claim_id: str, rules, inputs: Sequence[str], ctx: Context) -> dict[str, str]:
    """{claim_id: its verdict} from its section's `rules` on `sample`."""
    return {claim_id: dict(rules(*(sample[i] for i in inputs), ctx))[claim_id].verdict}


def run_seeds(claim_id: str, results: dict[str, Result], ctx: Context) -> int:
    """The most seeds any result the claim's rule reads has (each file of a folder counted)."""
    _, _, inputs = section_of(claim_id, results, ctx)
    datasets = [ds for i in inputs for ds in (results[i].values() if isinstance(results[i], dict) else [results[i]])]
    return max((ds.sizes["seed"] for ds in datasets if "seed" in ds.dims), default=0)


def seed_power(claim_id: str, results: dict[str, Result], ctx: Context, sizes: Sequence[int],
               draws: int, seed: int = 0, workers: int = 1) -> dict[int, dict[str, int]]:
    """{n: {verdict: draws}} for the claim's rule on `draws` resamples of n seeds each (the same
    counts on any number of `workers`)."""
    _, rules, inputs = section_of(claim_id, results, ctx)
    rng = np.random.default_rng(seed)
    verdict = partial(claim_verdict, claim_id=claim_id, rules=rules, inputs=inputs, ctx=ctx)
    return {int(n): dict(resampled_verdicts(verdict, {i: results[i] for i in inputs}, draws, rng, n,
                                            workers=workers)[claim_id])
            for n in sizes}


def power_lines(claim_id: str, power: dict[int, dict[str, int]], draws: int, run_seeds: int) -> list[str]:
    """One line a seed count: how often it decided, flagged where it exceeds the run's seeds."""
    lines = []
    for n, count in power.items():
        decided = sum(count.get(v, 0) for v in DECIDED)
        above = (f"  (above this run's {run_seeds} seeds: the draws repeat seeds, so this overstates the power)"
                 if n > run_seeds else "")
        lines.append(f"{claim_id}  {n:3d} seeds: decided in {decided / draws:4.0%} of {draws} draws  {count}{above}")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("claim")
    ap.add_argument("--seeds", default="4,8,16", help="seed counts to try, comma-separated")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=200, help="bootstrap and permutation counts inside the rule")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--result", action="append", default=[], metavar="NAME=PATH",
                    help="read result NAME (a key of dvc.yaml's paths) from PATH instead")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--workers", type=int, default=usable_cores(), help="processes (the counts do not depend on it)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        raise SystemExit(f"seed_power: --seeds takes whole numbers separated by commas, got {args.seeds!r}") from None
    if any(n < 2 for n in sizes) or args.draws < 1 or args.resamples < 1 or args.workers < 1:
        raise SystemExit("seed_power: --seeds each >= 2, --draws, --resamples and --workers >= 1")
    params = load_params(profile=args.profile)
    paths = pipeline_paths()
    claims = replace(load(ClaimsArgs, params["claims"], "claims"), n_boot=args.resamples, n_perm=args.resamples)
    ctx = Context(claims, read_paper_claims(Path(paths["paper_claims"])))
    names = {i for _, _, inputs in rule_sections() for i in inputs}
    for override in args.result:
        name, _, path = override.partition("=")
        if name not in names or not path:
            raise SystemExit(f"seed_power: --result NAME=PATH with NAME one of {sorted(names)}, got {override!r}")
        paths[name] = path
    results = {name: read_result(Path(paths[name])) for name in names if Path(paths[name]).exists()}
    power = seed_power(args.claim, results, ctx, sizes, args.draws, workers=args.workers)
    have = run_seeds(args.claim, results, ctx)
    print("\n".join(power_lines(args.claim, power, args.draws, have)))
    if args.out:
        write_json({"claim": args.claim, "draws": args.draws, "resamples": args.resamples, "run_seeds": have,
                    "power": power}, args.out)


if __name__ == "__main__":
    main()

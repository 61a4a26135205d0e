"""The claims scorecard: every claim and sub-claim of the paper, decided by its rule in
emergence/claims/verdicts.py on this run's results.

Each `*_claims` function reads one experiment's result datasets, builds the rule's arms (the
seed is the unit; censored seeds stay in) and returns its verdicts; `scorecard` runs them
all, adds Benjamini-Hochberg q-values across the tests and the paper's statement and number
for each row (data/paper/claims.yaml). Nothing here is a threshold: those are `claims` in
params.yaml.
"""
from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Callable, Collection, Iterable

import numpy as np
import xarray as xr
import yaml

from emergence.analysis.events import jump_start
from emergence.analysis.events import jump_widths
from emergence.analysis.mirage_analysis import (at_grid_fraction, resolved_width, runs_by_seed, searched_once, shift_in_widths,
                                       width_ratio)
from emergence.analysis.survival import benjamini_hochberg
from emergence.claims import verdicts as vd
from emergence.claims.thresholds import ClaimsArgs, ReadThresholds
from emergence.claims.stability import NOT_TESTED, decide_each, resampled_verdicts, stability, with_untested
from emergence.claims.verdicts import Arm, Verdict
from emergence.common import lm_variants as lv
from emergence.common.io import read_netcdf
from emergence.common.schema import to_params
from emergence.common.params import architecture_seeds
from emergence.common.experiments import entry_points, experiment, experiments

# rows whose figure is not their chapter's first
FIGURES = {"lm-abrupt": "fig-lm-abrupt", "lm-patching": "fig-lm-patching", "lm-sharpening": "fig-lm-patching",
           "lm-pretraining": "fig-lm-pretraining", "lm-pretraining-control": "fig-lm-pretraining",
           "linear-map-entropy": "fig-entropy-vs-emergence",
           "linear-map-random-times": "fig-emergence-spread", "mirage-random-linear-map": "fig-mirage-random",
           "mirage-random-automata": "fig-mirage-random", "mirage-random-lm": "fig-mirage-random",
           "mirage-precursor-linear-map": "fig-mirage-precursor", "mirage-precursor-automata": "fig-mirage-precursor",
           "mirage-resolution-lm": "fig-mirage-resolution", "mirage-resolution-linear-map": "fig-mirage-resolution",
           "mirage-resolution-automata": "fig-mirage-resolution"}


def arm(ds: xr.Dataset, what: str, cells: Iterable[int] | int) -> Arm:
    """Seeds of one or several cells pooled into an arm: event `what` ("plateau_end",
    "emergence", "solved"); runs that never produced a result (NaN) are left out."""
    cells = [cells] if isinstance(cells, (int, np.integer)) else list(cells)
    t = np.concatenate([ds[f"{what}_step"].values[i] for i in cells])
    c = np.concatenate([ds[f"{what}_censored"].values[i] for i in cells]).astype(bool)
    ok = np.isfinite(t)
    return Arm.of(t[ok], c[ok])


def _cells(ds: xr.Dataset, **match) -> list[int]:
    keep = np.ones(ds.sizes["cell"], bool)
    for name, value in match.items():
        v = ds[name].values
        keep &= np.isclose(v, value) if np.issubdtype(v.dtype, np.floating) else (v == value)
    return [int(i) for i in np.flatnonzero(keep)]


def _budget(ds: xr.Dataset, cells: Iterable[int] | None = None) -> float:
    b = ds["budget_step"].values
    return float(np.max(b if cells is None else b[list(cells)]))


# The paper's causal MLP-Mixer, read two ways (emergence/core/mixers.py). The paper names it an
# MLP-Mixer and cites Tolstikhin et al. (2021), whose token mixing is an MLP across positions:
# token_mlp decides claim 8 at alpha; the linear reading, static_mixing, is tested the same way
# and reported beside it without deciding. (Either reading at alpha / 2 would leave the paper's
# own final losses, 3 seeds an arm, unable to pass: a permutation p is at least 1/20 = alpha / 2.)
MIXER_READINGS = ("token_mlp", "static_mixing")
# Claim 8's masking control: the static mixing matrix without its mask, against the masked one.
UNMASKED_CONTROL = ("unmasked_mixing", "static_mixing")


def _setting(profile: dict, dotted: str):
    """The value at a dotted key of a profile's merged params."""
    for key in dotted.split("."):
        profile = profile[key]
    return profile


def _mixer_seeds(task: str, names: Collection[str]):
    """Seeds per arm of the mixer comparison on `task`: the fewest any of the architectures
    `names` trains there."""
    def units(p: dict) -> int:
        sweep = _setting(p, "sweeps.mixers")
        return min(architecture_seeds(sweep, sweep["architectures"].get(name), task) for name in names)
    return units


def _min_mixer_seeds(p: dict) -> int:
    return min(_setting(p, f"sweeps.mixers.{t}.n_seeds") for t in ("linear_map", "cellular_automata"))


def _seeds_times_sizes(p: dict) -> int:
    """(size, seed) runs of the language models."""
    return _setting(p, "language_model.train.n_seeds") * len(_setting(p, "language_model.sizes"))


# Claim id -> the units its rule counts (seeds per arm, or (size, seed) runs for lm-abrupt and
# lm-patching) in a profile's params, as the dotted key holding them or a function of the params:
# what an undecided rule compares its forecast need with, to say whether the paper profile
# would decide it (verdicts.undecided).
UNITS_ON_PROFILE = {
    "linear-map-abrupt": "linear_map.train.n_seeds",
    "linear-map-random-times": "linear_map.train.n_seeds",
    "sparsity-length": "sweeps.sparsity.n_seeds",
    "linear-map-bias": "interventions.attention_bias.n_seeds",
    **{f"{claim}-linear-map": "sweeps.architecture.n_seeds" for claim in ("heads", "width", "depth")},
    **{f"{claim}-automata": "sweeps.ca_architecture.n_seeds" for claim in ("heads", "width", "depth")},
    "automata-growth": "sweeps.ca_state_size.n_seeds",
    "lm-abrupt": _seeds_times_sizes,
    "lm-random-times": "language_model.train.n_seeds",
    "lm-patching": _seeds_times_sizes,
    # the mirage rules resample the seeds of what each reads: the linear-map run, the control arms
    # of the automata's state-size sweep (at least: a state size whose cell another sweep trained
    # with more seeds reads that one), the language models (sizes and capabilities are runs within a seed)
    **{f"mirage-{rule}-linear-map": "linear_map.train.n_seeds" for rule in ("metric", "resolution")},
    **{f"mirage-{rule}-automata": "sweeps.ca_state_size.n_seeds" for rule in ("metric", "resolution")},
    **{f"mirage-{rule}-lm": "language_model.train.n_seeds" for rule in ("metric", "resolution")},
    # the Mixer against the transformer: the architectures by their names in params.yaml
    "mixer-faster": _mixer_seeds("linear_map", ("transformer", *MIXER_READINGS)),
    "mixer-sparser": _mixer_seeds("linear_map", ("transformer", *MIXER_READINGS)),
    "mixer-automata": _mixer_seeds("cellular_automata", ("transformer", *MIXER_READINGS)),
    "mixer-unmasked-control": _mixer_seeds("linear_map", ("static_mixing", "unmasked_mixing")),
    "recurrent-mixers": _min_mixer_seeds,
}


def units_on_profile(key: str, profile: dict) -> int:
    """The units claim `key`'s rule counts in a profile's (merged, or overlay) params."""
    units = UNITS_ON_PROFILE[key]
    return int(_setting(profile, units) if isinstance(units, str) else units(profile))


class Context:
    """The thresholds (params.yaml `claims`), the paper's statements and the paper profile's
    params (None: undecided rules say inconclusive without comparing), shared by every rule."""

    def __init__(self, claims: ClaimsArgs | ReadThresholds, paper: dict, paper_profile: dict | None = None):
        self.c = claims
        self.paper = paper
        self.paper_profile = paper_profile

    def paper_n(self, key: str) -> int | None:
        """The units claim `key`'s rule counts on the paper profile."""
        if self.paper_profile is None or key not in UNITS_ON_PROFILE:
            return None
        return units_on_profile(key, self.paper_profile)

    def row(self, key: str) -> dict:
        """Claim `key`'s statement row; a rule that decides a claim without one stops, naming
        where the row goes."""
        if key not in self.paper:
            raise KeyError(f"claim {key!r}: no statement row; add it to data/paper/claims.yaml (a claim of the "
                           "paper, with its number) or to its experiment's `claims` (emergence/experiments/<name>.py)")
        return self.paper[key]

    def common(self, key: str) -> dict:
        return dict(statement=self.row(key)["statement"], paper=self.row(key)["paper"])

    def paper_budget(self, key: str) -> float | None:
        return self.row(key).get("budget")

    def paper_setting(self, key: str) -> dict:
        """Parameter -> the values the paper states claim `key` at ({}: not tied to one)."""
        return self.row(key).get("setting", {})


# --- linear map (claims 1, 2) -------------------------------------------------------------

def unit_jump_ratios(analysis: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """[seed, unit] jump width over emergence step, censored where the unit emerged but did not
    solve within the budget (width >= budget - plateau end, a lower bound); NaN where it never
    left the plateau or never emerged (no jump, or one whose timing is unknown)."""
    width, unfinished = jump_widths(analysis)
    em = analysis["unit_emergence_step"].values
    emerged = analysis["unit_emergence_censored"].values == 0
    ratio = np.where(np.isfinite(width) & emerged & (em > 0), width / np.where(em > 0, em, 1.0), np.nan)
    return ratio, unfinished & emerged


def linear_map_claims(analysis: xr.Dataset, ctx: Context) -> list[tuple[str, Verdict]]:
    c = ctx.c
    ratio, censored = unit_jump_ratios(analysis)
    train = json.loads(analysis.attrs["config"])["linear_map"]["train"]
    eval_every = train["eval_every"]
    resolution = eval_every / analysis["unit_emergence_step"].values
    emergence = Arm.of(analysis["emergence_step"].values, analysis["emergence_censored"].values.astype(bool))
    unit_e = np.where(analysis["unit_emergence_censored"].values == 0, analysis["unit_emergence_step"].values, np.nan)
    return [
        ("linear-map-abrupt", vd.jumps_are_abrupt(
            ratio, censored, claim="1 (linear map, abrupt)", max_ratio=c.abrupt_ratio, alpha=c.alpha,
            resolution=resolution, n_boot=c.n_boot, paper_n=ctx.paper_n("linear-map-abrupt"),
            **ctx.common("linear-map-abrupt"))),
        ("linear-map-random-times", vd.times_vary_across_seeds(
            emergence, claim="1 (linear map, seed-dependent)", min_quartile_ratio=c.quartile_ratio, alpha=c.alpha,
            budget=float(train["steps"]), n_boot=c.n_boot, paper_n=ctx.paper_n("linear-map-random-times"),
            **ctx.common("linear-map-random-times"))),
        ("linear-map-entropy", vd.jumps_coincide_with_entropy_drops(
            unit_e, analysis["pattern_head_entropy_drop_step"].values, claim="2 (linear map)",
            tolerance=c.coincidence_widths, width=jump_widths(analysis)[0], alpha=c.alpha, n_perm=c.n_perm,
            n_boot=c.n_boot,
            **ctx.common("linear-map-entropy"))),
    ]


# --- sparsity (claim 4) --------------------------------------------------------------------

def sparsity_claims(cells: xr.Dataset, ctx: Context) -> list[tuple[str, Verdict]]:
    c, out = ctx.c, []
    S, s = cells["state_size"].values, cells["sparsity"].values
    sizes = sorted(set(S.tolist()))
    budget = _budget(cells)
    # Length at a fixed number of parents: only s that is sparse (not the dense copy regime
    # s >= S - 1) at every S compared, the smallest S against the largest holding that s.
    strata = []
    for s_val in sorted(set(s.tolist())):
        at = [i for i in range(len(S)) if s[i] == s_val and s_val < S[i] - 1]
        if len({S[i] for i in at}) >= 2:
            lo, hi = min(at, key=lambda i: S[i]), max(at, key=lambda i: S[i])
            strata.append((f"s = {s_val}: S = {S[lo]} vs {S[hi]}", arm(cells, "solved", lo), arm(cells, "solved", hi)))
    if strata:
        out.append(("sparsity-length", vd.earlier(
            strata, claim="4 (linear map, length)", statistic="KM median time to solve, larger S over smaller S",
            alpha=c.alpha, budget=budget, paper_budget=ctx.paper_budget("sparsity-length"), n_boot=c.n_boot,
            paper_n=ctx.paper_n("sparsity-length"), **ctx.common("sparsity-length"))))
    low = (s <= 2)
    high = (s >= S - 1)
    hump = []
    for size in sizes:
        pick = lambda mask: [i for i in range(len(S)) if S[i] == size and mask[i]]  # noqa: E731
        lo_i, mid_i, hi_i = pick(low), pick(~low & ~high), pick(high)
        if mid_i and (lo_i or hi_i):
            hump.append((f"S = {size}", arm(cells, "solved", lo_i) if lo_i else None, arm(cells, "solved", mid_i),
                         arm(cells, "solved", hi_i) if hi_i else None))
    if hump:
        out.append(("sparsity-hump", vd.hardest_at_medium_sparsity(
            hump, alpha=c.alpha, budget=budget, paper_budget=ctx.paper_budget("sparsity-hump"),
            paper=ctx.paper["sparsity-hump"]["paper"], n_boot=c.n_boot)))
    large = [i for i in range(len(S)) if S[i] == sizes[-1] and not low[i] and not high[i]]
    if large and sizes[-1] >= c.large_state_size:
        out.append(("sparsity-large-s", vd.never_leaves_plateau(
            arm(cells, "plateau_end", large), claim=f"4 (linear map, S = {sizes[-1]})", budget=_budget(cells, large),
            paper_budget=ctx.paper_budget("sparsity-large-s"), alpha=c.alpha, **ctx.common("sparsity-large-s"))))
    small = [i for i in range(len(S)) if S[i] == 8]
    if small:
        out.append(("sparsity-small-s", vd.every_seed_solves(
            arm(cells, "solved", small), claim="4 (linear map, S = 8)", budget=_budget(cells, small),
            paper_budget=ctx.paper_budget("sparsity-small-s"), alpha=c.alpha, **ctx.common("sparsity-small-s"))))
    return out


# --- attention bias on the linear map (claim 5) ---------------------------------------------

def attention_bias_claims(cells: xr.Dataset, ctx: Context) -> list[tuple[str, Verdict]]:
    control = _cells(cells, strength=0.0)
    out = []
    for i in range(cells.sizes["cell"]):
        strength = float(cells["strength"].values[i])
        if strength == 0.0 or not control:
            continue
        out.append(("linear-map-bias", vd.earlier(
            [(f"c = {strength:g} vs control", arm(cells, "plateau_end", i), arm(cells, "plateau_end", control))],
            claim=f"5 (linear map, c = {strength:g})", statistic="KM median plateau end, control over biased",
            alpha=ctx.c.alpha, budget=_budget(cells), paper_budget=ctx.paper_budget("linear-map-bias"),
            n_boot=ctx.c.n_boot, paper_n=ctx.paper_n("linear-map-bias"), **ctx.common("linear-map-bias"))))
    return out


# --- width, heads, depth (claims 6, 7) -------------------------------------------------------

def _family(ds: xr.Dataset, name: str) -> list[int]:
    return [i for i in range(ds.sizes["cell"]) if name in str(ds["families"].values[i]).split("+")]


def architecture_claims(linear: xr.Dataset, automata: xr.Dataset, ctx: Context) -> list[tuple[str, Verdict]]:
    """Each claim compares the two ends of a family (fewest against most heads, one layer
    against the deepest at the same total head count) two ways, each at alpha / 2: time to
    solve, and the final loss at the budget (the paper's Fig 5 measure)."""
    specs = [("heads-linear-map", linear, "heads", "n_head", "max", "6 (linear map, heads)"),
             ("width-linear-map", linear, "width", "n_head", "max", "6 (linear map, fixed width)"),
             ("depth-linear-map", linear, "depth", "n_layer", "min", "7 (linear map, depth)"),
             ("heads-automata", automata, "heads", "n_head", "max", "6 (automata, heads)"),
             ("width-automata", automata, "width", "n_head", "min", "6 (automata, fixed width)"),
             ("depth-automata", automata, "depth", "n_layer", "max", "7 (automata, depth)")]
    out, half = [], ctx.c.alpha / 2
    for key, ds, fam, xvar, favoured, claim in specs:
        cells = _family(ds, fam)
        if len(cells) < 2:
            continue
        x = ds[xvar].values[cells]
        best, worst = (cells[int(np.argmax(x))], cells[int(np.argmin(x))]) if favoured == "max" else \
                      (cells[int(np.argmin(x))], cells[int(np.argmax(x))])
        name = xvar.replace("n_", "")
        b, w = int(ds[xvar].values[best]), int(ds[xvar].values[worst])
        label = f"{name} = {b} vs {w}"
        common = ctx.common(key)
        time = vd.earlier([(label, arm(ds, "solved", best), arm(ds, "solved", worst))], claim=claim,
                          statistic=f"KM median time to solve, {name} = {w} over {b}", alpha=half,
                          budget=_budget(ds, [best, worst]), paper_budget=ctx.paper_budget(key),
                          n_boot=ctx.c.n_boot, paper_n=ctx.paper_n(key), **common)
        loss = vd.lower_final_loss(ds["final_output_loss"].values[best], ds["final_output_loss"].values[worst],
                                   claim=claim, alpha=half, n_perm=ctx.c.n_perm, n_boot=ctx.c.n_boot,
                                   paper_n=ctx.paper_n(key),
                                   statistic=f"mean final loss at the budget, {name} = {w} minus {b}", **common)
        out.append((key, vd.by_time_or_loss(time, loss, claim=claim, **common)))
    return out


# --- cellular automata (claims 4, 5) ----------------------------------------------------------

def automata_claims(cells: xr.Dataset, ctx: Context) -> list[tuple[str, Verdict]]:
    c, out = ctx.c, []
    sizes = sorted(set(int(S) for S in cells["state_size"].values))
    strengths = sorted(set(float(x) for x in cells["strength"].values))
    control = {S: arm(cells, "plateau_end", _cells(cells, state_size=S, strength=0.0)) for S in sizes
               if _cells(cells, state_size=S, strength=0.0)}
    budget = _budget(cells)
    if len(control) >= 2:
        out.append(("automata-growth", vd.plateau_grows_with_state_size(
            control, alpha=c.alpha, min_ratio=c.growth_ratio, paper=ctx.paper["automata-growth"]["paper"],
            budget=budget, paper_budget=ctx.paper_budget("automata-growth"), n_boot=c.n_boot)))
    for strength in strengths:
        if strength == 0.0:
            continue
        biased = {S: arm(cells, "plateau_end", _cells(cells, state_size=S, strength=strength)) for S in sizes
                  if _cells(cells, state_size=S, strength=strength)}
        if len([S for S in biased if S >= c.flat_from]) >= 2 and all(S in control for S in biased):
            v = vd.bias_keeps_plateau_flat(biased, control, flat_from=c.flat_from, max_ratio=c.flat_ratio,
                                           alpha=c.alpha, paper=ctx.paper["automata-bias"]["paper"],
                                           n_boot=c.n_boot)
            out.append(("automata-bias", replace(v, claim=f"5 (automata, c = {strength:g})")))
    return out


# --- language models (claims 1, 2, 3, 9) ------------------------------------------------------

def lm_jump_ratio(steps: np.ndarray, accuracy: np.ndarray, new_step: float, censored: bool) -> tuple[float, bool, float]:
    """One run's jump width over its emergence step, the jump starting where `jump_start` puts
    it (from the run's own plateau). Never solved but risen: censored at the budget; never
    risen: NaN. The third value is the smallest ratio the checkpoint grid can show (the last
    checkpoint interval before the end, over the end)."""
    steps, accuracy = np.asarray(steps, float), np.asarray(accuracy, float)
    end = float(steps[-1]) if censored else float(new_step)
    if end <= 0 or not (steps >= 1).any():
        return float("nan"), False, float("nan")
    prior = steps[steps < end]
    floor = (end - prior[-1]) / end if prior.size else float("nan")
    start, start_level = jump_start(steps, accuracy, end, include_end=censored)
    if not np.isfinite(start):
        return float("nan"), False, floor
    if censored:
        risen = (accuracy[steps > start] > start_level).any()
        return ((end - start) / end, True, floor) if risen else (float("nan"), False, floor)
    return (end - start) / end, False, floor


def capability_abruptness(jumps: np.ndarray, caps: list[str], ctx: Context) -> Verdict:
    """Claim 1, "each capability emerges abruptly", on `jumps[run, capability, (ratio, censored,
    grid floor)]` (`lm_jump_ratio`): one part a capability, its runs the units, since the
    capabilities are different tasks and a pooled median would let one stand for another; the
    parts combined by `most_of`, as claim 1's seed-dependence is."""
    c = ctx.c
    parts = [vd.jumps_are_abrupt(jumps[:, [j], 0], jumps[:, [j], 1].astype(bool), claim=f"1 ({cap}, abrupt)",
                                 statement="", max_ratio=c.abrupt_ratio, alpha=c.alpha,
                                 resolution=jumps[:, [j], 2], n_boot=c.n_boot, paper_n=ctx.paper_n("lm-abrupt"))
             for j, cap in enumerate(caps)]
    v = vd.most_of(parts, claim="1 (language models, abrupt)", **ctx.common("lm-abrupt"))
    return replace(v, reason=v.reason + " (capabilities): " + "; ".join(f"{cap}: {p.verdict}, {p.reason}"
                                                                        for cap, p in zip(caps, parts)))


def in_context_capabilities(caps: list[str]) -> list[str]:
    """The capabilities learned from the prompt itself (a repeated span, a cycle of any period):
    those claim 9 says pre-pretraining speeds up."""
    return [cap for cap in caps if cap == "spans" or cap.startswith("patterns")]


def top_head_sharpening(ds: xr.Dataset, i: int, k: int) -> float:
    """One patched run's (capability i, seed k) entropy change of its top head minus the median
    change of the other heads. The head is ranked on one half of the prompts and its entropy
    read on the other where the patching result holds both halves (a ranking and a measurement
    on the same prompts favour the heads whose entropy moved on them); on all prompts where it
    predates the split."""
    halves = "ranking_delta_p" in ds
    ranked = ds["ranking_delta_p" if halves else "delta_p"].values[i, k].ravel()
    if not np.isfinite(ranked).any():
        return float("nan")
    old, new = ("held_out_entropy_old", "held_out_entropy_new") if halves else ("entropy_old", "entropy_new")
    delta = (ds[new].values[i, k] - ds[old].values[i, k]).ravel()
    top = int(np.nanargmax(ranked))
    return float(delta[top] - np.nanmedian(np.delete(delta, top)))


def all_heads(ds: xr.Dataset, what: str, i: int, k: int) -> float:
    """The gap fraction recovered by patching every head at once (`what`: "pattern" or "output")
    in one run; where a result predates those variables, the pattern's from top-k at every head."""
    name = f"all_heads_{what}_recovery"
    if name in ds:
        return float(ds[name].values[i, k])
    every = ds.sizes["layer"] * ds.sizes["head"]
    return float(ds["top_k_recovery"].sel(k=every).values[i, k]) if what == "pattern" and every in ds["k"].values \
        else float("nan")


# The language models here are this report's, not the paper's: the paper states claims 1-3 of
# Pythia (data/paper/claims.yaml `setting: {model: [Pythia]}`), which the pythia stage tests
# where the hub can be reached.
OUR_LANGUAGE_MODELS = "this report's 2-layer language models on its synthetic corpus"


def at_the_papers_model(rows: list[tuple[str, Verdict]], ctx: Context) -> list[tuple[str, Verdict]]:
    """Each language-model row whose claim the paper states of Pythia, read as decided on another
    model (`vd.at_the_papers_setting`): no verdict against the paper from this report's models."""
    runs = bool(ctx.paper_profile is not None and ctx.paper_profile["pythia"]["enabled"])
    return [(key, vd.at_the_papers_setting(v, used=[{"model": OUR_LANGUAGE_MODELS}], paper=ctx.paper_setting(key),
                                           profile_runs_it=runs) if ctx.paper_setting(key) else v)
            for key, v in rows]


def seed_dependence(probes: xr.Dataset, times, sizes: list[str], caps: list[str], budget: float,
                    paper_steps: float | None, ctx: Context) -> Verdict:
    """Claim 1's seed-dependence: the spread of the emergence step across seeds, a part per
    (model, capability), `most_of` the parts. Where a rare-skills twin was trained, the claim is
    decided on it, on the capabilities its corpus makes rare: a skill that a large share of the
    documents trains directly is learned by every seed at once, which says little of a skill
    that has to emerge from a weak signal, as Pythia's do. The main corpus's parts are
    then reported beside, deciding nothing."""
    c = ctx.c

    def spread(pairs: list[tuple[str, str]]) -> tuple[list[Verdict], str]:
        parts = [vd.times_vary_across_seeds(times(size, cap), claim=f"1 ({size}, {cap})", statement="",
                                            min_quartile_ratio=c.quartile_ratio, alpha=c.alpha, budget=budget,
                                            n_boot=c.n_boot, paper_n=ctx.paper_n("lm-random-times"),
                                            paper_budget=paper_steps)
                 for size, cap in pairs]
        each = "; ".join(f"{size} {cap}: {p.verdict}, {vd.fmt_ratio(p.estimate)} [{vd.fmt_ratio(p.interval[0])}, "
                         f"{vd.fmt_ratio(p.interval[1])}]{vd.what_decides_spread(p, c.quartile_ratio, c.alpha)}"
                         for (size, cap), p in zip(pairs, parts))
        return parts, each

    main_parts, main_each = spread([(size, cap) for size in sizes for cap in caps])
    config = json.loads(probes.attrs["config"])
    twins = lv.rare_twins(probes["size"].values)
    rare_caps = (lv.rare_capabilities(caps, config["corpus"]["mixture"], config["rare_skills"]["mixture"])
                 if twins and "rare_skills" in config else [])
    if not rare_caps:
        v = vd.most_of(main_parts, claim="1 (language models, seed-dependent)", **ctx.common("lm-random-times"))
        return replace(v, reason=v.reason + f" on the main corpus, no rare-skills twin trained (size x capability "
                                             f"pairs, quartile ratio against {c.quartile_ratio:g}): {main_each}")
    kinds = list(dict.fromkeys(lv.document_kind(cap) for cap in rare_caps))

    def share(mixture: dict) -> str:
        return ", ".join(f"{kind} {mixture[kind] / sum(mixture.values()):.1%}" for kind in kinds)

    parts, each = spread([(twin, cap) for twin in twins.values() for cap in rare_caps])
    v = vd.most_of(parts, claim="1 (language models, seed-dependent, rare skills)", **ctx.common("lm-random-times"))
    return replace(v, reason=v.reason + f", on the rare-skills corpus ({share(config['rare_skills']['mixture'])} of "
                                        f"its documents; quartile ratio against {c.quartile_ratio:g}): {each}. On "
                                        f"the main corpus ({share(config['corpus']['mixture'])}), beside it and "
                                        f"deciding nothing: {main_each}")


def lm_claims(probes: xr.Dataset, patching: dict[str, xr.Dataset], ctx: Context) -> list[tuple[str, Verdict]]:
    c, out = ctx.c, []
    models = [str(s) for s in probes["size"].values]
    sizes = lv.sizes(models)
    caps = [str(x) for x in probes["capability"].values]
    steps = probes["checkpoint_step"].values
    budget = float(steps[-1])

    def times(size: str, cap: str) -> Arm:
        s = probes.sel(size=size, capability=cap)
        cen = s["bracket_censored"].values.astype(bool)
        return Arm.of(np.where(cen, budget, s["bracket_new_step"].values.astype(float)), cen)

    # abrupt: rows are (size, seed), the unit; columns capabilities
    jumps = np.array([[lm_jump_ratio(steps, probes.sel(size=size, capability=cap)["probe_accuracy"].values[k],
                                     float(probes.sel(size=size, capability=cap)["bracket_new_step"].values[k]),
                                     bool(probes.sel(size=size, capability=cap)["bracket_censored"].values[k]))
                       for cap in caps] for size in sizes for k in range(probes.sizes["seed"])])
    out.append(("lm-abrupt", capability_abruptness(jumps, caps, ctx)))
    # the paper profile's own models and budget (Pythia's 143k steps are not what it would run)
    paper_steps = None if ctx.paper_profile is None else float(ctx.paper_profile["language_model"]["train"]["steps"])
    out.append(("lm-random-times", seed_dependence(probes, times, sizes, caps, budget, paper_steps, ctx)))
    if len(sizes) >= 2:
        out.append(("lm-size", vd.earlier(
            [(f"{cap}, {sizes[-1]} vs {sizes[0]}", times(sizes[-1], cap), times(sizes[0], cap)) for cap in caps],
            claim="1 (language models, size)",
            statistic=f"KM median first solved checkpoint, {sizes[0]} over {sizes[-1]} (median over capabilities)",
            alpha=c.alpha, shared_seeds=True, stratum="capability", n_perm=c.n_perm, n_boot=c.n_boot,
            **ctx.common("lm-size"))))

    sharpen, recovery, ceiling, output = [], [], [], []
    for size, ds in patching.items():
        if not lv.is_size(size):
            continue
        for k in range(ds.sizes["seed"]):
            diffs, recs, alls, outs = [], [], [], []
            for i in range(ds.sizes["capability"]):
                if not np.isfinite(ds["delta_p"].values[i, k]).any():  # not bracketed, or too small a gap
                    continue
                diffs.append(top_head_sharpening(ds, i, k))
                if c.few_heads in ds["k"].values:
                    recs.append(float(ds["top_k_recovery"].sel(k=c.few_heads).values[i, k]))
                alls.append(all_heads(ds, "pattern", i, k))
                outs.append(all_heads(ds, "output", i, k))
            for store, values in ((sharpen, diffs), (recovery, recs), (ceiling, alls), (output, outs)):
                values = [v for v in values if np.isfinite(v)]
                if values:
                    store.append(float(np.median(values)))
    out.append(("lm-sharpening", vd.head_sharpens_more_than_others(
        sharpen, claim="2 (language models)", alpha=c.alpha, n_boot=c.n_boot, **ctx.common("lm-sharpening"))))
    patched = vd.recovers_most_of_gap(recovery, claim="3 (language models)", most=c.most_of_gap, alpha=c.alpha,
                                      n_boot=c.n_boot, paper_n=ctx.paper_n("lm-patching"), ceiling=ceiling,
                                      output=output, **ctx.common("lm-patching"))
    out.append(("lm-patching", replace(patched, statistic=f"median over seeds of the gap recovered by the top "
                                                          f"{c.few_heads} heads")))

    # claim 9: each structured pre-pretraining task against the from-scratch twin (the paper's
    # comparison) and against the control (i.i.d. random tokens, same alphabet and steps), each
    # task's test at alpha / (number of tasks) so that "Dyck or NCA" keeps alpha
    in_context = in_context_capabilities(caps)
    twins = {m.split("+")[1]: m for m in models if "+" in m}
    structured = [t for t in twins if t != "random"]
    if structured and in_context:
        level = c.alpha / len(structured)

        def versus(task: str, reference: str, what: str) -> Verdict:
            twin = twins[task]
            return vd.earlier([(f"{cap}, {twin} vs {reference}", times(twin, cap), times(reference, cap))
                               for cap in in_context],
                              claim=f"9 ({task})", statement="", alpha=level, shared_seeds=True,
                              stratum="capability", n_perm=c.n_perm,
                              n_boot=c.n_boot,
                              statistic=f"KM median first solved checkpoint, {what} over {twin}")
        scratch = {t: twins[t].split("+")[0] for t in structured}
        parts = [versus(t, scratch[t], "from scratch") for t in structured]
        out.append(("lm-pretraining", _any_of(parts, "9 (language models)", ctx.common("lm-pretraining"))))
        if "random" in twins:
            parts = [versus(t, twins["random"], "random-token control") for t in structured]
            out.append(("lm-pretraining-control", _any_of(parts, "9 (language models, control)", ctx.common("lm-pretraining-control"))))
    return at_the_papers_model(out, ctx)


def _any_of(parts: list[Verdict], claim: str, common: dict) -> Verdict:
    v = vd.any_of(parts, claim=claim, **common)
    detail = "; ".join(f"{p.claim}: {p.verdict} ({p.reason})" for p in parts)
    return replace(v, reason=f"{v.reason}: {detail}")


# --- architectures (claim 8) -------------------------------------------------------------------

def mixer_profile_setting(params: dict, task: str) -> dict[str, list]:
    """The task settings a profile's mixer comparison runs: parameter -> its values."""
    sweep = params["sweeps"]["mixers"][task]
    if task == "linear_map":
        return {"state_size": [sweep["state_size"]], "sparsity": list(sweep["sparsities"])}
    return {"state_size": list(sweep["state_sizes"]), "n_rules": [params["cellular_automata"]["task"]["n_rules"]]}


def mixer_claims(sm: xr.Dataset, ctx: Context) -> list[tuple[str, Verdict]]:
    c, out = ctx.c, []
    archs = list(dict.fromkeys(str(a) for a in sm["architecture"].values))
    mixers = {str(a): str(m) for a, m in zip(sm["architecture"].values, sm["mixer"].values)}
    reference = next(a for a in archs if mixers[a] == "attention")
    readings = sorted((a for a in archs if mixers[a] in MIXER_READINGS), key=lambda a: MIXER_READINGS.index(mixers[a]))
    by_mixer = {mixers[a]: a for a in archs}
    settings = {t: sorted({str(s) for s, tt in zip(sm["setting"].values, sm["task"].values) if tt == t})
                for t in ("linear_map", "cellular_automata")}

    def strata(a: str, b: str, task: str, what: str, only: list[str] | None = None):
        rows = []
        for s in only if only is not None else settings[task]:
            ia, ib = _cells(sm, task=task, setting=s, architecture=a), _cells(sm, task=task, setting=s, architecture=b)
            if ia and ib:
                rows.append((f"{task.replace('_', ' ')} {s}, {a} vs {b}", arm(sm, what, ia), arm(sm, what, ib)))
        return rows

    def compare(key, a, b, task, what, claim, statistic, only=None, alpha=c.alpha, **kw):
        rows = strata(a, b, task, what, only)
        if not rows:
            return None
        return vd.earlier(rows, claim=claim, statistic=statistic, alpha=alpha, budget=_budget(sm),
                          paper_budget=ctx.paper_budget(key), paper_n=ctx.paper_n(key), n_boot=c.n_boot,
                          **{**ctx.common(key), **kw})

    def lower_loss(better: str, worse: str, tasks: tuple[str, ...], claim: str, alpha: float,
                   paper_n: int | None, only: list[str] | None = None) -> Verdict | None:
        """The final loss at the budget (the paper's Fig 6 measure), per task setting; over
        several settings, most of them."""
        parts = []
        for task in tasks:
            for s in only if only is not None else settings[task]:
                ia = _cells(sm, task=task, setting=s, architecture=better)
                ib = _cells(sm, task=task, setting=s, architecture=worse)
                if ia and ib:
                    parts.append(vd.lower_final_loss(
                        sm["final_output_loss"].values[ia].ravel(), sm["final_output_loss"].values[ib].ravel(),
                        claim=f"{claim}, {task.replace('_', ' ')} {s}", statement="", alpha=alpha,
                        n_perm=c.n_perm, n_boot=c.n_boot, paper_n=paper_n,
                        statistic=f"mean final loss at the budget, {worse} minus {better}"))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else vd.most_of(parts, claim=claim, statement="")

    def time_or_loss(key, better, worse, tasks, claim, statement, common):
        """Emergence (time) and final loss, each at alpha / 2."""
        rows = [r for t in tasks for r in strata(better, worse, t, "emergence")]
        loss = lower_loss(better, worse, tasks, claim, c.alpha / 2, ctx.paper_n(key))
        if not rows or loss is None:
            return None
        time = vd.earlier(rows, claim=claim, statement=statement, alpha=c.alpha / 2, budget=_budget(sm),
                          paper_budget=ctx.paper_budget(key), paper_n=ctx.paper_n(key), n_boot=c.n_boot,
                          statistic=f"KM median emergence, {worse} over {better}")
        return vd.by_time_or_loss(time, loss, claim=claim, statement=statement, paper=common.get("paper", ""),
                                  time_name="emergence")

    def task_config(task: str, setting: str) -> dict:
        cells = _cells(sm, task=task, setting=setting)
        return json.loads(str(sm["task_config"].values[cells[0]])) if cells and "task_config" in sm else {}

    def at_paper(key: str, v: Verdict, task: str, used: list[str]) -> Verdict:
        """`v` where its settings are the paper's; else no verdict against the paper
        (`vd.at_the_papers_setting`), deferred to the paper profile where that runs them."""
        paper = ctx.paper_setting(key)
        if not paper or "task_config" not in sm:
            return v
        runs = ctx.paper_profile is not None and all(
            any(value in paper[k] for value in values) for k, values in mixer_profile_setting(ctx.paper_profile,
                                                                                              task).items()
            if k in paper)
        return vd.at_the_papers_setting(v, used=[task_config(task, s) for s in used], paper=paper,
                                        profile_runs_it=runs)

    def the_mixer(key: str, claim: str, test) -> Verdict | None:
        """Claim 8 for "the Mixer": `test(arm)` on the first reading present (MIXER_READINGS), the
        others' verdicts and reasons beside it in the reason, deciding nothing."""
        parts = [(m, v) for m in readings for v in [test(m)] if v is not None]
        if not parts:
            return None
        (lead, v), others = parts[0], parts[1:]
        beside = "".join(f"; beside it, {m} (reported, not deciding): {o.verdict} ({o.reason})" for m, o in others)
        return replace(v, claim=claim, **ctx.common(key), reason=f"{lead}: {v.reason}{beside}")

    lm_settings = settings["linear_map"]
    # "~10x faster" is a statement about time: emergence only, at the first (the paper's s = 3) setting
    faster = the_mixer("mixer-faster", "8 (Mixer, linear map)", lambda m: compare(
        "mixer-faster", m, reference, "linear_map", "emergence", f"8 ({m}, linear map)",
        f"KM median emergence, {reference} over {m}", only=lm_settings[:1], min_ratio=c.min_speedup))
    if faster is not None:
        out.append(("mixer-faster", at_paper("mixer-faster", faster, "linear_map", lm_settings[:1])))
    # "only the Mixer gets far below chance" at the sparser maps: the final loss at the budget (Fig 6)
    sparser = the_mixer("mixer-sparser", "8 (Mixer, sparser maps)", lambda m: lower_loss(
        m, reference, ("linear_map",), f"8 ({m}, sparser maps)", c.alpha, ctx.paper_n("mixer-sparser"),
        only=lm_settings[1:]))
    if sparser is not None:
        out.append(("mixer-sparser", at_paper("mixer-sparser", sparser, "linear_map", lm_settings[1:])))
    worse_on_ca = the_mixer("mixer-automata", "8 (Mixer, automata)", lambda m: time_or_loss(
        "mixer-automata", reference, m, ("cellular_automata",), f"8 ({m}, automata)",
        ctx.common("mixer-automata")["statement"], ctx.common("mixer-automata")))
    if worse_on_ca is not None:
        out.append(("mixer-automata", at_paper("mixer-automata", worse_on_ca, "cellular_automata",
                                               settings["cellular_automata"])))
    unmasked, masked = (by_mixer.get(m) for m in UNMASKED_CONTROL)
    if unmasked and masked:
        control = compare("mixer-unmasked-control", unmasked, masked, "linear_map", "emergence",
                          "8 (control, unmasked Mixer)", f"KM median emergence, {masked} over {unmasked}")
        if control is not None:
            out.append(("mixer-unmasked-control", control))
    parts = [v for a in archs if a != reference and mixers[a] not in (*MIXER_READINGS, UNMASKED_CONTROL[0])
             for v in [time_or_loss("recurrent-mixers", reference, a, ("linear_map", "cellular_automata"), f"8 ({a})",
                                    f"{a} underperforms the transformer", {})] if v is not None]
    if parts:
        v = vd.most_of(parts, claim="8 (recurrent mixers)", **ctx.common("recurrent-mixers"))
        detail = "; ".join(f"{p.claim}: {p.verdict} ({p.reason})" for p in parts)
        out.append(("recurrent-mixers", replace(v, reason=f"{v.reason}: {detail}")))
    return out


# --- is it a mirage? -----------------------------------------------------------------------------

def _by_seed(arrays: list[np.ndarray]) -> np.ndarray:
    """Units of several settings measured on the same seeds (from seed 0), side by side: [seed,
    unit]. A setting with fewer seeds than another (the automata's state sizes where one read
    a cell with more seeds) has NaN in the rows it lacks: no run there, which every mirage rule
    leaves out (a NaN it reads otherwise means the same: no rise, no change point)."""
    flat = [np.asarray(a, float).reshape(a.shape[0], -1) for a in arrays]
    rows = max(a.shape[0] for a in flat)
    return np.concatenate([np.pad(a, ((0, rows - a.shape[0]), (0, 0)), constant_values=np.nan) for a in flat], axis=1)


def mirage_claims(mirage: dict[str, xr.Dataset], ctx: Context) -> list[tuple[str, Verdict]]:
    """The jumps asked Schaeffer et al.'s question, per task: do they survive a continuous
    metric, are they sharp within a run and random across seeds, does the attention move first.
    `mirage` holds the mirage_analyse stage's datasets by name (emergence/analysis/mirage_analysis.py)."""
    c, out = ctx.c, []
    common = dict(alpha=c.alpha, n_boot=c.n_boot)
    groups = {"linear-map": ("linear map", [ds for name, ds in mirage.items() if name.startswith("linear_map")], "cross_entropy"),
              "automata": ("automata", [ds for name, ds in mirage.items() if name.startswith("automata")], "cross_entropy")}
    for key, (label, sets, continuous) in groups.items():
        if not sets:
            continue
        cont = [ds.sel(unit_metric=continuous) for ds in sets]
        # each bit of the linear map has a head of its own to find; every cell of the automata reads
        # the one window, found once a run: there the run is the unit timed, and its head is paired
        # against another seed's, since another cell's head is the same head
        one_search = key == "automata"
        if one_search:
            found = [searched_once(ds, continuous) for ds in sets]
            midpoints, censored, widths = ([f[i] for f in found] for i in range(3))
        else:
            midpoints = [d["unit_midpoint"].values for d in cont]
            censored, widths = [d["unit_censored"].values for d in cont], [resolved_width(d) for d in cont]
        # the automata's state sizes may differ in seeds (one read with more): resampled apart
        mine = dict(common, strata=vd.seed_strata([ds.sizes["seed"] for ds in sets]))
        out.append((f"mirage-metric-{key}", vd.jump_survives_continuous_metrics(
            _by_seed([width_ratio(ds, continuous) for ds in sets]), claim=f"1 ({label}, metric)",
            max_factor=c.metric_factor, metric="cross-entropy",
            at_grid=at_grid_fraction(sets, continuous), paper_n=ctx.paper_n(f"mirage-metric-{key}"), **mine,
            **ctx.common(f"mirage-metric-{key}"))))
        out.append((f"mirage-random-{key}", vd.sharp_within_random_across(
            _by_seed(midpoints), _by_seed(censored), _by_seed(widths),
            claim=f"1 ({label}, sharp and random{', one window a run' if one_search else ''})",
            min_ratio=c.random_ratio, **mine, **ctx.common(f"mirage-random-{key}"))))
        out.append((f"mirage-precursor-{key}", vd.attention_moves_first(
            _by_seed([ds["attention_change_step"].values for ds in sets]),
            _by_seed([ds["loss_change_step"].values for ds in sets]), claim=f"2 ({label}, attention first)",
            resolution=max(float(ds.attrs["eval_every"]) for ds in sets), n_perm=c.n_perm,
            pair_across_seeds=one_search, **mine, **ctx.common(f"mirage-precursor-{key}"))))
        level = "unit" if all("unit_resolution_shift" in ds for ds in sets) else "whole"
        if all(f"{level}_resolution_shift" in ds for ds in sets):
            smallest = min(int(ds["subsample"].values[0]) for ds in sets)
            shifts = [shift_in_widths(ds, level, smallest) for ds in sets]
            out.append((f"mirage-resolution-{key}", vd.jump_not_a_resolution_artefact(
                _by_seed([x if x.ndim > 1 else x[:, None] for x in shifts]),
                claim=f"1 ({label}, resolution{', whole answer' if level == 'whole' else ''})",
                max_shift=c.resolution_widths, subsample=smallest, trained=sum(x.size for x in shifts),
                scale="rise widths" if level == "unit" else "evaluation intervals",
                budget=max(float(ds.attrs["budget_step"]) for ds in sets),
                paper_budget=ctx.paper_budget(f"mirage-resolution-{key}"),
                paper_n=ctx.paper_n(f"mirage-resolution-{key}"), **mine, **ctx.common(f"mirage-resolution-{key}"))))
    if "language_models" in mirage:
        ds = mirage["language_models"]
        cont = ds.sel(unit_metric="p_correct")
        out.append(("mirage-metric-lm", vd.jump_survives_continuous_metrics(
            runs_by_seed(width_ratio(ds, "p_correct")), claim="1 (language models, metric)",
            max_factor=c.metric_factor, metric="p(correct)", at_grid=at_grid_fraction(ds, "p_correct"),
            paper_n=ctx.paper_n("mirage-metric-lm"), **common, **ctx.common("mirage-metric-lm"))))
        out.append(("mirage-random-lm", vd.sharp_within_random_across(
            runs_by_seed(cont["unit_midpoint"].values), runs_by_seed(cont["unit_censored"].values == 1),
            runs_by_seed(resolved_width(cont)), claim="1 (language models, sharp and random)",
            min_ratio=c.random_ratio, **common, **ctx.common("mirage-random-lm"))))
        smallest = int(ds["subsample"].values[0])
        out.append(("mirage-resolution-lm", vd.jump_not_a_resolution_artefact(
            runs_by_seed(shift_in_widths(ds, "runs", smallest)), scale="rise widths",
            claim="1 (language models, resolution)", max_shift=c.resolution_widths, subsample=smallest,
            paper_n=ctx.paper_n("mirage-resolution-lm"), **common, **ctx.common("mirage-resolution-lm"))))
    return out


# --- the whole scorecard -------------------------------------------------------------------------


@lru_cache(maxsize=None)
def rule_sections() -> tuple[tuple[str, Callable, tuple[str, ...]], ...]:
    """(experiment, its rules, the results they read) of every experiment that declares rules
    (emergence/experiments/), in report order."""
    return tuple((e.name, rules, e.rules_read) for e, rules in entry_points("rules"))


def rule_verdicts(results: dict, ctx: Context, sections: Collection[str] | None = None) -> list[tuple[str, str, Verdict]]:
    """(section, claim id, verdict) of every rule (of `sections` only, where given), in report order."""
    rows: list[tuple[str, str, Verdict]] = []
    for section, rules, inputs in rule_sections():
        if sections is None or section in sections:
            rows.extend((section, key, v) for key, v in rules(*(results[i] for i in inputs), ctx))
    return rows


def thresholds_read(results: dict, claims: ClaimsArgs, paper: dict, paper_profile: dict | None
                    ) -> tuple[list[tuple[str, str, Verdict]], dict[str, set[str]]]:
    """`rule_verdicts` at `claims`, and the keys of `claims` each section's rules read. The rules
    are pure and deterministic, so a section that never read a threshold gives the same verdicts
    whatever its value: moving it need not decide that section again."""
    rows, reads = [], {}
    for section, _, _ in rule_sections():
        seen = ReadThresholds(claims)
        rows += rule_verdicts(results, Context(seen, paper, paper_profile), (section,))
        reads[section] = seen.read
    return rows, reads


def _row_keys(rows: list[tuple[str, str, Verdict]]) -> list[str]:
    """The metric key of each of `rule_verdicts`' rows."""
    labels = [{"id": key, "claim": v.claim} for _, key, v in rows]
    return [metric_key(labels, i) for i in range(len(rows))]


def keyed_verdicts(results: dict, ctx: Context) -> dict[str, str]:
    """{metric key: verdict} of every rule."""
    rows = rule_verdicts(results, ctx)
    return {k: v.verdict for k, (_, _, v) in zip(_row_keys(rows), rows)}


def scorecard(results: dict, claims: ClaimsArgs, paper: dict, paper_profile: dict | None = None,
              progress: bool = False, workers: int = 1,
              decided: tuple[list[tuple[str, str, Verdict]], dict[str, set[str]]] | None = None) -> list[dict]:
    """Every row, in report order: the verdict's fields plus id, chapter, figure, the
    Benjamini-Hochberg q-value across the rows that made a test, and how the verdicts came out
    on `claims.stability_draws` resamples of the seeds (emergence/claims/stability.py; the rules'
    own bootstraps and permutations at `stability_resamples` draws there). `paper_profile`: the
    paper profile's params, so that a rule this run leaves undecided says whether that
    profile's seeds would decide it. `decided`: `thresholds_read` at `claims`, where the caller
    has it already (the rules' verdicts then are not decided again)."""
    rows = decided[0] if decided is not None else rule_verdicts(results, Context(claims, paper, paper_profile))
    q = benjamini_hochberg([v.p_value for _, _, v in rows])
    quick = Context(replace(claims, n_boot=claims.stability_resamples, n_perm=claims.stability_resamples),
                    paper, paper_profile)
    resampled = resampled_verdicts(partial(keyed_verdicts, ctx=quick), results, claims.stability_draws,
                                   np.random.default_rng(0), desc="verdicts on resampled seeds" if progress else None,
                                   workers=workers)
    out = []
    for (section, key, v), key_of_row, q_value in zip(rows, _row_keys(rows), q):
        declared = experiment(section)
        chapter, figure = declared.chapter, FIGURES.get(key, declared.figure)
        counts = with_untested(resampled.get(key_of_row, {}), claims.stability_draws)
        out.append({"id": key, "kind": paper[key]["kind"], "chapter": chapter, "figure": figure, **v.to_dict(),
                    "q_value": float(q_value),
                    "stability": stability(v.verdict, counts), "resampled": counts})
    return out


# The thresholds a rule compares its estimate or p against (params.yaml `claims`), moved both
# ways by `claims.sensitivity_factor` to show which verdicts hinge on them. The draw counts and
# the integer settings that pick cells (which S is large, from which S the bias is flat, how
# many heads are "a few") are not thresholds of this kind and stay put.
THRESHOLDS = ("alpha", "quartile_ratio", "abrupt_ratio", "coincidence_widths", "growth_ratio", "flat_ratio",
              "min_speedup", "most_of_gap", "metric_factor", "random_ratio", "resolution_widths")
BELOW_ONE = ("alpha", "most_of_gap")  # a level and a fraction: moved only while they stay below 1


def _sections_under(results: dict, variant: tuple[dict, tuple[str, ...]], paper: dict,
                    paper_profile: dict | None) -> list[tuple[str, str, Verdict]]:
    claims, sections = variant
    return rule_verdicts(results, Context(claims, paper, paper_profile), sections)


def threshold_sensitivity(rows: list[dict], results: dict, claims: ClaimsArgs, paper: dict,
                          paper_profile: dict | None = None, workers: int = 1, progress: bool = False,
                          decided: tuple[list[tuple[str, str, Verdict]], dict[str, set[str]]] | None = None
                          ) -> list[dict]:
    """For each of THRESHOLDS, the scorecard's rows (`rows`, decided at `claims`) whose verdict
    changes when that threshold alone is divided, or multiplied, by `claims.sensitivity_factor`
    (1: not computed), each rule otherwise as the scorecard runs it; only the sections whose rules
    read that threshold are decided again (`thresholds_read`). A record per threshold: its value,
    and per side the value tried and the changes (row key, claim, from, to). `decided`: as for
    `scorecard`."""
    factor = claims.sensitivity_factor
    if factor == 1.0:
        return []
    tried = [(key, side, getattr(claims, key) * m) for key in THRESHOLDS
             for side, m in (("lower", 1 / factor), ("higher", factor))
             if not (key in BELOW_ONE and getattr(claims, key) * m >= 1.0)]
    at_base, reads = decided if decided is not None else thresholds_read(results, claims, paper, paper_profile)
    variants = [(replace(claims, **{key: value}), tuple(s for s, read in reads.items() if key in read))
                for key, _, value in tried]
    redone = iter(decide_each(partial(_sections_under, paper=paper, paper_profile=paper_profile), results,
                              [v for v in variants if v[1]], workers, "verdicts at moved thresholds" if progress else None))
    base = rows_by_key(rows)
    out = {key: {"threshold": key, "value": getattr(claims, key), "lower": None, "higher": None} for key in THRESHOLDS}
    for (key, side, value), (_, sections) in zip(tried, variants):
        changed = []
        if sections:
            new = {section: [] for section in sections}
            for row in next(redone):
                new[row[0]].append(row)
            moved = [row for section, _, _ in rule_sections()
                     for row in (new[section] if section in new else [r for r in at_base if r[0] == section])]
            verdicts = {k: v.verdict for k, (_, _, v) in zip(_row_keys(moved), moved)}
            changed = [{"row": k, "claim": base[k]["claim"], "from": base[k]["verdict"], "to": v}
                       for k, v in verdicts.items() if k in base and base[k]["verdict"] != v]
        out[key][side] = {"value": value, "changed": changed}
    return list(out.values())


def tally(rows: list[dict]) -> dict[str, int]:
    return {v: sum(r["verdict"] == v for r in rows) for v in vd.VERDICTS}


def is_paper_claim(row: dict) -> bool:
    """Whether a row tests one of the paper's claims (a revision's rows before `kind` all did)."""
    return row.get("kind", "paper") == "paper"


def tallies(rows: list[dict]) -> dict[str, dict[str, int]]:
    """The verdicts counted apart: `tally` over the paper's claims, `extensions_tally` over this
    report's extensions and controls."""
    return {"tally": tally([r for r in rows if is_paper_claim(r)]),
            "extensions_tally": tally([r for r in rows if not is_paper_claim(r)])}


def json_safe(x):
    """JSON-safe and byte-stable: floats to 6 significant digits, inf as "inf", NaN as null."""
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(f"{x:.6g}")
    if isinstance(x, np.integer):
        return int(x)
    return x


def scorecard_json(rows: list[dict], claims: ClaimsArgs, sensitivity: list[dict] | None = None) -> str:
    return json.dumps(json_safe({"alpha": claims.alpha, "thresholds": to_params(claims), **tallies(rows), "claims": rows,
                                 "sensitivity": sensitivity or []}), indent=1) + "\n"


def metric_key(rows: list[dict], i: int) -> str:
    """A row's key in the metrics file: its id, with the claim's setting where an id repeats
    (one row per bias strength, say)."""
    row = rows[i]
    if sum(r["id"] == row["id"] for r in rows) == 1:
        return row["id"]
    return f"{row['id']} {row['claim']}"


def rows_by_key(rows: list[dict]) -> dict[str, dict]:
    """Rows by their metric key: what matches a row across two revisions' scorecards, so that a
    label edited between them is not taken for one claim dropped and another added."""
    return {metric_key(rows, i): row for i, row in enumerate(rows)}


def changed_verdicts(before: list[dict], after: list[dict]) -> list[tuple[str, str, str]]:
    """(label, verdict before, verdict after) of each row whose verdict differs between two
    scorecards' rows, matched by `rows_by_key`; "(not tested)" where one side lacks the row.
    Each verdict carries its stability where its scorecard has one: a change between two
    verdicts that few resamples of the seeds give is the kind another run can make."""
    old, new = rows_by_key(before), rows_by_key(after)
    verdict = lambda rows, key: rows[key]["verdict"] if key in rows else NOT_TESTED  # noqa: E731

    def shown(rows: dict, key: str) -> str:
        share = rows[key].get("stability") if key in rows else None
        return verdict(rows, key) + ("" if share is None else f" (stable {fmt_share(share)})")

    return [((new.get(key) or old[key])["claim"], shown(old, key), shown(new, key))
            for key in sorted(set(old) | set(new)) if verdict(old, key) != verdict(new, key)]


def changed_numbers(before: list[dict], after: list[dict]) -> list[tuple[str, str, str, str]]:
    """(label, verdict, numbers before, numbers after) of each row both scorecards hold with the
    same verdict but another estimate, interval, sample or test: what an edit moved without
    deciding the claim otherwise (an analysis threshold, more seeds). A row whose statistic
    changed (its rule was edited) names it on both sides."""
    old, new = rows_by_key(before), rows_by_key(after)
    fields = ("statistic", "estimate", "interval", "n", "censored", "censored_of", "p_value")
    moved = [key for key in sorted(old.keys() & new.keys()) if old[key]["verdict"] == new[key]["verdict"]
             and any(old[key].get(f) != new[key].get(f) for f in fields)]
    shown = lambda row, key: (claim_evidence(row) if old[key]["statistic"] != new[key]["statistic"]  # noqa: E731
                              else claim_numbers(row))
    return [(new[key]["claim"], new[key]["verdict"], shown(old[key], key), shown(new[key], key)) for key in moved]


def verdicts_json(rows: list[dict]) -> str:
    """The DVC metric: per claim its verdict and numbers, keyed, so `dvc metrics diff` lists a
    verdict or an estimate that changed between commits (the texts stay in scorecard.json)."""
    fields = ("verdict", "estimate", "interval", "n", "n_of", "censored", "censored_of", "p_value", "q_value",
              "stability")
    return json.dumps(json_safe({**tallies(rows), "claims": {metric_key(rows, i): {f: r[f] for f in fields}
                                                               for i, r in enumerate(rows)}}), indent=1) + "\n"


def read_result(path: Path) -> xr.Dataset | dict[str, xr.Dataset]:
    """A result file, or a folder of them by file stem (the patching and mirage results)."""
    path = Path(path)
    return {f.stem: read_netcdf(f) for f in sorted(path.glob("*.nc"))} if path.is_dir() else read_netcdf(path)


# Whose claim a row tests (data/paper/claims.yaml `kind`): the paper's own, counted in the tally a
# reader sees first, or this report's (an extension the paper does not state, a control it does
# not report), counted apart so that a verdict on them is never read as one on the paper.
KINDS = ("paper", "extension", "control")
PAPER_CLAIM_FIELDS = {"statement": str, "paper": str, "budget": (int, type(None)), "kind": str}
OPTIONAL_FIELDS = {"setting": dict}  # parameter -> the values the paper states the claim at


def read_paper_claims(path: Path) -> dict:
    """The rows' statements (data/paper/claims.yaml, and the rows experiments declare of their
    own, `Experiment.claims`), each with the fields PAPER_CLAIM_FIELDS names, a `kind` from
    KINDS (an experiment's own: not the paper's), and where given a `setting` of lists; anything
    else stops with the row, the field and the file named."""
    rows = yaml.safe_load(Path(path).read_text())
    for key, row in rows.items():
        _check_claim_row(key, row, path)
    for e in experiments():
        source = f"emergence/experiments/{e.name}.py"
        for key, row in e.claims.items():
            if key in rows:
                raise ValueError(f"{source}: claim {key!r} is already a row of {path}")
            _check_claim_row(key, row, source)
            if row["kind"] == "paper":
                raise ValueError(f"{source}: {key}.kind: an experiment's own claim is an extension or a control; "
                                 f"the paper's claims, with its numbers, are rows of {path}")
            rows[key] = row
    return rows


def _check_claim_row(key: str, row, path) -> None:
    fields = row if isinstance(row, dict) else {}
    missing = sorted(set(PAPER_CLAIM_FIELDS) - set(fields))
    unknown = sorted(set(fields) - set(PAPER_CLAIM_FIELDS) - set(OPTIONAL_FIELDS))
    if missing or unknown:
        raise ValueError(f"{path}: {key}: fields {sorted(PAPER_CLAIM_FIELDS)}"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {unknown}" if unknown else ""))
    for field, kind in PAPER_CLAIM_FIELDS.items():
        if not isinstance(fields[field], kind):
            raise ValueError(f"{path}: {key}.{field}: {kind}, got {fields[field]!r}")
    if fields["kind"] not in KINDS:
        raise ValueError(f"{path}: {key}.kind: one of {list(KINDS)}, got {fields['kind']!r}")
    setting = fields.get("setting", {})
    if not isinstance(setting, dict) or not all(isinstance(v, list) and v for v in setting.values()):
        raise ValueError(f"{path}: {key}.setting: parameter -> a non-empty list of values, got {setting!r}")


def read_scorecard(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def fmt_value(x) -> str:
    """A scorecard number (JSON: "inf" for unreached, null for undefined)."""
    if x is None:
        return "n/a"
    if x in ("inf", "-inf"):
        return "∞" if x == "inf" else "-∞"
    x = float(x)
    return f"{x:.3g}"


def fmt_share(x) -> str:
    return "n/a" if x is None else f"{float(x):.0%}"


def stability_text(row: dict) -> str:
    """How the verdict came out on the resampled seeds: its share, and the others'."""
    counts = row.get("resampled") or {}
    draws = sum(counts.values())
    if not draws:
        return "not resampled"
    others = ", ".join(f"{verdict} in {n}" for verdict, n in sorted(counts.items(), key=lambda kv: -kv[1])
                       if verdict != row["verdict"])
    return (f"the same verdict on {fmt_share(row['stability'])} of {draws} resamples of the seeds"
            + (f" (else: {others})" if others else ""))


def shaky(row: dict) -> bool:
    """Whether some resample of the seeds did not give the row's verdict again."""
    return row.get("stability") is not None and float(row["stability"]) < 1.0


def least_stable(rows: list[dict], top: int = 5) -> list[dict]:
    """Up to `top` rows whose verdict some resample did not give again, least stable first
    (ties in report order)."""
    return sorted(filter(shaky, rows), key=lambda r: float(r["stability"]))[:top]


def hinges_text(key: str, sensitivity: list[dict]) -> str:
    """What moving each threshold did to the row `key` (its metric key): the moves that changed
    its verdict, or that none did; "" where no threshold was moved."""
    if not sensitivity:
        return ""
    changes = [f"`{e['threshold']}` {e['value']:g} → {e[side]['value']:.3g} gives {c['to']}"
               for e in sensitivity for side in ("lower", "higher") if e[side]
               for c in e[side]["changed"] if c["row"] == key]
    return "; ".join(changes) if changes else "no threshold moved both ways changes this verdict"


def claim_evidence(row: dict) -> str:
    return f"{row['statistic']} = {claim_numbers(row)}"


def claim_numbers(row: dict) -> str:
    """A row's estimate with its interval, its sample and its test."""
    lo, hi = row["interval"]
    tests = "" if row["p_value"] is None else f"; p = {fmt_value(row['p_value'])} (BH q = {fmt_value(row['q_value'])})"
    return f"{fmt_value(row['estimate'])} [{fmt_value(lo)}, {fmt_value(hi)}]; {sample_of(row)}{tests}"


def sample_of(row: dict) -> str:
    """`Verdict.sample` of a scorecard row (a revision's rows before these fields counted seeds)."""
    return vd.sample_text(row["n"], row.get("n_of", "seeds"), row["censored"], row.get("censored_of"),
                          row.get("observations", ""))

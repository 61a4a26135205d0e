"""Whether bfloat16 autocast leaves the emergence statistics alone: the same seeds trained in
both precisions, compared seed by seed (the seed is the unit; a pair shares its data and its
initialisation).

The statistics are the ones the claims read: the Kaplan-Meier medians of the plateau end and
of emergence, the mean final loss and the Kaplan-Meier median per-unit jump width (jumps
unfinished at the budget censored). For each, the effect is the ratio bf16 / float32 over the
same seeds, and the rule (`agreement`) says:
- differ: a sign-flip permutation test finds a difference at p < alpha / k for the k statistics
  (Bonferroni): each seed scores how much later (or higher) bf16 ran than float32 (the log-rank
  O - E within the seed, censoring included; the log ratio of the final losses), and the sum is
  compared with the sums when any seed's pair is swapped (every one of the 2^n patterns, or
  `n_perm` random ones): exact under "the precision makes no difference";
- agree: nothing differs, and every ratio's paired bootstrap interval (seeds resampled, both
  precisions alike, level 1 - alpha) lies inside [1 / margin, margin]: equivalence shown, as
  an interval-inclusion test in the manner of two one-sided tests;
- undecided: neither, or a statistic unreached or undefined in either precision; the reason
  says how many seeds would let the widest interval fit inside the margin.

This replaces "either value outside the other's interval", which two samples of one
distribution fail most of the time (simulated with the same bootstrap, lognormal times: 59% of
statistics at 4 seeds and 39% at 8, so 86-97% of tasks over four statistics): it could not
have said "agree" on a harmless precision.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis.events import analyse, jump_widths, task_analyses, unstack_cells
from emergence.analysis.survival import (bootstrap_km_median, bootstrap_rows_km_median, km_median, km_median_of_rows,
                                logrank_terms)
from emergence.common.io import read_netcdf

STATISTICS = ("plateau_end_step", "emergence_step", "final_loss", "unit_transition_width")
MANY_SEEDS = 1000  # past this a forecast says only "more"
Rows = tuple[np.ndarray, np.ndarray]  # values [seed, k], censored [seed, k]; NaN: nothing to count


def _bootstrap(values: np.ndarray, statistic, n_boot: int, level: float, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of statistic(values[resampled seeds]) (the seed is the unit)."""
    rng = np.random.default_rng(seed)
    n = len(values)
    draws = np.array([statistic(values[idx]) for idx in rng.integers(0, n, size=(n_boot, n))])
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


def precision_statistics(analysed: xr.Dataset, n_boot: int, level: float) -> dict[str, tuple[float, float, float]]:
    """statistic -> (value, interval low, interval high) of one analysed run (its seeds resampled)."""
    out = {}
    for name in ("plateau_end_step", "emergence_step"):
        t = analysed[name].values
        c = analysed[name.replace("_step", "_censored")].values.astype(bool)
        out[name] = (km_median(t, c), *bootstrap_km_median(t, c, n_boot=n_boot, level=level))
    loss = analysed["final_loss"].values
    out["final_loss"] = (float(np.nanmean(loss)), *_bootstrap(loss, np.nanmean, n_boot, level))
    # every unit that left the plateau, the jumps unfinished at the budget censored: the median
    # of the finished ones alone would favour whichever precision's slow jumps finish least
    width, unfinished = jump_widths(analysed)
    out["unit_transition_width"] = (km_median_of_rows(width, unfinished),
                                    *bootstrap_rows_km_median(width, unfinished, n_boot, level))
    return out


def seed_rows(analysed: xr.Dataset) -> dict[str, Rows]:
    """statistic -> (values, censored), one row per seed: what `statistic_of` reads."""
    out = {}
    for name in ("plateau_end_step", "emergence_step"):
        out[name] = (analysed[name].values.astype(float)[:, None],
                     analysed[name.replace("_step", "_censored")].values.astype(bool)[:, None])
    loss = analysed["final_loss"].values.astype(float)[:, None]
    out["final_loss"] = (loss, np.zeros(loss.shape, bool))
    width, unfinished = jump_widths(analysed)
    out["unit_transition_width"] = (np.asarray(width, float), np.asarray(unfinished, bool))
    return out


def statistic_of(name: str, rows: Rows, pick: np.ndarray | None = None) -> float:
    """The statistic over the picked seeds (all if None): the mean final loss, else the
    Kaplan-Meier median of every finite entry, censored ones included (inf: unreached)."""
    values, censored = rows
    if name == "final_loss":
        v = values if pick is None else values[pick]
        return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
    return km_median_of_rows(values, censored, pick)


def _ratio(name: str, a: Rows, b: Rows, pick: np.ndarray | None = None) -> float:
    sa, sb = statistic_of(name, a, pick), statistic_of(name, b, pick)
    if not (np.isfinite(sa) and np.isfinite(sb)):
        return float("inf") if np.isinf(sa) or np.isinf(sb) else float("nan")
    if sa == sb:
        return 1.0
    return sb / sa if sa > 0 and sb > 0 else float("nan")


def flip_patterns(n: int, n_perm: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """[patterns, n] booleans (True: that seed's pair swapped) and whether they are all 2^n."""
    if 2 ** n <= n_perm:
        return ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool), True
    return rng.integers(0, 2, (n_perm, n)).astype(bool), False


def seed_scores(name: str, a: Rows, b: Rows) -> np.ndarray:
    """Each seed's evidence that precision b runs later (or higher) than a: the log-rank O - E
    of a's row against b's within the seed (censoring included), or the log ratio of the final
    losses. Swapping a seed's pair negates its score."""
    if name == "final_loss":
        score = np.log(b[0][:, 0] / a[0][:, 0])
        return np.where(np.isfinite(score), score, 0.0)
    out = np.zeros(len(a[0]))
    for i, (va, ca, vb, cb) in enumerate(zip(a[0], a[1], b[0], b[1])):
        fa, fb = np.isfinite(va), np.isfinite(vb)
        if fa.any() and fb.any():
            out[i] = logrank_terms(va[fa], ca[fa], vb[fb], cb[fb])[0]
    return out


def sign_flip_p(name: str, a: Rows, b: Rows, n_perm: int, rng: np.random.Generator) -> float:
    """Two-sided p of |sum of the seeds' scores| when each seed's pair may be swapped (the
    precision makes no difference: within a seed the two results are exchangeable)."""
    scores = seed_scores(name, a, b)
    observed = abs(scores.sum())
    patterns, exact = flip_patterns(len(scores), n_perm, rng)
    null = np.abs(np.where(patterns, -scores, scores).sum(axis=1))
    extreme = int((null >= observed - 1e-9 * max(1.0, observed)).sum())
    return extreme / len(null) if exact else (extreme + 1) / (len(null) + 1)


def smallest_p(n: int) -> float:
    """The smallest two-sided p a sign-flip test of n seeds can give (a pattern and its
    complement give the same |sum|, so at least two of the 2^n reach the observed one)."""
    return 2.0 / 2 ** n


def paired_interval(name: str, a: Rows, b: Rows, n_boot: int, level: float,
                    rng: np.random.Generator) -> tuple[float, float]:
    """Percentile interval of the ratio with the seeds resampled, both precisions alike."""
    n = len(a[0])
    draws = np.array([_ratio(name, a, b, pick) for pick in rng.integers(0, n, (n_boot, n))])
    if np.isnan(draws).all():
        return float("nan"), float("nan")
    lo, hi = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


@dataclass(frozen=True)
class Comparison:
    """One statistic: ratio bf16 / float32 over the same seeds, its interval and permutation p."""
    name: str
    ratio: float
    low: float
    high: float
    p: float

    @property
    def defined(self) -> bool:
        return all(np.isfinite(x) and x > 0 for x in (self.ratio, self.low, self.high))

    def text(self) -> str:
        return f"{self.name}: ratio {self.ratio:.3g} [{self.low:.3g}, {self.high:.3g}], p = {self.p:.3g}"


def seeds_to_fit(c: Comparison, n: int, margin: float) -> int | None:
    """Seeds at which the interval, narrowing as 1 / sqrt(n) about this estimate, would fit
    inside the margin (None: the estimate itself lies outside it, or the interval is undefined)."""
    room = math.log(margin) - abs(math.log(c.ratio)) if c.defined else -1.0
    if room <= 0:
        return None
    half = max(math.log(c.high / c.ratio), math.log(c.ratio / c.low))
    return max(n, math.ceil(n * (half / room) ** 2))


def forecast(c: Comparison, n: int, margin: float) -> str:
    """What would let this statistic's interval fit inside the margin, in words."""
    need = seeds_to_fit(c, n, margin)
    if need is None:
        return "the estimate lies outside the margin"
    if need > MANY_SEEDS:
        return f"more than {MANY_SEEDS:,} seeds: the estimate lies on the margin's edge"
    return f"~{need} seeds would fit it if the estimate holds"


def agreement(a: dict[str, Rows], b: dict[str, Rows], *, alpha: float, margin: float, n_perm: int, n_boot: int,
              seed: int = 0) -> tuple[str, list[str], list[Comparison]]:
    """('agree' | 'differ' | 'undecided', reasons, comparisons) of precision b against a, the
    same seeds in the same order (rows of `seed_rows`); see the module's docstring."""
    rng = np.random.default_rng(seed)
    n = len(a[STATISTICS[0]][0])
    threshold = alpha / len(STATISTICS)
    comparisons = []
    for name in STATISTICS:
        r = _ratio(name, a[name], b[name])
        p = sign_flip_p(name, a[name], b[name], n_perm, rng) if np.isfinite(r) and r > 0 else float("nan")
        comparisons.append(Comparison(name, r, *paired_interval(name, a[name], b[name], n_boot, 1 - alpha, rng), p))
    differ = [c.text() + f" < {threshold:.3g}" for c in comparisons if np.isfinite(c.p) and c.p < threshold]
    if differ:
        return "differ", differ, comparisons
    undefined = [c.text() + ": unreached within the budget (inf) or undefined (nan) in a precision"
                 for c in comparisons if not c.defined]
    if undefined:
        return "undecided", undefined, comparisons
    outside = [c for c in comparisons if not (1 / margin <= c.low and c.high <= margin)]
    if not outside:
        return "agree", [], comparisons
    reasons = []
    for c in outside:
        reasons.append(c.text() + f": not shown inside [{1 / margin:.3g}, {margin:.3g}]; " + forecast(c, n, margin))
    if smallest_p(n) >= threshold:
        reasons.append(f"with {n} seeds no difference can be found either: a sign-flip test's smallest p is "
                       f"{smallest_p(n):.3g}, not below {threshold:.3g} "
                       f"({math.floor(math.log2(2 / threshold)) + 1} seeds can)")
    return "undecided", reasons, comparisons


def summarize(params: dict, name: str, cell_dir: Path) -> xr.Dataset:
    """The check's summary: the (task, precision, statistic, bound) table of every compared run, the paired ratios
    bf16 / float32 with their intervals and permutation p, and the verdicts."""
    from emergence.core.precision import PRECISIONS  # here: importing this module needs no torch
    settings, analyses = params["sweeps"][name], task_analyses(params)
    tasks, n_boot, margin = settings["tasks"], settings["n_boot"], settings["margin"]
    table = np.full((len(tasks), len(PRECISIONS), len(STATISTICS), 3), np.nan)
    ratios = np.full((len(tasks), len(STATISTICS), 3), np.nan)
    p_values = np.full((len(tasks), len(STATISTICS)), np.nan)
    verdicts, reasons = [], []
    for i, task in enumerate(tasks):
        ds = read_netcdf(cell_dir / f"{task}.nc")
        analysis = analyses[task]
        rows = {}
        for j, (precision, cell) in enumerate(unstack_cells(ds, "precision")):
            analysed = analyse(cell, analysis)
            stats = precision_statistics(analysed, n_boot, 1 - analysis.alpha)
            table[i, j] = [stats[s] for s in STATISTICS]
            rows[str(precision)] = seed_rows(analysed)
        verdict, why, comparisons = agreement(*(rows[p] for p in PRECISIONS), alpha=analysis.alpha, margin=margin,
                                              n_perm=n_boot, n_boot=n_boot)
        ratios[i] = [(c.ratio, c.low, c.high) for c in comparisons]
        p_values[i] = [c.p for c in comparisons]
        if "precision" in ds.attrs:  # both cells resolved to one precision: no bfloat16 here
            verdict, why = "undecided", [f"both runs trained in {ds.attrs['precision']} on this machine "
                                         "(no fast bfloat16): nothing to compare"]
        verdicts.append(verdict)
        reasons.append("; ".join(why))
    return xr.Dataset(
        {"value": (("task", "precision", "statistic", "bound"), table,
                   {"long_name": "statistic with its bootstrap interval over seeds (level 1 - alpha)"}),
         "ratio": (("task", "statistic", "bound"), ratios,
                   {"long_name": f"{PRECISIONS[1]} over {PRECISIONS[0]} on the same seeds, with the paired "
                                 "bootstrap interval (level 1 - alpha)"}),
         "p_value": (("task", "statistic"), p_values,
                     {"long_name": "two-sided sign-flip permutation p of the ratio (each seed's pair swapped)"}),
         "verdict": (("task",), np.array(verdicts, dtype=str)),
         "reasons": (("task",), np.array(reasons, dtype=str))},
        coords={"task": np.array(tasks, dtype=str), "precision": np.array(PRECISIONS, dtype=str),
                "statistic": np.array(STATISTICS, dtype=str), "bound": np.array(["value", "low", "high"], dtype=str)},
        attrs={"experiment": f"sweep:{name}", "n_boot": n_boot, "margin": margin,
               # every section's, compared or not: what this run trains in
               "default_precision": ",".join(f"{name}:{section['train']['precision']}" for name, section in params.items()
                                             if isinstance(section, dict) and "precision" in section.get("train", {}))})

"""Is the jump a mirage? How sharp a rise is under each metric, what metric non-linearity alone
predicts, randomness across seeds against sharpness within a run, and whether the attention
moves before the loss.

Wei et al. (2022) call a jump emergent; Schaeffer, Miranda and Koyejo (2023) show that a
discontinuous metric can turn a smooth per-token improvement into a jump (exact match over L
tokens is about p^L). The paper's claims are about training time; they stand only if each
unit's jump (a bit of the linear map, a cell of the automata, a language-model capability)
stays sharp under continuous metrics. Every function here takes one curve or one set of runs
and is pure; the mirage_analyse stage applies them to the stored curves of every run.

Curves are put on one scale first: progress, 0 at chance and 1 when solved, whatever the
metric (a loss falls from its chance value to 0, an accuracy rises from chance to 1).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import ruptures
from scipy.optimize import OptimizeWarning, curve_fit
from sksurv.linear_model import CoxPHSurvivalAnalysis
from sksurv.metrics import concordance_index_censored
from sksurv.util import Surv

# The 10-to-90% rise of a logistic with scale w spans 2 ln 9 w on its axis.
TEN_NINETY = 2 * math.log(9)


def progress(values: np.ndarray, chance: float, solved: float) -> np.ndarray:
    """A metric's curve rescaled to 0 at chance and 1 at the solved value (either direction)."""
    return (np.asarray(values, float) - chance) / (solved - chance)


@dataclass(frozen=True)
class Rise:
    """A logistic fitted to one progress curve on the log-step axis (natural log).
    `midpoint` is ln(step) at half the fitted rise, `width` the 10-to-90% span in ln steps
    (ln(t90 / t10)); a curve that never reaches the rise threshold is `censored`: its midpoint
    is the budget's ln step (a lower bound) and its width unknown. `aic_gain` is the straight
    line's AIC minus the logistic's on the same axis (positive: the step shape fits better).
    `grid` is the ln-step span of the evaluation interval around the midpoint: a rise inside
    one interval fits any width below it, so widths are compared at max(width, grid)."""
    midpoint: float
    width: float
    censored: bool
    aic_gain: float
    grid: float = math.nan

    @property
    def resolved_width(self) -> float:
        """The width the evaluation grid can show: never below one evaluation interval."""
        return max(self.width, self.grid) if math.isfinite(self.width) else self.width


def _logistic(x, low, high, mid, scale):
    return low + (high - low) / (1 + np.exp(-(x - mid) / scale))


def _aic(residuals: np.ndarray, k: int) -> float:
    n = residuals.size
    rss = max(float(np.sum(residuals ** 2)), 1e-12 * n)
    return n * math.log(rss / n) + 2 * (k + 1)  # + 1: the residual variance


def fit_rise(steps: np.ndarray, curve: np.ndarray, threshold: float = 0.5) -> Rise:
    """The rise of one progress curve (`progress`), fitted where step > 0. Censored where the
    curve never reaches `threshold` (it never rose within the budget)."""
    steps, curve = np.asarray(steps, float), np.asarray(curve, float)
    keep = (steps > 0) & np.isfinite(curve)
    x, y = np.log(steps[keep]), curve[keep]
    if x.size < 5:
        raise ValueError(f"fit_rise: {x.size} points with step > 0; a rise needs at least 5")
    if y.max() < threshold:
        return Rise(midpoint=float(x[-1]), width=math.nan, censored=True, aic_gain=math.nan)

    def grid_at(mid: float) -> float:
        j = int(np.clip(np.searchsorted(x, mid), 1, x.size - 1))
        return float(x[j] - x[j - 1])

    first = int(np.argmax(y >= threshold))
    span = max(x[-1] - x[0], 1e-3)
    start = (float(np.median(y[:max(1, first)])), float(y[first:].max()), float(x[first]), span / 20)
    lower = (-1.0, 0.0, x[0] - span, span / 1e4)
    upper = (1.0, 2.0, x[-1] + span, span)
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("ignore", OptimizeWarning)
        try:
            p, _ = curve_fit(_logistic, x, y, p0=np.clip(start, lower, upper), bounds=(lower, upper), maxfev=20000)
        except RuntimeError:  # no convergence: the rise exists (threshold crossed) but has no logistic shape
            return Rise(midpoint=float(x[first]), width=math.nan, censored=False, aic_gain=math.nan,
                        grid=grid_at(float(x[first])))
        line = np.polyfit(x, y, 1)
        gain = _aic(y - np.polyval(line, x), 2) - _aic(y - _logistic(x, *p), 4)
    return Rise(midpoint=float(p[2]), width=float(TEN_NINETY * p[3]), censored=False, aic_gain=float(gain),
                grid=grid_at(float(p[2])))


def breakthroughness(curve: np.ndarray) -> float:
    """BIG-bench's breakthroughness (Srivastava et al. 2022, appendix B) of a curve in step order:
    I(y) / RootMedianSquare(y_{i+1} - y_i), I(y) = sign(argmax - argmin) (max - min). Large when
    the change happens in a few large steps; it depends on the evaluation grid, so compare it only
    between metrics on the same grid."""
    y = np.asarray(curve, float)
    y = y[np.isfinite(y)]
    if y.size < 3:
        return math.nan
    rms = math.sqrt(float(np.median(np.diff(y) ** 2)))
    total = math.copysign(float(y.max() - y.min()), int(np.argmax(y)) - int(np.argmin(y)))
    return math.inf if rms == 0 and total > 0 else (total / rms if rms > 0 else 0.0)


def binary_brier(log_p_correct: np.ndarray, axis: int = -1) -> np.ndarray:
    """Brier score of a two-outcome prediction from log p(correct outcome), averaged over `axis`:
    (p - 1)^2 + ((1 - p) - 0)^2 = 2 (1 - p)^2; 0.5 at chance, 0 when certain and right."""
    return (2 * (1 - np.exp(np.asarray(log_p_correct, float))) ** 2).mean(axis)


def exact_match_from_units(unit_accuracy: np.ndarray) -> np.ndarray:
    """The whole answer's exact match that the units' own accuracies predict if their errors were
    independent (Schaeffer et al.'s metric non-linearity): the product over the last axis."""
    return np.prod(np.asarray(unit_accuracy, float), axis=-1)


def explained_fraction(observed: np.ndarray, predicted: np.ndarray) -> float:
    """1 - SS(observed - predicted) / SS(observed - its mean): how much of a curve's variation
    over steps the prediction accounts for (1: all; 0: no better than a flat line)."""
    o, p = np.asarray(observed, float), np.asarray(predicted, float)
    ok = np.isfinite(o) & np.isfinite(p)
    total = float(np.sum((o[ok] - o[ok].mean()) ** 2))
    return math.nan if total == 0 else 1 - float(np.sum((o[ok] - p[ok]) ** 2)) / total


def change_point(steps: np.ndarray, curve: np.ndarray) -> float:
    """The step at which a curve's single mean shift happens (the exact least-squares split into
    two constant segments, by ruptures' dynamic programming): the first step of the second
    segment. NaN for a curve too short to split."""
    y = np.asarray(curve, float)
    ok = np.isfinite(y)
    if ok.sum() < 4:
        return math.nan
    s, y = np.asarray(steps, float)[ok], y[ok]
    (split, _) = ruptures.Dynp(model="l2", min_size=2, jump=1).fit(y.reshape(-1, 1)).predict(n_bkps=1)
    return float(s[split])


def landmark(steps: np.ndarray, curve: np.ndarray, horizon: float, window: int = 4) -> tuple[float, float]:
    """A curve's level at the last evaluation at or before `horizon` and its slope per ln step over
    the last `window` evaluations up to there (least squares): what an early-warning forecast may
    see of it. NaN where fewer than two evaluations (step > 0) come before the horizon."""
    steps, curve = np.asarray(steps, float), np.asarray(curve, float)
    seen = (steps > 0) & (steps <= horizon) & np.isfinite(curve)
    if seen.sum() < 2:
        return math.nan, math.nan
    x, y = np.log(steps[seen])[-window:], curve[seen][-window:]
    return float(y[-1]), float(np.polyfit(x, y, 1)[0])


def concordance(time: np.ndarray, event: np.ndarray, risk: np.ndarray) -> float:
    """Harrell's concordance of `risk` (higher: sooner) with event times that may be censored
    (scikit-survival): the fraction of orderable pairs the risk orders right, ties counted half."""
    return float(concordance_index_censored(np.asarray(event, bool), np.asarray(time, float),
                                            np.asarray(risk, float))[0])


def forecast_concordance(features: np.ndarray, time: np.ndarray, event: np.ndarray, group: np.ndarray,
                         penalty: float = 0.1) -> tuple[float, np.ndarray]:
    """Leave-one-group-out (the seed is the group) forecast of when each unit emerges from its
    `features[unit, k]` (standardised on the training seeds): a ridge-penalised Cox model
    (scikit-survival) fitted on the other seeds' units ranks the held-out seed's, and the pooled
    held-out risks are scored by Harrell's concordance, which keeps censored units (`event`
    False) in every pair it can order. 0.5 is what a forecast that predicts the median for every
    unit scores (every pair tied); 1 orders every pair. Returns (concordance, held-out risk);
    NaN where a fold has too few events to fit or nothing is left to order."""
    x = np.asarray(features, float)
    t, e, g = np.asarray(time, float), np.asarray(event, bool), np.asarray(group)
    keep = np.isfinite(x).all(1) & np.isfinite(t)
    risk = np.full(len(t), np.nan)
    for held in np.unique(g[keep]):
        train, test = keep & (g != held), keep & (g == held)
        scale = x[train].std(0)
        if e[train].sum() < 2 or (scale == 0).any():
            continue
        centre = x[train].mean(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = CoxPHSurvivalAnalysis(alpha=penalty).fit((x[train] - centre) / scale, Surv.from_arrays(e[train], t[train]))
        risk[test] = model.predict((x[test] - centre) / scale)
    scored = np.isfinite(risk)
    if scored.sum() < 2 or e[scored].sum() == 0:
        return math.nan, risk
    return concordance(t[scored], e[scored], risk[scored]), risk


def concordance_interval(time: np.ndarray, event: np.ndarray, risk: np.ndarray, group: np.ndarray, level: float,
                         n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of Harrell's concordance of held-out `risk`, seeds (`group`) resampled."""
    t, e, r, g = (np.asarray(a) for a in (time, event, risk, group))
    ok = np.isfinite(r)
    t, e, r, g = t[ok], e[ok].astype(bool), r[ok], g[ok]
    seeds = np.unique(g)
    if len(seeds) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(n_boot):
        pick = np.concatenate([np.flatnonzero(g == k) for k in rng.choice(seeds, len(seeds))])
        if e[pick].any() and len(np.unique(t[pick])) > 1:
            boot.append(concordance(t[pick], e[pick], r[pick]))
    if not boot:
        return math.nan, math.nan
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def subsampled_emergence(steps: np.ndarray, correct: np.ndarray, n: int, draws: int, threshold: float,
                         before: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """What a test set of `n` of the evaluation examples would have shown (Schaeffer et al.'s
    resolution argument): `correct[example, step]` is whether each example's answer was right.
    For `draws` sets drawn without replacement: the first step at which the set's accuracy
    reaches `threshold` (inf: never), and the fraction of the steps before `before` (the full
    set's emergence step) at which the set's accuracy is exactly zero."""
    correct = np.asarray(correct, float)
    steps = np.asarray(steps, float)
    picks = np.stack([rng.choice(correct.shape[0], n, replace=False) for _ in range(draws)])
    accuracy = correct[picks].mean(1)                                   # [draw, step]
    hit = accuracy >= threshold
    first = np.where(hit.any(1), steps[hit.argmax(1)], math.inf)
    early = steps < before
    zeros = (accuracy[:, early] == 0).mean(1) if early.any() else np.full(draws, math.nan)
    return first, zeros

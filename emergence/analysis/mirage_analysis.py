"""The mirage analysis of every emergence the report shows: each run's curves under a
discontinuous metric (greedy accuracy, exact match) and a continuous one (cross-entropy,
p(correct)), fitted the same way (emergence/analysis/mirage.py), with what the units' accuracies
predict for the whole answer and when the attention moves against the loss.

One dataset per task: the linear map (units are the bits of x_1), the automata (each state
size of the state-size sweep, control arm, or the same cell with more seeds where another
sweep trained it; units are cell positions) and the small language
models (units are capabilities; from-scratch sizes). For a single-token unit the log
probability of the whole answer is minus its cross-entropy, so on the progress scale the two
are one curve and only cross-entropy is kept.
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr

from emergence.analysis import mirage as mi
from emergence.analysis.survival import km_median
from emergence.common import lm_variants as lv
from emergence.common.schema import number


@dataclass(frozen=True, kw_only=True)
class MirageArgs:
    """The `mirage` section: when a progress curve counts as having risen, and the test sets drawn."""
    rise_threshold: float = number(0.01, 0.99)     # progress (0 chance, 1 solved) a rise must reach
    horizon_fraction: float = number(0.01, 1.0)    # early warning: forecast from this fraction of the median rise
    min_subsample: int = number(1, 1_000_000)      # resolution: the smallest test set drawn from the evaluation set
    subsample_draws: int = number(1, 100_000)      # resolution: test sets drawn per size


UNIT_METRICS = ("accuracy", "cross_entropy")            # discontinuous, continuous
BRIER = "brier"  # a unit's Brier score, where its per-example answers were kept and it is one binary choice
WHOLE_METRICS = ("exact_match", "accuracy", "p_correct", "cross_entropy")
LM_METRICS = ("accuracy", "p_correct")


def runs_by_seed(values: np.ndarray) -> np.ndarray:
    """[..., seed] -> [seed, run]: every other axis (size, capability, ...) flattened into runs,
    so that the seed stays the unit of the verdict rules' resampling."""
    values = np.asarray(values)
    return np.moveaxis(values, -1, 0).reshape(values.shape[-1], -1)


def _rises(steps: np.ndarray, curves: np.ndarray, threshold: float) -> dict[str, np.ndarray]:
    """fit_rise over the leading axes of `curves[..., step]`: midpoint, width, censored, aic_gain,
    breakthroughness, each shaped like the leading axes."""
    shape = curves.shape[:-1]
    out = {k: np.full(shape, np.nan) for k in ("midpoint", "width", "grid", "aic_gain", "breakthroughness")}
    out["censored"] = np.zeros(shape, np.int8)
    for index in np.ndindex(shape):
        rise = mi.fit_rise(steps, curves[index], threshold)
        out["midpoint"][index], out["width"][index], out["aic_gain"][index] = rise.midpoint, rise.width, rise.aic_gain
        out["grid"][index] = rise.grid
        out["censored"][index] = rise.censored
        out["breakthroughness"][index] = mi.breakthroughness(curves[index])
    return out


def _rise_vars(prefix: str, dims: tuple[str, ...], rises: dict) -> dict:
    text = {"midpoint": "ln(step) at half the fitted rise (the budget's where censored)",
            "width": "10-to-90% rise width, ln(t90 / t10)",
            "grid": "ln-step span of the evaluation interval around the midpoint (the narrowest width it can show)",
            "censored": "1: never reached the rise threshold",
            "aic_gain": "AIC of a straight line minus that of the logistic (ln-step axis)",
            "breakthroughness": "BIG-bench breakthroughness of the progress curve"}
    return {f"{prefix}_{k}": (dims, v, {"long_name": text[k]}) for k, v in rises.items()}


def _head_of_unit(parent_mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[seed, unit] (layer, head) with the most final mass on each unit's parents: chosen at the
    end of training, without looking at when anything changed."""
    final = parent_mass[:, -1]                          # [seed, layer, head, unit]
    flat = final.reshape(final.shape[0], -1, final.shape[-1])
    best = np.nanargmax(np.nan_to_num(flat, nan=-1), axis=1)
    return np.unravel_index(best, final.shape[1:3])


def _change_points(steps: np.ndarray, parent_mass: np.ndarray, unit_loss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[seed, unit] change points of the unit's head's parent mass and of the unit's loss."""
    layer, head = _head_of_unit(parent_mass)
    n_seed, n_unit = unit_loss.shape[0], unit_loss.shape[-1]
    attention, loss = np.full((n_seed, n_unit), np.nan), np.full((n_seed, n_unit), np.nan)
    for k in range(n_seed):
        for u in range(n_unit):
            attention[k, u] = mi.change_point(steps, parent_mass[k, :, layer[k, u], head[k, u], u])
            loss[k, u] = mi.change_point(steps, unit_loss[k, :, u])
    return attention, loss


def early_warning(steps: np.ndarray, rise_midpoint: np.ndarray, rise_censored: np.ndarray, curves: dict,
                  fraction: float, level: float = 0.9) -> tuple[np.ndarray, dict]:
    """Forecast each unit's rise step (`rise_midpoint[seed, unit]`, ln steps; censored at the
    budget) from what its curves (`curves[name][seed, step, unit]`, e.g. progress under the
    continuous metric, the best head's parent mass) show up to a horizon, a `fraction` of the
    setting's Kaplan-Meier median rise step, for the units that had not risen by then; seeds
    left out one at a time (emergence/analysis/mirage.py). Returns the held-out risk [seed, unit] (NaN
    for units not forecast) and the attributes: concordance with its seed-bootstrap interval at
    `level`, horizon step, units forecast."""
    t = np.exp(rise_midpoint)
    median = km_median(t.ravel(), rise_censored.ravel().astype(bool))
    horizon = fraction * (median if math.isfinite(median) else float(steps[-1]))
    at_risk = t > horizon
    seeds, units = np.nonzero(at_risk)
    features = []
    for k, u in zip(seeds, units):
        row = []
        for curve in curves.values():
            row.extend(mi.landmark(steps, curve[k, :, u], horizon))
        features.append(row)
    risk = np.full(t.shape, np.nan)
    concordance, interval = math.nan, (math.nan, math.nan)
    if len(seeds) and len(np.unique(seeds)) > 2:
        event = ~rise_censored[at_risk].astype(bool)
        concordance, held = mi.forecast_concordance(np.array(features), t[at_risk], event, seeds)
        risk[at_risk] = held
        interval = mi.concordance_interval(t[at_risk], event, held, seeds, level)
    return risk, {"forecast_concordance": float(concordance), "forecast_concordance_interval": list(interval),
                  "forecast_horizon_step": float(horizon),
                  "forecast_horizon_fraction": float(fraction), "forecast_units": int(at_risk.sum()),
                  "forecast_features": ", ".join(f"{name} (level, slope)" for name in curves)}


def example_resolution(results: xr.Dataset, unit: str, chance_unit: float, threshold: float, min_subsample: int,
                       draws: int) -> tuple[dict, dict]:
    """Test-set subsampling of a training run's per-example answers (data variables, coords):
    the whole answer (emerged at exact match >= the rise threshold) and, where kept, each unit
    (accuracy >= chance + threshold x (1 - chance)); with the infinite-resolution reading, the
    mean p(correct answer) before emergence. Empty where the run kept no per-example answers."""
    if "example_exact" not in results:
        return {}, {}
    steps = results["step"].values.astype(float)
    sizes = subsample_sizes(results.sizes["example"], min_subsample)
    exact = results["example_exact"].values.astype(float)                       # [seed, step, example]
    shift, zeros = resolutions(steps, exact, threshold, sizes, draws)
    pre = before_emergence(steps, np.nanmean(exact, -1), threshold, np.exp(results["example_answer_log_p"].values).mean(-1))
    out = {"whole_resolution_shift": (("seed", "subsample"), shift, {"long_name": RESOLUTION_TEXT["shift"] + " (whole answer)"}),
           "whole_resolution_zero_fraction": (("seed", "subsample"), zeros, {"long_name": RESOLUTION_TEXT["zero"]}),
           "whole_pre_emergence_p_correct": (("seed",), pre, {"long_name": RESOLUTION_TEXT["pre"]})}
    if "example_unit_correct" in results:
        solved = chance_unit + threshold * (1 - chance_unit)
        correct = np.moveaxis(results["example_unit_correct"].values.astype(float), -1, 1)   # [seed, unit, step, example]
        shift, zeros = resolutions(steps, correct, solved, sizes, draws)
        p_unit = np.moveaxis(np.exp(results["example_unit_log_p"].values).mean(2), -1, 1)    # [seed, unit, step]
        pre = before_emergence(steps, np.nanmean(correct, -1), solved, p_unit)
        out.update({"unit_resolution_shift": (("seed", unit, "subsample"), shift, {"long_name": RESOLUTION_TEXT["shift"]}),
                    "unit_resolution_zero_fraction": (("seed", unit, "subsample"), zeros,
                                                      {"long_name": RESOLUTION_TEXT["zero"]}),
                    "unit_pre_emergence_p_correct": (("seed", unit), pre, {"long_name": RESOLUTION_TEXT["pre"]})})
    return out, {"subsample": sizes}


def synthetic_task(results: xr.Dataset, *, chance_accuracy: float, positions_per_unit: int, setting: str,
                   threshold: float, horizon_fraction: float, min_subsample: int = 16, draws: int = 200) -> xr.Dataset:
    """One synthetic task's run file (seed, step, unit curves) as its mirage dataset."""
    unit = results["unit_loss"].dims[-1]
    steps = results["step"].values.astype(float)
    chance_loss = float(results.attrs["chance_loss"])
    curves = [mi.progress(results["unit_accuracy"].values, chance_accuracy, 1.0),
              mi.progress(results["unit_loss"].values, chance_loss, 0.0)]
    unit_metrics = list(UNIT_METRICS)
    if "example_unit_log_p" in results and positions_per_unit == 1 and chance_accuracy == 0.5:
        brier = mi.binary_brier(results["example_unit_log_p"].values, axis=2)               # [seed, step, unit]
        curves.append(mi.progress(brier, 0.5, 0.0))
        unit_metrics.append(BRIER)
    unit_curves = np.stack(curves)                                                           # [metric, seed, step, unit]
    unit_rises = _rises(steps, np.moveaxis(unit_curves, 2, -1), threshold)                   # [metric, seed, unit]
    whole = {"exact_match": mi.progress(results["exact_match"].values, 0.0, 1.0),
             "accuracy": mi.progress(results["accuracy"].values, chance_accuracy, 1.0),
             "p_correct": mi.progress(results["p_correct"].values, chance_accuracy, 1.0),
             "cross_entropy": mi.progress(results["output_loss"].values, chance_loss, 0.0)}
    whole_rises = _rises(steps, np.stack([whole[m] for m in WHOLE_METRICS]), threshold)      # [metric, seed]
    unit_acc = results["unit_accuracy"].values.astype(float)
    predicted = mi.exact_match_from_units(unit_acc ** positions_per_unit)                    # [seed, step]
    length = unit_acc.shape[-1] * positions_per_unit
    power = results["accuracy"].values.astype(float) ** length
    observed = results["exact_match"].values.astype(float)
    attention, loss = _change_points(steps, results["parent_mass"].values, results["unit_loss"].values)
    flat = unit_rises["censored"][1] == 1  # a loss that never fell has no change to time
    attention, loss = np.where(flat, np.nan, attention), np.where(flat, np.nan, loss)
    parent_mass = results["parent_mass"].values                                   # [seed, step, layer, head, unit]
    seen = {"cross-entropy progress": unit_curves[1],
            "best head's parent mass": np.nanmax(parent_mass.reshape(*parent_mass.shape[:2], -1, parent_mass.shape[-1]), 2),
            "least head entropy": np.nanmin(results["attention_entropy"].values.reshape(
                *parent_mass.shape[:2], -1, parent_mass.shape[-1]), 2)}
    risk, forecast = early_warning(steps, unit_rises["midpoint"][0], unit_rises["censored"][0], seen, horizon_fraction)
    seeds = results["seed"].values
    resolution_vars, resolution_coords = example_resolution(results, unit, chance_accuracy ** positions_per_unit,
                                                            threshold, min_subsample, draws)
    return xr.Dataset(
        {**_rise_vars("unit", ("unit_metric", "seed", unit), unit_rises),
         **_rise_vars("whole", ("whole_metric", "seed"), whole_rises),
         "exact_match": (("seed", "step"), observed, {"long_name": "observed exact match of the whole answer"}),
         "exact_match_from_units": (("seed", "step"), predicted,
                                    {"long_name": "product over units of accuracy ^ positions: independent errors"}),
         "exact_match_from_mean": (("seed", "step"), power, {"long_name": "mean accuracy ^ answer length (p^L)"}),
         "explained_by_units": (("seed",), np.array([mi.explained_fraction(o, p) for o, p in zip(observed, predicted)]),
                                {"long_name": "fraction of the exact-match curve's variation the units' product explains"}),
         "explained_by_mean": (("seed",), np.array([mi.explained_fraction(o, p) for o, p in zip(observed, power)]),
                               {"long_name": "the same for p^L"}),
         "attention_change_step": (("seed", unit), attention,
                                   {"long_name": "change point of the parent mass of the unit's head "
                                                 "(NaN where the unit's loss never fell)"}),
         "loss_change_step": (("seed", unit), loss, {"long_name": "change point of the unit's loss (NaN where it never fell)"}),
         "forecast_risk": (("seed", unit), risk, {"long_name": "held-out forecast risk of rising (higher: sooner); "
                                                               "NaN where not forecast"}),
         **resolution_vars},
        coords={"unit_metric": unit_metrics, "whole_metric": list(WHOLE_METRICS), "seed": seeds,
                unit: results[unit].values, "step": steps, **resolution_coords},
        attrs={"setting": setting, "unit_dim": unit, "answer_length": int(length),
               "positions_per_unit": int(positions_per_unit), "rise_threshold": float(threshold),
               "budget_step": float(steps[-1]), "eval_every": float(np.median(np.diff(steps[-5:]))),
               "chance_accuracy": float(chance_accuracy), "chance_loss": chance_loss, "subsample_draws": int(draws),
               **forecast})


def linear_map(results: xr.Dataset, threshold: float, horizon_fraction: float, **resolution) -> xr.Dataset:
    task = json.loads(results.attrs["config"])["linear_map"]["task"]
    ds = synthetic_task(results, chance_accuracy=0.5, positions_per_unit=1, threshold=threshold,
                        horizon_fraction=horizon_fraction, setting=f"S{task['state_size']:02d}_s{task['sparsity']:02d}",
                        **resolution)
    return ds.assign_attrs(task="linear_map")


CONTROL_ARM = "the state-size sweep's control arm"


def _without_seed_count(config: dict) -> dict:
    (task,) = config
    section = {k: dict(v) for k, v in config[task].items()}
    section["train"].pop("n_seeds")
    return {task: section}


def control_with_most_seeds(results: xr.Dataset, others: dict[str, xr.Dataset]) -> tuple[xr.Dataset, str]:
    """The control arm (strength 0) of one state size of the state-size sweep, or, where another
    sweep trained that very cell with more seeds from the same first seed (`others`: single
    cells by name; the automata architecture sweep's default model at S = 8), the one with the
    most: every configuration field but the seed count is equal, so its first seeds are the
    control arm's runs, and the mirage rules read more seeds at no cost. Returns it and where it
    comes from, for the report."""
    control = results.sel(strength=0.0)
    config = json.loads(results.attrs["configs"])[list(results["strength"].values).index(0.0)]
    best, source = control, CONTROL_ARM
    for name, other in others.items():
        if "config" in other.attrs and "seed" in other.dims and other.sizes["seed"] > best.sizes["seed"] \
                and _without_seed_count(json.loads(other.attrs["config"])) == _without_seed_count(config):
            best, source = other, f"{name}, the same cell with more seeds"
    return best, source


def automata(results: xr.Dataset, threshold: float, horizon_fraction: float, control: xr.Dataset | None = None,
             runs_from: str = CONTROL_ARM, **resolution) -> xr.Dataset:
    """The control arm (strength 0) of one state size of the state-size sweep (or `control`, the
    same cell with more seeds, read from `runs_from`: `control_with_most_seeds`)."""
    control = results.sel(strength=0.0) if control is None else control
    task = json.loads(results.attrs["configs"])[0]["cellular_automata"]["task"]
    ds = synthetic_task(control, chance_accuracy=float(results.attrs["chance_accuracy"]),
                        positions_per_unit=task["n_states"] - 1, threshold=threshold, horizon_fraction=horizon_fraction,
                        setting=f"S{int(results.attrs['state_size']):04d}", **resolution)
    return ds.assign_attrs(task="cellular_automata", state_size=int(results.attrs["state_size"]), runs_from=runs_from)


def resolution(steps: np.ndarray, correct: np.ndarray, solved: float, sizes: list[int], draws: int,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """How one run's emergence reads on smaller test sets (`correct[prompt, step]`): for each
    subsample size, the median over draws of how far the set's emergence step (first step at
    accuracy >= `solved`) lands from the full set's, in evaluation intervals on the ln-step axis
    (the interval before the full set's step; inf where the median draw never reaches it), and
    the mean fraction of the steps before emergence at which the set reads exactly zero. NaN
    where the full set never emerges."""
    full_acc = correct.mean(0)
    shift, zeros = np.full(len(sizes), np.nan), np.full(len(sizes), np.nan)
    if not (full_acc >= solved).any():
        return shift, zeros
    j = int(np.argmax(full_acc >= solved))
    full = steps[j]
    grid = math.log(max(steps[j], 1) / max(steps[max(j - 1, 0)], 1)) or math.log(2)
    rng = np.random.default_rng(seed)
    for i, n in enumerate(sizes):
        first, zero = mi.subsampled_emergence(steps, correct, n, draws, solved, full, rng)
        moved = np.abs(np.log(np.maximum(first, 1)) - math.log(max(full, 1))) / grid
        shift[i] = float(np.quantile(moved, 0.5, method="inverted_cdf"))
        zeros[i] = float(np.nanmean(zero)) if np.isfinite(zero).any() else math.nan
    return shift, zeros


def subsample_sizes(n_examples: int, smallest: int) -> list[int]:
    """Test-set sizes smallest, 2 x smallest, ... below the whole set, and the whole set."""
    return sorted({n for n in (smallest * 2 ** k for k in range(20)) if n < n_examples} | {n_examples})


def resolutions(steps: np.ndarray, correct: np.ndarray, solved: float, sizes: list[int],
                draws: int) -> tuple[np.ndarray, np.ndarray]:
    """`resolution` for every run of `correct[..., step, example]`: (shift, zero fraction), each
    [..., size]."""
    shift = np.full(correct.shape[:-2] + (len(sizes),), np.nan)
    zeros = np.full_like(shift, np.nan)
    for index in np.ndindex(correct.shape[:-2]):
        run = correct[index]
        if np.isnan(run).all():  # a diverged seed
            continue
        shift[index], zeros[index] = resolution(steps, np.nan_to_num(run).T, solved, sizes, draws)
    return shift, zeros


def before_emergence(steps: np.ndarray, accuracy: np.ndarray, solved: float, value: np.ndarray) -> np.ndarray:
    """[...] mean of value[..., step] over the steps before accuracy[..., step] first reaches
    `solved` (all steps where it never does; NaN where it is solved from the start)."""
    reached = accuracy >= solved
    first = np.where(reached.any(-1), steps[np.argmax(reached, -1)], np.inf)
    before = np.where(steps < first[..., None], value, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(before, -1)


RESOLUTION_TEXT = {
    "shift": "median over draws of |ln(emergence step of the subsample / of the whole set)| in evaluation intervals",
    "zero": "mean fraction of pre-emergence evaluations at which the subsample reads accuracy 0",
    "pre": "mean p(correct answer) over the evaluations before emergence: the infinite-resolution reading"}


def language_models(probes: xr.Dataset, threshold: float, horizon_fraction: float, min_subsample: int = 16,
                    draws: int = 200) -> xr.Dataset:
    """Each from-scratch size's capabilities: greedy accuracy (discontinuous) against p(correct)
    of the answer (continuous), both from 0. The probes' checkpoints carry no attention
    statistics, so there is no precursor test here."""
    sizes = lv.sizes(probes["size"].values)
    p = probes.sel(size=sizes)
    steps = p["checkpoint_step"].values.astype(float)
    curves = np.stack([p["probe_accuracy"].values, p["probe_p_correct"].values]).astype(float)  # [metric, size, cap, seed, step]
    rises = _rises(steps, curves, threshold)
    seen = {"p(correct)": np.moveaxis(curves[1], (2, 3), (0, 1)).reshape(curves.shape[3], curves.shape[4], -1)}
    risk, forecast = early_warning(steps, runs_by_seed(rises["midpoint"][0]), runs_by_seed(rises["censored"][0]), seen,
                                   horizon_fraction)
    risk = np.moveaxis(risk.reshape(p.sizes["seed"], len(sizes), -1), 0, -1)
    subsets = subsample_sizes(p.sizes["prompt"], min_subsample)
    run_dims = ("size", "capability", "seed")
    solved = float(probes.attrs["solved_accuracy"])
    shift, zeros = resolutions(steps, p["probe_prompt_correct"].values.astype(float), solved, subsets, draws)
    pre_emergence = before_emergence(steps, p["probe_accuracy"].values, solved, p["probe_p_correct"].values)
    return xr.Dataset({**_rise_vars("unit", ("unit_metric",) + run_dims, rises),
                       "forecast_risk": (run_dims, risk,
                                         {"long_name": "held-out forecast risk of rising; NaN where not forecast"}),
                       "resolution_shift": (run_dims + ("subsample",), shift, {"long_name": RESOLUTION_TEXT["shift"]}),
                       "resolution_zero_fraction": (run_dims + ("subsample",), zeros,
                                                    {"long_name": RESOLUTION_TEXT["zero"]}),
                       "pre_emergence_p_correct": (run_dims, pre_emergence, {"long_name": RESOLUTION_TEXT["pre"]})},
                      coords={"unit_metric": list(LM_METRICS), "size": sizes, "subsample": subsets,
                              "capability": p["capability"].values, "seed": p["seed"].values},
                      attrs={"task": "language_models", "rise_threshold": float(threshold),
                             "budget_step": float(steps[-1]), "setting": "from-scratch sizes", "solved_accuracy": solved,
                             "subsample_draws": int(draws), **forecast})


def resolution_readings(ds: xr.Dataset) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Each level a mirage dataset measured the resolution at: (level, shift [run, subsample],
    zero fraction [run, subsample], pre-emergence p(correct) [run]), runs flattened with the
    seed leading. Levels: "capability" (language models), "unit" and "whole answer" (synthetic
    tasks, as their runs kept them); empty where no per-example answers were kept."""
    out = []
    for level, prefix in (("capability", ""), ("unit", "unit_"), ("whole answer", "whole_")):
        if f"{prefix}resolution_shift" not in ds:
            continue
        pre = ds[f"{prefix}pre_emergence_p_correct"]
        runs = ["seed"] + [d for d in pre.dims if d != "seed"]

        def flat(name: str) -> np.ndarray:
            v = ds[prefix + name].transpose(*runs, "subsample").values
            return v.reshape(-1, v.shape[-1])

        out.append((level, flat("resolution_shift"), flat("resolution_zero_fraction"), pre.transpose(*runs).values.ravel()))
    return out


def width_ratio(ds: xr.Dataset, continuous: str, discontinuous: str = "accuracy") -> np.ndarray:
    """[seed, unit...] a unit's rise width under `continuous` over its width under `discontinuous`,
    where the discontinuous curve rose: inf where the continuous one never did, NaN where the
    discontinuous one never rose or no logistic fitted (the rule's input)."""
    disc, cont = resolved_width(ds.sel(unit_metric=discontinuous)), resolved_width(ds.sel(unit_metric=continuous))
    rose = np.isfinite(disc) & (disc > 0)
    never = ds.sel(unit_metric=continuous)["unit_censored"].values == 1
    ratio = np.where(never, math.inf, cont / np.where(rose, disc, 1))
    return np.where(rose, ratio, np.nan)


def resolved_width(ds: xr.Dataset, level: str = "unit") -> np.ndarray:
    """Rise widths never below one evaluation interval (`Rise.resolved_width`); NaN where censored.
    `level`: the units' rises or the whole answer's."""
    w, g = ds[f"{level}_width"].values, ds[f"{level}_grid"].values
    return np.where(ds[f"{level}_censored"].values == 1, np.nan, np.where(np.isfinite(w), np.fmax(w, g), np.nan))


def searched_once(ds: xr.Dataset, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rise midpoint, censored flag and resolved width [seed, 1] of each run's whole answer under
    `metric`: the randomness rule's unit where one search serves every unit of a run (each cell
    of the automata reads the same window, found once), so that the run, not its cells, is what
    is timed across seeds."""
    d = ds.sel(whole_metric=metric)
    return (d["whole_midpoint"].values[:, None], d["whole_censored"].values[:, None],
            resolved_width(d, "whole")[:, None])


def shift_in_widths(ds: xr.Dataset, level: str, subsample: int) -> np.ndarray:
    """How far a test set of `subsample` examples moves each run's emergence, in that run's own
    accuracy rise width (ln steps, never below one evaluation interval: `resolved_width`), not
    in evaluation intervals: a tolerance in intervals tightens with a denser grid while the jump
    stays what it is. `level`: "unit" (per unit), "whole" (the whole answer, whose rise is not
    fitted: its width is taken as one interval, the narrowest a rise can read, which overstates
    the shift and so errs against "sharp") or "runs" (the language models' probe runs). The
    shift's intervals are converted with the interval around the rise's midpoint (`unit_grid`;
    on an evenly spaced grid, nearly the one before emergence that the shift was counted in).
    A run whose accuracy rise was not fitted keeps its shift in intervals, as "whole" does."""
    shift = ds["resolution_shift" if level == "runs" else f"{level}_resolution_shift"].sel(subsample=subsample)
    if level == "whole":
        return shift.values
    acc = ds.sel(unit_metric="accuracy")
    width = np.fmax(acc["unit_width"], acc["unit_grid"]).where(acc["unit_censored"] == 0)
    relative = (shift * acc["unit_grid"] / width).where(np.isfinite(width) & (width > 0), shift)
    return relative.drop_vars([c for c in relative.coords if c not in shift.coords]).transpose(*shift.dims).values


def at_grid_fraction(datasets: xr.Dataset | list[xr.Dataset], continuous: str, discontinuous: str = "accuracy") -> float:
    """Of the units whose discontinuous curve rose (pooled over `datasets`), the fraction whose
    rises under both metrics are no wider than one evaluation interval (the grid shows no
    difference between them)."""
    rose_n = sharp_n = 0
    for ds in datasets if isinstance(datasets, list) else [datasets]:
        disc, cont = ds.sel(unit_metric=discontinuous), ds.sel(unit_metric=continuous)
        rose = (disc["unit_censored"].values == 0) & np.isfinite(disc["unit_width"].values)
        sharp = lambda d: (d["unit_censored"].values == 0) & (d["unit_width"].values <= d["unit_grid"].values)  # noqa: E731
        rose_n, sharp_n = rose_n + int(rose.sum()), sharp_n + int((rose & sharp(disc) & sharp(cont)).sum())
    return sharp_n / rose_n if rose_n else math.nan


def answer_lengths(rows: dict[str, xr.Dataset]) -> xr.Dataset:
    """Schaeffer's prediction across answer lengths on the linear map: every cell of the sparsity
    sweep (rows of state size S, so answers of L = S bits), per seed, the fraction of the exact
    match curve explained by the product of the bits' accuracies and by the mean accuracy ^ L,
    with the final exact match and bit accuracy (cells by (S, s))."""
    cells = [(int(ds.attrs.get("state_size", ds.sizes["bit"])), int(s), ds.sel(sparsity=s))
             for ds in rows.values() if "sparsity" in ds.coords for s in ds["sparsity"].values]  # a row a profile skips is empty
    n_seed = max(c.sizes["seed"] for _, _, c in cells) if cells else 0
    out = {k: np.full((len(cells), n_seed), np.nan) for k in
           ("explained_by_units", "explained_by_mean", "final_exact_match", "final_accuracy")}
    for i, (S, _, c) in enumerate(cells):
        observed, unit_acc = c["exact_match"].values.astype(float), c["unit_accuracy"].values.astype(float)
        power = c["accuracy"].values.astype(float) ** unit_acc.shape[-1]
        for k in range(c.sizes["seed"]):
            out["explained_by_units"][i, k] = mi.explained_fraction(observed[k], mi.exact_match_from_units(unit_acc[k]))
            out["explained_by_mean"][i, k] = mi.explained_fraction(observed[k], power[k])
            out["final_exact_match"][i, k], out["final_accuracy"][i, k] = observed[k, -1], c["accuracy"].values[k, -1]
    return xr.Dataset({k: (("cell", "seed"), v) for k, v in out.items()},
                      coords={"state_size": ("cell", [S for S, _, _ in cells]),
                              "sparsity": ("cell", [s for _, s, _ in cells]), "seed": np.arange(n_seed)},
                      attrs={"task": "linear_map", "what": "answer-length sweep of the exact-match prediction"})

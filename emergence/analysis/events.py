"""Emergence statistics: pure functions of (steps, values) arrays, and of whole runs.

A trajectory's *progress* runs from 0 at chance to 1 when solved. Plateau end, emergence
step and solved step are first crossings of thresholds; a run that never crosses within
the budget is right-censored at the last step (time = budget, censored = True), never
dropped. Censored times feed Kaplan-Meier estimates (emergence/analysis/survival.py), not plain means.

`analyse` applies them to any results Dataset from experiments/runner.py, per seed and per
(seed, output unit): the output units are the linear map's bits, the cellular automaton's
cells or a language model's positions (the dimension of `unit_accuracy` besides seed and
step), and chance accuracy comes from the `chance_accuracy` attribute (0.5 if absent). Only
numpy, scipy and xarray here, so no analysis stage depends on the training code.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import numpy as np
import xarray as xr
from scipy.stats import norm

from emergence.analysis.survival import bootstrap_km_median, km_median, km_median_of_rows
from emergence.common.schema import ConfigError, load, number, to_params


def progress_from_accuracy(accuracy: np.ndarray, chance: float = 0.5) -> np.ndarray:
    """(accuracy - chance) / (1 - chance), so 0 = chance and 1 = perfect."""
    return (np.asarray(accuracy, dtype=float) - chance) / (1.0 - chance)


def running_median(values: np.ndarray, window: int) -> np.ndarray:
    """Centred running median along the last axis (window 1 = identity; edges use what exists)."""
    values = np.asarray(values, dtype=float)
    if window <= 1:
        return values.copy()
    half = window // 2
    n = values.shape[-1]
    out = np.empty_like(values)
    for i in range(n):
        out[..., i] = np.nanmedian(values[..., max(0, i - half):min(n, i + half + 1)], axis=-1)
    return out


@dataclass(frozen=True)
class Crossing:
    step: float      # interpolated step of the first crossing, or the budget if censored
    censored: bool   # True when the threshold is never reached within the budget


def first_crossing(steps: np.ndarray, values: np.ndarray, threshold: float, interpolate: bool = True) -> Crossing:
    """First step at which `values` reaches `threshold` (from below).

    With interpolation the crossing is placed linearly between the last evaluation below
    and the first at or above the threshold. NaN evaluations (diverged) never count as
    crossings. Never reached: Crossing(steps[-1], censored=True)."""
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    hit = np.flatnonzero(np.nan_to_num(values, nan=-np.inf) >= threshold)
    if hit.size == 0:
        return Crossing(float(steps[-1]), True)
    i = int(hit[0])
    if i == 0 or not interpolate or not np.isfinite(values[i - 1]):
        return Crossing(float(steps[i]), False)
    v0, v1 = values[i - 1], values[i]
    frac = (threshold - v0) / (v1 - v0) if v1 != v0 else 1.0
    return Crossing(float(steps[i - 1] + frac * (steps[i] - steps[i - 1])), False)


@dataclass(frozen=True)
class Emergence:
    plateau_end: Crossing
    emergence: Crossing
    solved: Crossing

    @property
    def transition_width(self) -> float:
        """Steps from leaving the plateau to solved; NaN unless both happened."""
        if self.plateau_end.censored or self.solved.censored:
            return float("nan")
        return self.solved.step - self.plateau_end.step


def emergence_of(steps: np.ndarray, progress: np.ndarray, plateau: float, emergence: float, solved: float,
                 smoothing_window: int = 1) -> Emergence:
    p = running_median(progress, smoothing_window)
    return Emergence(first_crossing(steps, p, plateau), first_crossing(steps, p, emergence),
                     first_crossing(steps, p, solved))


def wilson_interval(successes: int, n: int, level: float = 0.9) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    if n == 0:
        return (0.0, 1.0)
    z = float(norm.ppf((1 + level) / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def steepest_drop_step(steps: np.ndarray, values: np.ndarray) -> float:
    """Step midway through the largest single-interval drop of `values` (e.g. an entropy collapse)."""
    steps, values = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    diffs = np.diff(values)
    if diffs.size == 0 or not np.isfinite(diffs).any():
        return float("nan")
    i = int(np.nanargmin(diffs))
    return float(0.5 * (steps[i] + steps[i + 1]))


def responsible_head(parent_mass_after: np.ndarray, parent_mass_before: np.ndarray) -> tuple[int, float]:
    """The head whose parent mass on a row rose the most across its jump: (head, rise).

    Both inputs are [head] (or [layer * head] flattened) parent masses for one output bit."""
    rise = np.asarray(parent_mass_after, dtype=float) - np.asarray(parent_mass_before, dtype=float)
    if not np.isfinite(rise).any():
        return -1, float("nan")
    h = int(np.nanargmax(rise))
    return h, float(rise[h])


JUMP_START = 0.1  # the jump starts where accuracy last sits this fraction of the way from its plateau to 1


def jump_start(steps, accuracy, end: float, include_end: bool = False) -> tuple[float, float]:
    """(step, accuracy level) at which one run's jump towards `end` starts, measured from the
    run's own plateau: the plateau level is the median accuracy over its checkpoints from step 1
    to before `end` (to `end` itself with `include_end`, for a run never solved), so that IOI's
    either-name stage at ~0.5 counts as plateau, not as part of the jump; the start is the last
    of those checkpoints at or below JUMP_START of the way from that level to 1 (NaN if none)."""
    steps, accuracy = np.asarray(steps, float), np.asarray(accuracy, float)
    before = ((steps <= end) if include_end else (steps < end)) & (steps >= 1)
    if not before.any():
        return float("nan"), float("nan")
    level = float(np.median(accuracy[before]))
    start_level = level + JUMP_START * (1 - level)
    idx = np.flatnonzero(before & (accuracy <= start_level))
    return (float(steps[idx[-1]]) if idx.size else float("nan")), start_level


def steepest_interval(steps, values, end: float) -> tuple[float, float]:
    """(old, new): the consecutive checkpoints, `new` at or before `end`, across which `values`
    (a continuous metric such as p(correct)) rise the most, the earliest on ties: the paper's
    patching bracket (Pythia-410M 30k -> 31k, p(correct) 0.16 -> 0.61, the steepest rise before
    the capability is solved). NaN, NaN where fewer than two checkpoints lie at or before `end`."""
    steps, values = np.asarray(steps, float), np.asarray(values, float)
    upto = np.flatnonzero(steps <= end)
    if upto.size < 2:
        return float("nan"), float("nan")
    rise = np.diff(values[upto])
    j = int(np.argmax(np.where(np.isfinite(rise), rise, -np.inf)))
    return float(steps[upto[j]]), float(steps[upto[j + 1]])


@dataclass(frozen=True)
class Bracket:
    """Where a capability emerges between checkpoints: `old` is the last checkpoint step before
    it and `new` the first at which it is solved; censored when the last checkpoint is unsolved
    (new is then None), and `old` is None when it is solved from the first checkpoint on."""
    old: int | None
    new: int | None
    censored: bool
    evaluations: int


def bracket_emergence(steps: list[int], solved: Callable[[int], bool]) -> Bracket:
    """Binary search over checkpoint `steps` (ascending) for the first solved one, as the paper
    locates emergence in Pythia: `solved(step)` (e.g. greedy accuracy on a probe set above a
    threshold, evaluated on that checkpoint) is called O(log n) times. Assumes a capability,
    once solved, stays solved; where it does not, the bracket is one solved/unsolved boundary."""
    calls = 0

    def check(i: int) -> bool:
        nonlocal calls
        calls += 1
        return bool(solved(steps[i]))

    if not steps:
        raise ValueError("no checkpoints to search")
    if not check(len(steps) - 1):
        return Bracket(steps[-1], None, True, calls)
    lo, hi = -1, len(steps) - 1  # invariant: steps[hi] solved; steps[lo] unsolved (or lo = -1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(mid):
            hi = mid
        else:
            lo = mid
    return Bracket(steps[lo] if lo >= 0 else None, steps[hi], False, calls)


# Per run, from a results Dataset.

@dataclass(frozen=True, kw_only=True)
class AnalysisArgs:
    """A task's `analysis` section: progress thresholds (the verdicts' are in `claims`). Progress
    is 0 at chance and 1 solved (`progress`)."""
    plateau_threshold: float = number(0.0, 1.0)    # a run has left the plateau once its progress passes this
    emergence_threshold: float = number(0.0, 1.0)  # ... has emerged at this progress (the event the claims time)
    solved_threshold: float = number(0.0, 1.0)     # ... is solved at this one
    smoothing_window: int = number(1, 1001)        # evaluations in the running mean the thresholds read
    alpha: float = number(0.0, 1.0)    # 1 - the level of the intervals in the per-task summaries

    def check(self, key: str) -> None:
        if not self.plateau_threshold <= self.emergence_threshold <= self.solved_threshold:
            raise ConfigError(f"{key}.emergence_threshold: need plateau_threshold <= emergence_threshold <= "
                              f"solved_threshold, got {self.plateau_threshold}, {self.emergence_threshold}, "
                              f"{self.solved_threshold}")


def task_analyses(params: dict) -> dict[str, AnalysisArgs]:
    """The `analysis` section of each synthetic task among (a stage's) params, typed."""
    return {task: load(AnalysisArgs, params[task]["analysis"], f"{task}.analysis")
            for task in ("linear_map", "cellular_automata") if "analysis" in params.get(task, {})}


def analyse(results: xr.Dataset, analysis: AnalysisArgs) -> xr.Dataset:
    """Per-seed and per-(seed, unit) emergence statistics, with censoring, from training results."""
    steps = results["step"].values
    thresholds = dict(plateau=analysis.plateau_threshold, emergence=analysis.emergence_threshold,
                      solved=analysis.solved_threshold, smoothing_window=analysis.smoothing_window)
    unit = next(d for d in results["unit_accuracy"].dims if d not in ("seed", "step"))
    chance = float(results.attrs.get("chance_accuracy", 0.5))
    seeds, units = results["seed"].values, results[unit].values
    L, H = results.sizes["layer"], results.sizes["head"]
    n_seed, n_unit = len(seeds), len(units)

    per_seed = {k: np.full(n_seed, np.nan) for k in (
        "plateau_end_step", "emergence_step", "solved_step", "transition_width", "final_loss", "final_output_loss",
        "final_accuracy", "final_exact_match", "final_p_correct")}
    per_seed_flags = {k: np.zeros(n_seed, dtype=np.int8) for k in ("plateau_end_censored", "emergence_censored",
                                                                    "solved_censored")}
    per_unit = {k: np.full((n_seed, n_unit), np.nan) for k in (
        "unit_plateau_end_step", "unit_emergence_step", "unit_solved_step", "unit_transition_width",
        "head_parent_mass_rise", "entropy_drop_step", "entropy_before", "entropy_after",
        "pattern_head_entropy_drop_step")}
    unit_censored = np.zeros((n_seed, n_unit), dtype=np.int8)
    unit_flags = {k: np.zeros((n_seed, n_unit), dtype=np.int8) for k in ("unit_plateau_end_censored",
                                                                         "unit_solved_censored")}
    responsible = np.full((n_seed, n_unit), -1, dtype=np.int64)

    for k in range(n_seed):
        acc = results["accuracy"].values[k]
        e = emergence_of(steps, progress_from_accuracy(acc, chance), **thresholds)
        for name, c in (("plateau_end", e.plateau_end), ("emergence", e.emergence), ("solved", e.solved)):
            per_seed[f"{name}_step"][k] = c.step
            per_seed_flags[f"{name}_censored"][k] = c.censored
        per_seed["transition_width"][k] = e.transition_width
        last = -1
        for name, var in (("final_loss", "loss"), ("final_output_loss", "output_loss"), ("final_accuracy", "accuracy"),
                          ("final_exact_match", "exact_match"), ("final_p_correct", "p_correct")):
            per_seed[name][k] = results[var].values[k, last]

        for i in range(n_unit):
            b = emergence_of(steps, progress_from_accuracy(results["unit_accuracy"].values[k, :, i], chance), **thresholds)
            per_unit["unit_plateau_end_step"][k, i] = b.plateau_end.step
            per_unit["unit_emergence_step"][k, i] = b.emergence.step
            per_unit["unit_solved_step"][k, i] = b.solved.step
            per_unit["unit_transition_width"][k, i] = b.transition_width
            unit_censored[k, i] = b.emergence.censored
            unit_flags["unit_plateau_end_censored"][k, i] = b.plateau_end.censored
            unit_flags["unit_solved_censored"][k, i] = b.solved.censored
            # The head that attends to unit i's ground-truth pattern at the end of training, chosen
            # without looking at when the unit jumped (claim 2's test pairs its entropy drop
            # with the unit's jump, against other units' heads).
            pm_final = results["parent_mass"].values[k, -1, :, :, i].reshape(L * H)
            if np.isfinite(pm_final).any():
                h = int(np.nanargmax(pm_final))
                per_unit["pattern_head_entropy_drop_step"][k, i] = steepest_drop_step(
                    steps, results["attention_entropy"].values[k, :, h // H, h % H, i])
            if b.emergence.censored:
                continue
            # Which head learned unit i (row i of A on the linear map): the largest rise in parent mass across the unit's jump.
            before = np.searchsorted(steps, b.plateau_end.step, side="right") - 1
            after = min(len(steps) - 1, int(np.searchsorted(steps, b.solved.step if not b.solved.censored
                                                            else steps[-1], side="left")))
            before = max(0, min(before, after - 1))
            pm = results["parent_mass"].values[k, :, :, :, i].reshape(len(steps), L * H)
            flat, rise = responsible_head(pm[after], pm[before])
            responsible[k, i] = flat
            per_unit["head_parent_mass_rise"][k, i] = rise
            ent = results["attention_entropy"].values[k, :, flat // H, flat % H, i]
            per_unit["entropy_drop_step"][k, i] = steepest_drop_step(steps, ent)
            per_unit["entropy_before"][k, i] = ent[before]
            per_unit["entropy_after"][k, i] = ent[after]

    data_vars = {name: (("seed",), v) for name, v in {**per_seed, **per_seed_flags}.items()}
    data_vars.update({name: (("seed", unit), v) for name, v in per_unit.items()})
    data_vars["unit_emergence_censored"] = (("seed", unit), unit_censored)
    data_vars.update({name: (("seed", unit), v) for name, v in unit_flags.items()})
    data_vars["responsible_layer"] = (("seed", unit), np.where(responsible >= 0, responsible // H, -1))
    data_vars["responsible_head"] = (("seed", unit), np.where(responsible >= 0, responsible % H, -1))
    data_vars["diverged_step"] = (("seed",), results["diverged_step"].values)
    attrs = dict(results.attrs)
    attrs["analysis"] = json.dumps(to_params(analysis), sort_keys=True)
    attrs["budget_step"] = int(steps[-1])
    return xr.Dataset(data_vars, coords={"seed": seeds, unit: units}, attrs=attrs)


def jump_widths(analysed: xr.Dataset, per: str = "unit") -> tuple[np.ndarray, np.ndarray]:
    """Steps from plateau end to solved, [seed, unit] (`per` "unit") or [seed] (`per` "seed"), and
    censored: one that left the plateau but did not solve within the budget carries budget -
    plateau end, a lower bound (the slow jumps stay in, as Kaplan-Meier needs them); NaN where it
    never left the plateau."""
    prefix = {"unit": "unit_", "seed": ""}[per]
    budget = float(analysed.attrs["budget_step"])
    pe = analysed[f"{prefix}plateau_end_step"].values
    left = analysed[f"{prefix}plateau_end_censored"].values == 0
    solved = analysed[f"{prefix}solved_censored"].values == 0
    width = np.where(solved, analysed[f"{prefix}solved_step"].values - pe, budget - pe)
    return np.where(left, width, np.nan), left & ~solved


def summary_metrics(analysed: xr.Dataset) -> dict:
    """Headline numbers for `dvc metrics` (JSON: unreached medians are null, not inf)."""
    n = analysed.sizes["seed"]
    t, c = analysed["emergence_step"].values, analysed["emergence_censored"].values.astype(bool)
    med = km_median(t, c)
    solved = int((analysed["solved_censored"].values == 0).sum())
    lo, hi = bootstrap_km_median(t, c, n_boot=500)
    width, unfinished = jump_widths(analysed)
    finite = lambda x: float(x) if np.isfinite(x) else None  # noqa: E731
    return {
        "n_seeds": n,
        "fraction_solved": solved / n,
        "emergence_step_median": finite(med),
        "emergence_step_median_ci90": [finite(lo), finite(hi)],
        "emergence_step_min": finite(np.min(t[~c])) if (~c).any() else None,
        "emergence_step_max": finite(np.max(t[~c])) if (~c).any() else None,
        "unit_transition_width_median": finite(km_median_of_rows(width, unfinished)),  # KM: unfinished censored
        "final_loss_mean": finite(np.nanmean(analysed["final_loss"].values)),
        "final_accuracy_mean": finite(np.nanmean(analysed["final_accuracy"].values)),
        "n_diverged": int((analysed["diverged_step"].values >= 0).sum()),
    }


def plot_table(results: xr.Dataset) -> "list[dict]":
    """Rows for the DVC plot of accuracy and loss against step (mean and range over seeds)."""
    rows = []
    acc, loss = results["accuracy"].values, results["output_loss"].values
    for j, step in enumerate(results["step"].values):
        rows.append({"step": int(step),
                     "accuracy_mean": round(float(np.nanmean(acc[:, j])), 6),
                     "accuracy_min": round(float(np.nanmin(acc[:, j])), 6),
                     "accuracy_max": round(float(np.nanmax(acc[:, j])), 6),
                     "output_loss_mean": round(float(np.nanmean(loss[:, j])), 6)})
    return rows


CELL_FIELDS = ("final_output_loss", "final_accuracy", "plateau_end_step", "emergence_step", "solved_step")
CELL_FLAGS = ("plateau_end_censored", "emergence_censored", "solved_censored")


def cell_statistics(analysed: list[xr.Dataset]) -> tuple[dict, int]:
    """Per-seed statistics of several analysed cells as (cell, seed) arrays for a sweep summary.

    Cells with fewer seeds are padded (NaN; censored flag 1) and `n_seeds` says how many of each
    cell's are real, so that a resample draws a cell's seeds from its own. Returns (data_vars, n_seed)."""
    n_seed = max([a.sizes["seed"] for a in analysed] + [0])
    data = {}
    for f in CELL_FIELDS + CELL_FLAGS:
        is_flag = f in CELL_FLAGS
        arr = np.full((len(analysed), n_seed), 1 if is_flag else np.nan, dtype=np.int8 if is_flag else float)
        for i, a in enumerate(analysed):
            arr[i, :a.sizes["seed"]] = a[f].values
        data[f] = (("cell", "seed"), arr)
    data["budget_step"] = (("cell",), np.array([int(a.attrs["budget_step"]) for a in analysed], dtype=np.int64))
    data["n_seeds"] = (("cell",), np.array([a.sizes["seed"] for a in analysed], dtype=np.int64),
                       {"long_name": "seeds the cell trained; along `seed` the rest is padding"})
    return data, n_seed


def unstack_cells(ds: xr.Dataset, dim: str):
    """The cells of a stacked sweep file (cells along `dim`, their configs in attrs["configs"], as
    emergence/runs/cells.py writes them), each with its own config attribute: yields
    (value, cell)."""
    configs = json.loads(ds.attrs["configs"])
    for i, value in enumerate(ds[dim].values):
        cell = ds.isel({dim: i}).drop_vars(dim)
        cell.attrs = dict(ds.attrs, config=json.dumps(configs[i]))
        yield value, cell


def summary_dataset(analysed: list[xr.Dataset], names: list[str], columns: dict, attrs: dict) -> xr.Dataset:
    """A sweep summary over (cell, seed): `cell_statistics` of the analysed cells, then one
    column per entry of `columns` (arrays over cells). `attrs["analysis"]` is stored as JSON."""
    data, n_seed = cell_statistics(analysed)
    for key, values in columns.items():
        data[key] = (("cell",), values)
    attrs = {k: (json.dumps(to_params(v), sort_keys=True) if k == "analysis" else v) for k, v in attrs.items()}
    return xr.Dataset(data, coords={"cell": np.array(names, dtype=str), "seed": np.arange(n_seed)}, attrs=attrs)

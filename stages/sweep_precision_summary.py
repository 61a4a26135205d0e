"""Stage sweep_precision_summary: the emergence statistics of both precisions, and the rule that
decides whether bfloat16 autocast may train a task by default.

Per task and precision: the Kaplan-Meier medians of the plateau end and of emergence with
bootstrap intervals over seeds, the mean final loss and the Kaplan-Meier median per-unit jump
width (jumps unfinished at the budget censored; seeds resampled). `precision_verdict`: a
statistic differs when either precision's value lies outside the other's interval.

    python -m stages.sweep_precision_summary CELLS_DIR SUMMARY_NC
"""
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from emergence.analysis import analyse, jump_widths, unstack_cells
from emergence.io import read_netcdf, write_netcdf
from emergence.precision import PRECISIONS
from emergence.stage import stage_run
from emergence.survival import bootstrap_km_median, bootstrap_rows_km_median, km_median, km_median_of_rows

STATISTICS = ("plateau_end_step", "emergence_step", "final_loss", "unit_transition_width")


def _bootstrap(values: np.ndarray, statistic, n_boot: int, level: float, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of statistic(values[resampled seeds]) (the seed is the unit)."""
    rng = np.random.default_rng(seed)
    n = len(values)
    draws = np.array([statistic(values[idx]) for idx in rng.integers(0, n, size=(n_boot, n))])
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


def precision_statistics(analysed: xr.Dataset, n_boot: int, level: float) -> dict[str, tuple[float, float, float]]:
    """statistic -> (value, interval low, interval high) of one analysed run."""
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


def _bounded(value: float, low: float, high: float) -> str:
    return f"{value:.4g} [{low:.4g}, {high:.4g}]"


def precision_verdict(stats: dict[str, dict[str, tuple[float, float, float]]]) -> tuple[str, list[str]]:
    """('agree' | 'differ' | 'undecided', reasons) for {precision: {statistic: (value, lo, hi)}}.

    differ: some statistic of one precision lies outside the other's interval (both finite);
    undecided: none differs, but some statistic is unreached (infinite or NaN) in either
    precision, so the comparison cannot be made on it; agree: every statistic is inside."""
    (a, sa), (b, sb) = stats.items()
    differ, undecided = [], []
    for name in STATISTICS:
        (va, la, ha), (vb, lb, hb) = sa[name], sb[name]
        if not all(np.isfinite(x) for x in (va, la, ha, vb, lb, hb)):
            undecided.append(f"{name}: {a} {_bounded(va, la, ha)} against {b} {_bounded(vb, lb, hb)}: "
                             "unreached within the budget (inf) or undefined (nan) in a precision")
        elif not (la <= vb <= ha and lb <= va <= hb):
            differ.append(f"{name}: {a} {_bounded(va, la, ha)} against {b} {_bounded(vb, lb, hb)}")
    if differ:
        return "differ", differ
    if undecided:
        return "undecided", undecided
    return "agree", []


def summarize(cell_dir: Path, params: dict) -> xr.Dataset:
    """(task, precision, statistic, bound) table of every compared run, with the verdicts."""
    tasks = params["sweeps"]["precision"]["tasks"]
    n_boot = params["sweeps"]["precision"]["n_boot"]
    table = np.full((len(tasks), len(PRECISIONS), len(STATISTICS), 3), np.nan)
    verdicts, reasons = [], []
    for i, task in enumerate(tasks):
        ds = read_netcdf(cell_dir / f"{task}.nc")
        analysis = params[task]["analysis"]
        stats = {}
        for j, (precision, cell) in enumerate(unstack_cells(ds, "precision")):
            stats[str(precision)] = precision_statistics(analyse(cell, analysis), n_boot, 1 - analysis["alpha"])
            table[i, j] = [stats[str(precision)][s] for s in STATISTICS]
        verdict, why = precision_verdict(stats)
        if "precision" in ds.attrs:  # both cells resolved to one precision: no bfloat16 here
            verdict, why = "undecided", [f"both runs trained in {ds.attrs['precision']} on this machine "
                                         "(no fast bfloat16): nothing to compare"]
        verdicts.append(verdict)
        reasons.append("; ".join(why))
    return xr.Dataset(
        {"value": (("task", "precision", "statistic", "bound"), table,
                   {"long_name": "statistic with its bootstrap interval over seeds (level 1 - alpha)"}),
         "verdict": (("task",), np.array(verdicts, dtype=str)),
         "reasons": (("task",), np.array(reasons, dtype=str))},
        coords={"task": np.array(tasks, dtype=str), "precision": np.array(PRECISIONS, dtype=str),
                "statistic": np.array(STATISTICS, dtype=str), "bound": np.array(["value", "low", "high"], dtype=str)},
        attrs={"experiment": "sweep:precision", "n_boot": n_boot,
               "default_precision": ",".join(f"{t}:{params[t]['train']['precision']}" for t in tasks)})


if __name__ == "__main__":
    cells, out = map(Path, sys.argv[1:])
    with stage_run("sweep_precision_summary") as params:
        write_netcdf(summarize(cells, params), out)

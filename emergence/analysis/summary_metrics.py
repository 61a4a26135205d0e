"""Every chapter's summary as flat DVC metrics: `dvc metrics diff A B` (and the entry page's
comparison with a base revision) covers the whole report, not only the linear map.

One flat mapping `experiment.setting.statistic -> number`, written byte-stable (6 significant
digits; inf as "inf", NaN as null): Kaplan-Meier medians of the events with censoring, the
fraction of seeds that got there, mean final losses, and the mirage chapter's ratios.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from emergence.analysis.mirage_analysis import width_ratio
from emergence.analysis.survival import km_median


def _km(ds: xr.Dataset, i: int, event: str) -> float:
    t, c = ds[f"{event}_step"].values[i], ds[f"{event}_censored"].values[i].astype(bool)
    ok = np.isfinite(t)
    return km_median(t[ok], c[ok]) if ok.any() else float("nan")


def at_budget(ds: xr.Dataset, i: int, event: str) -> float:
    """The KM median, drawn at the budget where it is not reached (for plots)."""
    m = _km(ds, i, event)
    return float(ds["budget_step"].values[i].max()) if np.isinf(m) else m


def cell_metrics(ds: xr.Dataset, label) -> dict[str, float]:
    """Per cell of a (cell, seed) summary: KM medians of plateau end and solved, the fraction
    of seeds solved and the mean final loss on the outputs; `label(ds, i)` names the cell."""
    out = {}
    for i in range(ds.sizes["cell"]):
        name = label(ds, i)
        valid = np.isfinite(ds["final_output_loss"].values[i])
        out[f"{name}.km_median_plateau_end"] = _km(ds, i, "plateau_end")
        out[f"{name}.km_median_solved"] = _km(ds, i, "solved")
        out[f"{name}.fraction_solved"] = float((ds["solved_censored"].values[i][valid] == 0).mean()) if valid.any() else float("nan")
        out[f"{name}.final_loss_mean"] = float(np.nanmean(ds["final_output_loss"].values[i])) if valid.any() else float("nan")
    return out


def sparsity_metrics(ds: xr.Dataset) -> dict[str, float]:
    return cell_metrics(ds, lambda ds, i: f"S{int(ds['state_size'].values[i]):02d}_s{int(ds['sparsity'].values[i]):02d}")


def attention_bias_metrics(ds: xr.Dataset) -> dict[str, float]:
    return cell_metrics(ds, lambda ds, i: f"c{float(ds['strength'].values[i]):g}")


def architecture_metrics(ds: xr.Dataset) -> dict[str, float]:
    """Either task's shapes (architecture, ca_architecture)."""
    return cell_metrics(ds, lambda ds, i: (f"H{int(ds['n_head'].values[i])}_dh{int(ds['d_head'].values[i])}"
                                           f"_L{int(ds['n_layer'].values[i])}"))


def ca_state_size_metrics(ds: xr.Dataset) -> dict[str, float]:
    return cell_metrics(ds, lambda ds, i: f"S{int(ds['state_size'].values[i]):03d}_c{float(ds['strength'].values[i]):g}")


def mixers_metrics(ds: xr.Dataset) -> dict[str, float]:
    return cell_metrics(ds, lambda ds, i: f"{ds['task'].values[i]}_{ds['setting'].values[i]}_{ds['architecture'].values[i]}")


def language_model_metrics(probes: xr.Dataset) -> dict[str, float]:
    """Per (model, capability): fraction of seeds solved and the KM median first solved step."""
    out = {}
    budget = float(probes["checkpoint_step"].values[-1])
    for size in probes["size"].values:
        for cap in probes["capability"].values:
            s = probes.sel(size=size, capability=cap)
            censored = s["bracket_censored"].values.astype(bool)
            times = np.where(censored, budget, s["bracket_new_step"].values.astype(float))
            out[f"{size}_{cap}.fraction_solved"] = float((~censored).mean())
            out[f"{size}_{cap}.km_median_solved"] = km_median(times, censored)
    return out


def precision_metrics(summary: xr.Dataset) -> dict[str, float]:
    """Per task, precision and statistic: the estimate."""
    return {f"{t}_{p}.{st}": float(summary["value"].sel(task=t, precision=p, statistic=st, bound="value"))
            for t in summary["task"].values for p in summary["precision"].values for st in summary["statistic"].values}


def mirage_metrics(mirage: dict[str, xr.Dataset]) -> dict[str, float]:
    """Per mirage dataset: the forecast's concordance and the median width ratio of the
    continuous over the discontinuous metric."""
    out = {}
    for name, ds in mirage.items():
        continuous = "p_correct" if ds.attrs["task"] == "language_models" else "cross_entropy"
        r = width_ratio(ds, continuous)
        r = r[~np.isnan(r)]
        out[f"{name}.width_ratio_median"] = float(np.quantile(r, 0.5, method="inverted_cdf")) if r.size else float("nan")
        out[f"{name}.forecast_concordance"] = float(ds.attrs["forecast_concordance"])
    return out


def summary_metrics(per_experiment: dict[str, dict[str, float]]) -> dict[str, float]:
    """The whole report's flat metrics, `experiment.setting.statistic`, sorted: each
    experiment's own (its declaration's `metrics` entry on the results it reads)."""
    return dict(sorted((f"{name}.{k}", v) for name, metrics in per_experiment.items() for k, v in metrics.items()))


def plot_tables(sp: xr.Dataset, ca: xr.Dataset, probes: xr.Dataset) -> dict[str, pd.DataFrame]:
    """The key curves as DVC plot data (`dvc plots diff A B` overlays them): the sparsity hump
    (median final loss against s/S per S), the automata's plateau against S (KM median per bias
    strength, the budget where not reached) and the language models' fraction solved per size,
    from the sparsity summary `sp`, the automata's state-size summary `ca` and the probes."""
    hump = pd.DataFrame({"state_size": sp["state_size"].values, "density": sp["density"].values,
                         "median_final_loss": np.nanmedian(sp["final_output_loss"].values, 1)})
    plateau = pd.DataFrame({"state_size": ca["state_size"].values, "strength": ca["strength"].values,
                            "km_median_plateau_end": [at_budget(ca, i, "plateau_end") for i in range(ca.sizes["cell"])]})
    solved = pd.DataFrame([{"size": str(s), "capability": str(c),
                            "fraction_solved": float((probes["bracket_censored"].sel(size=s, capability=c).values == 0).mean())}
                           for s in probes["size"].values for c in probes["capability"].values])
    return {"sparsity_hump": hump.sort_values(["state_size", "density"]), "automata_plateau":
            plateau.sort_values(["strength", "state_size"]), "lm_solved": solved}

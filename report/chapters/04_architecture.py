# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Heads, width and depth
#
# Claims 6 and 7 of the paper: more heads help (each head is another searcher); at a fixed
# total width, many small heads beat a few large ones on the linear map, while the cellular
# automata need a minimum head dimension; depth hurts on the linear map and helps on
# multi-rule automata. Each cell trains one task with one model shape (d_model = heads × head
# size); the time each seed leaves the plateau is compared across shapes, with censoring.

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from emergence.survival import km_median
from emergence.reporting import claims_section, fmt_step, load, md, setup_style, table

setup_style()
summaries = {"linear map": load("architecture_summary"), "cellular automata": load("ca_architecture_summary")}
sw = summaries["linear map"]
ana_cfg = json.loads(sw.attrs["analysis"])


def family(sw, name):
    idx = [i for i in range(sw.sizes["cell"]) if name in str(sw["families"].values[i]).split("+")]
    return sw.isel(cell=idx) if idx else None


def times(c, i):
    t, cen = c["plateau_end_step"].values[i], c["plateau_end_censored"].values[i].astype(bool)
    ok = np.isfinite(t)
    return t[ok], cen[ok]


FAMILIES = {"heads": ("n_head", "heads (head size fixed)"), "width": ("n_head", "heads at fixed total width"),
            "depth": ("n_layer", "layers")}
md("; ".join(f"{task}: {s.sizes['cell']} model shapes, {s.sizes['seed']} seeds each, "
             f"{int(s['budget_step'].max()) if s.sizes['cell'] else 0:,} steps" for task, s in summaries.items())
   + " on this profile.")


def plot_families(sw):
    budget = int(sw["budget_step"].max()) if sw.sizes["cell"] else 0
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, (fam, (xvar, label)) in zip(axes, FAMILIES.items()):
        plot_family(ax, family(sw, fam), fam, xvar, label, budget)
    axes[0].set_ylabel("plateau end (step)")
    fig.tight_layout()


def plot_family(ax, c, fam, xvar, label, budget):
    ax.set_title(fam)
    ax.set_xlabel(label)
    if c is None:
        ax.text(0.5, 0.5, "not run on this profile", ha="center", transform=ax.transAxes)
        return
    order = np.argsort(c[xvar].values)
    xs, meds = [], []
    for i in order:
        t, cen = times(c, i)
        x = c[xvar].values[i]
        ax.plot(np.full((~cen).sum(), x), t[~cen], "o", color="C0", alpha=0.5, ms=4)
        ax.plot(np.full(cen.sum(), x), t[cen], "^", mfc="none", color="C3", ms=6)
        m = km_median(t, cen) if len(t) else np.nan
        xs.append(x)
        meds.append(budget if np.isinf(m) else m)
    ax.plot(xs, meds, "-", color="k", lw=1.5)
    if xvar == "n_head":
        ax.set_xscale("log", base=2)


def shape_table(sw):
    rows = []
    for i in range(sw.sizes["cell"]):
        t, cen = times(sw, i)
        rows.append({"cell": str(sw["cell"].values[i]), "heads": int(sw["n_head"].values[i]),
                     "head size": int(sw["d_head"].values[i]), "layers": int(sw["n_layer"].values[i]),
                     "parameters": int(sw["n_params"].values[i]),
                     "seeds solved": f"{int((sw['solved_censored'].values[i] == 0).sum())}/{len(t)}",
                     "KM median plateau end": fmt_step(km_median(t, cen)),
                     "families": str(sw["families"].values[i])})
    if not rows:
        return md("No cell of this task ran on this profile.")
    return table(pd.DataFrame(rows).sort_values(["layers", "heads"]), index=False)


# %% [markdown]
# ## Linear map

# %%
#| label: fig-architecture
#| fig-cap: "Linear map: plateau end against heads at fixed head size (left), heads at fixed total width (middle) and depth (right): dots are seeds, open triangles seeds censored at the budget, line the Kaplan-Meier median."
plot_families(summaries["linear map"])

# %%
shape_table(summaries["linear map"])

# %% [markdown]
# ## Cellular automata

# %%
#| label: fig-architecture-ca
#| fig-cap: "Cellular automata: plateau end against heads at fixed head size (left), heads at fixed total width (middle) and depth (right), as in the linear-map figure."
plot_families(summaries["cellular automata"])

# %%
shape_table(summaries["cellular automata"])

# %%
thresholds = "; ".join(f"{task}: solved at progress {json.loads(s.attrs['analysis'])['solved_threshold']}"
                       for task, s in summaries.items())

# %% [markdown]
# ## Claims

# %%
claims_section("04_architecture")

# %%
md(f"""Each comparison takes the two ends of a family (most vs fewest heads; one layer vs the
deepest) and asks whether seeds at the favoured end solve sooner (time to solve, censored at the
budget: the paper compares final losses at 10^4 steps), at the thresholds {thresholds}. Parameter
counts differ across cells by design (more heads of a fixed size is a wider model; deeper models
here also have more heads in all); the tables list them. The paper's head sweep goes to 128 heads
and head sizes 4, 8 and 16 (the `paper` profile). Each verdict above comes from its rule in emergence/verdicts.py, applied to this run's results with the thresholds in params.yaml's `claims` section, fixed before the run; the scorecard on the report's first page lists them all, with Benjamini-Hochberg q-values across its tests.""")

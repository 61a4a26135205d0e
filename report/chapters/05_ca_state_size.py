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
# # Cellular automata
#
# The paper's second task. Each sequence draws one lookup-table rule from a fixed pool and
# lists T states of S cells, one cell per token; the model must infer the rule from the
# sequence's own transitions. Cell i of state t+1 needs the window of 2r+1 cells around i in
# state t: that window, at the next-token offset, is the ground-truth attention pattern.
# Claims tested here: the plateau grows with the state size S (claim 4), and the ground-truth
# pattern added as an attention bias removes it at every S (claim 5). Each (S, c) cell trains
# the same seeds with a token batch held fixed across S.

# %% tags=["parameters"]
max_figure_seeds = 16

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from emergence.analysis.survival import bootstrap_km_median, km_median
from emergence.report.paper_reference import load_figures
from emergence.report.reporting import claims_section, fmt, fmt_step, load, load_folder, md, read_scorecard, setup_style, table

setup_style()
sm = load("ca_state_size_summary")
ana_cfg = json.loads(sm.attrs["analysis"])
alpha = ana_cfg["alpha"]
runs = {int(ds.attrs["state_size"]): ds for ds in load_folder("ca_state_size_cells", "S*.nc").values()}
sizes = sorted(runs)
strengths = sorted(set(float(c) for c in sm["strength"].values))
control, biased = 0.0, [c for c in strengths if c != 0.0]
first = json.loads(runs[sizes[0]].attrs["configs"])[0]["cellular_automata"]
task, model, train = first["task"], first["model"], first["train"]
budget = int(sm["budget_step"].max())
sweep_cfg = runs[sizes[0]].attrs
chance = float(sm.attrs["chance_accuracy"])
colors = dict(zip(strengths, sns.color_palette("rocket_r", len(strengths))))


def cell_index(S, c):
    idx = np.flatnonzero((sm["state_size"].values == S) & np.isclose(sm["strength"].values, c))
    return int(idx[0]) if len(idx) else None


def plateau_times(i):
    t, cen = sm["plateau_end_step"].values[i], sm["plateau_end_censored"].values[i].astype(bool)
    ok = np.isfinite(t)
    return t[ok], cen[ok]


md(f"""Setting: C = {task['n_colours']} colours, window 2r+1 = {2 * task['radius'] + 1}
({'periodic' if task['periodic'] else 'zero-padded'} boundary), a pool of N = {task['n_rules']} rules,
T = {task['n_states']} states; S ∈ {{{', '.join(map(str, sizes))}}}; bias strengths c ∈
{{{', '.join(fmt(c) for c in strengths)}}}, applied {'as c + ln(S / ' + str(sweep_cfg['reference_state_size']) + ') so that the window keeps the same attention mass at step 0 at every S' if sweep_cfg['bias_scaling'] == 'log_length' else 'as given at every S'} (the table shows both). Model: {model['n_layer']} layers, d_model {model['d_model']},
{model['n_head']} heads; {train['n_seeds']} seeds per cell, {budget:,} steps, lr {train['lr']:g}. Chance
accuracy is 1/C = {chance:.2f}; progress runs from 0 at chance to 1 at perfect accuracy.""")

# %% [markdown]
# ## Learning curves

# %%
#| label: fig-ca-curves
#| fig-cap: "Cell accuracy against step for every seed, one panel per state size S, coloured by bias strength c (c = 0 is the control); the dotted line is chance."
fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), sharey=True, squeeze=False)
for ax, S in zip(axes[0], sizes):
    ds = runs[S]
    for j, c in enumerate(ds["strength"].values):
        acc = ds["accuracy"].values[j]
        for k in range(min(len(acc), max_figure_seeds)):
            ax.plot(ds["step"].values, acc[k], color=colors[float(c)], lw=1, alpha=0.8,
                    label=f"c = {fmt(float(c))}" if k == 0 else None)
    ax.axhline(chance, color="k", ls=":", lw=1)
    ax.set_title(f"S = {S} (batch {ds.attrs['batch_size']} sequences)")
    ax.set_xlabel("step")
axes[0][0].set_ylabel("cell accuracy")
axes[0][0].legend()
fig.tight_layout()

# %% [markdown]
# ## Plateau length against state size

# %%
#| label: fig-ca-plateau
#| fig-cap: "Plateau end against state size S with and without the bias: dots are seeds, open triangles seeds censored at the budget (never left the plateau), lines the Kaplan-Meier medians (drawn at the budget when the median is not reached). Grey crosses and dashed lines: the paper's plateau lengths over S = 4..512 (blog Fig 4-right, data/paper/figures.yaml; 256 rules, 4 layers, 10^4 steps, plateau read off its loss curves), with the bias (lower) and without; ours uses this run's rule count, depth and budget."
fig, ax = plt.subplots(figsize=(6.5, 3.8))
paper = load_figures()["ca_plateau"]
for key, style in (("standard", "--"), ("with_bias", ":")):
    ref = {int(S): v for S, v in paper[key].items() if v is not None}
    ax.plot(sorted(ref), [ref[S] for S in sorted(ref)], "x" + style, color="0.45", lw=1, ms=5,
            label=f"paper, {'no bias' if key == 'standard' else 'with bias'}")
for c in strengths:
    xs, meds = [], []
    for S in sizes:
        i = cell_index(S, c)
        if i is None:
            continue
        t, cen = plateau_times(i)
        jitter = 1 + 0.04 * (strengths.index(c) - (len(strengths) - 1) / 2)
        ax.plot(np.full((~cen).sum(), S * jitter), t[~cen], "o", color=colors[c], alpha=0.6, ms=4)
        ax.plot(np.full(cen.sum(), S * jitter), t[cen], "^", mfc="none", color=colors[c], ms=6)
        m = km_median(t, cen)
        xs.append(S)
        meds.append(budget if np.isinf(m) else m)
    ax.plot(xs, meds, "-", color=colors[c], lw=2, label=f"c = {fmt(c)}")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("state size S")
ax.set_ylabel("plateau end (step)")
ax.legend()
fig.tight_layout()

# %%
def _paper_plateau(S, c):
    """The paper's plateau at this S (with the bias when c > 0; its bias size is not known);
    inf where it never left within 10^4 steps, nan where the figure has no such S."""
    row = paper["with_bias" if c > 0 else "standard"]
    return np.nan if S not in row else (np.inf if row[S] is None else float(row[S]))


rows = []
for S in sizes:
    for c in strengths:
        i = cell_index(S, c)
        t, cen = plateau_times(i)
        lo, hi = bootstrap_km_median(t, cen, level=1 - alpha) if len(t) else (np.nan, np.nan)
        rows.append({"S": S, "c": fmt(c), "applied c": fmt(float(sm["applied_strength"].values[i])),
                     "window mass at step 0": float(sm["initial_parent_mass"].values[i]),
                     "seeds leaving the plateau": f"{int((~cen).sum())}/{len(t)}",
                     "KM median plateau end": fmt_step(km_median(t, cen)),
                     f"{1 - alpha:.0%} bootstrap interval": f"{fmt_step(lo)} to {fmt_step(hi)}",
                     "paper (Fig 4-right)": fmt_step(_paper_plateau(S, c)),
                     "seeds solved": f"{int((sm['solved_censored'].values[i] == 0).sum())}/{len(t)}",
                     "median final accuracy": float(np.nanmedian(sm["final_accuracy"].values[i]))})
table(pd.DataFrame(rows), index=False)

# %% [markdown]
# ## Claims

# %%
claims_section("05_ca_state_size")

# %%
md(f"""Plateau end = first evaluation with progress ≥ {ana_cfg['plateau_threshold']}; seeds that never get
there are censored at {budget:,} steps and stay in every Kaplan-Meier median and log-rank test. Claim 5's
flatness is judged from S = {read_scorecard()['thresholds']['flat_from']} on, where the paper's own biased plateau is flat
(its S = 4 plateau, 60 steps, is 3.4 times shorter than at S = 8). The paper runs S from 4 to 512 with a
pool of 256 rules and a 4-layer model for 10^4 steps (the `paper` profile); this profile's pool and
budget are in the setting line above, and docs/parameters.md says why. Each verdict above comes from its rule in emergence/claims/verdicts.py, applied to this run's results with the thresholds in params.yaml's `claims` section, fixed before the run; the scorecard on the report's first page lists them all, with Benjamini-Hochberg q-values across its tests.""")

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
# # Attention-bias intervention
#
# Claim 5 of the paper: adding the ground-truth attention pattern as a bias on the attention
# scores removes the plateau. Here the linear map is trained once per bias strength c, with
# c·M added to the pre-softmax scores (M = A at the next-token offset; the causal mask still
# applies); c = 0 is the control. Seeds are shared across strengths, so each seed is its own
# paired comparison.

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from emergence.analysis.survival import km_median, km_survival
from emergence.report.reporting import claims_section, fmt, fmt_step, load, md, setup_style, table

setup_style()
res = load("attention_bias_results")
summary = load("attention_bias_summary")
ana_cfg = json.loads(summary.attrs["analysis"])  # the thresholds of this run
configs = json.loads(res.attrs["configs"])
strengths = res["strength"].values
steps = res["step"].values
seeds = res["seed"].values
budget = int(steps[-1])
colors = dict(zip(strengths, sns.color_palette("rocket_r", len(strengths))))
per = {c: summary.isel(cell=i) for i, c in enumerate(summary["strength"].values)}
bias_cfg = configs[0]["linear_map"]["bias"]
md(f"""Setting: S = {res.attrs['state_size']}, s = {res.attrs['sparsity']}, {len(seeds)} seeds,
{budget:,} steps, strengths c ∈ {{{', '.join(fmt(c) for c in strengths)}}}; bias on layers
{'all' if bias_cfg['layers'] is None else bias_cfg['layers']}, heads {'all' if bias_cfg['heads'] is None else bias_cfg['heads']},
{'kept' if bias_cfg['at_eval'] else 'removed'} at evaluation.""")

# %% [markdown]
# ## Learning curves

# %%
#| label: fig-bias-curves
#| fig-cap: "Loss on x_1 (left) and bit accuracy (right) against step for every seed, coloured by bias strength c (c = 0 is the control)."
fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), sharex=True)
for i, c in enumerate(strengths):
    for k in range(len(seeds)):
        lab = f"c = {fmt(c)}" if k == 0 else None
        axes[0].plot(steps, res["output_loss"].values[i, k], color=colors[c], lw=1, alpha=0.8, label=lab)
        axes[1].plot(steps, res["accuracy"].values[i, k], color=colors[c], lw=1, alpha=0.8)
axes[0].axhline(res.attrs["chance_loss"], color="k", ls=":", lw=1)
axes[0].set_ylabel("loss on x_1 (nats)")
axes[1].set_ylabel("bit accuracy on x_1")
for ax in axes:
    ax.set_xlabel("step")
axes[0].legend()
fig.tight_layout()

# %% [markdown]
# ## Plateau length with and without the bias

# %%
#| label: fig-bias-plateau
#| fig-cap: "Kaplan-Meier fraction of seeds still on the plateau against step, per bias strength (censored seeds never leave within the budget)."
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for c in strengths:
    t, cen = per[c]["plateau_end_step"].values, per[c]["plateau_end_censored"].values.astype(bool)
    tk, sk = km_survival(t, cen)
    ax.step(np.append(tk, budget), np.append(sk, sk[-1]), where="post", color=colors[c], lw=2, label=f"c = {fmt(c)}")
ax.set_ylim(-0.02, 1.02)
ax.set_xlabel("step")
ax.set_ylabel("fraction still on the plateau")
ax.legend()
fig.tight_layout()

# %%
control = 0.0
t0, c0 = per[control]["plateau_end_step"].values, per[control]["plateau_end_censored"].values.astype(bool)
rows, pm0 = [], {}
for c in strengths:
    t, cen = per[c]["plateau_end_step"].values, per[c]["plateau_end_censored"].values.astype(bool)
    row = {"c": fmt(c), "seeds leaving the plateau": f"{int((~cen).sum())}/{len(cen)}",
           "KM median plateau end": fmt_step(km_median(t, cen)),
           "seeds solved": f"{int((per[c]['solved_censored'].values == 0).sum())}/{len(cen)}",
           "median final loss": float(np.nanmedian(per[c]["final_output_loss"].values)),
           "parent mass at step 0": float(per[c]["initial_parent_mass"])}
    rows.append(row)
table(pd.DataFrame(rows), index=False)

# %% [markdown]
# ## Claims

# %%
claims_section("03_attention_bias")

# %%
md(f"""Plateau end = first evaluation with progress ≥ {ana_cfg['plateau_threshold']}; seeds that never
get there are censored at {budget:,} steps. The rule asks whether seeds with the bias leave the
plateau earlier than the control. Each verdict above comes from its rule in emergence/claims/verdicts.py, applied to this run's results with the thresholds in params.yaml's `claims` section, fixed before the run; the scorecard on the report's first page lists them all, with Benjamini-Hochberg q-values across its tests.""")

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
# # Linear map: sparsity and state size
#
# Claim 4 of the paper: learning the sparse pattern gets harder as the context (state size
# S) grows and is hardest at medium sparsity s/S; at large S, training never leaves the
# plateau. Each (S, s) cell trains the linear-map model from scratch on its own matrix A.

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from scipy.stats import fisher_exact

from emergence import analysis as an
from emergence.reporting import fmt_step, load, md, setup_style, table

setup_style()
sw = load("sparsity_summary")
ana_cfg = json.loads(sw.attrs["analysis"])
alpha = ana_cfg["alpha"]
cells = sw if sw.sizes["cell"] > 0 else None  # only cells this profile ran are in the summary
sizes = sorted(set(cells["state_size"].values.tolist())) if cells is not None else []
colors = dict(zip(sizes, sns.color_palette("viridis", max(1, len(sizes)))))

# %%
if cells is None:
    display(md("**No cell of this sweep runs on this profile**: every verdict below is *not run on this profile*."))
else:
    budget = int(cells["budget_step"].max())
    n_seeds = int(np.isfinite(cells["final_output_loss"].values).sum(1).max())
    display(md(f"{cells.sizes['cell']} cells of the grid ran on this profile "
               f"(S in {', '.join(map(str, sizes))}), {n_seeds} seeds each, {budget:,} steps. "
               "Cells outside this profile's subset are not shown; the `paper` profile runs every s."))

# %% [markdown]
# ## Final loss against density s/S

# %%
#| label: fig-sparsity-loss
#| fig-cap: "Final loss on x_1 against density s/S, one colour per state size; dots are seeds, lines the median over seeds. Dotted: chance (ln 2)."
fig, ax = plt.subplots(figsize=(7, 4))
if cells is not None:
    for S in sizes:
        c = cells.where(cells["state_size"] == S, drop=True)
        order = np.argsort(c["density"].values)
        d = c["density"].values[order]
        loss = c["final_output_loss"].values[order]
        for j in range(loss.shape[1]):
            ax.plot(d, loss[:, j], "o", color=colors[S], alpha=0.35, ms=4)
        ax.plot(d, np.nanmedian(loss, 1), "-", color=colors[S], lw=2, label=f"S = {S}")
    ax.axhline(sw.attrs["chance_loss"], color="k", ls=":", lw=1)
    ax.legend()
ax.set_xlabel("density s/S")
ax.set_ylabel("final loss on x_1 (nats)")
fig.tight_layout()

# %% [markdown]
# ## Plateau length against density s/S
#
# The step at which each seed leaves the plateau; seeds that never do are censored at the
# budget (open triangles) and enter the Kaplan–Meier median (line), which is drawn at the
# budget when more than half the seeds never leave.

# %%
#| label: fig-sparsity-plateau
#| fig-cap: "Plateau end step against density s/S per state size: dots are seeds that left the plateau, open triangles seeds censored at the budget; line: Kaplan-Meier median."
fig, ax = plt.subplots(figsize=(7, 4))
if cells is not None:
    for S in sizes:
        c = cells.where(cells["state_size"] == S, drop=True)
        order = np.argsort(c["density"].values)
        d = c["density"].values[order]
        t = c["plateau_end_step"].values[order]
        cen = c["plateau_end_censored"].values[order].astype(bool)
        meds = []
        for i in range(len(d)):
            ok = np.isfinite(t[i])
            ax.plot(np.full((~cen[i] & ok).sum(), d[i]), t[i][~cen[i] & ok], "o", color=colors[S], alpha=0.4, ms=4)
            ax.plot(np.full((cen[i] & ok).sum(), d[i]), t[i][cen[i] & ok], "^", mfc="none", color=colors[S], ms=6)
            m = an.km_median(t[i][ok], cen[i][ok]) if ok.any() else np.nan
            meds.append(budget if np.isinf(m) else m)
        ax.plot(d, meds, "-", color=colors[S], lw=2, label=f"S = {S}")
    ax.legend()
ax.set_xlabel("density s/S")
ax.set_ylabel("plateau end (step)")
fig.tight_layout()

# %% [markdown]
# ## Claims

# %%
def solved_counts(mask):
    solved = (cells["solved_censored"].values[mask] == 0)
    valid = np.isfinite(cells["final_output_loss"].values[mask])
    return int((solved & valid).sum()), int(valid.sum())


rows = []
# Harder with larger S: at the same s (the same number of parents to find), compare when seeds
# leave the plateau at the smallest and the largest S that share that s (one-sided log-rank,
# smaller S earlier), and pool the strata with Stouffer's z.
strata = []
if cells is not None:
    for s_val in sorted(set(cells["sparsity"].values.tolist())):
        at = np.flatnonzero(cells["sparsity"].values == s_val)
        if len(at) < 2:
            continue
        lo_i, hi_i = at[np.argmin(cells["state_size"].values[at])], at[np.argmax(cells["state_size"].values[at])]
        t_lo, c_lo = cells["plateau_end_step"].values[lo_i], cells["plateau_end_censored"].values[lo_i].astype(bool)
        t_hi, c_hi = cells["plateau_end_step"].values[hi_i], cells["plateau_end_censored"].values[hi_i].astype(bool)
        ok_lo, ok_hi = np.isfinite(t_lo), np.isfinite(t_hi)
        z, _ = an.logrank_test(t_lo[ok_lo], c_lo[ok_lo], t_hi[ok_hi], c_hi[ok_hi])
        strata.append((s_val, int(cells["state_size"].values[lo_i]), int(cells["state_size"].values[hi_i]), z,
                       an.km_median(t_lo[ok_lo], c_lo[ok_lo]), an.km_median(t_hi[ok_hi], c_hi[ok_hi])))
if not strata:
    rows.append(("4: harder with larger S", "needs the same s at two state sizes", "not run on this profile"))
else:
    from scipy.stats import norm

    z_all = sum(st[3] for st in strata) / np.sqrt(len(strata))
    p_all = float(norm.sf(z_all))
    detail = "; ".join(f"s={sv}: S={a} {fmt_step(ma)} vs S={b} {fmt_step(mb)}" for sv, a, b, _, ma, mb in strata)
    rows.append(("4: harder with larger S (same s)",
                 f"KM median plateau end {detail}; stratified log-rank (Stouffer) z = {z_all:.2f}, p = {p_all:.3g}",
                 "reproduced" if p_all < alpha else "not reproduced"))

if cells is None:
    rows.append(("4: hardest at medium sparsity", "no cells", "not run on this profile"))
else:
    S_arr, s_arr = cells["state_size"].values, cells["sparsity"].values
    extreme = (s_arr <= 2) | (s_arr >= S_arr - 1)
    medium = ~extreme
    if extreme.any() and medium.any():
        ke, ne = solved_counts(extreme)
        km_, nm = solved_counts(medium)
        p = fisher_exact([[ke, ne - ke], [km_, nm - km_]], alternative="greater").pvalue
        rows.append(("4: hardest at medium sparsity",
                     f"solved: extreme s (s <= 2 or s >= S-1) {ke}/{ne}, medium {km_}/{nm}; Fisher exact p = {p:.3g}",
                     "reproduced" if p < alpha else "not reproduced"))
    else:
        rows.append(("4: hardest at medium sparsity", "needs both extreme and medium cells", "not run on this profile"))

    big = sizes[-1]
    mask = (S_arr == big) & medium
    if mask.any() and big >= 32:
        left = (cells["plateau_end_censored"].values[mask] == 0) & np.isfinite(cells["plateau_end_step"].values[mask])
        rows.append((f"4: at large S (S={big}) medium sparsity never leaves the plateau",
                     f"{int(left.sum())} of {int(np.isfinite(cells['final_output_loss'].values[mask]).sum())} seeds left it within {budget:,} steps",
                     "reproduced" if left.sum() == 0 else "not reproduced"))
    else:
        rows.append(("4: at large S medium sparsity never leaves the plateau", "needs medium cells at S >= 32",
                     "not run on this profile"))
table(pd.DataFrame(rows, columns=["claim", "measured here", "verdict"]), index=False)

# %%
md(f"""Solved = progress ≥ {ana_cfg['solved_threshold']} within the budget; plateau end = progress ≥
{ana_cfg['plateau_threshold']} (parameters `linear_map.analysis.*`). Intervals are
{100 * (1 - alpha):.0f}% Wilson intervals; tests are one-sided (log-rank on plateau ends for the
S effect, Fisher exact on solved counts for the sparsity effect) at α = {alpha}.
A CPU-scale budget censors slow cells: a claim can fail here because the budget is short, which
the plateau figure shows directly (triangles at the budget).""")

# %% [markdown]
# ## Per-cell table

# %%
if cells is not None:
    tab = pd.DataFrame({
        "S": cells["state_size"].values, "s": cells["sparsity"].values,
        "seeds solved": [f"{k}/{n}" for k, n in (solved_counts(np.arange(cells.sizes['cell']) == i)
                                                  for i in range(cells.sizes["cell"]))],
        "median final loss": np.nanmedian(cells["final_output_loss"].values, 1),
        "KM median plateau end": [fmt_step(an.km_median(t[np.isfinite(t)], c[np.isfinite(t)].astype(bool)))
                                  for t, c in zip(cells["plateau_end_step"].values, cells["plateau_end_censored"].values)],
    }).sort_values(["S", "s"])
    display(table(tab, index=False))

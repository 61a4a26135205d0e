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
# # Linear map: emergence across seeds
#
# A one-layer transformer learns $x_1 = A x_0 \bmod 2$ over GF(2), where each row of the
# fixed matrix $A$ has $s$ ones. Output bit $i$ needs attention on exactly the input bits
# in row $i$ of $A$, so $A$ is the ground-truth attention pattern. The paper's claims tested
# here: capabilities emerge abruptly at seed-dependent times (claim 1), and each jump
# coincides with a head abruptly learning the sparse pattern, one row of $A$ at a time
# (claim 2).

# %% tags=["parameters"]
attention_seeds = 4
max_figure_seeds = 16

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from emergence.analysis import events as an
from emergence.analysis.survival import bootstrap_km_median, km_median, km_median_of_rows, km_survival
from emergence.report.paper_reference import load_figures
from emergence.report.reporting import claims_section, fmt, fmt_step, load, md, setup_style, table

setup_style()
res = load("linear_map_results")
ana = load("linear_map_analysis")
cfg = json.loads(res.attrs["config"])["linear_map"]
ana_cfg = json.loads(ana.attrs["analysis"])
S, s = cfg["task"]["state_size"], cfg["task"]["sparsity"]
steps = res["step"].values
seeds = res["seed"].values
n_seeds = len(seeds)
shown = seeds[:max_figure_seeds]
palette = dict(zip(seeds, sns.color_palette("husl", n_seeds)))
emerged = ana["emergence_censored"].values == 0
t_emerge = ana["emergence_step"].values
censored = ~emerged
budget = int(ana.attrs["budget_step"])

# %% [markdown]
# ## Setup

# %%
m = cfg["model"]
tr = cfg["train"]
md(f"""State size S = {S}, sparsity s = {s}; sequences are x_0 then x_1
({'with' if cfg['task']['separator'] else 'without'} a separator), loss on
{'every next-token position' if cfg['task']['loss_positions'] == 'all' else 'the bits of x_1 only'}.
Model: {m['n_layer']} layer(s), d_model {m['d_model']}, {m['n_head']} heads of dimension
{m['d_model'] // m['n_head']}, MLP {m['d_mlp']}. Training: {n_seeds} seeds, {tr['steps']:,} steps,
batch {tr['batch_size']}, AdamW lr {tr['lr']}. Evaluation on {res.attrs.get('eval_sequences', 'the fixed')}
held-out sequences at {len(steps)} steps. Chance loss per bit {res.attrs['chance_loss']:.3f} nats;
perfect-model loss on the training objective {res.attrs['loss_floor']:.3f}.""")

# %%
diverged = ana["diverged_step"].values
if (diverged >= 0).any():
    display(md("**Divergence:** " + ", ".join(f"seed {k} at step {d}" for k, d in zip(seeds, diverged) if d >= 0)
               + ". Their metrics are NaN from that step and they count as not emerged."))

# %% [markdown]
# ## Learning curves
#
# Every seed's evaluation loss on x_1, probability of the correct bit and exact match of the
# whole state. Dots mark each seed's emergence step (progress crossing the emergence threshold).

# %%
#| label: fig-curves
#| fig-cap: "Output-bit loss, mean p(correct) and exact match against training step, one line per seed; dots mark each seed's emergence step."
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), sharex=True)
for k, seed in enumerate(shown):
    for ax, var in zip(axes, ["output_loss", "p_correct", "exact_match"]):
        y = res[var].values[k]
        ax.plot(steps, y, color=palette[seed], lw=1.3, label=f"seed {seed}")
        if emerged[k]:
            ax.plot(t_emerge[k], np.interp(t_emerge[k], steps, y), "o", color=palette[seed], ms=5)
axes[0].axhline(res.attrs["chance_loss"], color="k", ls=":", lw=1, label="chance")
axes[0].set_ylabel("loss on x_1 (nats)")
axes[1].set_ylabel("mean p(correct bit)")
axes[2].set_ylabel("exact match of x_1")
for ax in axes:
    ax.set_xlabel("step")
axes[0].legend(fontsize=7, ncol=2)
fig.tight_layout()

# %%
summary = {k: v for k, v in ana.attrs.items()}
med = km_median(t_emerge, censored)
lo, hi = bootstrap_km_median(t_emerge, censored, n_boot=1000)
n_solved = int((ana["solved_censored"].values == 0).sum())
f_lo, f_hi = an.wilson_interval(n_solved, n_seeds)
widths, unsolved = an.jump_widths(ana, per="seed")  # a seed that never solved censored at the budget
left = np.isfinite(widths)
width_med = km_median(widths[left], unsolved[left]) if left.any() else float("nan")
unsolved_text = f"{int(unsolved.sum())} of {int(left.sum())} seeds unsolved at the budget, censored there"
if np.isfinite(width_med):
    jump_text = (f"From the plateau's end to solved takes a Kaplan–Meier median {fmt_step(width_med)} steps "
                 f"({unsolved_text}){f', {fmt(width_med / med, 2)} of the median time to emergence' if np.isfinite(med) else ''}.")
else:
    jump_text = (f"From the plateau's end to solved: the Kaplan–Meier median is not reached ({unsolved_text}), "
                 "so half the seeds take longer than this budget shows.")
md(f"""**Across seeds.** {int(emerged.sum())} of {n_seeds} seeds emerged within {budget:,} steps and
{n_solved} reached the solved threshold (fraction {n_solved / n_seeds:.2f}, 90% Wilson interval
{f_lo:.2f}–{f_hi:.2f}). Emergence steps range from {fmt_step(np.min(t_emerge[emerged]) if emerged.any() else float('nan'))}
to {fmt_step(np.max(t_emerge[emerged]) if emerged.any() else float('nan'))}; Kaplan–Meier median
{fmt_step(med)} (90% bootstrap interval {fmt_step(lo)}–{fmt_step(hi)}). {jump_text}""")

# %% [markdown]
# ## When each seed emerges
#
# The emergence step of each seed (open markers at the budget are censored: that seed never
# emerged) and the Kaplan–Meier estimate of the fraction of seeds still on the plateau.

# %%
#| label: fig-emergence-spread
#| fig-cap: "Left: emergence step per seed (open triangles: censored at the budget). Right: Kaplan-Meier fraction of seeds not yet emerged."
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.4))
order = np.argsort(t_emerge)
for rank, k in enumerate(order):
    if censored[k]:
        ax1.plot(budget, rank, ">", mfc="none", color=palette[seeds[k]], ms=8)
    else:
        ax1.plot(t_emerge[k], rank, "o", color=palette[seeds[k]], ms=7)
        ax1.hlines(rank, ana["plateau_end_step"].values[k], ana["solved_step"].values[k]
                   if not ana["solved_censored"].values[k] else budget, color=palette[seeds[k]], lw=2, alpha=0.5)
ax1.set_yticks(range(n_seeds), [f"seed {seeds[k]}" for k in order], fontsize=7)
ax1.set_xlim(0, budget * 1.03)
ax1.set_xlabel("step (bar: plateau end to solved; dot: emergence)")
t_km, s_km = km_survival(t_emerge, censored)
ax2.step(np.append(t_km, budget), np.append(s_km, s_km[-1]), where="post", color="k")
ax2.set_ylim(-0.02, 1.02)
ax2.set_xlim(0, budget * 1.03)
ax2.set_xlabel("step")
ax2.set_ylabel("fraction not yet emerged")
fig.tight_layout()

# %% [markdown]
# ## Attention heads at the jump
#
# For each seed: parent mass (attention on the true parents of the output bit, averaged over
# bits) and entropy of the attention rows that predict x_1, per head. The vertical line is
# the seed's emergence step.

# %%
#| label: fig-heads
#| fig-cap: "Per-head parent mass (upper row of each pair) and attention entropy (lower row) on the rows that predict x_1, against step, per seed; dashed line: emergence step."
n_show = min(len(shown), 8)
per_row = min(4, n_show)
n_pairs = int(np.ceil(n_show / per_row))
fig, axes = plt.subplots(2 * n_pairs, per_row, figsize=(3.4 * per_row, 4.4 * n_pairs), sharex=True, squeeze=False)
H = res.sizes["head"]
head_colors = sns.color_palette("tab10", H)
for j in range(n_show):
    ax_pm, ax_ent = axes[2 * (j // per_row), j % per_row], axes[2 * (j // per_row) + 1, j % per_row]
    pm = res["parent_mass"].values[j, :, -1].mean(-1)        # last layer, mean over bits: [step, head]
    ent = res["attention_entropy"].values[j, :, -1].mean(-1)
    for h in range(H):
        ax_pm.plot(steps, pm[:, h], color=head_colors[h], lw=1)
        ax_ent.plot(steps, ent[:, h], color=head_colors[h], lw=1, label=f"head {h}")
    for ax in (ax_pm, ax_ent):
        if emerged[j]:
            ax.axvline(t_emerge[j], color="k", ls="--", lw=0.8)
    ax_pm.set_title(f"seed {seeds[j]}", fontsize=9)
    ax_pm.set_ylabel("parent mass", fontsize=8)
    ax_ent.set_ylabel("entropy (nats)", fontsize=8)
for j in range(n_show, n_pairs * per_row):
    axes[2 * (j // per_row), j % per_row].axis("off")
    axes[2 * (j // per_row) + 1, j % per_row].axis("off")
for ax in axes[-1]:
    ax.set_xlabel("step")
axes[1, 0].legend(fontsize=6, ncol=2)
fig.tight_layout()

# %% [markdown]
# ## Attention maps before and after the jump
#
# The block of attention that matters: rows predicting each bit of x_1, columns the bits of
# x_0. For each output bit the row is taken from the head that learned it (largest rise in
# parent mass), at the last checkpoint before the plateau ends and the first after the seed
# is solved, beside the ground truth A.

# %%
#| label: fig-attention-maps
#| fig-cap: "Ground-truth A beside the learned attention block (each row from the head that learned that bit) before and after the jump, for the first seeds; A is yellow where A_ij = 1; each learned map has its own colour scale (bar beside it), from 0 to its largest weight."
ck = res["checkpoint_step"].values
pred_rows = np.arange(S) + S + int(cfg["task"]["separator"]) - 1
A = res["A"].values
n_att = min(attention_seeds, n_seeds)
fig, axes = plt.subplots(n_att, 3, figsize=(9.5, 2.9 * n_att), squeeze=False, layout="constrained")
for j in range(n_att):
    plateau_end = ana["plateau_end_step"].values[j]
    solved = ana["solved_step"].values[j] if not ana["solved_censored"].values[j] else ck[-1]
    before = ck[max(0, np.searchsorted(ck, plateau_end, side="right") - 1)]
    after = ck[min(len(ck) - 1, np.searchsorted(ck, solved, side="left"))]
    layer_of = np.where(ana["responsible_layer"].values[j] >= 0, ana["responsible_layer"].values[j], 0)
    head_of = np.where(ana["responsible_head"].values[j] >= 0, ana["responsible_head"].values[j], 0)
    maps = {}
    for label, step in (("before", before), ("after", after)):
        full = res["attention_map"].sel(checkpoint_step=step).values[j]   # [L, H, T, T]
        maps[label] = np.stack([full[layer_of[i], head_of[i], pred_rows[i], :S] for i in range(S)])
    for ax, (title, mat) in zip(axes[j], [("ground truth A", A), (f"step {before:,}", maps["before"]),
                                          (f"step {after:,}", maps["after"])]):
        im = ax.imshow(mat, cmap="viridis", vmin=0, vmax=1 if title == "ground truth A" else max(1e-6, mat.max()))
        ax.grid(False)
        if title != "ground truth A":  # A is 0 or 1 (dark or yellow)
            fig.colorbar(im, ax=ax, shrink=0.9, label="attention")
        ax.set_title(f"seed {seeds[j]}: {title}", fontsize=9)
        ax.set_xlabel("input bit j")
        ax.set_ylabel("output bit i")

# %% [markdown]
# ## One row of A at a time
#
# Loss on each output bit (row of A) for the first seeds; the paper reports separate jumps,
# one row at a time.

# %%
#| label: fig-bit-loss
#| fig-cap: "Per-output-bit loss against step (one line per bit of x_1) for the first seeds; dots mark each bit's emergence step. Grey band: where the paper's jumps fall (blog Fig 3, data/paper/figures.yaml: one run at S = 16, s = 3, about 16 separate jumps from ~500 to ~4,600 steps), clipped to this run's budget; ours is the S, s and budget in the chapter's first line."
fig3 = load_figures()["per_bit_jumps"]
n_bit_panels = min(4, n_seeds)
fig, axes = plt.subplots(1, n_bit_panels, figsize=(3.6 * n_bit_panels + 1, 3.3), sharey=True, squeeze=False,
                         layout="constrained")
bit_colors = sns.color_palette("viridis", S)
for j in range(n_bit_panels):
    ax = axes[0, j]
    for i in range(S):
        y = res["unit_loss"].values[j, :, i]
        ax.plot(steps, y, color=bit_colors[i], lw=1)
        if not ana["unit_emergence_censored"].values[j, i]:
            t = ana["unit_emergence_step"].values[j, i]
            ax.plot(t, np.interp(t, steps, y), "o", color=bit_colors[i], ms=3)
    ax.axvspan(fig3["first_step"], min(fig3["last_step"], steps[-1]), color="0.93", zorder=0,
               label="paper's jumps" if j == 0 else None)
    ax.set_title(f"seed {seeds[j]}", fontsize=9)
    ax.set_xlabel("step")
axes[0, 0].set_ylabel("loss on bit i (nats)")
axes[0, 0].legend(fontsize=8, loc="upper right")
bits = plt.cm.ScalarMappable(cmap=plt.matplotlib.colors.ListedColormap(bit_colors),
                             norm=plt.Normalize(-0.5, S - 0.5))
fig.colorbar(bits, ax=axes[0, :].tolist(), label="output bit i", ticks=range(0, S, max(1, S // 8)));

# %%
bit_t = ana["unit_emergence_step"].values
bit_c = ana["unit_emergence_censored"].values.astype(bool)
bit_w, bit_unfinished = an.jump_widths(ana)  # jumps unfinished at the budget censored
bit_w_med = km_median_of_rows(bit_w, bit_unfinished)
spread = np.array([np.ptp(bit_t[k][~bit_c[k]]) if (~bit_c[k]).sum() > 1 else np.nan for k in range(n_seeds)])
drop = ana["entropy_drop_step"].values
lag = drop - bit_t
md(f"""**Row by row.** {int((~bit_c).sum())} of {bit_c.size} (seed, bit) pairs emerged. Within a seed
the bits' emergence steps spread over a median {fmt_step(np.nanmedian(spread))} steps, while a single
bit goes from plateau to solved in a Kaplan–Meier median {fmt_step(bit_w_med)} steps
({int(bit_unfinished.sum())} of {int(np.isfinite(bit_w).sum())} jumps unfinished at the budget, censored there;
ratio {fmt(bit_w_med / np.nanmedian(spread), 2) if np.isfinite(spread).any() and np.isfinite(bit_w_med) else 'n/a'}).
The head that learned each row had its steepest entropy drop a median {fmt_step(np.nanmedian(np.abs(lag)))}
steps from the row's emergence step (eval interval {int(np.median(np.diff(steps[-5:])))} steps).
The paper's one run (S = {fig3['state_size']}, s = {fig3['sparsity']}, {fig3['steps']:,} steps) shows about
{fig3['jumps']} separate jumps from ~{fig3['first_step']:,} to ~{fig3['last_step']:,} steps, a spread of
~{fig3['last_step'] - fig3['first_step']:,}; this run's is S = {S}, s = {s}.""")

# %%
#| label: fig-entropy-vs-emergence
#| fig-cap: "Each (seed, bit): emergence step of the bit against the step of the steepest entropy drop of the head that learned it; the diagonal is coincidence."
fig, ax = plt.subplots(figsize=(4.4, 4.2))
for k in range(n_seeds):
    ok = ~bit_c[k]
    ax.plot(bit_t[k][ok], drop[k][ok], "o", ms=4, color=palette[seeds[k]], alpha=0.8, label=f"seed {seeds[k]}")
lim = [0, budget]
ax.plot(lim, lim, "k:", lw=1)
ax.legend(fontsize=7, ncol=2, loc="upper left")
ax.set_xlabel("bit emergence step")
ax.set_ylabel("entropy-drop step of its head")
fig.tight_layout()

# %% [markdown]
# ## Per-seed table

# %%
tab = pd.DataFrame({
    "seed": seeds,
    "plateau end": [fmt_step(t, c) for t, c in zip(ana["plateau_end_step"].values, ana["plateau_end_censored"].values)],
    "emergence": [fmt_step(t, c) for t, c in zip(t_emerge, censored)],
    "solved": [fmt_step(t, c) for t, c in zip(ana["solved_step"].values, ana["solved_censored"].values)],
    "width": [fmt_step(w, u) if ok else "n/a" for w, u, ok in zip(widths, unsolved, left)],
    "bits emerged": (~bit_c).sum(1),
    "final loss": ana["final_output_loss"].values,
    "final acc.": ana["final_accuracy"].values,
    "exact match": ana["final_exact_match"].values,
    "diverged": [("step %d" % d) if d >= 0 else "no" for d in diverged],
}).set_index("seed")
paper_row = {c: "—" for c in tab.columns}  # the paper's single run beside ours: its first and last jump
paper_row.update({"emergence": f"~{fig3['first_step']:,} (first bit)", "solved": f"~{fig3['last_step']:,} (last bit)",
                  "bits emerged": f"~{fig3['jumps']} of {fig3['state_size']}"})
tab = tab.astype(object)
tab.loc["paper"] = paper_row
display(table(tab))
md(f"""Row *paper*: the paper's one run (S = {fig3['state_size']}, s = {fig3['sparsity']}), its first and last
bit's jump read off the blog's figure; this run's is S = {S}, s = {s}.""")

# %% [markdown]
# ## Claims

# %%
claims_section("01_linear_map")

# %%
md(f"""Thresholds (parameters `linear_map.analysis.*`): progress = (bit accuracy − 0.5)/0.5; the
plateau ends at progress {ana_cfg['plateau_threshold']}, emergence is the crossing of
{ana_cfg['emergence_threshold']}, solved is {ana_cfg['solved_threshold']} (running median over
{ana_cfg['smoothing_window']} evaluation(s)). A bit's jump is measured from its plateau end to solved; a bit
that emerged but never solved keeps its jump as a censored lower bound. Claim 2 pairs each bit's
emergence with the entropy drop of the head that attends most to that bit's parents at the end of
training (chosen without the jump's timing), against the same heads re-paired with other bits of the
same seed. Each verdict above comes from its rule in emergence/claims/verdicts.py, applied to this run's results with the thresholds in params.yaml's `claims` section, fixed before the run; the scorecard on the report's first page lists them all, with Benjamini-Hochberg q-values across its tests.""")

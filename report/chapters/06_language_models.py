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
# # Small language models: emergence across seeds and sizes, and attention patching
#
# The paper's Section 2 studies Pythia: capabilities such as repeating a digit string appear
# abruptly, at different steps in different seeds, and earlier and more often in larger
# models (claim 1); each jump comes with a head learning a sparse attention pattern (claim 2);
# patching a few post-emergence heads' attention into the pre-emergence model recovers most of
# the gap (claim 3). Here a family of small language models (three sizes, several seeds each)
# is trained on a generated corpus and probed at every checkpoint on held-out prompts; emergence
# is bracketed between checkpoints by binary search, as the paper does on Pythia, and the
# bracket's two checkpoints are patched head by head.

# %% tags=["parameters"]
max_figure_seeds = 16

# %%

import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from emergence.analysis import events as an
from emergence.analysis.patching import head_label
from emergence.analysis.survival import km_median, km_survival
from emergence.claims.scorecard import in_context_capabilities, lm_jump_ratio
from emergence.common import lm_variants as lv
from emergence.report.paper_reference import load_figures
from emergence.report.reporting import claims_section, fmt, fmt_step, load, load_folder, md, read_scorecard, setup_style, table

setup_style()
pr = load("lm_probes")
patch = load_folder("lm_patching")
models = [str(s) for s in pr["size"].values]          # every trained family, pre-pretrained twins included
sizes = lv.sizes(models)                                # the size comparison uses from-scratch models only
pretrained = [m for m in models if lv.TWIN in m]
rare_twins = lv.rare_twins(models)                      # size -> its twin on the rare-skills corpus
config = json.loads(pr.attrs["config"])
caps = [str(c) for c in pr["capability"].values]
steps = pr["checkpoint_step"].values
budget = int(steps[-1])
solved_acc = float(pr.attrs["solved_accuracy"])
n_seed = pr.sizes["seed"]
size_colors = dict(zip(sizes, sns.color_palette("viridis", len(sizes))))


def emergence_times(size, cap):
    """First solved checkpoint per seed (the bracket's new step), censored at the budget."""
    s = pr.sel(size=size, capability=cap)
    new, cen = s["bracket_new_step"].values.astype(float), s["bracket_censored"].values.astype(bool)
    return np.where(cen, budget, new), cen


def draw_solved_fraction(ax, model, cap, **style):
    """One minus the Kaplan-Meier survival of the first solved checkpoint, to the budget."""
    t, cen = emergence_times(model, cap)
    at, surv = km_survival(t, cen)
    ax.step(np.r_[at, budget], 1 - np.r_[surv, surv[-1]], where="post", label=model, **style)
    return t, cen


md(f"""{len(sizes)} sizes ({', '.join(f"{s}: {int(pr['n_params'].sel(size=s))/1e3:.0f}k parameters" for s in sizes)})
{'and pre-pretrained twins ' + ', '.join(f"{m} ({int(pr['pretraining_steps'].sel(size=m)):,} steps)" for m in pretrained) + " (a synthetic task written with tokens of its own first, then the same corpus training; '+random' is the control: i.i.d. random tokens of the same alphabet)" if pretrained else ''},
{n_seed} seeds each, {budget:,} steps, {pr.sizes['checkpoint_step']} checkpoints on a Pythia-like schedule.
Capabilities: {', '.join(caps)}; solved = greedy accuracy ≥ {solved_acc} on the held-out prompts.""")

# %% [markdown]
# ## Probe accuracy at every checkpoint

# %%
#| label: fig-lm-probes
#| fig-cap: "Greedy accuracy on each capability's held-out prompts against training step (log scale), every seed (colours; the same seed has the same colour in every panel), one row per size; a jump from near 0 to near 1 between two checkpoints is an emergence."
fig, axes = plt.subplots(len(models), len(caps), figsize=(3.3 * len(caps), 2.4 * len(models)), sharex=True,
                         sharey=True, squeeze=False)
x = np.maximum(steps, 1)
for r, size in enumerate(models):
    for c, cap in enumerate(caps):
        ax = axes[r][c]
        acc = pr["probe_accuracy"].sel(size=size, capability=cap).values
        for k in range(min(n_seed, max_figure_seeds)):
            ax.plot(x, acc[k], lw=1, alpha=0.8, color=f"C{k % 10}", label=f"seed {int(pr['seed'].values[k])}")
        ax.axhline(solved_acc, color="k", ls=":", lw=1)
        ax.set_xscale("log")
        if r == 0:
            ax.set_title(cap)
        if c == 0:
            ax.set_ylabel(f"{size}\naccuracy")
        if r == len(models) - 1:
            ax.set_xlabel("step")
axes[0][0].legend(fontsize=7, loc="upper left")
fig.tight_layout()

# %% [markdown]
# ## Steps to emergence against size (the paper's Figure 1)

# %%
#| label: fig-lm-emergence
#| fig-cap: "Left: first solved checkpoint per seed against model size, per capability (open triangles: never solved within the budget, drawn at the budget). Middle: fraction of seeds that solve, with 90% Wilson intervals. Right: the paper's Figure 1 for comparison (blog, data/paper/figures.yaml): Pythia models of 14M to 410M parameters, 10 seeds each, the repetition task, fraction of seeds solved by 143k steps (90% Wilson intervals) and the mean emergence step with unsolved seeds counted as 143k (labels). Ours are models of a few hundred thousand parameters trained for this run's budget on a generated corpus."
paper = load_figures()
fig, axes = plt.subplots(1, 3, figsize=(15, 4), gridspec_kw={"width_ratios": [1, 1, 0.8]})
xpos = np.arange(len(sizes))
for j, cap in enumerate(caps):
    off = (j - (len(caps) - 1) / 2) * 0.12
    fr, lo, hi = [], [], []
    for i, size in enumerate(sizes):
        t, cen = emergence_times(size, cap)
        axes[0].plot(np.full((~cen).sum(), i + off), t[~cen], "o", color=f"C{j}", ms=5, alpha=0.8,
                     label=cap if i == 0 else None)
        axes[0].plot(np.full(cen.sum(), i + off), t[cen], "^", mfc="none", color=f"C{j}", ms=6)
        n_ok = int((~cen).sum())
        w = an.wilson_interval(n_ok, len(cen), level=0.9)
        fr.append(n_ok / len(cen)), lo.append(w[0]), hi.append(w[1])
    fr = np.array(fr)
    yerr = np.clip([fr - np.array(lo), np.array(hi) - fr], 0, None)  # Wilson bounds can miss the point by rounding
    axes[1].errorbar(xpos + off, fr, yerr=yerr, fmt="o-", color=f"C{j}", label=cap, capsize=3)
for ax in axes[:2]:
    ax.set_xticks(xpos, sizes)
    ax.set_xlabel("size")
axes[0].set_yscale("log")
axes[0].set_ylabel("first solved checkpoint (step)")
axes[0].legend(fontsize=8)
axes[1].set_ylabel("fraction of seeds solved")
axes[1].set_ylim(-0.05, 1.05)
fig1 = paper["pythia_emergence"]
py_sizes = list(fig1["solved"])
py_frac = np.array([fig1["solved"][p] / fig1["seeds"] for p in py_sizes])
py_int = np.array([an.wilson_interval(fig1["solved"][p], fig1["seeds"], level=0.9) for p in py_sizes])
axes[2].errorbar(range(len(py_sizes)), py_frac, yerr=np.clip([py_frac - py_int[:, 0], py_int[:, 1] - py_frac], 0, None),
                 fmt="x--", color="0.35", capsize=3)
for i, p in enumerate(py_sizes):
    axes[2].annotate(f"{fig1['mean_step'][p] / 1e3:.0f}k", (i, py_frac[i]), textcoords="offset points", xytext=(6, -12),
                     fontsize=8, color="0.35")
axes[2].set_xticks(range(len(py_sizes)), py_sizes)
axes[2].set_xlabel("Pythia size (paper)")
axes[2].set_title("paper, Fig 1: repetition", fontsize=10)
axes[2].set_ylim(-0.05, 1.05)
fig.tight_layout()

# %%
mixture = json.loads(pr.attrs["config"])["corpus"]["mixture"]
share = {cap: mixture[cap.split("_period")[0]] / sum(mixture.values()) for cap in caps}
md("How often training shows each skill: " + "; ".join(f"{cap} {share[cap]:.0%}" for cap in caps)
   + " of the corpus's documents (params.yaml `language_model.corpus.mixture`; the pattern probes of each period "
   "share the pattern documents). Every seed meets each skill in its first batches and is trained on it directly, "
   "so the spread of emergence steps across seeds (claim 1's seed-dependence) is the spread of learning a skill "
   "the corpus teaches outright, not that of a skill that has to emerge from a weak, indirect signal, as the "
   "paper's Pythia models meet it in the Pile.")

# %%
def jump_ratios(size, cap):
    """Per run that rose from its plateau: jump width / first solved step, as the scorecard's rule
    measures it (emergence/claims/scorecard.py)."""
    sel = pr.sel(size=size, capability=cap)
    out = [lm_jump_ratio(steps, sel["probe_accuracy"].values[k], float(sel["bracket_new_step"].values[k]),
                         bool(sel["bracket_censored"].values[k])) for k in range(n_seed)]
    return [r for r, censored, _ in out if np.isfinite(r) and not censored]


# %%
#| label: fig-lm-abrupt
#| fig-cap: "Jump width over first solved step for every from-scratch run that rose from its plateau, per capability (colour: size; open triangles: runs that rose but never solved, a lower bound at the budget), with the abruptness threshold (dashed: a capability is abrupt where its runs' median lies below it) and, grey, the smallest ratio the checkpoint grid can show for each run. Each capability is one part of the claim (the scorecard's rule: a sign test over runs)."
threshold = float(read_scorecard()["thresholds"]["abrupt_ratio"])
fig, ax = plt.subplots(figsize=(7, 3.6))
for j, cap in enumerate(caps):
    for i, size in enumerate(sizes):
        sel = pr.sel(size=size, capability=cap)
        for k in range(n_seed):
            r, censored, floor = lm_jump_ratio(steps, sel["probe_accuracy"].values[k],
                                               float(sel["bracket_new_step"].values[k]),
                                               bool(sel["bracket_censored"].values[k]))
            x = j + (i - (len(sizes) - 1) / 2) * 0.22 + (k - (n_seed - 1) / 2) * 0.03
            if np.isfinite(floor):
                ax.plot(x, floor, "_", color="0.6", ms=6)
            if np.isfinite(r):
                ax.plot(x, r, "^" if censored else "o", mfc="none" if censored else size_colors[size],
                        mec=size_colors[size], ms=5)
ax.axhline(threshold, ls="--", color="0.3", lw=1)
ax.set_yscale("log")
ax.yaxis.set_major_locator(plt.LogLocator(subs=(1, 2, 5)))
ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
ax.yaxis.set_minor_formatter(plt.NullFormatter())
ax.set_xticks(range(len(caps)), caps)
ax.set_ylabel("jump width / solved step")
ax.legend(handles=[plt.Line2D([], [], ls="", marker="o", color=size_colors[size], label=size) for size in sizes]
          + [plt.Line2D([], [], ls="--", color="0.3", label=f"threshold {threshold:g}"),
             plt.Line2D([], [], ls="", marker="_", color="0.6", label="grid's smallest")],
          fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5)
fig.tight_layout()

# %%
rows = []
for size in models:
    for cap in caps:
        t, cen = emergence_times(size, cap)
        s = pr.sel(size=size, capability=cap)
        r = jump_ratios(size, cap)
        rows.append({"model": size.replace(lv.TWIN, f" {lv.TWIN} ").replace(lv.CORPUS, f" {lv.CORPUS} "),
                     "capability": cap,  # spaces let a narrow column wrap
                     "seeds solved": f"{int((~cen).sum())}/{len(cen)}",
                     "first solved steps": ", ".join(fmt_step(v) for v in sorted(t[~cen])) or "none",
                     "KM median": fmt_step(km_median(t, cen)),
                     "jump width / step (median)": fmt(float(np.median(r))) if r else "n/a",
                     "binary-search evaluations (max)": int(s["bracket_evaluations"].max())})
for p in py_sizes:  # the paper's Figure 1 beside ours: its mean step counts unsolved seeds as 143k
    rows.append({"model": f"paper: Pythia-{p}", "capability": "repetition",
                 "seeds solved": f"{fig1['solved'][p]}/{fig1['seeds']}",
                 "first solved steps": f"mean {fig1['mean_step'][p]:,} (unsolved at {fig1['steps']:,})",
                 "KM median": "—", "jump width / step (median)": "—", "binary-search evaluations (max)": "—"})
table(pd.DataFrame(rows), index=False)

# %% [markdown]
# ## Rare skills: seed-dependence from a weak signal (claim 1)
#
# On the main corpus a large share of the documents trains spans and patterns directly; a skill
# taught that often is learned by every seed at about the same step, which
# says little about a skill that has to emerge from a weak signal, as Pythia's do. A profile may
# train a rare-skills twin: the same size, seeds and steps on a corpus where those document kinds
# are rare (`language_model.rare_skills`; its weight the smallest of a pilot's grid that most
# seeds still learn within the budget, docs/pilots.md), and claim 1's seed-dependence is then
# decided on it.

# %%
#| label: fig-lm-rare-skills
#| fig-cap: "Fraction of seeds that have solved each capability the rare-skills corpus makes rare, against step (one minus the Kaplan-Meier survival, seeds never solved censored at the budget): the size on the main corpus (dashed) and its twin on the rare-skills corpus (solid); ticks: each seed's first solved checkpoint."
rare_caps = (lv.rare_capabilities(caps, config["corpus"]["mixture"], config["rare_skills"]["mixture"])
             if rare_twins and "rare_skills" in config else [])
if rare_caps:
    mixtures = {"main corpus": config["corpus"]["mixture"], "rare-skills corpus": config["rare_skills"]["mixture"]}
    kinds = list(dict.fromkeys(lv.document_kind(cap) for cap in rare_caps))
    display(md("Share of the documents: " + "; ".join(
        f"{name}: " + ", ".join(f"{kind} {mix[kind] / sum(mix.values()):.1%}" for kind in kinds)
        for name, mix in mixtures.items()) + "."))
    fig, axes = plt.subplots(1, len(rare_caps), figsize=(4.4 * len(rare_caps), 3.4), squeeze=False)
    for ax, cap in zip(axes[0], rare_caps):
        for j, (size, twin) in enumerate(rare_twins.items()):
            for m, ls in ((size, "--"), (twin, "-")):
                t, cen = draw_solved_fraction(ax, m, cap, color=f"C{j}", ls=ls)
                ax.plot(t[~cen], np.full((~cen).sum(), -0.03 if ls == "-" else -0.06), "|", color=f"C{j}", ms=8)
        ax.set_title(cap)
        ax.set_xlabel("step")
        ax.set_ylim(-0.1, 1.05)
    axes[0][0].set_ylabel("fraction of seeds solved")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
else:
    display(md("No rare-skills twin on this profile (`language_model.rare_skills.sizes` is empty): its pilot found "
               "no weight at which most seeds learn the rare skills within this budget (docs/pilots.md: rare "
               "skills), so claim 1's seed-dependence is decided on the main corpus here."))

# %% [markdown]
# ## Pre-pretraining (claim 9)
#
# Twins of a size trained first on a synthetic task written with tokens no corpus document
# uses (Dyck brackets; neural cellular automata, a rule per sequence from a random network),
# then on the corpus exactly as the from-scratch model; the control twin sees i.i.d. random
# tokens of the same alphabet for the same steps, so what it gains is what extra steps without
# structure give. Shown for the in-context capabilities, the ones the paper says speed up.

# %%
CARRIED = {  # what a twin carries into the corpus phase, by params.yaml language_model.pretraining.transfer
    "attention_mlp": "Each twin carries only its attention and MLP weights into the corpus phase; its positions, "
                     "norms, embeddings and read-out start where the from-scratch model's do.",
    "body": "Each twin carries its attention and MLP weights, positions and norms into the corpus phase; its "
            "embeddings and read-out start where the from-scratch model's do.",
    "all": "Each twin carries every weight into the corpus phase, its read-out on the synthetic alphabet included."}
transfers = {str(pr["pretraining_transfer"].sel(size=m).item()) for m in pretrained} if pretrained else set()
transfer = transfers.pop() if len(transfers) == 1 else ""

# %%
#| label: fig-lm-pretraining
#| fig-cap: "Left: fraction of seeds that have solved each in-context capability against step (one minus the Kaplan-Meier survival, seeds never solved censored at the budget), for the from-scratch model and each pre-pretrained twin; the control twin (+random) dashed. Right: the same models' held-out corpus loss during the corpus phase (median over seeds; thin lines: single seeds), where a longer plateau shows as a later fall."
in_context = in_context_capabilities(caps)
if pretrained and in_context:
    twinned = [m.split(lv.TWIN)[0] for m in pretrained][:1] + pretrained
    fig, axes = plt.subplots(1, len(in_context) + 1, figsize=(4.4 * (len(in_context) + 1), 3.6), squeeze=False)
    for ax, cap in zip(axes[0], in_context):
        for j, m in enumerate(twinned):
            draw_solved_fraction(ax, m, cap, color=f"C{j}", ls="--" if m.endswith("+random") else "-")
        ax.set_title(cap)
        ax.set_xlabel("step")
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].set_ylabel("fraction of seeds solved")
    axes[0][0].legend(fontsize=8)
    ax = axes[0][-1]
    for j, m in enumerate(twinned):
        loss = pr["corpus_loss"].sel(size=m).transpose("seed", "checkpoint_step").values
        ax.plot(steps, loss.T, color=f"C{j}", lw=0.5, alpha=0.3)
        ax.plot(steps, np.median(loss, axis=0), color=f"C{j}", ls="--" if m.endswith("+random") else "-", label=m)
    ax.set_title("held-out corpus loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats)")
    fig.tight_layout()
else:
    display(md("No pre-pretrained twin on this profile."))

# %%
if pretrained and in_context:
    display(md("Median held-out corpus loss at step " + f"{budget:,}: " + "; ".join(
        f"{m} {np.median(pr['corpus_loss'].sel(size=m, checkpoint_step=budget).values):.2f}" for m in twinned) + "."))

# %% [markdown]
# ## One emergence, patched head by head

# %%
BRACKETS = {  # the patching bracket, by params.yaml language_model.patching.bracket
    "steepest": "The bracket is the paper's: the single checkpoint interval, at or before the first solved "
                "checkpoint, across which p(correct) rises most (Pythia-410M: 30k → 31k, 0.16 → 0.61).",
    "jump": "The bracket runs from the checkpoint where the jump starts (pre-emergence: the last at or below "
            f"{an.JUMP_START:.0%} of the way from the run's plateau to 1) to the first solved one.",
    "last_unsolved": "The bracket runs from the last unsolved checkpoint to the first solved one."}
runs = []  # every bracketed (size, capability, seed) that was patched
small_gap = 0  # bracketed, but p(correct) rose by less than min_gap: not patched
for size, ds in patch.items():
    for i, cap in enumerate(ds["capability"].values):
        for k, seed in enumerate(ds["seed"].values):
            if np.isfinite(ds["delta_p"].values[i, k]).any():
                runs.append((size, str(cap), k))
            elif np.isfinite(ds["p_new"].values[i, k]):
                small_gap += 1
first_patch = next(iter(patch.values()), None)
bracket_text = BRACKETS.get(first_patch.attrs.get("bracket") if first_patch is not None else None, "")
example = max(runs, key=lambda r: float(patch[r[0]]["p_new"].values[caps.index(r[1]), r[2]]
                                          - patch[r[0]]["p_old"].values[caps.index(r[1]), r[2]]), default=None)
md("No capability emerged between two checkpoints on this profile, so nothing was patched." if example is None else
   f"Example: size {example[0]}, capability {example[1]}, seed {int(patch[example[0]]['seed'].values[example[2]])} "
   f"(largest old → new gap); {len(runs)} bracketed runs were patched in all"
   + (f", {small_gap} more were bracketed but their p(correct) rose by less than "
      f"{first_patch.attrs['min_gap']} across the bracket and were not patched" if small_gap else "")
   + ". " + bracket_text)

# %%
#| label: fig-lm-patching
#| fig-cap: "Left: Δp of patching each head alone (the new checkpoint's attention into the old one), for the example run. Middle: its p(correct) against step with the bracket marked. Right: fraction of the old → new gap recovered by patching the top-k heads together, every patched run (median in black), beside the medians of patching every head's pattern at once (the ceiling for attention patching, dashed) and every head's output (what the attention layers carry at all, dotted)."
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
if example is not None:
    size, cap, k = example
    ds = patch[size]
    i = caps.index(cap)
    n_layer, n_head = ds.sizes["layer"], ds.sizes["head"]
    sns.heatmap(ds["delta_p"].values[i, k], ax=axes[0], cmap="rocket_r", annot=n_head <= 8, fmt=".2f",
                annot_kws={"size": 7}, cbar_kws={"label": "Δp"},
                xticklabels=[f"H{h}" for h in range(n_head)], yticklabels=[f"L{l}" for l in range(n_layer)])
    axes[0].set_xlabel("head")
    axes[0].set_ylabel("layer")
    pc = pr["probe_p_correct"].sel(size=size, capability=cap).values[k]
    axes[1].plot(np.maximum(steps, 1), pc, "o-", ms=3)
    for v in (ds["old_step"].values[i, k], ds["new_step"].values[i, k]):
        axes[1].axvline(max(int(v), 1), color="C3", ls="--", lw=1)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("p(correct)")
    ks = ds["k"].values
    curves = np.array([patch[s]["top_k_recovery"].values[caps.index(c), kk] for s, c, kk in runs
                       if list(patch[s]["k"].values) == list(ks)])
    for cur in curves:
        axes[2].plot(ks, cur, color="C0", alpha=0.3, lw=1)
    if len(curves):
        axes[2].plot(ks, np.median(curves, axis=0), color="k", lw=2, marker="o")
    for what, style in (("pattern", "--"), ("output", ":")):
        every = [float(patch[s][f"all_heads_{what}_recovery"].values[caps.index(c), kk]) for s, c, kk in runs
                 if f"all_heads_{what}_recovery" in patch[s]]
        if every:
            axes[2].axhline(np.nanmedian(every), color="C3", ls=style, lw=1.5,
                            label=f"every head's {what}: {np.nanmedian(every):.2f}")
    if axes[2].get_legend_handles_labels()[0]:
        axes[2].legend(fontsize=8)
    axes[2].set_xscale("log", base=2)
    axes[2].set_xlabel("heads patched (top k)")
    axes[2].set_ylabel("fraction of gap recovered")
fig.tight_layout()

# %%
def top_head(size, cap, k):
    """(layer, head) with the largest single-head Δp in one patched run."""
    e = patch[size]["delta_p"].values[caps.index(cap), k]
    return np.unravel_index(np.nanargmax(e), e.shape)


if runs:
    rows = []
    for size, cap, k in runs:
        ds = patch[size]
        i = caps.index(cap)
        e = ds["delta_p"].values[i, k]
        top = top_head(size, cap, k)
        rows.append({"size": size, "capability": cap, "seed": int(ds["seed"].values[k]),
                     "p old → new": f"{fmt(float(ds['p_old'].values[i, k]))} → {fmt(float(ds['p_new'].values[i, k]))}",
                     "top head": head_label(*top), "its Δp": float(e[top]),
                     "reverse Δp (old into new)": float(ds["reverse_delta_p"].values[i, k][top]),
                     "previous-token score": float(ds["previous_token_score"].values[i, k][top]),
                     "induction score": float(ds["induction_score"].values[i, k][top]),
                     "entropy old → new": f"{fmt(float(ds['entropy_old'].values[i, k][top]))} → "
                                          f"{fmt(float(ds['entropy_new'].values[i, k][top]))}"})
    ref = paper["pythia_patching"]
    for h in ref["heads"]:  # the paper's two top heads in Pythia-410M, beside ours
        rows.append({"size": "paper: Pythia-410M", "capability": "repetition", "seed": "—",
                     "p old → new": f"{ref['p_old']} → {ref['p_new']}", "top head": h["head"], "its Δp": h["delta_p"],
                     "reverse Δp (old into new)": "—", "previous-token score": h["kind"] if h["kind"] == "previous-token" else "—",
                     "induction score": "copy head" if h["kind"] == "copy" else "—", "entropy old → new": "—"})
    display(table(pd.DataFrame(rows), index=False))

# %% [markdown]
# ## Real Pythia checkpoints

# %%
py = load("pythia_results")
if py.attrs.get("status") != "ran":
    display(md("""Not run on this machine: the Pythia analysis downloads checkpoints from the Hugging Face
hub and is off by default (`pythia.enabled: false` in params.yaml; docs/cluster.md says how to run it and
what it costs). The small models above stand in for it."""))
else:
    rows = []
    for i, size in enumerate(py["size"].values):
        for j, seed in enumerate(py["seed"].values):
            rows.append({"size": str(size), "seed": int(seed),
                         "bracket": ("never solved" if py["censored"].values[i, j] else
                                     f"{int(py['old_step'].values[i, j]):,} → {int(py['new_step'].values[i, j]):,}"),
                         "checkpoints evaluated": int(py["evaluations"].values[i, j]),
                         "p old → new": f"{fmt(float(py['p_old'].values[i, j]))} → {fmt(float(py['p_new'].values[i, j]))}",
                         "top heads (layer.head:Δp)": str(py["top_heads"].values[i, j])})
    display(md(f"Capability `{py.attrs['capability']}`, solved = greedy accuracy ≥ {py.attrs['solved_accuracy']}."))
    display(table(pd.DataFrame(rows), index=False))

# %% [markdown]
# ## Claims

# %%
claims_section("06_language_models")

# %%
md(f"""Emergence is located as in the paper: binary search over the checkpoints for the first one whose
greedy accuracy on the held-out prompts reaches {solved_acc} (at most
{int(pr['bracket_evaluations'].max())} checkpoint evaluations per run); a run never solved by step
{budget:,} is censored there. A jump is measured from the run's own plateau (the median accuracy of its
unsolved checkpoints, so IOI's either-name stage is plateau, not jump); where one checkpoint interval is
already as wide as the abruptness threshold, the grid cannot decide and the verdict says so. Capabilities
measured on the same seeds are not independent: the size and pre-pretraining tests reassign whole seeds
(a permutation test), the abruptness rule tests each capability on its own (a sign test over runs; the claim
combines them), and the patching and sharpening statistics take one value per seed. {bracket_text} The top heads' recovery is read
beside the ceiling of patching every head's pattern at once: where that ceiling stays below "most", no
choice of heads can pass, and the verdict says the test cannot pass at this scale rather than that the claim
fails. The sharpening test ranks its head on the even-numbered prompts and reads the entropies on the
odd-numbered ones. The pre-pretraining claim holds if either structured
task speeds emergence up against the from-scratch model, each tested at half the level; the control row
asks the same of each task against the random-token twin. {CARRIED.get(transfer, '')} Each task's length was chosen on the synthetic task alone,
never on the corpus outcome: the steps a pilot found it needs to be learned, the control as long as the longest
(emergence/tools/pretraining_pilot.py; its criterion and numbers are in docs/pilots.md). These are
models of {int(pr['n_params'].min()):,} to {int(pr['n_params'].max()):,} parameters trained for {budget:,}
steps on a generated corpus, not Pythia: sizes here differ in width only. Each verdict above comes from its rule in emergence/claims/verdicts.py, applied to this run's results with the thresholds in params.yaml's `claims` section, fixed before the run; the scorecard on the report's first page lists them all, with Benjamini-Hochberg q-values across its tests.""")

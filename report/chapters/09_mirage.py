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
# # Is it a mirage?
#
# Schaeffer, Miranda and Koyejo (NeurIPS 2023) showed that a discontinuous metric can make a
# smooth improvement look like a jump: exact match over an answer of L tokens is about p^L, so a
# per-token probability rising steadily gives an exact match that sits at zero and then shoots
# up. The paper's jumps are in training time and are read off loss and accuracy curves; they
# stand only if each unit's jump (a bit of the linear map, a cell position of the automata, a
# language-model capability) stays sharp under a continuous metric. This chapter asks every
# emergence in the report four questions: is the jump as sharp under cross-entropy (or
# p(correct)) as under greedy accuracy; how much of the whole answer's exact-match jump the
# units' own accuracies predict; is each run sharp while the runs are scattered in time; and
# does the responsible head's attention move before its unit's loss.
#
# Every curve is first put on one scale, progress: 0 at chance, 1 when solved (a loss falls
# from its chance value to 0, an accuracy rises from chance to 1). A logistic is fitted to each
# progress curve on the log-step axis; its 10-to-90% width is in ln steps (ln(t90 / t10)), and
# a rise inside one evaluation interval fits any width below that interval, so widths are
# compared at no less than the interval around the midpoint. Curves that never reach the rise
# threshold are censored at the budget, never dropped.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator, NullFormatter

from emergence.analysis.mirage_analysis import (at_grid_fraction, resolution_readings, resolved_width, runs_by_seed,
                                       width_ratio)
from emergence.report.reporting import claims_section, fmt, fmt_step, load, load_folder, md, read_scorecard, setup_style, table

setup_style()
mirage = load_folder("mirage")
lm_results = load("linear_map_results")
synthetic = {name: ds for name, ds in mirage.items() if name != "language_models"}
lms = mirage["language_models"]
threshold = float(lms.attrs["rise_threshold"])
TASK = {"linear_map": "linear map", "cellular_automata": "automata"}


def label(ds):
    if ds.attrs["task"] == "language_models":
        return "language models"
    if ds.attrs["task"] == "cellular_automata":
        return f"automata S = {ds.attrs['state_size']}"
    S, s_ = ds.attrs["setting"][1:].split("_s")
    return f"linear map S = {int(S)}, s = {int(s_)}"


def panels(n, width=3.6, height=3.2, **kw):
    """n panels, three to a row (legible on a PDF page); the unused ones hidden. Returns
    (figure, axes as a 1 x n array)."""
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, **kw)
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n][None, :]


def tidy(fig):
    """No labels on the x-axes' minor log ticks (they run into each other when an axis spans
    less than a decade)."""
    for ax in fig.axes:
        ax.xaxis.set_minor_formatter(NullFormatter())
    fig.tight_layout()


def nothing(ax, text):
    """An empty panel that says why."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="0.3")
    ax.set_xticks([])
    ax.set_yticks([])


def median_of(values, digits=3):
    """The median of finite-or-infinite values ("∞" for a step inside one interval), n/a if none."""
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    if not v.size:
        return "n/a"
    m = float(np.quantile(v, 0.5, method="inverted_cdf"))
    return "∞" if np.isinf(m) else fmt(m, digits)


def continuous_of(ds):
    return "p_correct" if ds.attrs["task"] == "language_models" else "cross_entropy"


METRIC = {"accuracy": "accuracy", "cross_entropy": "cross-entropy", "p_correct": "p(correct)", "brier": "Brier score"}


md("Runs analysed: " + "; ".join(
    f"{label(ds)}: {ds.sizes['seed']} seeds, budget {int(ds.attrs['budget_step']):,} steps" for ds in mirage.values())
   + f". A curve has risen when its progress reaches {threshold} (`mirage.rise_threshold`)."
   + "".join(f" The runs of {label(ds)} are {ds.attrs['runs_from']}: its first seeds are the control arm's runs."
             for ds in mirage.values() if ds.attrs.get("runs_from", "").endswith("more seeds")))

# %% [markdown]
# ## 1. Sharpness under each metric

# %%
#| label: fig-mirage-widths
#| fig-cap: "Each unit that rose under greedy accuracy (one dot per seed and unit): its rise width under the continuous metric (cross-entropy; p(correct) for the language models) against its width under accuracy, both in ln steps and never below one evaluation interval. On the diagonal (dotted) the continuous metric jumps as sharply; above the dashed red line its rise is wider by more than the factor the verdict allows (claims.metric_factor); triangles at the top never rose under the continuous metric."
factor = float(read_scorecard()["thresholds"]["metric_factor"])
LIM = (5e-3, 30.0)
fig, axes = panels(len(mirage), height=3.5)
for ax, (name, ds) in zip(axes[0], mirage.items()):
    ax.set_title(label(ds), fontsize=9)
    disc = resolved_width(ds.sel(unit_metric="accuracy"))
    cont = resolved_width(ds.sel(unit_metric=continuous_of(ds)))
    never = ds.sel(unit_metric=continuous_of(ds))["unit_censored"].values == 1
    ok = np.isfinite(disc)
    if not ok.any():
        nothing(ax, "no unit rose\nwithin the budget")
        continue
    ax.loglog(disc[ok & ~never], cont[ok & ~never], "o", ms=3, alpha=0.6)
    ax.plot(disc[ok & never], np.full((ok & never).sum(), LIM[1] / 1.5), "^", mfc="none", color="C3")
    ax.plot(LIM, LIM, "k:", lw=1)
    ax.plot(LIM, [factor * LIM[0], factor * LIM[1]], "--", color="C3", lw=1)
    ax.set_xlim(LIM)
    ax.set_ylim(LIM)
    ax.set_xlabel("width, accuracy (ln steps)")
for ax in axes[0][::3]:
    ax.set_ylabel("width, continuous metric")
tidy(fig)

# %%
rows = []
for name, ds in mirage.items():
    for metric in ds["unit_metric"].values:
        d = ds.sel(unit_metric=metric)
        w = resolved_width(d)
        rose = d["unit_censored"].values == 0
        rows.append({"runs": label(ds), "metric": METRIC[str(metric)],
                     "units rose": f"{int(rose.sum())}/{rose.size}",
                     "median width (ln steps)": fmt(float(np.nanmedian(w))) if np.isfinite(w).any() else "n/a",
                     "median evaluation interval (ln steps)": fmt(float(np.nanmedian(d["unit_grid"].values[rose])))
                     if rose.any() else "n/a",
                     "median AIC gain over a line": fmt(float(np.nanmedian(d["unit_aic_gain"].values[rose])))
                     if rose.any() else "n/a",
                     "median breakthroughness": median_of(d["unit_breakthroughness"].values[rose])})
display(table(pd.DataFrame(rows), index=False))


table(pd.DataFrame([{"runs": label(ds), "continuous metric": METRIC[continuous_of(ds)],
                     "width ratio, continuous / accuracy (median)": median_of(width_ratio(ds, continuous_of(ds))),
                     "never rose under it": int(np.isinf(width_ratio(ds, continuous_of(ds))).sum()),
                     "both within one evaluation interval": fmt(at_grid_fraction(ds, continuous_of(ds)), 2)}
                    for ds in mirage.values()]), index=False)

# %% [markdown]
# The AIC gain is a straight line's AIC on the log-step axis minus the logistic's: positive where
# the step shape fits better than steady improvement in log steps. Breakthroughness is BIG-bench's
# (Srivastava et al. 2022): the curve's range over the root median square of its step-to-step
# changes, large when the change happens in a few large steps; it depends on the evaluation grid,
# so it is compared only between metrics of the same runs. The Brier score (2(1 − p)² for a
# bit, from each example's p(correct)) is shown where the run kept its per-example answers per
# bit. Other metrics are these curves on the progress scale: a unit's log p(answer) is minus
# its cross-entropy; the whole answer's log p is −L times the mean cross-entropy; the Hamming
# distance of a fixed-length answer is L(1 − accuracy); so they are not shown again.

# %% [markdown]
# ## 2. What the units predict for the whole answer

# %%
#| label: fig-mirage-exact-match
#| fig-cap: "Exact match of the whole answer against step (solid) beside what metric non-linearity alone predicts from the same run: the product over units of each unit's accuracy raised to its number of positions (dashed: independent errors) and the mean accuracy raised to the answer length L (dotted: p^L, the prediction of Schaeffer et al.), for the first seeds of each synthetic task."
fig, axes = panels(len(synthetic))
for ax, (name, ds) in zip(axes[0], synthetic.items()):
    steps = ds["step"].values
    for k in range(min(3, ds.sizes["seed"])):
        ax.plot(steps, ds["exact_match"].values[k], "-", color=f"C{k}", lw=1.5, label=f"seed {int(ds['seed'].values[k])}")
        ax.plot(steps, ds["exact_match_from_units"].values[k], "--", color=f"C{k}", lw=1)
        ax.plot(steps, ds["exact_match_from_mean"].values[k], ":", color=f"C{k}", lw=1)
    ax.set_title(f"{label(ds)} (L = {ds.attrs['answer_length']})", fontsize=9)
    ax.set_xlabel("step")
for ax in axes[0][::3]:
    ax.set_ylabel("exact match")
axes[0][0].legend(fontsize=7)
tidy(fig)

# %%
rows = [{"runs": label(ds), "answer length L": int(ds.attrs["answer_length"]),
         "final exact match (median)": fmt(float(np.median(ds["exact_match"].values[:, -1]))),
         "explained by the units' product (median)": median_of(ds["explained_by_units"].values, 2),
         "explained by p^L (median)": median_of(ds["explained_by_mean"].values, 2)}
        for ds in synthetic.values()]
table(pd.DataFrame(rows), index=False)

# %%
lengths = load("mirage_lengths")
if lengths.sizes["cell"]:
    display(md("Across answer lengths: the linear map's sparsity sweep trains states of S = L bits; for each "
               "cell, the median over seeds of the same two predictions."))
    display(table(pd.DataFrame([{
        "L = S": int(lengths["state_size"].values[i]), "s": int(lengths["sparsity"].values[i]),
        "final exact match (median)": median_of(lengths["final_exact_match"].values[i]),
        "explained by the bits' product (median)": median_of(lengths["explained_by_units"].values[i], 2),
        "explained by p^L (median)": median_of(lengths["explained_by_mean"].values[i], 2)}
        for i in range(lengths.sizes["cell"])]), index=False))

# %% [markdown]
# "Explained" is 1 minus the squared error of the prediction over the exact-match curve's own
# variance across steps (1: the prediction is the curve; 0: no better than its mean; negative:
# worse; n/a where the exact match never moved). Where the units' product explains the
# whole-answer curve, its jump is the composition of the units' jumps, and the question the
# paper's claim turns on is whether each unit's own jump is sharp (section 1). Errors that the
# product underpredicts are correlated across positions (one misread rule spoils a whole
# automata sequence). The language models' probes have one-token answers, so there is no
# longer answer to compose.

# %% [markdown]
# ## 3. Resolution
#
# A small test set cannot see a small accuracy: with n examples the smallest nonzero reading is
# 1/n, so a capability improving slowly reads zero and then appears to jump. Every run here kept
# each evaluation example's answer at every evaluation (the language models' probe prompts; the
# linear map's sequences, per bit and for the whole x₁; the automata's sequences, for the whole
# next state and, where the sweep keeps them (`examples: units`), per cell), so each fixed set is
# subsampled: test sets of 16, 32, ... examples drawn without
# replacement, and for each the evaluation at which the set first reads as emerged (a capability
# at the probes' solved accuracy; a bit or a whole answer at the rise threshold of its progress
# scale). Where the jump is sharp every set dates it alike; where the rise is gradual, which
# examples were drawn decides the date. The mean p(correct answer) over all examples is the
# infinite-resolution reading (what PassUntil estimates by sampling, here in closed form).

# %%
ORDER = {"linear_map": 0, "cellular_automata": 1, "language_models": 2}
readings = [(f"{label(ds)}, {level}", shift, zero, pre, ds["subsample"].values)
            for ds in sorted(mirage.values(), key=lambda d: ORDER[d.attrs["task"]])
            for level, shift, zero, pre in resolution_readings(ds)]
md("" if readings else "No run kept per-example answers, so no resolution is measured here.")

# %%
#| label: fig-mirage-resolution
#| fig-cap: "Top left: how far a test set of n examples puts each run's emergence from where the whole set puts it, in evaluation intervals on the log-step axis (median over drawn sets; dots are runs, lines their median per series; the dotted line one interval). Top right: the fraction of the evaluations before emergence at which a set of n examples reads accuracy exactly zero (median over runs). Bottom: each run's mean p(correct answer) before emergence (the infinite-resolution reading; log axis; one row per series, in the colours of the top panels; triangles on the left edge: below 10⁻⁶) against the 1/n floors of the smallest and largest test sets (dotted): runs right of a floor would read nonzero at that n if p(correct) were their accuracy."
P_FLOOR = 1e-6  # the bottom panel's left edge: answers less likely than this are drawn on it
fig, ax = plt.subplot_mosaic([["shift", "zero"], ["pre", "pre"]], figsize=(11, 3.4 + 0.32 * max(4, len(readings))),
                             height_ratios=[3.2, 0.32 * max(4, len(readings))])
axes = [ax["shift"], ax["zero"], ax["pre"]]
emerged = [r for r in readings if np.isfinite(r[1]).any()]
for k, (name, shift, zero, pre, sub) in enumerate(readings):
    colour = f"C{k % 10}"
    if np.isfinite(shift).any():
        for j, n in enumerate(sub):
            finite = shift[:, j][np.isfinite(shift[:, j])]
            jitter = np.exp(np.random.default_rng(j + 17 * k).normal(0, 0.04, finite.size))
            axes[0].plot(n * jitter, finite, "o", ms=2.5, alpha=0.25, color=colour)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # test-set sizes at which no run emerged
            axes[0].plot(sub, [np.nanmedian(np.where(np.isinf(shift[:, j]), np.nan, shift[:, j]))
                               for j in range(len(sub))], "-", color=colour, label=name)
            axes[1].plot(sub, np.nanmedian(zero, 0), "-", color=colour, label=name)
    p = pre[np.isfinite(pre) & (pre > 0)]
    y = np.full(p.size, k) + np.random.default_rng(k).uniform(-0.25, 0.25, p.size)
    low = p < P_FLOOR
    axes[2].plot(p[~low], y[~low], "o", ms=3, alpha=0.5, color=colour, label=name)
    axes[2].plot(np.full(low.sum(), P_FLOOR), y[low], "<", ms=4, alpha=0.6, color=colour)
if emerged:
    axes[0].axhline(1, ls=":", color="k", lw=1)
    for ax, ylabel in zip(axes[:2], ("emergence shift (intervals)", "reads zero before emergence")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("test-set size n (examples)")
        ax.set_ylabel(ylabel)
else:
    for ax in axes[:2]:
        nothing(ax, "no run emerged\nwithin the budget" if readings else "no per-example answers")
if any(np.isfinite(r[3]).any() for r in readings):
    sizes = sorted({int(n) for *_, sub in readings for n in sub})
    # the smallest set's floor labelled to its right, the largest's (further left) to its left
    for n, side in [(sizes[0], "left")] + ([(sizes[-1], "right")] if len(sizes) > 1 else []):
        axes[2].axvline(1 / n, ls=":", color="k", lw=1)
        axes[2].annotate(f" 1/{n} ", (1 / n, 1.0), xycoords=("data", "axes fraction"), fontsize=7, ha=side,
                         va="bottom")
    axes[2].set_xscale("log")
    axes[2].set_xlim(P_FLOOR / 2, 1.5)
    axes[2].set_yticks(range(len(readings)), [r[0] for r in readings], fontsize=8)
    axes[2].invert_yaxis()
    axes[2].set_xlabel("mean p(correct answer) before emergence")
else:
    nothing(axes[2], "no per-example answers")
tidy(fig)

# %%
rows = []
for name, shift, zero, pre, sub in readings:
    for j in sorted({0, len(sub) // 2, len(sub) - 1}):
        s_n = shift[:, j]
        rows.append({"runs": name, "test-set size": f"{int(sub[j])} (all)" if j == len(sub) - 1 else int(sub[j]),
                     "emerged": int(np.isfinite(s_n).sum() + np.isinf(s_n).sum()),
                     "median emergence shift (intervals)": median_of(s_n),
                     "never emerges in the median set": int(np.isinf(s_n).sum()),
                     "reads zero before emergence (median)": median_of(zero[:, j], 2),
                     "1/n floor": fmt(1 / sub[j], 3)})
if rows:
    display(table(pd.DataFrame(rows), index=False))

# %% [markdown]
# ## 4. Sharp within a run, random across seeds

# %%
#| label: fig-mirage-random
#| fig-cap: "Each unit's rise midpoint under the continuous metric in every seed (dots; open triangles: never rose, drawn at the budget), units along the x-axis, with the median within-run rise width drawn as a bar of that height centred on each unit's median midpoint. Bars much shorter than the scatter of dots mean each jump is sharp while its timing varies across seeds."
fig, axes = panels(len(mirage), height=3.4)
for ax, (name, ds) in zip(axes[0], mirage.items()):
    d = ds.sel(unit_metric=continuous_of(ds))
    lm_runs = d["unit_midpoint"].ndim > 2  # language models: [size, capability, seed]
    mid = runs_by_seed(d["unit_midpoint"].values) if lm_runs else d["unit_midpoint"].values
    cen = (runs_by_seed(d["unit_censored"].values) if lm_runs else d["unit_censored"].values) == 1
    width = float(np.nanmedian(resolved_width(d))) if np.isfinite(resolved_width(d)).any() else np.nan
    ax.set_title(label(ds), fontsize=9)
    if cen.all():
        nothing(ax, "no unit rose\nwithin the budget")
        continue
    for u in range(mid.shape[1]):
        ax.plot(np.full((~cen[:, u]).sum(), u), np.exp(mid[~cen[:, u], u]), "o", ms=3, color="C0", alpha=0.7)
        ax.plot(np.full(cen[:, u].sum(), u), np.exp(mid[cen[:, u], u]), "^", mfc="none", ms=4, color="C3")
        if np.isfinite(width) and (~cen[:, u]).any():
            centre = np.median(mid[~cen[:, u], u])
            ax.plot([u, u], np.exp([centre - width / 2, centre + width / 2]), "-", color="k", lw=3, alpha=0.6)
    ax.set_yscale("log")
    ax.set_xlabel("unit (size x capability)" if ds.attrs["task"] == "language_models" else "unit")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
for ax in axes[0][::3]:
    ax.set_ylabel("rise midpoint (step)")
tidy(fig)

# %% [markdown]
# ## 5. Does the attention move first?

# %%
#| label: fig-mirage-precursor
#| fig-cap: "Lead of each unit's head's attention over its loss (x-axis): the change point of the loss minus that of the parent mass of the head with the most final mass on the unit's ground-truth parents (positive: the attention moved first), for its own head (blue) and for the heads of the other units of the same seed (grey, the null; for the automata, whose cells all read one window head, the same cell's head in the other seeds); one panel per synthetic task. Change points are the exact single mean shift of each curve (ruptures); units whose loss never fell are left out."
fig, axes = panels(len(synthetic), width=3.8)
for ax, (name, ds) in zip(axes[0], synthetic.items()):
    a, l = ds["attention_change_step"].values, ds["loss_change_step"].values
    own = (l - a)[np.isfinite(l - a)]
    if ds.attrs["task"] == "cellular_automata":  # one window head for every cell: the null is another seed's
        other = np.concatenate([(l[k] - a[j]) for k in range(len(a)) for j in range(len(a)) if j != k])
    else:
        other = np.concatenate([(l[k][:, None] - a[k][None, :])[~np.eye(a.shape[1], dtype=bool)]
                                for k in range(len(a))])
    other = other[np.isfinite(other)]
    ax.set_title(label(ds), fontsize=9)
    if not own.size:
        nothing(ax, "no unit's loss fell\nwithin the budget")
        continue
    bins = np.linspace(min(np.r_[own, other, -1].min(), -100), max(np.r_[own, other, 1].max(), 100), 25)
    if other.size:
        ax.hist(other, bins=bins, density=True, color="0.7",
                label="another seed's head" if ds.attrs["task"] == "cellular_automata" else "another unit's head")
    if own.size:
        ax.hist(own, bins=bins, density=True, color="C0", alpha=0.7, label="its own head")
    ax.axvline(0, color="k", lw=1)
    ax.set_xlabel("lead (steps)")
for ax in axes[0][::3]:
    ax.set_ylabel("density")
axes[0][0].legend(fontsize=7)
tidy(fig)

# %% [markdown]
# ## 6. Early warning
#
# Can a unit's rise be forecast from the first part of its training? For every unit still on
# its plateau at a horizon (a fixed fraction of the setting's median rise step), a Cox model
# fitted on the other seeds' units ranks it from the level and slope (per ln step, last four
# evaluations) of what the run shows up to the horizon: its continuous metric's progress and,
# for the synthetic tasks, the most mass any head puts on its parents and the least entropy of
# any head. Harrell's concordance scores the held-out rankings with censored units kept
# (scikit-survival); a forecast that predicts the median for every unit scores 0.5. The one published
# reproduction of this paper (GaganGutta/attention-emergence) reports r = 0.57 from the first 500
# steps on 40 runs of S = 12, s = 3, with no run censored.

# %%
md("Features: " + "; ".join(f"{label(ds)}: {ds.attrs['forecast_features']}" for ds in list(mirage.values())[-2:]) + ".")

# %%
#| label: fig-mirage-forecast
#| fig-cap: "Held-out forecast risk (higher: expected to rise sooner) against the step at which each unit rose under accuracy (open triangles: never rose, drawn at the budget), for the units still on their plateau at the horizon (dashed), one panel per setting; concordance (C) in the title, 0.5 for predicting the median."
fig, axes = panels(len(mirage), height=3.4)
for ax, (name, ds) in zip(axes[0], mirage.items()):
    c = ds.attrs.get("forecast_concordance", np.nan)
    ax.set_title(f"{label(ds)}\nC = {fmt(c, 2)}", fontsize=9)
    risk = ds["forecast_risk"].values.ravel()
    acc = ds.sel(unit_metric="accuracy")
    t = np.exp(acc["unit_midpoint"].values.ravel())
    cen = acc["unit_censored"].values.ravel() == 1
    ok = np.isfinite(risk)
    if not ok.any():
        nothing(ax, "too few units or seeds\nto forecast")
        continue
    ax.semilogx(t[ok & ~cen], risk[ok & ~cen], "o", ms=3, alpha=0.6)
    ax.semilogx(t[ok & cen], risk[ok & cen], "^", mfc="none", ms=4, color="C3")
    ax.axvline(ds.attrs["forecast_horizon_step"], ls="--", color="0.5", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("rise step")
for ax in axes[0][::3]:
    ax.set_ylabel("forecast risk")
tidy(fig)

# %%
table(pd.DataFrame([{"runs": label(ds), "horizon (step)": fmt_step(ds.attrs["forecast_horizon_step"]),
                     "fraction of the median rise": fmt(ds.attrs["forecast_horizon_fraction"], 2),
                     "units forecast": int(ds.attrs["forecast_units"]), "seeds": ds.sizes["seed"],
                     "concordance (held-out)": fmt(ds.attrs["forecast_concordance"], 2),
                     "90% interval (seeds resampled)": "–".join(fmt(v, 2) for v in
                                                               np.atleast_1d(ds.attrs["forecast_concordance_interval"])),
                     "predict-the-median": "0.5"}
                    for ds in mirage.values()]), index=False)

# %% [markdown]
# ## Claims

# %%
claims_section("09_mirage")

# %%
md("""The metric rule asks whether a continuous metric rises at most `claims.metric_factor` times as wide as
greedy accuracy (each seed's median over its units, then the median over seeds, its interval a sign test
over seeds); the randomness rule whether the
across-seed interquartile range of a unit's rise midpoint exceeds the median within-run rise width times
`claims.random_ratio` (Kaplan-Meier quartiles, so seeds that never rose stay in; the interval from runs
simulated with the threshold's spread, since the quartiles of a few seeds understate it); the precursor rule whether
the loss's change point follows the attention's in most seeds (sign test over seeds) and more closely for a
unit's own head than for another unit's (permutation within seeds), and it says "inconclusive" when the
median lead is inside one evaluation interval. The automata's cells all read one window, found once in a
run: there the randomness rule times each run's whole answer (one unit a run, not its cells, which rise
together), and the precursor rule pairs a run's loss against another seed's head, since another cell's head
is the same head. The resolution rule reads the figure's shifts in each run's
own accuracy rise width (ln steps, never below one interval) and asks whether a small test set dates the jump
within `claims.resolution_widths` of them: a tolerance of evaluation intervals would tighten with a denser
grid while the jump stays what it is. Each verdict above comes from its rule in emergence/claims/verdicts.py,
applied to this run's results with the thresholds in params.yaml's `claims` section, fixed before the run; the
scorecard on the report's first page lists them all, with Benjamini-Hochberg q-values across its tests.""")

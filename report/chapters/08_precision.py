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
# # Numeric precision
#
# Every claim here is read from training dynamics, so a faster training precision is only
# usable if it leaves those dynamics alone. Under `train.precision: bf16-autocast` the
# training forward's matmuls run in bfloat16 (weights, optimiser state, loss and every
# evaluation stay float32; so do the recurrent mixers' scans and, on a CPU, the attention's
# softmax, its products running in bfloat16). The default cells of the linear map and of the cellular automata are trained
# in both precisions with the same seeds and data (a task may train longer than its default
# cell, `sweeps.precision.budget_factor`, so that its jumps finish: the run is the same up to
# the default's budget, and an unfinished jump has no width to compare; and with more seeds,
# `sweeps.precision.n_seeds`, so that a difference can be found at all; the table gives each
# task's steps and seeds), and compared on the statistics the claims use: Kaplan-Meier medians of the
# plateau end and of emergence, the mean final loss and the Kaplan-Meier median per-unit jump
# width (jumps unfinished at the budget censored). The seed is the unit and the pair shares its
# data and initialisation, so each statistic is compared as a ratio, bfloat16 over float32 on
# the same seeds, with a paired bootstrap interval. A task *differs* when a sign-flip
# permutation test (each seed's pair swapped; each seed scores which precision ran later, by
# the log-rank within the seed, or the log ratio of the final losses) finds a ratio's p below
# alpha over the number of statistics; it *agrees* when nothing differs and every ratio's
# interval lies inside the margin `sweeps.precision.margin`; otherwise it is *undecided*, and
# says how many seeds would decide. bfloat16 may become a default only if every task agrees.
# The rule's behaviour on simulated tasks (how often a harmless precision is said to differ,
# how often a shifted one is said to agree) is in params.yaml beside the margin.

# %% tags=["parameters"]
max_figure_seeds = 16

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import display

from emergence.pipeline.stage import pipeline_paths
from emergence.report.reporting import fmt, load, load_folder, md, setup_style, table

setup_style()
summary = load("precision_summary")
cells = load_folder("precision_cells")
tasks = [str(t) for t in summary["task"].values]  # empty where this profile compares none
precisions = [str(p) for p in summary["precision"].values]
palette = dict(zip(precisions, sns.color_palette("colorblind", len(precisions))))
TASK_NAME = {"linear_map": "linear map", "cellular_automata": "cellular automata", "language_model": "language models"}
defaults = dict(item.split(":") for item in summary.attrs["default_precision"].split(",") if item)
bf16_defaults = [TASK_NAME.get(t, t) for t, p in defaults.items() if p != "float32"]  # sections this run trains in bf16
margin = float(summary.attrs["margin"])


def interval(task, precision, statistic):
    v = summary["value"].sel(task=task, precision=precision, statistic=statistic).values
    return f"{fmt(v[0], 4)} [{fmt(v[1], 4)}, {fmt(v[2], 4)}]"


# %% [markdown]
# ## Verdicts

# %%
def decision(verdicts: dict[str, str]) -> str:
    """The rule is pre-registered for the whole check: any statistic that differs, in any task,
    keeps float32 the default of every task (a task that agrees alone does not switch)."""
    if all(v == "agree" for v in verdicts.values()):
        return "Every task agrees: bfloat16 autocast may train the synthetic tasks by default."
    others = ", ".join(f"{task}: {v}" for task, v in verdicts.items() if v != "agree")
    text = f"Not every task agrees ({others}), so float32 stays the default for every task"
    text += ", including one that agrees on its own." if "agree" in verdicts.values() else "."
    if "differ" not in verdicts.values():
        text += (" No task was found to differ either: this check cannot say that bfloat16 changes the "
                 "dynamics, only that it has not been shown to leave them alone (the reasons above say "
                 "how many seeds would decide).")
    return text


def verdict_rows(result, seeds: dict[str, int]) -> list[dict]:
    return [{"task": TASK_NAME.get(str(t), str(t)), "seeds": seeds[str(t)],
             "verdict": str(result["verdict"].sel(task=t).values),
             "why": str(result["reasons"].sel(task=t).values)
             or f"every ratio's interval inside [{fmt(1 / margin, 3)}, {fmt(margin, 3)}], no difference found"}
            for t in result["task"].values]


if not tasks:
    trains = ", ".join(f"the {TASK_NAME.get(t, t)} in {p}" for t, p in defaults.items())
    display(md("**This profile compares no task** (`sweeps.precision.tasks` is empty), so nothing below was run; "
               f"this run trains {trains} (`train.precision`)"
               + (f", **{', '.join(bf16_defaults)} in bfloat16 unchecked by this run**. " if bf16_defaults else ". ")
               + "Why this profile skips the check, with its cost, is beside that key in params.yaml; the "
                 "`paper` profile runs it, and listing tasks there runs it on this one."))
    # The run that decided the default's precision, kept: its seeds cost more than bfloat16 saves a run.
    record = load("precision_record")
    display(md(f"**The check that decided the default precision** ran once and is kept in "
               f"`{pipeline_paths()['precision_record']}`: {record.attrs['profile_run']}; commit "
               f"{record.attrs['source_commit']}, {record.attrs['machine']}, its cells "
               f"{fmt(float(record.attrs['build_wall_seconds']) / 60)} min. "
               + decision({TASK_NAME.get(str(t), str(t)): str(record["verdict"].sel(task=t).values)
                           for t in record["task"].values})))
    display(md(table(pd.DataFrame(verdict_rows(record, json.loads(record.attrs["n_seeds"]))), index=False).data))
    display(md(table(pd.DataFrame(
        [{"bf16 / float32 [interval], p": str(s), **{TASK_NAME.get(str(t), str(t)):
                                  f"{fmt(r[0])} [{fmt(r[1])}, {fmt(r[2])}], p = {fmt(float(record['p_value'].sel(task=t, statistic=s)))}"
                                  for t in record["task"].values
                                  for r in [record["ratio"].sel(task=t, statistic=s).values]}}
         for s in record["statistic"].values]), index=False).data))
rows = [{"task": row["task"], "seeds": row["seeds"], "steps": int(cells[t]["step"].values[-1]),
         "verdict": row["verdict"], "default precision of this run": defaults[t], "why": row["why"]}
        for t, row in zip(tasks, verdict_rows(summary, {t: cells[t].sizes["seed"] for t in tasks}))]
md(table(pd.DataFrame(rows), index=False).data) if rows else None

# %%
if tasks:
    verdicts = {TASK_NAME.get(str(t), str(t)): str(summary["verdict"].sel(task=t).values) for t in summary["task"].values}
    text = decision(verdicts)
    if all(v == "agree" for v in verdicts.values()):
        text += f" This run: {', '.join(f'{TASK_NAME.get(t, t)} {p}' for t, p in defaults.items())}."
    elif bf16_defaults:
        text += (f" **This run nevertheless trains {', '.join(bf16_defaults)} in bfloat16 by default**: "
                 "its results are not covered by this check.")
    # Under CPU bfloat16 the thread count changes the numbers (float32's do not), so say what it was.
    bf16_threads = sorted({json.loads(cells[str(t)].attrs["configs"])[j][str(t)]["train"]["threads"]
                           for t in summary["task"].values for j, p in enumerate(cells[str(t)]["precision"].values)
                           if str(p) != "float32" and cells[str(t)].attrs.get("device") == "cpu"})
    if bf16_threads:
        threads = " or ".join(str(n) if n else "every" for n in bf16_threads)
        text += (f" The bfloat16 runs trained on {threads} torch thread(s) of a CPU: under CPU bfloat16 the "
                 "thread count changes the numbers (a float32 run's do not depend on it).")
    display(md(text))

# %% [markdown]
# ## The statistics side by side
#
# Value [interval] per precision; steps for the medians and widths, nats for the loss.

# %%
if tasks:
    LABEL = {"plateau_end_step": "plateau end (KM median)", "emergence_step": "emergence (KM median)",
             "final_loss": "final loss (mean)", "unit_transition_width": "per-unit jump width (KM median; unfinished jumps censored)"}
    rows = []
    for task in summary["task"].values:
        for statistic in summary["statistic"].values:
            row = {"task": TASK_NAME.get(str(task), str(task)), "statistic": LABEL.get(str(statistic), str(statistic))}
            row.update({p: interval(task, p, statistic) for p in precisions})
            rows.append(row)
    display(md(table(pd.DataFrame(rows), index=False).data))

# %% [markdown]
# ## bfloat16 over float32, seed by seed
#
# The ratio of each statistic over the same seeds, with its paired bootstrap interval, and the
# sign-flip permutation p.

# %%
if tasks:
    rows = []
    for task in summary["task"].values:
        for statistic in summary["statistic"].values:
            r = summary["ratio"].sel(task=task, statistic=statistic).values
            rows.append({"task": TASK_NAME.get(str(task), str(task)), "statistic": LABEL.get(str(statistic), str(statistic)),
                         "ratio [interval]": f"{fmt(r[0], 3)} [{fmt(r[1], 3)}, {fmt(r[2], 3)}]",
                         "inside the margin": bool(1 / margin <= r[1] and r[2] <= margin),
                         "p": fmt(float(summary["p_value"].sel(task=task, statistic=statistic)), 3)})
    display(md(table(pd.DataFrame(rows), index=False).data))

# %% [markdown]
# ## Learning curves in both precisions

# %%
#| label: fig-precision-curves
#| fig-cap: "Accuracy against training step for every seed of the default cells, float32 and bfloat16 autocast (colours), one panel per task. The same seed sees the same batches in both."
if tasks:
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        ds = cells[task]
        for j, precision in enumerate(ds["precision"].values):
            acc = ds["accuracy"].isel(precision=j).values[:max_figure_seeds]
            for k, curve in enumerate(acc):
                ax.plot(ds["step"].values, curve, color=palette[str(precision)], lw=0.9, alpha=0.8,
                        label=str(precision) if k == 0 else None)
        ax.set_title(TASK_NAME.get(task, task))
        ax.set_xlabel("step")
    axes[0][0].set_ylabel("accuracy")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()

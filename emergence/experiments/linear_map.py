"""The linear-map emergence experiment: task file -> trained seeds -> results NetCDF."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch
import xarray as xr

from emergence.config import config_hash
from emergence.io import read_netcdf, write_netcdf
from emergence.model import ModelConfig
from emergence.provenance import code_version
from emergence.tasks import linear_map as lm
from emergence.train import Task, merge_checkpoints, resolve_device, schedules, train_group


def layout_of(task_params: dict) -> lm.Layout:
    return lm.Layout(task_params["state_size"], task_params["separator"])


def build_task(task_params: dict) -> xr.Dataset:
    """The fixed matrix A, the evaluation set and the ground-truth pattern, as a Dataset."""
    layout = layout_of(task_params)
    S = layout.state_size
    A = lm.sample_sparse_matrix(S, task_params["sparsity"], task_params["task_seed"], task_params["distinct_rows"])
    # The evaluation set is drawn from its own stream, disjoint from the A draw.
    rng = np.random.default_rng([task_params["task_seed"], 1])
    x0 = rng.integers(0, 2, size=(task_params["eval_sequences"], S), dtype=np.uint8)
    tokens = lm.make_sequences(A, x0, layout)
    gt = lm.ground_truth_pattern(A, layout)
    weights = lm.loss_weights(layout, task_params["loss_positions"])
    ds = xr.Dataset(
        {
            "A": (("row", "col"), A, {"long_name": "sparse map over GF(2): x_1 = A x_0 mod 2"}),
            "eval_tokens": (("sequence", "position"), tokens.astype(np.int8)),
            "ground_truth_pattern": (("query", "key"), gt,
                                     {"long_name": "attention mask the task needs at the next-token offset"}),
            "loss_weight": (("prediction",), weights),
        },
        coords={"row": np.arange(S), "col": np.arange(S), "query": np.arange(layout.seq_len),
                "key": np.arange(layout.seq_len), "position": np.arange(layout.seq_len),
                "prediction": np.arange(layout.seq_len - 1)},
        attrs={"task_params": json.dumps(task_params, sort_keys=True),
               "chance_loss": lm.chance_loss(),
               "loss_floor": lm.loss_floor(layout, task_params["loss_positions"]),
               "code_version": code_version()},
    )
    return ds


def task_tensors(task_ds: xr.Dataset, task_params: dict) -> Task:
    layout = layout_of(task_params)
    A = torch.tensor(task_ds["A"].values, dtype=torch.float32)
    return Task(eval_tokens=torch.tensor(task_ds["eval_tokens"].values, dtype=torch.int64),
                loss_weights=torch.tensor(task_ds["loss_weight"].values, dtype=torch.float32),
                gt_pattern=torch.tensor(task_ds["ground_truth_pattern"].values, dtype=torch.float32),
                output_positions=torch.as_tensor(layout.prediction_positions, dtype=torch.int64)[:, None],
                n_output_tokens=2,
                sampler=lambda batch, gen: lm.sample_batch(A, batch, layout, gen))


def model_config(model_params: dict, layout: lm.Layout) -> ModelConfig:
    return ModelConfig(vocab_size=layout.vocab_size, seq_len=layout.seq_len, n_layer=model_params["n_layer"],
                       d_model=model_params["d_model"], n_head=model_params["n_head"],
                       d_mlp=model_params["d_mlp"], norm=model_params["norm"])


def seed_groups(train: dict) -> list[list[int]]:
    seeds = list(range(train["first_seed"], train["first_seed"] + train["n_seeds"]))
    k = train["seeds_per_group"]
    return [seeds[i:i + k] for i in range(0, len(seeds), k)]


def run_training(params: dict, task_path: Path, results_path: Path, checkpoint_dir: Path,
                 scratch_root: Path) -> xr.Dataset:
    """Train every seed (resuming from scratch), then write results and checkpoints atomically."""
    section = params["linear_map"]
    task_params, train = section["task"], section["train"]
    task_ds = read_netcdf(task_path)
    if train["threads"] > 0:
        torch.set_num_threads(train["threads"])
    device = resolve_device(train["device"])
    task = task_tensors(task_ds, task_params).to(device)
    cfg = model_config(section["model"], layout_of(task_params))

    run_config = {"linear_map": {k: section[k] for k in ("task", "model", "train")}}
    # Scratch is keyed by everything that changes the trajectory (not by analysis/report params).
    key = config_hash({"config": run_config, "A": task_ds["A"].values.tolist(), "code": code_version()})
    scratch = scratch_root / f"linear_map-{key}"
    groups = seed_groups(train)
    recorders = []
    for gi, seeds in enumerate(groups):
        recorders.append(train_group(seeds, cfg, task, train, scratch / f"group{gi}", gi, len(groups), device))

    ds = results_dataset(recorders, groups, cfg, task_ds, train, run_config)
    merge_checkpoints([scratch / f"group{gi}" for gi in range(len(groups))], checkpoint_dir)
    write_netcdf(ds, results_path)
    shutil.rmtree(scratch, ignore_errors=True)
    return ds


def results_dataset(recorders, groups, cfg: ModelConfig, task_ds: xr.Dataset, train: dict,
                    run_config: dict) -> xr.Dataset:
    seeds = [s for g in groups for s in g]
    arrays = {name: np.concatenate([r.arrays[name] for r in recorders]) for name in recorders[0].arrays}
    diverged = np.concatenate([r.diverged_step for r in recorders])
    steps, ckpts = schedules(train)
    S, T = task_ds.sizes["row"], task_ds.sizes["query"]
    per_eval = ("seed", "step")
    heads = ("seed", "step", "layer", "head", "bit")
    data_vars = {
        "loss": (per_eval, arrays["loss"], {"long_name": "evaluation loss on the training objective's positions"}),
        "output_loss": (per_eval, arrays["output_loss"], {"long_name": "mean loss on the bits of x_1"}),
        "accuracy": (per_eval, arrays["accuracy"], {"long_name": "mean greedy bit accuracy on x_1"}),
        "exact_match": (per_eval, arrays["exact_match"], {"long_name": "fraction of sequences with all of x_1 right"}),
        "p_correct": (per_eval, arrays["p_correct"], {"long_name": "mean probability of the correct bit on x_1"}),
        "bit_loss": (per_eval + ("bit",), arrays["bit_loss"], {"long_name": "loss on output bit i (row i of A)"}),
        "bit_accuracy": (per_eval + ("bit",), arrays["bit_accuracy"], {"long_name": "greedy accuracy on output bit i"}),
        "attention_entropy": (heads, arrays["attention_entropy"],
                              {"long_name": "entropy (nats) of the attention row predicting bit i"}),
        "parent_mass": (heads, arrays["parent_mass"],
                        {"long_name": "attention mass of the row predicting bit i on A's parents of i"}),
        "attention_map": (("seed", "checkpoint_step", "layer", "head", "query", "key"), arrays["attention_map"],
                          {"long_name": "attention pattern averaged over the evaluation set"}),
        "train_loss": (("seed", "train_step"), arrays["train_loss"], {"long_name": "training batch loss"}),
        "diverged_step": (("seed",), diverged, {"long_name": "first step with NaN or exploding loss; -1 if none"}),
        "A": (("row", "col"), task_ds["A"].values),
        "ground_truth_pattern": (("query", "key"), task_ds["ground_truth_pattern"].values),
    }
    coords = {"seed": np.array(seeds), "step": np.array(steps), "checkpoint_step": np.array(ckpts),
              "train_step": np.arange(1, train["steps"] + 1), "bit": np.arange(S), "layer": np.arange(cfg.n_layer),
              "head": np.arange(cfg.n_head), "query": np.arange(T), "key": np.arange(T),
              "row": np.arange(S), "col": np.arange(S)}
    attrs = {"experiment": "linear_map", "config": json.dumps(run_config, sort_keys=True),
             "model_config": json.dumps(cfg.to_dict(), sort_keys=True), "code_version": code_version(),
             "chance_loss": task_ds.attrs["chance_loss"], "loss_floor": task_ds.attrs["loss_floor"],
             "torch_version": torch.__version__}
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


def analyse(results: xr.Dataset, analysis: dict) -> xr.Dataset:
    """Per-seed and per-(seed, bit) emergence statistics, with censoring, from training results."""
    from emergence import analysis as an

    steps = results["step"].values
    thresholds = dict(plateau=analysis["plateau_threshold"], emergence=analysis["emergence_threshold"],
                      solved=analysis["solved_threshold"], smoothing_window=analysis["smoothing_window"])
    seeds, bits = results["seed"].values, results["bit"].values
    L, H = results.sizes["layer"], results.sizes["head"]
    n_seed, n_bit = len(seeds), len(bits)

    per_seed = {k: np.full(n_seed, np.nan) for k in (
        "plateau_end_step", "emergence_step", "solved_step", "transition_width", "final_loss", "final_output_loss",
        "final_accuracy", "final_exact_match", "final_p_correct")}
    per_seed_flags = {k: np.zeros(n_seed, dtype=np.int8) for k in ("plateau_end_censored", "emergence_censored",
                                                                    "solved_censored")}
    per_bit = {k: np.full((n_seed, n_bit), np.nan) for k in (
        "bit_plateau_end_step", "bit_emergence_step", "bit_solved_step", "bit_transition_width",
        "head_parent_mass_rise", "entropy_drop_step", "entropy_before", "entropy_after")}
    bit_censored = np.zeros((n_seed, n_bit), dtype=np.int8)
    responsible = np.full((n_seed, n_bit), -1, dtype=np.int64)

    for k in range(n_seed):
        acc = results["accuracy"].values[k]
        e = an.emergence_of(steps, an.progress_from_accuracy(acc), **thresholds)
        for name, c in (("plateau_end", e.plateau_end), ("emergence", e.emergence), ("solved", e.solved)):
            per_seed[f"{name}_step"][k] = c.step
            per_seed_flags[f"{name}_censored"][k] = c.censored
        per_seed["transition_width"][k] = e.transition_width
        last = -1
        for name, var in (("final_loss", "loss"), ("final_output_loss", "output_loss"), ("final_accuracy", "accuracy"),
                          ("final_exact_match", "exact_match"), ("final_p_correct", "p_correct")):
            per_seed[name][k] = results[var].values[k, last]

        for i in range(n_bit):
            b = an.emergence_of(steps, an.progress_from_accuracy(results["bit_accuracy"].values[k, :, i]), **thresholds)
            per_bit["bit_plateau_end_step"][k, i] = b.plateau_end.step
            per_bit["bit_emergence_step"][k, i] = b.emergence.step
            per_bit["bit_solved_step"][k, i] = b.solved.step
            per_bit["bit_transition_width"][k, i] = b.transition_width
            bit_censored[k, i] = b.emergence.censored
            if b.emergence.censored:
                continue
            # Which head learned row i: the largest rise in parent mass across the bit's jump.
            before = np.searchsorted(steps, b.plateau_end.step, side="right") - 1
            after = min(len(steps) - 1, int(np.searchsorted(steps, b.solved.step if not b.solved.censored
                                                            else steps[-1], side="left")))
            before = max(0, min(before, after - 1))
            pm = results["parent_mass"].values[k, :, :, :, i].reshape(len(steps), L * H)
            flat, rise = an.responsible_head(pm[after], pm[before])
            responsible[k, i] = flat
            per_bit["head_parent_mass_rise"][k, i] = rise
            ent = results["attention_entropy"].values[k, :, flat // H, flat % H, i]
            per_bit["entropy_drop_step"][k, i] = an.steepest_drop_step(steps, ent)
            per_bit["entropy_before"][k, i] = ent[before]
            per_bit["entropy_after"][k, i] = ent[after]

    data_vars = {name: (("seed",), v) for name, v in {**per_seed, **per_seed_flags}.items()}
    data_vars.update({name: (("seed", "bit"), v) for name, v in per_bit.items()})
    data_vars["bit_emergence_censored"] = (("seed", "bit"), bit_censored)
    data_vars["responsible_layer"] = (("seed", "bit"), np.where(responsible >= 0, responsible // H, -1))
    data_vars["responsible_head"] = (("seed", "bit"), np.where(responsible >= 0, responsible % H, -1))
    data_vars["diverged_step"] = (("seed",), results["diverged_step"].values)
    attrs = dict(results.attrs)
    attrs["analysis"] = json.dumps(analysis, sort_keys=True)
    attrs["budget_step"] = int(steps[-1])
    return xr.Dataset(data_vars, coords={"seed": seeds, "bit": bits}, attrs=attrs)


def summary_metrics(analysed: xr.Dataset) -> dict:
    """Headline numbers for `dvc metrics` (JSON: unreached medians are null, not inf)."""
    from emergence import analysis as an

    n = analysed.sizes["seed"]
    t, c = analysed["emergence_step"].values, analysed["emergence_censored"].values.astype(bool)
    med = an.km_median(t, c)
    solved = int((analysed["solved_censored"].values == 0).sum())
    lo, hi = an.bootstrap_km_median(t, c, n_boot=500)
    width = analysed["bit_transition_width"].values
    finite = lambda x: float(x) if np.isfinite(x) else None  # noqa: E731
    return {
        "n_seeds": n,
        "fraction_solved": solved / n,
        "emergence_step_median": finite(med),
        "emergence_step_median_ci90": [finite(lo), finite(hi)],
        "emergence_step_min": finite(np.min(t[~c])) if (~c).any() else None,
        "emergence_step_max": finite(np.max(t[~c])) if (~c).any() else None,
        "bit_transition_width_median": finite(np.nanmedian(width)) if np.isfinite(width).any() else None,
        "final_loss_mean": finite(np.nanmean(analysed["final_loss"].values)),
        "final_accuracy_mean": finite(np.nanmean(analysed["final_accuracy"].values)),
        "n_diverged": int((analysed["diverged_step"].values >= 0).sum()),
    }


def plot_table(results: xr.Dataset) -> "list[dict]":
    """Rows for the DVC plot of accuracy and loss against step (mean and range over seeds)."""
    rows = []
    acc, loss = results["accuracy"].values, results["output_loss"].values
    for j, step in enumerate(results["step"].values):
        rows.append({"step": int(step),
                     "accuracy_mean": round(float(np.nanmean(acc[:, j])), 6),
                     "accuracy_min": round(float(np.nanmin(acc[:, j])), 6),
                     "accuracy_max": round(float(np.nanmax(acc[:, j])), 6),
                     "output_loss_mean": round(float(np.nanmean(loss[:, j])), 6)})
    return rows

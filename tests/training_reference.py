"""Reference numbers of training on the smoke profile, so that a change to the training code
that is meant to keep its results (a refactor, a shared helper) is checked in seconds instead of
by a cold default run.

The runs go through the code every experiment trains by: a linear-map cell and an automata
cell through `runner.run_training`, the smoke mixer comparison's linear-map cell of each other
sequence mixer (the two MLP-Mixer readings and the unmasked control, Mamba-2, Gated DeltaNet,
RWKV-7: their reference implementations,
eager), and a tiny language model and its Dyck-pre-pretrained twin through
`language_model.train_size`. Each result is summarised by its layout (dims, coords,
attributes other than the code and torch versions) and, per variable, its mean, mean absolute
value and NaN count; the two loss curves are kept whole. tests/test_training_reference.py
compares a fresh run with tests/training_reference.json within `RTOL` / `ATOL`.

    python tests/training_reference.py   # rewrite the JSON (after a change meant to move results,
                                         # or an edit of the smoke profile's training sections)

The tolerances allow rounding differences between CPU families (float32 matmuls sum in another
order on another CPU): every initial weight perturbed by one part in 10^6 (more than float32
rounding) moved no summary of these runs by more than 1.2e-6 (relative; 1.7e-7 but for the
recurrent mixers' attention-free parent mass), while the next seed moved every run's numbers
beyond the tolerances, a learning rate 1% higher every run that takes the section's (the
MLP-Mixer has its own), and half the gradient clip every run but the twin, whose gradients it
never clips (measured on an Intel Xeon, 2026-12-05).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import torch
import xarray as xr

REFERENCE = Path(__file__).with_name("training_reference.json")
CURVES = ("loss", "train_loss")  # kept whole
VOLATILE_ATTRS = ("code_version", "torch_version")
RTOL, ATOL = 1e-4, 1e-6
# Greedy-decision metrics move by whole flips (one borderline argmax: ~2e-5 of a smoke run's mean
# unit accuracy), so they may move by a few; every run also has continuous curves held to RTOL.
DECISIONS, DECISION_ATOL = ("accuracy", "exact", "correct"), 1e-4


def reference_params() -> dict:
    from emergence.pipeline.config import load_params

    params = load_params(profile="smoke")
    params["language_model"]["sizes"] = {"tiny": {"n_layer": 2, "n_head": 2, "d_head": 4, "mlp_ratio": 2}}
    params["language_model"]["pretraining"].update(sizes=["tiny"], tasks=["dyck"])
    params["language_model"]["rare_skills"]["sizes"] = []   # its size is not among these
    return params


def train_task(module, section, root: Path, checkpoints: bool = True) -> xr.Dataset:
    """Train a synthetic task's params section (its module's Section, or the mapping params.yaml
    would hold, without `analysis`) as its stage does (the task file, then the runner):
    root/task.nc, root/train.nc, root/ckpt/ where asked, root/scratch/."""
    from emergence.common.io import write_netcdf
    from emergence.common.schema import load
    from emergence.runs.runner import run_training

    if isinstance(section, dict):
        section = load(module.Section, {k: v for k, v in section.items() if k != "analysis"}, module.NAME)
    root.mkdir(parents=True, exist_ok=True)
    write_netcdf(module.build_task(section.task), root / "task.nc")
    return run_training(module, section, root / "task.nc", root / "train.nc", root / "ckpt" if checkpoints else None,
                        root / "scratch")


def reference_runs(root: Path) -> dict[str, xr.Dataset]:
    """Every reference run's results, trained into `root`."""
    from dataclasses import replace

    from emergence.common.experiments import experiment
    from emergence.core.tasks import cellular_automata, linear_map
    from emergence.runs import language_model
    from emergence.runs.cells import Setting
    from emergence.runs.sweeps import mixers

    def cell(module, section, name: str) -> xr.Dataset:
        return train_task(module, section, root / name, checkpoints=False)

    params = reference_params()
    setting = Setting.of(params)
    out = {module.NAME: cell(module, setting.section(module.NAME), module.NAME)
           for module in (linear_map, cellular_automata)}
    for cell_name, config in mixers.cells(setting, experiment("mixers").section(params)):  # each other mixer, eager
        arch = cell_name.rsplit("-", 1)[1]
        if cell_name.startswith("linear_map-") and arch != "transformer":
            out[f"mixer {arch}"] = cell(linear_map, replace(config, train=replace(config.train, compile="none")),
                                        cell_name)
    section = language_model.LanguageModelTraining.of(params["language_model"])
    out["language_model"] = language_model.train_size(section, "tiny", root / "tiny", root / "scratch")
    out["language_model+dyck"] = language_model.train_size(section, "tiny", root / "tiny+dyck", root / "scratch",
                                                           pretraining="dyck")
    return out


def _number(x) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def summary(ds: xr.Dataset) -> dict:
    """What the reference keeps of one result (JSON types only)."""
    variables = {}
    for name, var in sorted(ds.data_vars.items()):
        values = np.asarray(var.values, dtype=np.float64)
        finite = values[~np.isnan(values)]
        entry = {"dims": list(var.dims), "shape": list(values.shape), "nan": int(np.isnan(values).sum()),
                 "mean": _number(finite.mean()) if finite.size else None,
                 "mean_abs": _number(np.abs(finite).mean()) if finite.size else None}
        if name in CURVES:
            entry["values"] = [_number(v) for v in values.ravel()]
        variables[name] = entry
    attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in sorted(ds.attrs.items())
             if k not in VOLATILE_ATTRS}
    coords = {k: np.asarray(v.values).tolist() for k, v in sorted(ds.coords.items())}
    order = [k for k in ds.attrs if k not in VOLATILE_ATTRS]  # a NetCDF file's bytes follow it
    return {"attrs": json.loads(json.dumps(attrs, default=str)), "attr_order": order, "coords": coords,
            "variables": variables}


def differences(expected: dict, found: dict, rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """Where `found` (a `summary`) departs from `expected`: layout exactly, numbers within tolerance."""
    out = []
    for part in ("attrs", "coords"):
        for key in sorted(expected[part].keys() | found[part].keys()):
            if expected[part].get(key) != found[part].get(key):
                out.append(f"{part} {key}: expected {str(expected[part].get(key))[:80]}, "
                           f"got {str(found[part].get(key))[:80]}")
    if expected["attr_order"] != found["attr_order"]:
        out.append(f"attribute order: expected {expected['attr_order']}, got {found['attr_order']}")
    want, got = expected["variables"], found["variables"]
    for name in sorted(want.keys() | got.keys()):
        if name not in want or name not in got:
            out.append(f"variable {name}: only in {'the reference' if name in want else 'this run'}")
            continue
        a, b = want[name], got[name]
        for key in ("dims", "shape", "nan"):
            if a[key] != b[key]:
                out.append(f"{name}.{key}: expected {a[key]}, got {b[key]}")
        tolerance = dict(rtol=rtol, atol=DECISION_ATOL if any(w in name for w in DECISIONS) else atol)
        for key in ("mean", "mean_abs", "values"):
            x = np.asarray(a.get(key), dtype=float)
            y = np.asarray(b.get(key), dtype=float)
            if x.shape != y.shape or not np.allclose(x, y, equal_nan=True, **tolerance):
                worst = float(np.nanmax(np.abs(x - y))) if x.shape == y.shape else float("nan")
                out.append(f"{name}.{key}: differs (largest difference {worst:.3g})")
    return out


def write(root: Path) -> None:
    runs = reference_runs(root)
    REFERENCE.write_text(json.dumps({name: summary(ds) for name, ds in runs.items()}, indent=1, sort_keys=True)
                         + "\n")


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp))
    print(f"wrote {REFERENCE}")

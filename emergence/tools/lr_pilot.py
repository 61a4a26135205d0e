"""A learning-rate pilot for the architecture comparison (claim 8): each architecture trained
on the comparison's first setting of a task at several learning rates, on a short budget and
few seeds, and read by the same statistics as the sweep (emergence with censoring, final loss).

The comparison is fair when every architecture trains at its own best rate: this prints one
row per (architecture, rate) so that the rate chosen for each can be written into params.yaml
(sweeps.mixers.architectures.<name>.lr), and the pilot's numbers into docs/pilots.md, before the
run that decides.
Pilot cells go through the cell cache like any other (a rerun trains nothing).

    python -m emergence.tools.lr_pilot --lrs 0.001 0.003 0.01 --steps 1500 --seeds 2 \
        [--task linear_map|cellular_automata] [--architectures transformer static_mixing token_mlp] [--profile default]

`--lrs own` trains each architecture at the rate params.yaml gives it for the task, and
`--set KEY=VALUE` (dotted keys, YAML values; validated) pilots a setting the comparison does
not run yet, such as a larger automata rule pool: `--set cellular_automata.task.n_rules=16`.
"""
from __future__ import annotations

import argparse
import copy
from dataclasses import replace

import numpy as np
import yaml

from emergence.analysis.events import analyse, task_analyses
from emergence.analysis.survival import km_median
from emergence.pipeline.config import REPO_ROOT, load_params, validate
from emergence.common.schema import load
from emergence.runs.cells import Setting, load_cell
from emergence.runs.sweeps import mixers as mc


def own_rate(setting: Setting, sweep: mc.MixerSweepArgs, arch: mc.Architecture, task: str) -> float:
    """The rate an architecture trains at on `task` in the comparison's cells (its own, else the
    task's), read from the cell as the sweep builds it."""
    _, overrides, _ = next(s for s in mc.settings(sweep) if s[0] == task)
    return float(mc.cell_config(setting, sweep, task, overrides, arch).train.lr)


def with_overrides(params: dict, assignments: list[str]) -> dict:
    """params with each 'a.b.c=value' set (the value read as YAML), validated."""
    out = copy.deepcopy(params)
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE")
        *path, last = key.split(".")
        node = out
        for part in path:
            if not isinstance(node.get(part), dict):
                raise SystemExit(f"--set {key}: no section {part!r}")
            node = node[part]
        if last not in node:
            raise SystemExit(f"--set {key}: unknown key {last!r}")
        node[last] = yaml.safe_load(value)
    validate(copy.deepcopy(out))
    return out


def pilot_rows(params: dict, lrs: list[float] | None, steps: int, n_seeds: int, architectures: list[str] | None,
               scratch, task: str = "linear_map") -> list[dict]:
    """One row per (architecture, lr): seeds emerged, KM median emergence, mean final loss.
    `lrs` None: each architecture at its own rate for the task."""
    setting = Setting.of(params)
    sweep = load(mc.MixerSweepArgs, params["sweeps"][mc.SWEEP], f"sweeps.{mc.SWEEP}")
    task, overrides, label = next(s for s in mc.settings(sweep) if s[0] == task)
    pilot = replace(sweep, **{task: replace(getattr(sweep, task), steps=steps, n_seeds=n_seeds)})
    archs = mc.architectures(setting, sweep)
    rows = []
    for name in architectures or list(archs):
        for lr in lrs or [own_rate(setting, sweep, archs[name], task)]:
            rates = replace(archs[name].lr or mc.LearningRates(), **{task: lr})
            config = mc.cell_config(setting, pilot, task, overrides, replace(archs[name], lr=rates, n_seeds=None))
            stats = analyse(load_cell(config, scratch), task_analyses(params)[task])
            t = stats["emergence_step"].values
            censored = stats["emergence_censored"].values.astype(bool)
            rows.append({"architecture": name, "lr": lr, "setting": label, "steps": steps,
                         "emerged": f"{int((~censored).sum())}/{len(t)}",
                         "km_median_emergence": km_median(t, censored),
                         "emergence_steps": [None if c else int(x) for x, c in zip(t, censored)],
                         "mean_final_loss": float(np.nanmean(stats["final_output_loss"].values))})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lrs", nargs="+", required=True, help="rates, or 'own'")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seeds", type=int, required=True)
    parser.add_argument("--task", default="linear_map", choices=mc.TASKS)
    parser.add_argument("--architectures", nargs="*")
    parser.add_argument("--profile", default=None)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    params = with_overrides(load_params(profile=args.profile), args.set)
    lrs = None if args.lrs == ["own"] else [float(x) for x in args.lrs]
    for row in pilot_rows(params, lrs, args.steps, args.seeds, args.architectures,
                          REPO_ROOT / "data" / ".scratch", args.task):
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()

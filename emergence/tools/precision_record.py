"""Keep a precision check's summary as a record (data/records/precision_check.nc), with the
provenance read from the run itself: the profile does not rerun a check whose seeds cost more
than bfloat16 could save it, so its chapter shows the run that decided the default instead.

    python -m emergence.tools.precision_record RUN_REPO OUT_NC

RUN_REPO is the checkout that ran `dvc repro precision_summary` with the check's settings.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import xarray as xr

from emergence.common.io import read_netcdf, write_netcdf


def precision_record(summary: xr.Dataset, params: dict, timing: dict, commit: str) -> xr.Dataset:
    """The summary with what ran it: the commit, the profile and its check settings, the seeds
    of each task, the machines its cells trained on, and the cells' wall time."""
    settings = params["sweeps"]["precision"]
    seeds = {task: settings["n_seeds"].get(task, params[task]["train"]["n_seeds"]) for task in settings["tasks"]}
    record = summary.copy()
    record.attrs.update({
        "source_commit": commit,
        "profile_run": f"profile {params['profile']}, sweeps.precision: {json.dumps(settings, sort_keys=True)}",
        "n_seeds": json.dumps(seeds, sort_keys=True),
        "machine": ", ".join(sorted(set(timing["cpus"].values()))) + f"; {timing['workers']} workers",
        "build_wall_seconds": timing["build_wall_seconds"],
    })
    return record


def main() -> None:
    repo, out = map(Path, sys.argv[1:])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True,
                            check=True).stdout.strip()
    record = precision_record(read_netcdf(repo / "data" / "sweeps" / "precision_summary.nc"),
                              json.loads((repo / "data" / "params.json").read_text()),
                              json.loads((repo / "data" / "timings" / "precision.json").read_text()), commit)
    write_netcdf(record, out)


if __name__ == "__main__":
    main()

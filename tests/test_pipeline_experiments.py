"""DVC experiments on a copy of the smoke build: queued ones (`dvc exp run --queue`, then `dvc
queue start`) run outside the workspace yet read and write the repository's one cell cache, so
each trains only the cells its change touches and gives the bytes the workspace would; `dvc exp
show`, `exp diff`, `metrics diff` and `plots diff` between them show what changed."""
import csv
import io
import json
import time

import pytest
import yaml

from emergence.common.params import deep_merge, merged_params
from emergence.pipeline.config import validate
from emergence.pipeline.cost import planned_cells
from emergence.runs.cache import entry_of
from emergence.runs.cells import cell_request
from smoke_build import sh

pytestmark = pytest.mark.pipeline

# name -> (the override as a user types it, the stage that trains what it changes, the targets queued)
QUEUED = {
    "lr-2e-3": ("linear_map.train.lr=0.002", "linear_map_train", ["linear_map_train"]),
    "sparsity-3-seeds": ("profiles/smoke.yaml:sweeps.sparsity.n_seeds=3", "sparsity",  # the active overlay's key
                         # the stages the change reaches: the overlay is a file dep of every stage, so
                         # its upstream would otherwise rerun too, each loading its cells from the cache
                         ["--single-item", "sparsity", "sparsity_summary", "summary_metrics"]),
}


def _entries(cells):
    return {p.name for p in cells.iterdir() if not p.name.startswith(".")}


def _expected(repo, scratch, name):
    """The cell-cache entries the training stage requests with the override applied, by name."""
    override, stage, _ = QUEUED[name]
    key, value = override.rsplit(":", 1)[-1].split("=")
    edit = yaml.safe_load(value)
    for part in reversed(key.split(".")):
        edit = {part: edit}
    params = validate(deep_merge(merged_params(repo), edit))
    return {entry_of(scratch, r.name, r.key).name for c, k in planned_cells(params)[stage]
            for r in [cell_request(c, scratch, k)]}


def _lock_of(repo, name):
    """The dvc.lock an experiment committed."""
    refs = sh(["git", "for-each-ref", "--format=%(refname)", "refs/exps"], repo).stdout.split()
    (ref,) = [r for r in refs if r.endswith(f"/{name}")]
    return yaml.safe_load(sh(["git", "show", f"{ref}:dvc.lock"], repo).stdout)


def _outs(lock, stage):
    return {o["path"]: o.get("md5") for o in lock["stages"][stage].get("outs", [])}


def test_queued_experiments_train_only_their_cells_and_give_the_workspaces_bytes(smoke_repo, tmp_path):
    scratch = smoke_repo / "data" / ".scratch"
    before = _entries(scratch / "cells")
    expected = {name: _expected(smoke_repo, scratch, name) for name in QUEUED}
    assert all(expected.values()) and not set.union(*expected.values()) & before  # new cells, none cached
    for name, (override, _, targets) in QUEUED.items():
        sh(["dvc", "exp", "run", "--queue", "-n", name, "-S", override, *targets], smoke_repo)
    sh(["dvc", "queue", "start", "-j", "1"], smoke_repo)
    try:
        deadline = time.monotonic() + 600
        while True:
            status = sh(["dvc", "queue", "status"], smoke_repo).stdout
            if not any(word in status for word in ("Queued", "Running")):
                break
            assert time.monotonic() < deadline, status
            time.sleep(2)
    finally:
        sh(["dvc", "queue", "stop"], smoke_repo, check=False)
    assert status.count("Success") == 2, status
    # each trained exactly its own cells, into the repository's cache, and nothing else trained
    assert _entries(scratch / "cells") - before == set.union(*expected.values())
    assert set(QUEUED) <= set(sh(["dvc", "exp", "list", "--name-only"], smoke_repo).stdout.split())
    # the workspace is untouched: the experiments ran in their own copies
    assert yaml.safe_load((smoke_repo / "profiles" / "smoke.yaml").read_text())["sweeps"]["sparsity"]["n_seeds"] == 2

    # `exp show --only-changed`: the two changed parameters (each under its file), the metrics that
    # moved and DVC's six columns naming the row: a table that fits a terminal
    shown = sh(["dvc", "exp", "show", "--only-changed", "--csv"], smoke_repo).stdout
    header = next(csv.reader(io.StringIO(shown)))
    assert {"linear_map.train.lr", "profiles/smoke.yaml:sweeps.sparsity.n_seeds"} <= set(header), header
    assert len(header) <= 24 and not any(c.startswith("data/params.json") for c in header), ",".join(header)
    # exp diff between the two: both parameters; metrics diff: the sparsity sweep's metrics moved
    diff = sh(["dvc", "exp", "diff", "lr-2e-3", "sparsity-3-seeds"], smoke_repo).stdout
    assert "linear_map.train.lr" in diff and "sweeps.sparsity.n_seeds" in diff, diff
    metrics = json.loads(sh(["dvc", "metrics", "diff", "lr-2e-3", "sparsity-3-seeds", "--json"], smoke_repo).stdout)
    moved = {key for changes in metrics.values() for key in changes}
    assert any(key.startswith("sparsity.") for key in moved), moved
    # plots diff: the sparsity hump of both experiments on one page
    sh(["dvc", "plots", "diff", "lr-2e-3", "sparsity-3-seeds", "-o", str(tmp_path / "plots")], smoke_repo)
    page = (tmp_path / "plots" / "index.html").read_text()
    assert "sparsity_hump" in page and "lr-2e-3" in page and "sparsity-3-seeds" in page

    # the same change run in the workspace gives the queued experiment's bytes, and trains nothing
    lock = _lock_of(smoke_repo, "sparsity-3-seeds")
    override, _, targets = QUEUED["sparsity-3-seeds"]
    sh(["dvc", "exp", "run", "-n", "sparsity-3-seeds-here", "-S", override, *targets], smoke_repo)
    try:
        assert _entries(scratch / "cells") - before == set.union(*expected.values())
        here = yaml.safe_load((smoke_repo / "dvc.lock").read_text())
        assert here["stages"].keys() == lock["stages"].keys()
        for stage in lock["stages"]:  # every result, the sweep's rows (sparsity@S..) and summaries among them
            assert _outs(here, stage) == _outs(lock, stage), stage
    finally:
        sh(["git", "checkout", "--", "."], smoke_repo)
        sh(["dvc", "checkout", "-q"], smoke_repo, check=False)


def test_an_experiment_setting_an_inactive_overlay_is_refused_naming_the_active_profile(smoke_repo):
    out = sh(["dvc", "exp", "run", "--temp", "-S", "profiles/paper.yaml:linear_map.train.steps=20000",
              "validate_params"], smoke_repo, check=False)
    assert out.returncode != 0
    message = out.stdout + out.stderr
    assert "profiles/paper.yaml changed (linear_map.train.steps)" in message and "active profile is smoke" in message


def _params_files(node) -> set[str]:
    """Every params file `dvc exp show --json` reports, at any depth."""
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "params" and isinstance(value, dict):
                found |= set(value)
            found |= _params_files(value)
    elif isinstance(node, list):
        for item in node:
            found |= _params_files(item)
    return found


def test_exp_show_lists_each_parameter_once_from_the_file_the_user_edits(smoke_repo):
    """params.yaml and the active overlay, each key under the file that sets it; never the
    validated effective params the stages write (data/params.json), which repeat them all."""
    shown = json.loads(sh(["dvc", "exp", "show", "--json"], smoke_repo).stdout)
    assert _params_files(shown) == {"params.yaml", "profiles/smoke.yaml"}

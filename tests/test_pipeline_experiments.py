"""A DVC experiment run outside the workspace (`dvc exp run --temp`, as a queued one runs) on a
copy of the smoke build: it reads and writes the repository's one cell cache, so it trains only
the cells its change touches."""
import json

import pytest
import yaml

from smoke_build import sh

pytestmark = pytest.mark.pipeline

OVERRIDE = "profiles/smoke.yaml:sweeps.sparsity.n_seeds=3"  # a key of the active overlay
# the sparsity sweep's cell-cache entries under the overridden seed count, by name
ENTRIES = ("import json, sys; from emergence.pipeline.config import load_params, validate; "
           "from emergence.pipeline.cost import planned_cells; from emergence.runs.cells import cell_request; "
           "from emergence.runs.cache import entry_of; from pathlib import Path; "
           "p = load_params(); p['sweeps']['sparsity']['n_seeds'] = 3; p = validate(p); s = Path(sys.argv[1]); "
           "print(json.dumps(sorted({entry_of(s, r.name, r.key).name for c, k in planned_cells(p)['sparsity'] "
           "for r in [cell_request(c, s, k)]})))")


def _entries(cells):
    return {p.name for p in cells.iterdir() if not p.name.startswith(".")}


def test_a_temp_experiment_trains_only_the_cells_its_change_touches(smoke_repo):
    scratch = smoke_repo / "data" / ".scratch"
    before = _entries(scratch / "cells")
    expected = set(json.loads(sh(["python", "-c", ENTRIES, str(scratch)], smoke_repo).stdout))
    assert expected and not expected & before  # the change needs new cells, none cached yet
    sh(["dvc", "exp", "run", "--temp", "-n", "sparsity-3-seeds", "-S", OVERRIDE, "sparsity_summary"], smoke_repo)
    assert _entries(scratch / "cells") - before == expected  # in the repository's cache, and nothing else trained
    assert "sparsity-3-seeds" in sh(["dvc", "exp", "list", "--name-only"], smoke_repo).stdout.split()
    # the workspace is untouched: the experiment ran in its own copy
    assert yaml.safe_load((smoke_repo / "profiles" / "smoke.yaml").read_text())["sweeps"]["sparsity"]["n_seeds"] == 2


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
    shown = json.loads(sh(["dvc", "exp", "show", "--json"], smoke_repo).stdout)
    assert _params_files(shown) == {"params.yaml"}

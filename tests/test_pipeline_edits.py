"""What an edit reruns, on a copy of the smoke build: nothing for a no-op, the report for a
report setting, the scorecard for a claims threshold, no training for an inactive overlay or the
renderer, nothing at all for a bad value; and a clone that pulls the results from the default
remote and has nothing to run."""
import json
import re
import sys

import pytest
import xarray as xr
import yaml

from smoke_build import changed, edit, restore_params, sh

pytestmark = pytest.mark.pipeline


def test_noop_and_report_only_change(smoke_repo):
    assert "up to date" in sh(["dvc", "status"], smoke_repo).stdout
    params, written = smoke_repo / "params.yaml", (smoke_repo / "data" / "params.json").read_bytes()
    original = edit(params, "max_figure_seeds: 16", "max_figure_seeds: 15")
    try:  # the notebooks declare the key, the renderer's appendix prints params.yaml itself and
        # validation reads it; no other stage declares the key
        assert changed(smoke_repo) == {"validate_params", "report_notebooks", "report_render"}
        log = sh(["dvc", "repro", "validate_params"], smoke_repo).stdout
        assert re.search(r"^  report_notebooks: report\.max_figure_seeds$", log, flags=re.M), log  # its plan
        assert changed(smoke_repo) == {"report_notebooks", "report_render"}
    finally:
        restore_params(smoke_repo, original, written)


def test_a_claims_threshold_reruns_only_the_scorecard_and_the_report(smoke_repo):
    params, written = smoke_repo / "params.yaml", (smoke_repo / "data" / "params.json").read_bytes()
    before = changed(smoke_repo)  # whatever earlier tests left changed
    original = edit(params, "most_of_gap: 0.5 ", "most_of_gap: 0.6 ")
    try:  # only the scorecard reads it, and the renderer's appendix, which lists every parameter
        sh(["dvc", "repro", "validate_params"], smoke_repo)
        now = changed(smoke_repo)
        assert now - before == {"claims_scorecard", "report_render"} - before
        assert "claims_scorecard" in now
    finally:
        restore_params(smoke_repo, original, written)


def test_lock_holds_no_timings_and_an_inactive_overlay_or_the_renderer_changes_little(smoke_repo):
    lock = yaml.safe_load((smoke_repo / "dvc.lock").read_text())
    outs = [o["path"] for stage in lock["stages"].values() for o in stage.get("outs", [])]
    assert outs and not any("timings" in o for o in outs)
    timed = {f.stem for f in (smoke_repo / "data" / "timings").glob("*.json")}
    assert set(lock["stages"]) <= timed, f"stages without a time on the entry page: {set(lock['stages']) - timed}"
    before = changed(smoke_repo)  # whatever earlier tests left changed
    paper = smoke_repo / "profiles" / "paper.yaml"
    original = edit(paper, "linear_map:", "linear_map:  # an edit to a profile that is not active")
    try:  # no training stage: validation (which refuses it in an experiment), the scorecard (the
        # paper profile's seed counts) and the entry page (its scale beside this run's) read it
        now = changed(smoke_repo)
        assert now - before == {"validate_params", "claims_scorecard", "report_render"} - before
        assert "claims_scorecard" in now
    finally:
        paper.write_text(original)
    render = smoke_repo / "emergence" / "report" / "render.py"
    original = edit(render, '"""', '"""An edit. ')
    try:
        now = changed(smoke_repo)
        assert now - before == {"report_render"} - before and "report_render" in now
    finally:
        render.write_text(original)


def test_invalid_params_stop_the_pipeline(smoke_repo):
    params = smoke_repo / "params.yaml"
    original = params.read_text()
    try:
        data = yaml.safe_load(original)
        data["linear_map"]["train"]["lr"] = -1.0  # not overridden by the smoke profile
        params.write_text(yaml.safe_dump(data))
        out = sh(["dvc", "repro"], smoke_repo, check=False)
        assert out.returncode != 0
        assert "linear_map.train.lr" in out.stdout + out.stderr
    finally:
        params.write_text(original)


def test_a_profile_that_compares_no_precision_trains_none_and_its_chapter_says_so(smoke_repo):
    """The default profile runs no bfloat16 check (its cost against what it could decide on a CPU):
    the check's stages then write an empty folder and an empty summary, and its chapter says why
    there is nothing in it instead of failing or printing a verdict of no task, and shows the kept
    run that decided the default (data/records) in its place."""
    overlay = smoke_repo / "profiles" / "smoke.yaml"
    original = edit(overlay, "tasks: [linear_map, cellular_automata]   # every path of the check",
                    "tasks: []   # every path of the check")
    try:  # the overlay is a dep of every stage: rerun the check's two stages and execute its chapter alone
        sh(["dvc", "repro", "--single-item", "precision", "precision_summary"], smoke_repo)
        assert not any((smoke_repo / "data" / "sweeps" / "precision").iterdir())
        timing = json.loads((smoke_repo / "data" / "timings" / "precision.json").read_text())
        assert timing["cells_built"] == timing["cells_reused"] == 0
        with xr.open_dataset(smoke_repo / "data" / "sweeps" / "precision_summary.nc") as summary:
            assert summary.sizes["task"] == 0
        built = smoke_repo.parent / "chapter-build"
        built.mkdir()
        sh([sys.executable, "-c", "import sys; from pathlib import Path; from stages.report_notebooks import "
            "execute_chapter; execute_chapter(Path(sys.argv[1]), Path(sys.argv[2]), {})",
            "report/chapters/08_precision.py", str(built)], smoke_repo)
        notebook = json.loads((built / "08_precision.ipynb").read_text())
        outputs = [o for cell in notebook["cells"] if cell["cell_type"] == "code" for o in cell["outputs"]]
        shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in outputs)
        assert "This profile compares no task" in shown and "default precision of this run" not in shown
        assert "The check that decided the default precision" in shown and "linear map: differ" in shown
        assert not any("image/png" in o.get("data", {}) for o in outputs)
    finally:
        overlay.write_text(original)


def test_a_clone_pulls_the_results_from_the_default_remote_and_trains_nothing(smoke_repo):
    """The default DVC remote (.dvc/config: a folder beside the repository) takes `dvc push`; a
    fresh clone beside it pulls the same report and metrics, and `dvc status` has nothing to run."""
    sh(["dvc", "repro"], smoke_repo)  # what the tests above left changed
    sh(["git", "add", "-A"], smoke_repo)  # the copy committed the build's results; this, what reran since
    sh(["git", "commit", "--allow-empty", "-qm", "results"], smoke_repo)
    sh(["dvc", "push", "-q"], smoke_repo)
    clone = smoke_repo.parent / f"{smoke_repo.name}-clone"
    sh(["git", "clone", "-q", str(smoke_repo), str(clone)], smoke_repo.parent)
    sh(["dvc", "pull", "-q"], clone)
    for rel in ("report/_output/report.pdf", "report/_output/index.html", "data/metrics/summary.json",
                "data/sweeps/sparsity_summary.nc"):
        assert (clone / rel).read_bytes() == (smoke_repo / rel).read_bytes(), rel
    assert "up to date" in sh(["dvc", "status"], clone).stdout
    # `make report`'s plan: the clone's cell cache is empty, yet nothing will train, and it times nothing
    assert "up to date; nothing to train" in sh([sys.executable, "-m", "emergence.pipeline.cost"], clone).stdout
    # and after an analysis threshold or a chapter edit, which rerun no training stage, it prebuilds nothing
    edit(clone / "params.yaml", "plateau_threshold: 0.1 ", "plateau_threshold: 0.12 ")
    (clone / "report" / "chapters" / "02_sparsity.py").open("a").write("# an edit\n")
    plan = sh([sys.executable, "-m", "emergence.pipeline.cost", "--no-calibrate"], clone).stdout
    assert "no training stage among those `dvc repro` will run or check out of its run cache" in plan, plan
    assert "linear_map_analyse" in plan, plan
    sh([sys.executable, "-m", "emergence.pipeline.prebuild"], clone)
    assert not list((clone / "data" / ".scratch").rglob("*.nc"))  # no cell trained into the empty cache
    metrics = json.loads((clone / "data" / "metrics" / "summary.json").read_text())
    assert {k.split(".")[0] for k in metrics} >= {"sparsity", "architecture", "ca_state_size", "mixers",
                                                   "language_models", "mirage", "precision", "attention_bias"}

"""An analysis threshold, on a copy of the smoke build: it reruns the analyses and retrains
nothing, and the comparison page between the committed results and the edit lists it."""
import json
import re
import shutil
import sys

import pytest

from emergence.pipeline.cost import runs
from smoke_build import EXTERNAL, edit, sh

pytestmark = pytest.mark.pipeline

# the stages `make report` expects `dvc repro` to run, so plans and prebuilds the cells of
PLANNED = ("import json; from emergence.pipeline.config import load_params, validate; from emergence.pipeline.cost import stages_to_run; "
           "print(json.dumps(sorted(stages_to_run(validate(load_params())))))")
# the training stages, read in the same way (a foreach stage by its base name)
TRAINING = ("import json; from emergence.pipeline.config import load_params, validate; from emergence.pipeline.cost import planned_cells; "
            "print(json.dumps(sorted(planned_cells(validate(load_params())))))")


def test_an_analysis_threshold_reanalyses_and_retrains_nothing(smoke_repo):
    params = smoke_repo / "params.yaml"
    original = edit(params, "plateau_threshold: 0.1 ", "plateau_threshold: 0.12 ")
    try:  # up to the report's inputs: the report after them is the same two stages as any other change's
        planned = set(json.loads(sh([sys.executable, "-c", PLANNED], smoke_repo).stdout))
        out = sh(["dvc", "repro", "claims_scorecard", "precision_summary"], smoke_repo)
        ran = set(re.findall(r"Running stage '([\w@-]+)'", out.stdout))
        assert ran == {"linear_map_analyse", "sparsity_summary", "architecture_summary",
                       "attention_bias_summary", "mixers_summary", "precision_summary",
                       "claims_scorecard"}, ran
        assert "train group" not in out.stderr + out.stdout  # no training stage's progress bar
        # `make report`'s plan and prebuild foresaw it: these, validation and the stages after the
        # targets, no training stage
        assert planned == ran | {"validate_params", "summary_metrics", "report_notebooks", "report_render"}, planned
    finally:
        params.write_text(original)


def test_the_comparison_page_lists_the_changed_parameter_and_overlays_both_revisions(smoke_repo):
    """A parameter that changes results without training (the linear map's plateau threshold):
    `make compare` against the last commit lists exactly it, the metrics it moved and draws both
    revisions, read from DVC's cache. After the test above, so DVC's run cache serves the
    analyses at the edited threshold."""
    assert sh(["git", "log", "-1", "--format=%s"], smoke_repo).stdout.strip() == "results"  # the copy's
    params = smoke_repo / "params.yaml"
    original = edit(params, "plateau_threshold: 0.1 ", "plateau_threshold: 0.12 ")
    try:
        out = sh(["dvc", "repro", "summary_metrics", "claims_scorecard"], smoke_repo)
        assert "train group" not in out.stdout + out.stderr
        sh([sys.executable, "-m", "emergence.report.compare", "HEAD"], smoke_repo)
        page = (smoke_repo / "report" / "_compare" / "compare.html").read_text().replace("\u200b", "")
        changed = page.split('id="parameters-that-changed"')[1].split('id="results-that-changed"')[0]
        assert re.findall(r"<td[^>]*>([a-z_]+\.[\w.]+)</td>", changed) == ["linear_map.analysis.plateau_threshold"]
        results = page.split('id="results-that-changed"')[1].split('id="verdicts-that-changed"')[0]
        assert "data/linear_map/analysis.nc" in results and "linear_map_analyse" in results
        assert "values: " in results  # what differs in it, read from both files
        assert "data/linear_map/train.nc" not in results and "other results have the same hash" in results
        numbers = page.split('id="same-verdict-other-numbers"')[1].split('id="summary-metrics-that-changed"')[0]
        assert "5 (linear map, c = 3)" in numbers  # its rule reads the plateau's end: same verdict, other ratio
        metrics = page.split('id="summary-metrics-that-changed"')[1].split('id="key-figures"')[0]
        assert "km_median_plateau_end" in metrics and "language_models." not in metrics  # what moved, only that
        assert page.count("data:image/png") == 4 and not EXTERNAL.search(page)
        assert page.count("lines coincide") >= 1  # the linear map's training, the same bytes in both
        assert (smoke_repo / "report" / "_compare" / "compare.pdf").stat().st_size > 10_000
        assert len(sh(["git", "worktree", "list"], smoke_repo).stdout.splitlines()) == 1  # the base's is removed
    finally:
        params.write_text(original)


def test_a_value_set_back_is_checked_out_of_the_run_cache_and_nothing_is_prebuilt(smoke_repo):
    """A task value set and set back: DVC checks the earlier run's outputs out of its run cache (the
    task file, then the linear-map run that reads it), so `make report`'s plan and prebuild train
    none of its cells, even with an empty cell cache (a clone sharing a cluster's DVC cache)."""
    overlay = smoke_repo / "profiles" / "smoke.yaml"
    original = edit(overlay, "    eval_sequences: 64\n", "    eval_sequences: 48\n")
    try:
        sh(["dvc", "repro", "linear_map_train"], smoke_repo)  # the task and the run at 48
    finally:
        overlay.write_text(original)
    # the lock holds the run at 48, so DVC sees the overlay changed under every stage; the run
    # cache holds the run before it
    assert "linear_map_train" in sh(["dvc", "status"], smoke_repo).stdout
    planned = set(json.loads(sh([sys.executable, "-c", PLANNED], smoke_repo).stdout))
    assert "linear_map_train" not in planned and "linear_map_analyse" in planned, planned
    scratch, aside = smoke_repo / "data" / ".scratch", smoke_repo.parent / "scratch-aside"
    scratch.rename(aside)
    try:
        sh([sys.executable, "-m", "emergence.pipeline.prebuild"], smoke_repo)
        assert not list(scratch.rglob("*.nc"))  # the linear-map cell the empty cache lacks: not trained
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        aside.rename(scratch)
    out = sh(["dvc", "repro", "linear_map_train"], smoke_repo).stdout
    assert "Stage 'linear_map_train' is cached - skipping run" in out, out


def test_a_fresh_clone_sharing_the_cache_plans_no_training_and_trains_nothing(smoke_repo, tmp_path):
    """A second clone on a cluster's shared DVC cache holds no results until `dvc repro` checks
    them out of the run cache. `make report`'s plan judges each training stage on the outputs
    of the stages before it as the run cache holds them, files the clone has yet to write (the
    linear-map run on its task file), so it plans no training, and `dvc repro` trains nothing."""
    clone = tmp_path / "clone"
    sh(["git", "clone", "-q", str(smoke_repo), str(clone)], tmp_path)  # its last commit: the build's results
    sh(["dvc", "config", "--local", "cache.dir", str(smoke_repo / ".dvc" / "cache")], clone)
    assert not (clone / "data" / "linear_map" / "task.nc").exists()
    training = json.loads(sh([sys.executable, "-c", TRAINING], clone).stdout) + ["lm_train"]
    planned = set(json.loads(sh([sys.executable, "-c", PLANNED], clone).stdout))
    assert not [stage for stage in training if runs(stage, planned)], planned
    out = sh(["dvc", "repro"], clone).stdout
    assert "train group" not in out
    ran = set(re.findall(r"Running stage '([\w@-]+)'", out))
    assert not [stage for stage in training if runs(stage, ran)], ran
    assert "Stage 'linear_map_train' is cached - skipping run" in out, out
    assert (clone / "report" / "_output" / "index.html").is_file()

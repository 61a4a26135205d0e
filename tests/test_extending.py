"""docs/extending.md's worked example, built from the guide's own code blocks in a copy of the
smoke build: the learning-rate sweep reaches the plan, `dvc dag`, the summary metrics, the
scorecard and the rendered report, with no file edited but the ones the guide names."""
import json
import re
import sys
from pathlib import Path

import pytest

from emergence.claims.verdicts import VERDICTS
from emergence.common.import_closure import REPO_ROOT
from smoke_build import sh

GUIDE = REPO_ROOT / "docs" / "extending.md"
FILE = re.compile(r"^File `([^`]+)`(?: \(new\)|, under `(\w+):`):\s*\n\s*\n```\w*\n(.*?)^```", re.M | re.S)


def guide_files(text: str) -> list[tuple[str, str | None, str]]:
    """(path, the top-level key it goes under or None for a new file, the block) of every
    `File ...:` block of the guide."""
    return [(m.group(1), m.group(2), m.group(3)) for m in FILE.finditer(text)]


def apply(root: Path, files: list[tuple[str, str | None, str]]) -> None:
    for rel, under, block in files:
        path = root / rel
        if under is None:
            assert not path.exists(), f"{rel}: the guide calls it new"
            path.write_text(block)
            continue
        text = path.read_text()
        key = re.search(rf"^{under}:[^\n]*\n", text, flags=re.M)
        assert key, f"{rel}: no top-level `{under}:` to add the guide's block under"
        path.write_text(text[:key.end()] + block + text[key.end():])


pytestmark = pytest.mark.pipeline


def test_the_guides_experiment_reaches_the_plan_the_dag_the_metrics_the_scorecard_and_the_report(smoke_repo):
    apply(smoke_repo, guide_files(GUIDE.read_text()))
    touched = set(sh(["git", "status", "--porcelain", "--untracked-files=all"], smoke_repo).stdout.split("\n"))
    assert {line[3:] for line in touched if line} == {"emergence/experiments/lr_sweep.py", "params.yaml",
                                                      "profiles/smoke.yaml", "profiles/paper.yaml",
                                                      "report/chapters/10_lr_sweep.py"}
    sh([sys.executable, "-m", "emergence.pipeline.dependencies", "--write"], smoke_repo)

    edges = dag_edges(sh(["dvc", "dag", "--md"], smoke_repo).stdout)
    assert {("lr_sweep", "lr_sweep_summary"), ("lr_sweep_summary", "summary_metrics"),
            ("lr_sweep_summary", "claims_scorecard"), ("lr_sweep_summary", "report_notebooks")} <= edges
    plan = sh([sys.executable, "-m", "emergence.pipeline.cost", "--no-calibrate"], smoke_repo).stdout
    assert re.search(r"^\s*lr_sweep\s+2\s", plan, flags=re.M), plan  # its stage and its two cells, one a rate

    # Every other stage's results stand (the overlay is a file dep of each, so DVC would rerun
    # them all, each loading its cells from the cache, and execute every chapter again): run
    # what the experiment adds and what reads it, execute its chapter beside the built ones, render.
    sh(["dvc", "repro", "--single-item", "validate_params", "lr_sweep", "lr_sweep_summary", "summary_metrics",
        "claims_scorecard"], smoke_repo)
    sh([sys.executable, "-c", "import sys; from pathlib import Path; from stages.report_notebooks import "
        "execute_chapter; execute_chapter(Path(sys.argv[1]), Path(sys.argv[2]), {})",
        "report/chapters/10_lr_sweep.py", "report/_build"], smoke_repo)
    sh([sys.executable, "-m", "stages.report_render", "report/_build", "report/_output"], smoke_repo)
    metrics = json.loads((smoke_repo / "data" / "metrics" / "summary.json").read_text())
    assert {"lr_sweep.lr0.001.km_median_plateau_end", "lr_sweep.lr0.003.fraction_solved"} <= set(metrics)
    card = json.loads((smoke_repo / "data" / "claims" / "scorecard.json").read_text())
    (row,) = [r for r in card["claims"] if r["id"] == "lr-sweep-earlier"]
    assert row["kind"] == "extension" and row["chapter"] == "10_lr_sweep" and row["figure"] == "fig-lr-plateau"
    assert row["verdict"] in VERDICTS
    index = (smoke_repo / "report" / "_output" / "index.html").read_text()
    assert "lr sweep (linear map)" in index  # the scorecard on the entry page, among the extensions
    chapter = (smoke_repo / "report" / "_output" / "10_lr_sweep.html").read_text()
    assert 'id="fig-lr-plateau"' in chapter and "Claim lr sweep (linear map)" in chapter


def dag_edges(mermaid: str) -> set[tuple[str, str]]:
    """(from, to) stage names of `dvc dag --md`."""
    names = dict(re.findall(r'(node\d+)\["([^"]+)"\]', mermaid))
    return {(names[a], names[b]) for a, b in re.findall(r"(node\d+)-->(node\d+)", mermaid)}

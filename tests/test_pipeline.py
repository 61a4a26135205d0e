"""The whole pipeline on the smoke profile, in a temporary copy of the repository."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from emergence.config import REPO_ROOT

pytestmark = pytest.mark.pipeline
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//|url\(\s*["']?(?:https?:)?//""", re.I)


def sh(args, cwd, check=True):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               DVC_NO_ANALYTICS="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise AssertionError(f"{args} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


@pytest.fixture(scope="module")
def smoke_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    files = sh(["git", "ls-files", "-co", "--exclude-standard"], REPO_ROOT).stdout.split()
    for rel in files:
        src = REPO_ROOT / rel
        if src.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / rel)
    for stale in ("dvc.lock", "data/linear_map/metrics.json", "data/linear_map/plots"):
        if (root / stale).is_file():
            (root / stale).unlink()
        elif (root / stale).is_dir():
            shutil.rmtree(root / stale)
    sh(["git", "init", "-q"], root)
    sh(["git", "add", "-A"], root)
    sh(["git", "commit", "-qm", "copy"], root)
    sh([sys.executable, "-m", "emergence.config", "set-profile", "smoke"], root)
    sh(["dvc", "repro"], root)
    return root


def chapter_labels(root: Path) -> dict[str, list[str]]:
    out = {}
    for chapter in sorted((root / "report" / "chapters").glob("*.py")):
        out[chapter.stem] = re.findall(r"^#\| label: (fig-[\w-]+)", chapter.read_text(), flags=re.M)
    return out


def test_report_exists_with_every_figure(smoke_repo):
    out = smoke_repo / "report" / "_output"
    assert (out / "index.html").is_file()
    pdf = (out / "report.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
    labels = chapter_labels(smoke_repo)
    assert labels and all(labels.values())
    for chapter, figs in labels.items():
        html = (out / f"{chapter}.html").read_text()
        for label in figs:
            assert f'id="{label}"' in html, f"{chapter}: figure {label} missing from the HTML"
        assert html.count("<img") >= len(figs)
        assert "data:image/png;base64" in html
        assert "Traceback" not in html


def test_no_page_of_the_pdf_has_overlapping_text(smoke_repo):
    from emergence.pdf_layout import overlapping_text

    assert overlapping_text(smoke_repo / "report" / "_output" / "report.pdf") == {}


def test_mixer_chapter_shows_the_models_table(smoke_repo):
    html = (smoke_repo / "report" / "_output" / "07_mixers.html").read_text()
    table = html[html.find("Models and parameter counts"):html.find("Learning curves")]
    for column in ("MLP width", "vs reference", "core", "compiled"):
        assert f">{column}<" in table, column
    assert table.count("<tr") >= 1 + 2 * 5  # header + every architecture on both smoke settings


def test_html_has_no_external_url(smoke_repo):
    for page in (smoke_repo / "report" / "_output").glob("*.html"):
        hits = EXTERNAL.findall(page.read_text())
        assert not hits, f"{page.name} loads external resources: {hits[:3]}"


def test_appendix_shows_provenance_and_the_entry_page_links_it(smoke_repo):
    out = smoke_repo / "report" / "_output"
    html = (out / "appendix.html").read_text()
    commit = sh(["git", "rev-parse", "HEAD"], smoke_repo).stdout.strip()
    assert commit in html
    for needle in ("smoke", "dvc.lock", "linear_map_train", "torch", "cold seconds"):
        assert needle in html
    index = (out / "index.html").read_text()
    assert 'href="appendix.html"' in index and 'href="report.pdf"' in index
    assert "paper profile" in index and "min" in index.split('id="time"')[1][:2000]


def test_metrics_and_results_written(smoke_repo):
    import xarray as xr

    metrics = json.loads((smoke_repo / "data" / "linear_map" / "metrics.json").read_text())
    assert metrics["n_seeds"] == 2
    with xr.open_dataset(smoke_repo / "data" / "linear_map" / "train.nc") as ds:
        assert json.loads(ds.attrs["config"])["linear_map"]["train"]["steps"] == 60


def _edit(path: Path, old: str, new: str) -> str:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
    return text


def _changed(root: Path) -> set[str]:
    """Stages `dvc status` says would rerun."""
    return set(json.loads(sh(["dvc", "status", "--json"], root).stdout or "{}"))


def _restore_params(root: Path, text: str, written: bytes) -> None:
    """Put params.yaml back, and the effective params validation had written from it (what the
    lock has), without a validation run."""
    (root / "params.yaml").write_text(text)
    (root / "data" / "params.json").write_bytes(written)


def test_noop_and_report_only_change(smoke_repo):
    assert "up to date" in sh(["dvc", "status"], smoke_repo).stdout
    params, written = smoke_repo / "params.yaml", (smoke_repo / "data" / "params.json").read_bytes()
    original = _edit(params, "max_figure_seeds: 16", "max_figure_seeds: 15")
    try:  # validation rewrites the effective params, where the notebooks read it (the renderer's
        # appendix prints params.yaml itself); no other stage declares the key
        assert _changed(smoke_repo) == {"validate_params", "report_render"}
        log = sh(["dvc", "repro", "validate_params"], smoke_repo).stdout
        assert re.search(r"^  report_notebooks: report\.max_figure_seeds$", log, flags=re.M), log  # its plan
        assert _changed(smoke_repo) == {"report_notebooks", "report_render"}
    finally:
        _restore_params(smoke_repo, original, written)


def test_lock_holds_no_timings_and_an_inactive_overlay_or_the_renderer_changes_little(smoke_repo):
    lock = yaml.safe_load((smoke_repo / "dvc.lock").read_text())
    outs = [o["path"] for stage in lock["stages"].values() for o in stage.get("outs", [])]
    assert outs and not any("timings" in o for o in outs)
    assert (smoke_repo / "data" / "timings" / "linear_map_train.json").is_file()
    before = _changed(smoke_repo)  # whatever earlier tests left changed
    paper = smoke_repo / "profiles" / "paper.yaml"
    original = _edit(paper, "linear_map:", "linear_map:  # an edit to a profile that is not active")
    try:  # no training stage: the scorecard (the paper profile's seed counts) and the entry page
        # (its scale beside this run's) read it
        now = _changed(smoke_repo)
        assert now - before == {"claims_scorecard", "report_render"} - before and "claims_scorecard" in now
    finally:
        paper.write_text(original)
    render = smoke_repo / "emergence" / "render.py"
    original = _edit(render, '"""', '"""An edit. ')
    try:
        now = _changed(smoke_repo)
        assert now - before == {"report_render"} - before and "report_render" in now
    finally:
        render.write_text(original)


def test_scorecard_leads_the_report_and_every_verdict_comes_from_it(smoke_repo):
    from emergence.verdicts import VERDICTS

    card = json.loads((smoke_repo / "data" / "claims" / "scorecard.json").read_text())
    rows = card["claims"]
    assert len(rows) >= 15 and all(r["verdict"] in VERDICTS for r in rows)
    assert sum(card["tally"].values()) == len(rows)
    def page(name):  # pandoc wraps long lines: compare with single spaces
        return re.sub(r"\s+", " ", (smoke_repo / "report" / "_output" / name).read_text()).replace("&#39;", "'")

    index = page("index.html")
    assert 0 < index.find('<h2 id="what-was-reproduced"') < index.find('<h2 id="scale-of-this-run"') \
        < index.find('<h2 id="time"') < index.find('<h2 id="chapters"')
    assert "provenance" not in index.split('id="chapters"')[0].lower()  # provenance is the appendix's
    for r in rows:
        assert r["statement"].split(" (")[0][:40] in index
    for chapter in {r["chapter"] for r in rows}:
        html = page(f"{chapter}.html")
        claims = html[html.find('id="claims"'):]
        for r in (r for r in rows if r["chapter"] == chapter):
            assert f"Claim {r['claim']}: {r['verdict']}" in claims, (chapter, r["claim"])
    shown = sh(["dvc", "metrics", "show", "--json"], smoke_repo).stdout
    metric = json.loads(shown)[""]["data"]["data/claims/verdicts.json"]["data"]
    assert [c["verdict"] for c in metric["claims"].values()] == [r["verdict"] for r in rows]


def test_a_clone_pulls_the_results_from_the_default_remote_and_trains_nothing(smoke_repo):
    """The default DVC remote (.dvc/config: a folder beside the repository) takes `dvc push`; a
    fresh clone beside it pulls the same report and metrics, and `dvc status` has nothing to run."""
    sh(["dvc", "repro"], smoke_repo)  # what the tests above left changed
    sh(["git", "add", "-A"], smoke_repo)  # the smoke profile line, dvc.lock, metrics and plot data
    sh(["git", "commit", "-qm", "results"], smoke_repo)
    sh(["dvc", "push", "-q"], smoke_repo)
    clone = smoke_repo.parent / f"{smoke_repo.name}-clone"
    sh(["git", "clone", "-q", str(smoke_repo), str(clone)], smoke_repo.parent)
    sh(["dvc", "pull", "-q"], clone)
    for rel in ("report/_output/report.pdf", "report/_output/index.html", "data/metrics/summary.json",
                "data/sweeps/sparsity_summary.nc"):
        assert (clone / rel).read_bytes() == (smoke_repo / rel).read_bytes(), rel
    assert "up to date" in sh(["dvc", "status"], clone).stdout
    metrics = json.loads((clone / "data" / "metrics" / "summary.json").read_text())
    assert {k.split(".")[0] for k in metrics} >= {"sparsity", "architecture", "automata", "mixers",
                                                   "language_models", "mirage", "precision", "attention_bias"}


def test_a_claims_threshold_reruns_only_the_scorecard_and_the_report(smoke_repo):
    params, written = smoke_repo / "params.yaml", (smoke_repo / "data" / "params.json").read_bytes()
    before = _changed(smoke_repo)  # whatever earlier tests left changed
    original = _edit(params, "most_of_gap: 0.5 ", "most_of_gap: 0.6 ")
    try:  # only the scorecard reads it, and the renderer's appendix, which lists every parameter
        sh(["dvc", "repro", "validate_params"], smoke_repo)
        now = _changed(smoke_repo)
        assert now - before == {"claims_scorecard", "report_render"} - before
        assert "claims_scorecard" in now
    finally:
        _restore_params(smoke_repo, original, written)


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


def test_an_analysis_threshold_reanalyses_and_retrains_nothing(smoke_repo):
    params = smoke_repo / "params.yaml"
    original = _edit(params, "plateau_threshold: 0.1 ", "plateau_threshold: 0.12 ")
    # last: it leaves results that the rendered report (read by the tests above) does not show
    try:  # up to the report's inputs: the report after them is the same two stages as any other change's
        out = sh(["dvc", "repro", "claims_scorecard", "sweep_precision_summary"], smoke_repo)
        ran = set(re.findall(r"Running stage '([\w@-]+)'", out.stdout))
        assert ran == {"validate_params", "linear_map_analyse", "sweep_sparsity_summary", "sweep_architecture_summary",
                       "attention_bias_summary", "sweep_mixers_summary", "sweep_precision_summary",
                       "claims_scorecard"}, ran
        assert "train group" not in out.stderr + out.stdout  # no training stage's progress bar
    finally:
        params.write_text(original)


def test_the_comparison_page_lists_the_changed_parameter_and_overlays_both_revisions(smoke_repo):
    """A parameter that changes results without training (the linear map's plateau threshold):
    `make compare` against the last commit lists exactly it, the metrics it moved and draws both
    revisions, read from DVC's cache."""
    if "results" not in sh(["git", "log", "-1", "--format=%s"], smoke_repo).stdout:
        sh(["git", "add", "-A"], smoke_repo)
        sh(["git", "commit", "-qm", "results"], smoke_repo)
    params = smoke_repo / "params.yaml"
    original = _edit(params, "plateau_threshold: 0.1 ", "plateau_threshold: 0.12 ")
    try:
        out = sh(["dvc", "repro", "summary_metrics", "claims_scorecard"], smoke_repo)
        assert "train group" not in out.stdout + out.stderr
        sh([sys.executable, "-m", "emergence.compare", "HEAD"], smoke_repo)
        page = (smoke_repo / "report" / "_compare" / "compare.html").read_text().replace("\u200b", "")
        changed = page.split('id="parameters-that-changed"')[1].split('id="verdicts-that-changed"')[0]
        assert re.findall(r"<td[^>]*>([a-z_]+\.[\w.]+)</td>", changed) == ["linear_map.analysis.plateau_threshold"]
        metrics = page.split('id="summary-metrics-that-changed"')[1].split('id="key-figures"')[0]
        assert "km_median_plateau_end" in metrics and "language_models." not in metrics  # what moved, only that
        assert page.count("data:image/png") == 4 and not EXTERNAL.search(page)
        assert (smoke_repo / "report" / "_compare" / "compare.pdf").stat().st_size > 10_000
        assert len(sh(["git", "worktree", "list"], smoke_repo).stdout.splitlines()) == 1  # the base's is removed
    finally:
        params.write_text(original)


def test_a_failing_chapter_raises_and_the_kernels_log_stays_quiet(tmp_path, capfd):
    """A chapter's error stops the notebook stage with its message; the kernels' own log (a
    TCP warning at start, an "ERROR | KeyboardInterrupt" at every normal shutdown) is not
    printed, so `dvc repro`'s output shows only real failures."""
    from papermill.exceptions import PapermillExecutionError

    from stages.report_notebooks import execute_chapter

    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("# %%\nx = 1\n")
    bad.write_text('# %%\nraise ValueError("boom from a chapter")\n')
    execute_chapter(good, tmp_path, {})
    with pytest.raises(PapermillExecutionError, match="boom from a chapter"):
        execute_chapter(bad, tmp_path, {})
    assert "IPKernelApp" not in capfd.readouterr().err

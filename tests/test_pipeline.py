"""The whole pipeline on the smoke profile: the rendered report, read from the shared build
(tests/smoke_build.py; the tests that edit and rerun work on copies of it)."""
import json
import re
import tempfile
from pathlib import Path

import pytest

from smoke_build import EXTERNAL, sh

pytestmark = pytest.mark.pipeline


def chapter_labels(root: Path) -> dict[str, list[str]]:
    out = {}
    for chapter in sorted((root / "report" / "chapters").glob("*.py")):
        out[chapter.stem] = re.findall(r"^#\| label: (fig-[\w-]+)", chapter.read_text(), flags=re.M)
    return out


def test_report_exists_with_every_figure(smoke_built):
    out = smoke_built / "report" / "_output"
    assert (out / "index.html").is_file()
    pdf = (out / "report.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
    labels = chapter_labels(smoke_built)
    assert labels and all(labels.values())
    for chapter, figs in labels.items():
        html = (out / f"{chapter}.html").read_text()
        for label in figs:
            assert f'id="{label}"' in html, f"{chapter}: figure {label} missing from the HTML"
        assert html.count("<img") >= len(figs)
        assert "data:image/png;base64" in html
        assert "Traceback" not in html


def test_no_page_of_the_pdf_has_overlapping_text(smoke_built):
    from emergence.report.pdf_layout import overlapping_text

    assert overlapping_text(smoke_built / "report" / "_output" / "report.pdf") == {}


def test_every_verdict_is_on_page_1_of_the_pdf(smoke_built):
    from emergence.report.pdf_layout import page_text

    pdf = smoke_built / "report" / "_output" / "report.pdf"
    first = page_text(pdf, 1)
    claims = json.loads((smoke_built / "data" / "claims" / "scorecard.json").read_text())["claims"]
    assert "What was reproduced" in first
    # the glance tables end on page 1: every row's claim is there
    flat = lambda text: re.sub(r"\s+", "", text.replace("\u2019", "'"))  # noqa: E731
    at = [flat(first).find(flat(c["claim"])) for c in claims]
    assert min(at) >= 0, [c["claim"] for c, i in zip(claims, at) if i < 0]
    assert len(claims) >= 30


def test_mixer_chapter_shows_the_models_table(smoke_built):
    html = (smoke_built / "report" / "_output" / "07_mixers.html").read_text()
    table = html[html.find("Models and parameter counts"):html.find("Learning curves")]
    for column in ("MLP width", "vs reference", "core", "compiled"):
        assert f">{column}<" in table, column
    assert table.count("<tr") >= 1 + 2 * 5  # header + every architecture on both smoke settings


def test_linear_map_chapter_shows_every_seed_and_the_papers_run(smoke_built):
    html = (smoke_built / "report" / "_output" / "01_linear_map.html").read_text()
    start = html.index(">Per-seed table<")
    section = html[start:html.index(">Claims<", start)]
    seeds = json.loads((smoke_built / "data" / "params.json").read_text())["linear_map"]["train"]["n_seeds"]
    assert section.count("<tr") == 1 + seeds + 1, "header, one row per seed and the paper's run"
    assert ">paper<" in section and ">width<" in section


def test_html_has_no_external_url(smoke_built):
    for page in (smoke_built / "report" / "_output").glob("*.html"):
        hits = EXTERNAL.findall(page.read_text())
        assert not hits, f"{page.name} loads external resources: {hits[:3]}"


def test_appendix_shows_provenance_and_the_entry_page_links_it(smoke_built):
    out = smoke_built / "report" / "_output"
    html = (out / "appendix.html").read_text()
    commit = sh(["git", "rev-parse", "HEAD"], smoke_built).stdout.strip()
    assert commit in html
    for needle in ("smoke", "dvc.lock", "linear_map_train", "torch", "cold seconds"):
        assert needle in html
    index = (out / "index.html").read_text()
    assert 'href="appendix.html"' in index and 'href="report.pdf"' in index
    from pdfminer.high_level import extract_text
    pdf_text = " ".join(extract_text(str(out / "report.pdf")).split())
    assert "Provenance, parameters, packages and hardware" in pdf_text
    assert "The whole report as one PDF" not in pdf_text  # the PDF does not link to itself
    assert "paper profile" in index and "min" in index.split('id="time"')[1][:2000]


def test_the_prebuild_ran_first_and_the_stages_took_what_it_built(smoke_built):
    """The smoke build runs as `make report` does: the prebuild, the first row of the time table,
    then `dvc repro`. Where its one pool ran (not for the smoke profile's seconds-long cells
    on 2 cores: workers would take longer to start than they save, so the stages build them in
    their own processes), the training stages took every cell from the cache but the CPU-bfloat16
    ones of the precision check, whose keys record their process's threads."""
    timings = {f.stem: json.loads(f.read_text()) for f in (smoke_built / "data" / "timings").glob("*.json")}
    appendix = (smoke_built / "report" / "_output" / "appendix.html").read_text()  # every stage's time
    assert 0 < appendix.index(">prebuild<") < appendix.index(">validate_params<")
    prebuild = timings["prebuild"]
    if prebuild["workers"] >= 2:
        assert prebuild["cells_built"] >= 20
        assert {name for name, t in timings.items() if t.get("cells_built") and name != "prebuild"} == {"precision"}
    else:
        from emergence.pipeline.config import load_params
        from emergence.runs.language_model import LanguageModelTraining, variants

        smoke_variants = variants(LanguageModelTraining.of(load_params(profile="smoke")["language_model"]))
        assert prebuild["cells_built"] == 0 and timings["lm_train"]["cells_built"] == len(smoke_variants) == 7


def test_metrics_and_results_written(smoke_built):
    import xarray as xr

    metrics = json.loads((smoke_built / "data" / "linear_map" / "metrics.json").read_text())
    assert metrics["n_seeds"] == 2
    with xr.open_dataset(smoke_built / "data" / "linear_map" / "train.nc") as ds:
        assert json.loads(ds.attrs["config"])["linear_map"]["train"]["steps"] == 60


def test_scorecard_leads_the_report_and_every_verdict_comes_from_it(smoke_built):
    from emergence.claims.scorecard import THRESHOLDS
    from emergence.claims.verdicts import VERDICTS

    card = json.loads((smoke_built / "data" / "claims" / "scorecard.json").read_text())
    rows = card["claims"]
    assert len(rows) >= 15 and all(r["verdict"] in VERDICTS for r in rows)
    assert len({r["claim"] for r in rows}) == len(rows)  # a reader tells the rows apart by their labels
    assert sum(card["tally"].values()) + sum(card["extensions_tally"].values()) == len(rows)
    assert sum(card["tally"].values()) == sum(r["kind"] == "paper" for r in rows) > 0
    def page(name):  # pandoc wraps long lines: compare with single spaces
        return re.sub(r"\s+", " ", (smoke_built / "report" / "_output" / name).read_text()).replace("&#39;", "'")

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
    # every verdict decided again on the smoke profile's resamples of the seeds, and shown so
    draws = json.loads((smoke_built / "data" / "params.json").read_text())["claims"]["stability_draws"]
    for r in rows:
        assert sum(r["resampled"].values()) == draws and r["stability"] == r["resampled"].get(r["verdict"], 0) / draws
    assert f"Stable</em> is the share of {draws} resamples" in index
    assert all("Stability: the same verdict on" in page(f"{c}.html") for c in {r["chapter"] for r in rows})
    # and every threshold moved both ways, the verdicts that hinge on it on the entry page
    keys = {r["id"] if sum(q["id"] == r["id"] for q in rows) == 1 else f"{r['id']} {r['claim']}" for r in rows}
    assert [e["threshold"] for e in card["sensitivity"]] == list(THRESHOLDS)
    assert all(c["row"] in keys for e in card["sensitivity"] for side in ("lower", "higher") if e[side]
               for c in e[side]["changed"])
    assert "Which verdicts hinge on a threshold" in index and "<code>abrupt_ratio</code>" in index
    assert all("Thresholds: " in page(f"{c}.html") for c in {r["chapter"] for r in rows})
    shown = sh(["dvc", "metrics", "show", "--json"], smoke_built).stdout
    metric = json.loads(shown)[""]["data"]["data/claims/verdicts.json"]["data"]
    assert [c["verdict"] for c in metric["claims"].values()] == [r["verdict"] for r in rows]


def test_every_interval_draws_the_claims_bootstrap_count(smoke_built, monkeypatch):
    """`claims.n_boot` reaches every rule's bootstrap: each interval on the smoke results is
    read off exactly that many resamples."""
    from dataclasses import replace

    from emergence.claims import verdicts as vd
    from emergence.claims.scorecard import Context, read_paper_claims, read_result, rule_verdicts, rule_sections
    from emergence.claims.thresholds import ClaimsArgs
    from emergence.common.schema import load
    from emergence.pipeline.config import load_params
    from emergence.pipeline.stage import pipeline_paths

    paths = pipeline_paths(smoke_built)
    results = {name: read_result(smoke_built / paths[name]) for _, _, inputs in rule_sections() for name in inputs}
    sizes, percentiles = [], vd._percentiles

    def counted(values, level):
        sizes.append(len(values))
        return percentiles(values, level)

    monkeypatch.setattr(vd, "_percentiles", counted)
    claims = replace(load(ClaimsArgs, load_params(profile="smoke")["claims"], "claims"), n_boot=137)
    rows = rule_verdicts(results, Context(claims, read_paper_claims(smoke_built / paths["paper_claims"])))
    assert len(rows) >= 15 and len(sizes) >= len(rows) and set(sizes) == {137}


def test_a_failing_chapter_raises_and_the_kernels_log_stays_quiet(tmp_path, capfd):
    """A chapter's error stops the notebook stage with its message; the kernels' own log (an
    "ERROR | KeyboardInterrupt" at every normal shutdown) is not printed, so `dvc repro`'s
    output shows only real failures."""
    from papermill.exceptions import PapermillExecutionError

    from stages.report_notebooks import execute_chapter

    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("# %%\nx = 1\n")
    bad.write_text('# %%\nraise ValueError("boom from a chapter")\n')
    execute_chapter(good, tmp_path, {})
    with pytest.raises(PapermillExecutionError, match="boom from a chapter"):
        execute_chapter(bad, tmp_path, {})
    assert "IPKernelApp" not in capfd.readouterr().err


def test_a_chapter_kernel_talks_over_socket_files_that_are_removed_after(tmp_path):
    """Chapters start their kernels side by side; over TCP a kernel can lose one of its five
    ports to another process between jupyter_client choosing it and the kernel binding it, and
    dies before replying to kernel_info. The chapter's kernel therefore runs on IPC sockets in a
    directory of its own, which is gone once the chapter has run."""
    import nbformat

    from stages.report_notebooks import execute_chapter

    chapter = tmp_path / "connection.py"
    chapter.write_text("# %%\nfrom ipykernel import get_connection_info\nprint(get_connection_info())\n")
    execute_chapter(chapter, tmp_path, {})
    printed = nbformat.read(tmp_path / "connection.ipynb", as_version=4).cells[0].outputs[0]["text"]
    info = json.loads(printed)
    assert info["transport"] == "ipc"
    assert Path(info["ip"]).parent.name.startswith("kernel-")
    assert not Path(info["ip"]).parent.exists()


def test_kernel_sockets_leave_a_temporary_folder_whose_path_would_make_them_too_long(monkeypatch):
    """A Unix socket's path holds 103 bytes on macOS, 107 on Linux, and the kernel's directory
    and socket names add 29 ("/kernel-XXXXXXXX/kernel-ipc-5"): under a long TMPDIR (a cluster's
    scratch path, pytest's own folders) the kernel's bind fails with "File name too long"."""
    from stages.report_notebooks import socket_parent

    for folder, chosen in [("/tmp/s", "/tmp/s"), ("/" + "y" * 73, "/" + "y" * 73), ("/" + "y" * 74, "/tmp"),
                           ("/scratch/" + "é" * 33, "/tmp")]:   # 9 + 66 bytes: counted in bytes, not characters
        monkeypatch.setattr(tempfile, "tempdir", folder)
        assert socket_parent() == chosen, folder


def test_a_chapter_executed_twice_on_the_same_results_has_the_same_bytes(tmp_path):
    """Papermill's times, the kernel's timestamps, random cell ids and the temporary paths a
    chapter ran under would make every execution differ: the render after it would rerun and a
    comparison of two commits would list the executed report as changed where nothing did."""
    import nbformat

    from stages.report_notebooks import execute_chapter

    chapter = tmp_path / "figure.py"
    chapter.write_text("# %%\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 3, 2])\n"
                       "print('three points')\n\n# %%\nx = 2\nx * 21\n")
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        execute_chapter(chapter, tmp_path / run, {})
    first, second = (tmp_path / "a" / "figure.ipynb").read_bytes(), (tmp_path / "b" / "figure.ipynb").read_bytes()
    assert first == second
    notebook = nbformat.read(tmp_path / "a" / "figure.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert [cell.id for cell in notebook.cells] == [f"cell-{i}" for i in range(len(notebook.cells))]
    assert notebook.metadata.papermill.input_path == str(chapter)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert any("image/png" in o.get("data", {}) for o in outputs) and any(o.get("text") == "three points\n" for o in outputs)
    assert any(o.get("data", {}).get("text/plain") == "42" for o in outputs)
    assert b"start_time" not in first and b"iopub" not in first

import ast
import base64
import json
import math
import nbformat
import pytest
import re

from emergence.pipeline.config import REPO_ROOT
from emergence.report import render
from emergence.report.report_index import params_diff, stage_timings

def _png() -> str:
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


PNG = _png()


def notebook(tmp_path, outputs_by_cell):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# Title\n\nSome prose."))
    for source, outputs in outputs_by_cell:
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = outputs
        nb.cells.append(cell)
    path = tmp_path / "chapter.ipynb"
    nbformat.write(nb, path)
    return path


def test_figures_keep_label_and_caption(tmp_path):
    path = notebook(tmp_path, [
        ('#| label: fig-demo\n#| fig-cap: "A demo figure."\nplot()',
         [nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]),
        ("md('**42** seeds')", [nbformat.v4.new_output("execute_result", data={"text/markdown": "**42** seeds"})]),
        ("x = 1", [nbformat.v4.new_output("stream", name="stdout", text="noise\n")]),
    ])
    md, labels = render.notebook_to_markdown(path, tmp_path / "assets", "assets")
    assert labels == ["fig-demo"]
    assert "![A demo figure.](assets/fig-demo.png){#fig-demo}" in md
    assert (tmp_path / "assets" / "fig-demo.png").read_bytes().startswith(b"\x89PNG")
    assert "**42** seeds" in md and "noise" not in md and "plot()" not in md


def test_an_error_in_a_notebook_stops_rendering(tmp_path):
    path = notebook(tmp_path, [("1/0", [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="x",
                                                               traceback=[])])])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        render.notebook_to_markdown(path, tmp_path / "assets", "assets")


def test_offline_render_is_self_contained(tmp_path):
    path = notebook(tmp_path, [('#| label: fig-demo\n#| fig-cap: "Demo."\nplot()',
                                [nbformat.v4.new_output("display_data", data={"image/png": PNG})])])
    info = render.render_offline([path], "Entry page.\n\n{{chapters}}\n", tmp_path / "out", tmp_path / "work", "T")
    html = (tmp_path / "out" / "chapter.html").read_text()
    assert 'id="fig-demo"' in html and "data:image/png;base64" in html
    assert "chapter.html" in (tmp_path / "out" / "index.html").read_text()
    assert (tmp_path / "out" / "report.pdf").read_bytes().startswith(b"%PDF")
    assert info["figures"] == {"chapter": ["fig-demo"]}


def test_the_pdf_links_a_chapter_figure_inside_itself(tmp_path):
    """The scorecard links each row to its figure: chapter.html#fig-demo on the web pages, the
    figure in the PDF itself (which holds every chapter); a link to no known figure stays."""
    path = notebook(tmp_path, [('#| label: fig-demo\n#| fig-cap: "Demo."\nplot()',
                                [nbformat.v4.new_output("display_data", data={"image/png": PNG})])])
    index = ("See [the demo](chapter.html#fig-demo) and [elsewhere](chapter.html#fig-none); times in the "
             "[appendix](appendix.html), more on [a page it lacks](other.html).\n\n{{chapters}}\n")
    render.render_offline([path], index, tmp_path / "out", tmp_path / "work", "T", appendix_markdown="Times.")
    typ = (tmp_path / "work" / "report.typ").read_text()
    assert "link(<fig-demo>)" in typ and 'link("chapter.html#fig-none")' in typ
    # whole pages the PDF holds (the chapter list's, the appendix) link to their headings there
    assert typ.count("link(<page-appendix>)") == 1 and "link(<page-chapter>)" in typ
    assert "<page-appendix>" in typ.replace("link(<page-appendix>)", "")
    assert 'link("other.html")' in typ
    index_html = (tmp_path / "out" / "index.html").read_text()
    assert 'href="chapter.html#fig-demo"' in index_html and 'href="appendix.html"' in index_html


def test_params_diff_lists_only_changes_written_as_params_yaml_writes_them():
    df = params_diff({"a": 1, "b": 2, "c": 3, "e": None, "f": ["x", "y"]},
                     {"a": 1, "b": 5, "d": 0, "e": [0], "f": ["x", "y"]})
    assert df.to_dict("records") == [
        {"parameter": "b", "base": "5", "this run": "2"},
        {"parameter": "c", "base": "(absent)", "this run": "3"},
        {"parameter": "d", "base": "0", "this run": "(absent)"},
        {"parameter": "e", "base": "[0]", "this run": "null"},
    ]


def test_stage_timings_add_the_reused_cells_build_time(tmp_path):
    timings = tmp_path / "data" / "timings"
    timings.mkdir(parents=True)
    for name, body in {"a": {"seconds": 2.0, "cells_built": 0, "cells_reused": 3, "reused_build_seconds": 300.0},
                       "b": {"seconds": 50.0, "cells_built": 1, "cells_reused": 0, "reused_build_seconds": 0.0},
                       "c": {"seconds": 1.0}}.items():  # a stage with no cells
        (timings / f"{name}.json").write_text(json.dumps({"stage": name, "profile": "default", **body}))
    df = stage_timings(tmp_path)
    assert df["cold seconds"].tolist() == [302.0, 50.0, 1.0, 353.0]
    assert df.iloc[-1]["stage"] == "total" and df.iloc[-1]["seconds"] == 53.0
    (timings / "d.json").write_text(json.dumps({"stage": "d", "seconds": 1.0, "cells_reused": 2,
                                                "reused_build_seconds": None}))  # entries older than the record
    assert stage_timings(tmp_path)["cold seconds"].tolist()[-2:] == ["n/a", "n/a"]


def test_the_appendix_names_the_cpus_the_cells_were_built_on(tmp_path):
    from emergence.report.report_index import training_cpus

    timings = tmp_path / "data" / "timings"
    timings.mkdir(parents=True)
    assert training_cpus(tmp_path) == "(no cells)"
    for name, cpus in {"a": {"x": "Xeon", "y": "EPYC"}, "b": {"x": "Xeon", "z": "Xeon", "w": None}}.items():
        (timings / f"{name}.json").write_text(json.dumps({"stage": name, "seconds": 1.0, "cpus": cpus}))
    (timings / "c.json").write_text(json.dumps({"stage": "c", "seconds": 1.0}))  # a stage with no cells
    # x, shared by two stages, counts once
    assert training_cpus(tmp_path) == "Xeon: 2; EPYC: 1; not recorded (built before the record): 1"


def test_scale_table_sets_each_profile_beside_the_paper_profile():
    from emergence.common.params import merged_params
    from emergence.report.report_index import scale_table

    df = scale_table(merged_params(profile="default"), merged_params(profile="paper"))
    rows = dict(zip(df["setting"], zip(df["this run (default)"], df["paper profile"])))
    assert rows["linear map: d_model"] == ("64", "128")
    assert rows["automata: rules in the pool"] == ("4", "256")
    assert rows["Pythia checkpoints probed"][0] == "no"


def test_time_summary_names_the_total_the_cold_cost_and_the_largest_stages(tmp_path):
    from emergence.report.report_index import time_summary

    timings = tmp_path / "data" / "timings"
    timings.mkdir(parents=True)
    for name, seconds, reused in (("a", 6.0, 594.0), ("b", 120.0, 0.0), ("c", 1.0, 0.0)):
        (timings / f"{name}.json").write_text(json.dumps({"stage": name, "seconds": seconds, "cells_built": 0,
                                                          "cells_reused": int(reused > 0),
                                                          "reused_build_seconds": reused}))
    text = time_summary(stage_timings(tmp_path), top=2)
    assert "2.1 min" in text and "12.0 min" in text and "Largest: a 10.0 min, b 2.0 min." in text
    assert "of the stages' 1 cell lookup, 0 trained the cell, 1 found it in the cache" in text


def test_overlap_check_finds_text_laid_over_text(tmp_path):
    import typst

    from emergence.report.pdf_layout import overlapping_text

    for name, source in (("clean", "A paragraph of ordinary text.\n\n#table(columns: 2, [alpha], [beta])\n"),
                         ("over", "#place(top + left)[Overlapping words]\n#place(top + left, dx: 6pt)[Overlapping words]\n")):
        (tmp_path / f"{name}.typ").write_text(source)
        typst.compile(str(tmp_path / f"{name}.typ"), output=str(tmp_path / f"{name}.pdf"))
    assert overlapping_text(tmp_path / "clean.pdf") == {}
    assert list(overlapping_text(tmp_path / "over.pdf")) == [1]


def test_tables_keep_long_words_inside_their_columns(tmp_path):
    """A parameters-like table (long dotted names, long values): laid out by the default widths it
    overlaps in the PDF; by pipe_table's it does not."""
    import pandas as pd

    from emergence.report.pdf_layout import overlapping_text
    from emergence.report.tables import ZWSP, column_widths, pipe_table

    df = pd.DataFrame({"parameter": [f"sweeps.ca_architecture.cells.H{h}_dh16_L2.profiles" for h in range(1, 9)],
                       "value": ["['smoke', 'default', 'paper'] and a longer note " * 2] * 8,
                       "n": list(range(8))})
    assert column_widths([["capability", "ioi"], ["x" * 200]])[0] >= len("capability") + 1
    assert ZWSP in pipe_table(df)
    for name, md in (("default", df.to_markdown(index=False)), ("fitted", pipe_table(df))):
        render.pdf_document(md, tmp_path / f"{name}.pdf", tmp_path, "T")
    assert overlapping_text(tmp_path / "default.pdf")
    assert overlapping_text(tmp_path / "fitted.pdf") == {}


def test_a_tight_table_breaks_identifiers_but_never_numbers():
    import pandas as pd

    from emergence.report.tables import ZWSP, pipe_table

    # ten columns: too wide for the page, so identifiers longer than BREAK_TIGHT get breaks
    df = pd.DataFrame({f"column {i}": ["run_label.x"] for i in range(8)}
                      | {"effect": [0.00246], "score": ["1.23e-07"], "range": ["0.29\u20130.73"]})
    text = pipe_table(df)
    assert f"run_{ZWSP}label" in text
    assert "0.00246" in text and "1.23e-07" in text and "0.29\u20130.73" in text


def test_a_table_can_ask_for_smaller_type_in_the_pdf_only():
    import pandas as pd

    from emergence.report.tables import pipe_table

    df = pd.DataFrame({"claim": ["1 (linear map, abrupt)"], "verdict": ["reproduced"]})
    assert "set text(size" not in pipe_table(df)
    small = pipe_table(df, max_scale=0.8)
    assert "#set text(size: 8.0pt)" in small and "{=typst}" in small  # raw typst: the HTML ignores it
    assert "| 1 (linear map, abrupt) | reproduced |" in small
    wide = pd.DataFrame({f"c{i}": ["1234567890.12345"] for i in range(10)})  # numbers are never broken
    assert "#set text(size: 7.0pt)" in pipe_table(wide, max_scale=0.8)  # a table that needs less still gets less


def test_verdicts_carry_one_colour_into_html_and_pdf(tmp_path):
    from pdfminer.high_level import extract_text

    from emergence.report.tables import VERDICT_COLOURS, coloured, visible

    text = coloured("Claim 8 (gated_deltanet): not reproduced.", "not reproduced")
    assert visible(text) == "Claim 8 (gated_deltanet): not reproduced."
    render.html_page(text, tmp_path / "v.html", tmp_path, "T")
    assert f'<b style="color:{VERDICT_COLOURS["not reproduced"]}">Claim 8' in (tmp_path / "v.html").read_text()
    render.pdf_document(text, tmp_path / "v.pdf", tmp_path, "T")
    assert extract_text(str(tmp_path / "v.pdf")).count("gated_deltanet") == 1  # once, as typst, escaped right


def test_cold_total_counts_a_shared_cell_once(tmp_path):
    timings = tmp_path / "data" / "timings"
    timings.mkdir(parents=True)
    for name, body in {"a": {"seconds": 101.0, "cells_built": 1, "built_seconds": 100.0, "entries": {"x": 100.0}},
                       "b": {"seconds": 3.0, "cells_reused": 2, "reused_build_seconds": 150.0,
                             "entries": {"x": 100.0, "y": 50.0}}}.items():
        (timings / f"{name}.json").write_text(json.dumps({"stage": name, **body}))
    df = stage_timings(tmp_path)
    assert df["cold seconds"].tolist() == [101.0, 53.0, 154.0]  # 1 + 3 s besides training, x and y once
    # in pipeline order (dvc.yaml's), not by name: b runs first, so x counts in b
    (tmp_path / "dvc.yaml").write_text("stages:\n  b: {cmd: b}\n  a: {cmd: a}\n")
    df = stage_timings(tmp_path)
    assert df["stage"].tolist() == ["b", "a", "total"]
    assert df["cold seconds"].tolist() == [153.0, 1.0, 154.0]


def test_cold_cost_of_a_stage_built_by_workers_shares_its_cells_out(tmp_path):
    timings = tmp_path / "data" / "timings"
    timings.mkdir(parents=True)
    cells = {"x": 100.0, "y": 60.0, "z": 40.0}
    warm = {"seconds": 2.0, "cells_reused": 3, "reused_build_seconds": 200.0, "entries": cells,
            "build_wall_seconds": 0.0, "workers": 2}   # a rerun: every cell from the cache
    (timings / "a.json").write_text(json.dumps({"stage": "a", **warm}))
    # 2 s besides building, then 200 cell-seconds on 2 workers: 100 s
    assert stage_timings(tmp_path)["cold seconds"].tolist() == [102.0, 102.0]
    cells["x"] = 150.0  # one cell longer than the others together: the longest bounds the wall
    (timings / "a.json").write_text(json.dumps({"stage": "a", **warm}))
    assert stage_timings(tmp_path)["cold seconds"].tolist() == [152.0, 152.0]
    # unless the executor splits it into its seed groups: then its longest group does
    (timings / "a.json").write_text(json.dumps({"stage": "a", **warm, "pieces": {"x": 3}}))
    assert stage_timings(tmp_path)["cold seconds"].tolist() == [127.0, 127.0]   # 250 cell-seconds on 2


def test_the_glance_table_shows_every_verdict_once_in_scorecard_order():
    from emergence.report.report_index import glance_table
    rows = [{"claim": f"claim {i}", "verdict": ["reproduced", "inconclusive", "not reproduced"][i % 3]}
            for i in range(25)]
    table = glance_table(rows, columns=3)
    assert table.shape == (9, 6)
    claims = [table.iloc[i, 2 * c] for c in range(3) for i in range(9)]
    assert [c for c in claims if c] == [r["claim"] for r in rows]   # down each column, in order
    verdicts = [table.iloc[i, 2 * c + 1] for c in range(3) for i in range(9) if table.iloc[i, 2 * c]]
    assert all(r["verdict"] in v for r, v in zip(rows, verdicts))  # each beside its own claim
    # a verdict that some resample of the seeds did not give again carries its share
    rows[0]["stability"], rows[1]["stability"] = 0.74, 1.0
    shown = glance_table(rows, columns=3)
    assert shown.iloc[0, 1].endswith(" (74%)") and not shown.iloc[1, 1].endswith("%)")


def test_the_stability_paragraph_names_the_shaky_verdicts_or_says_there_are_none():
    from emergence.report.report_index import stability_markdown

    firm = {"claim": "4", "verdict": "reproduced", "stability": 1.0, "resampled": {"reproduced": 50}}
    shaky = {"claim": "8 (Mixer)", "verdict": "inconclusive", "stability": 0.5,
             "resampled": {"inconclusive": 25, "not reproduced": 25}}
    text = stability_markdown([firm, shaky])
    assert "share of 50 resamples" in text
    assert text.endswith("Least stable here: 8 (Mixer): inconclusive, the same verdict on 50% of 50 resamples of "
                         "the seeds (else: not reproduced in 25).")
    assert stability_markdown([firm]).endswith("Here every verdict came back in every resample.")
    unsampled = dict(firm, stability=None, resampled={})
    assert "`claims.stability_draws` is 0" in stability_markdown([unsampled])


def test_the_threshold_table_names_each_change_and_counts_the_verdicts_that_hinge():
    from emergence.report.report_index import sensitivity_markdown

    change = {"row": "lm-abrupt", "claim": "1 (lm)", "from": "not reproduced", "to": "reproduced"}
    sensitivity = [{"threshold": "abrupt_ratio", "value": 0.25, "lower": {"value": 0.2, "changed": []},
                    "higher": {"value": 0.3125, "changed": [change]}},
                   {"threshold": "most_of_gap", "value": 0.9, "lower": {"value": 0.72, "changed": [change]},
                    "higher": None}]
    text, table = sensitivity_markdown(sensitivity, 1.25, 36)
    assert "divided and multiplied by 1.25" in text and "1 of 36 verdicts change" in text
    assert "0.312: 1 (lm): not reproduced → reproduced" in table and "0.2: no change" in table
    assert "not tried (would reach 1)" in table
    assert sensitivity_markdown([], 1.25, 36) == []


def test_powers_and_indices_are_typeset_but_code_and_identifiers_are_not():
    from emergence.report.render import typeset_scripts
    text = "at 10^4 steps, p^L and x_0 x_1; d_head, seeds_per_group, `x_0 10^4` and ```{=typst}\n#x^2\n```"
    out = typeset_scripts(text)
    assert "10^4^ steps" in out and "p^L^ and" in out and "x~0~ x~1~" in out
    assert "d_head, seeds_per_group" in out and "`x_0 10^4`" in out and "#x^2" in out
    assert typeset_scripts(out) == out  # already typeset text is left alone


def test_the_metrics_comparison_lists_only_what_changed(tmp_path):
    import json
    import subprocess

    from emergence.report.report_index import METRICS_FILES, metrics_diff
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    first, second = (tmp_path / f for f in METRICS_FILES)
    first.parent.mkdir(parents=True)
    first.write_text(json.dumps({"a": 1.0, "b": 2.0, "gone": 3.0}))
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    first.write_text(json.dumps({"a": 1.0, "b": 2.5, "new": 4.0}))
    second.parent.mkdir(parents=True, exist_ok=True)
    second.write_text(json.dumps({"x": 1.0, "y": 2.0}))
    table, note = metrics_diff(tmp_path, "HEAD")
    assert sorted(table["metric"]) == ["linear_map: b", "linear_map: gone", "linear_map: new"]
    assert table.set_index("metric").loc["linear_map: b", "change"] == "0.5"
    assert note == f"1 metrics unchanged; `{METRICS_FILES[1]}` is new (2 metrics)."


def test_the_entry_page_names_the_commit_its_symbolic_base_was(tmp_path):
    """`report.base_rev: HEAD~1` moves with every commit and git is no input of the page, so the
    page says which commit it compared against: short hash, date, subject (cut when long)."""
    import subprocess

    from emergence.common.provenance import commit_label
    git = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a], cwd=tmp_path,  # noqa: E731
                                    check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    for subject in ("the base run", "a run with a subject far longer than a heading should carry " * 3):
        git("commit", "-q", "--allow-empty", "-m", subject)
    short = git("rev-parse", "--short", "HEAD~1")
    assert commit_label("HEAD~1", tmp_path).startswith(f"{short} (") and commit_label("HEAD~1", tmp_path).endswith(
        "): the base run")
    assert len(commit_label("HEAD", tmp_path)) == 90 and commit_label("HEAD", tmp_path).endswith("…")
    assert commit_label("HEAD~5", tmp_path) is None


def _hidden_outputs(source: str) -> list[int]:
    """Lines of md(...) / table(...) calls whose value a notebook cell never shows: an IPython
    cell displays only its last top-level expression, so such a call anywhere else (inside an
    if, a loop, or before the cell's end) needs display()."""
    hidden, cells = [], re.split(r"^# %%.*$", source, flags=re.M)
    offset = 0
    for cell in cells:
        tree = ast.parse(cell)
        last = tree.body[-1] if tree.body else None
        for node in ast.walk(tree):
            if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name) and node.value.func.id in ("md", "table")
                    and node is not last):
                hidden.append(offset + node.lineno)
        offset += cell.count("\n")
    return hidden


def test_hidden_output_check_finds_a_call_inside_a_block():
    assert _hidden_outputs("# %%\nif x:\n    md('a')\n# %%\nmd('b')\n") == [3]
    assert _hidden_outputs("# %%\nmd('a')\ny = 1\n") == [2]
    assert _hidden_outputs("# %%\nif x:\n    display(md('a'))\nmd('b')\n") == []


def test_every_chapter_shows_the_text_and_tables_it_builds():
    for chapter in sorted((REPO_ROOT / "report" / "chapters").glob("*.py")):
        assert _hidden_outputs(chapter.read_text()) == [], chapter.name


def test_report_numbers_tell_unreached_from_undefined():
    from emergence.report.reporting import fmt

    assert fmt(float("inf")) == "∞" and fmt(-math.inf) == "-∞"  # an unreached KM median or ratio
    assert fmt(float("nan")) == "n/a" and fmt(None) == "n/a"
    assert fmt(401.318, 4) == "401.3"


def test_the_entry_page_counts_the_papers_claims_apart_from_this_reports_own():
    from emergence.report.report_index import scorecard_markdown

    def row(i, kind, verdict):
        return {"id": f"r{i}", "kind": kind, "claim": f"claim {i}", "verdict": verdict, "statement": "s", "paper": "",
                "chapter": "01_linear_map", "figure": "fig-x", "statistic": "x", "estimate": 1.0, "interval": [0, 2],
                "n": 4, "censored": 0, "p_value": None, "q_value": None, "stability": None, "resampled": {}}

    rows = [row(0, "paper", "reproduced"), row(1, "paper", "reproduced"), row(2, "extension", "not reproduced"),
            row(3, "control", "not reproduced")]
    text = scorecard_markdown({"claims": rows, "alpha": 0.1, "thresholds": {}})
    first = text.split("\n\n")[0]
    second = next(part for part in text.split("\n\n") if "own questions" in part)
    # the first line counts the paper's claims only: the extension's and the control's
    # "not reproduced" are not a verdict on the paper
    assert first.startswith("**The paper's claims** (2 claims and sub-claims): **2** reproduced.")
    assert "not reproduced" not in first
    assert second.startswith("**This report's own questions** (2:") and "**2** not reproduced" in second
    assert text.find(first) < text.find("claim 0") < text.find(second) < text.find("claim 2")
    assert "claim 2 (extension)" in text and "claim 3 (control)" in text   # the full table marks them
    # a scorecard with no extension shows no second tally
    assert "own questions" not in scorecard_markdown({"claims": rows[:2], "alpha": 0.1, "thresholds": {}})

"""The comparison page's account of a result one revision lacks (emergence.report.compare)."""
from emergence.report.compare import _lacks


def _rev(role: str, value, recorded: bool) -> dict:
    path = "data/linear_map/train.nc"
    return {"role": role, "linear_map_results": value, "paths": {"linear_map_results": path},
            "results": {path: ("linear_map_train", "d1338615")} if recorded else {}}


def test_a_result_present_in_both_is_not_called_lacking():
    assert _lacks([_rev("base 4e68b8a", object(), True), _rev("head c6826fa", object(), True)],
                  "linear_map_results") == ""


def test_a_result_the_lock_records_but_the_cache_lacks_says_it_ran_elsewhere():
    note = _lacks([_rev("base 4e68b8a", None, True), _rev("head c6826fa", object(), True)], "linear_map_results")
    assert "base 4e68b8a has no `linear_map_results`" in note
    assert "DVC cache does not hold it" in note and "dvc pull" in note
    assert "head" not in note


def test_a_result_never_produced_says_so():
    note = _lacks([_rev("base 4e68b8a", object(), True), _rev("head c6826fa", None, False)], "linear_map_results")
    assert "head c6826fa has no `linear_map_results`: that revision never produced it" in note


def test_a_figure_neither_revision_can_draw_says_why_for_each(tmp_path):
    """A fresh clone's own DVC cache is empty: both revisions' dvc.lock record the result, and the
    page says so for each, with the way to get it, instead of 'neither revision has it'."""
    from emergence.report import compare

    others = {key: None for key in compare.RESULTS if key != "linear_map_results"}
    (block, *_) = compare.figures({**_rev("base 4e68b8a", None, True), **others},
                                  {**_rev("head c6826fa", None, False), **others}, tmp_path)
    assert block.startswith("*Linear map:") and "Not drawn" in block
    assert "base 4e68b8a has no `linear_map_results`: its dvc.lock records it" in block and "dvc pull" in block
    assert "head c6826fa has no `linear_map_results`: that revision never produced it" in block


def _result(path, loss, **attrs):
    import numpy as np
    import xarray as xr

    from emergence.common.io import write_netcdf

    ds = xr.Dataset({"loss": (("seed",), np.array(loss, dtype=float))}, coords={"seed": np.arange(len(loss))},
                    attrs={"config": "{}", "code_version": "0.1+src.a", **attrs})
    path.parent.mkdir(parents=True, exist_ok=True)
    write_netcdf(ds, path)
    return path


def test_what_differs_tells_a_changed_code_version_from_changed_numbers(tmp_path):
    from emergence.report.compare import output_change

    base = _result(tmp_path / "a" / "r.nc", [1.0, 2.0])
    assert output_change(base, _result(tmp_path / "b" / "r.nc", [1.0, 2.0])) == ""
    assert output_change(base, _result(tmp_path / "c" / "r.nc", [1.0, 2.0], code_version="0.1+src.b")) \
        == "provenance only (code_version)"
    assert output_change(base, _result(tmp_path / "d" / "r.nc", [1.0, 2.5], code_version="0.1+src.b")) == "values: loss"
    assert output_change(base, _result(tmp_path / "e" / "r.nc", [1.0, 2.0], config='{"a": 1}')) == "attributes: config"


def test_a_folder_output_counts_its_files_by_what_differs(tmp_path):
    from emergence.report.compare import output_change

    for name, loss, code in (("S4", [1.0], "x"), ("S8", [2.0], "x")):
        _result(tmp_path / "base" / f"{name}.nc", loss, code_version=code)
    _result(tmp_path / "head" / "S4.nc", [1.0], code_version="y")
    _result(tmp_path / "head" / "S8.nc", [3.0], code_version="y")
    _result(tmp_path / "head" / "S16.nc", [1.0])
    (tmp_path / "base" / "notes.txt").write_text("a")
    (tmp_path / "head" / "notes.txt").write_text("b")
    assert output_change(tmp_path / "base", tmp_path / "head").split("; ") == [
        "1 of 4 files: only in head", "1 of 4 files: provenance only (code_version)", "1 of 4 files: values: loss",
        "1 of 4 files: bytes"]
    assert output_change(tmp_path / "base", tmp_path / "absent").startswith("not read")


def test_a_figure_drawn_from_the_same_numbers_says_its_lines_coincide(tmp_path, monkeypatch):
    """Across a refactor that changed only the code version, both revisions draw the same curve."""
    from emergence.common.io import read_netcdf
    from emergence.report import compare

    def rev(role, code, shift=0.0):
        ds = read_netcdf(_result(tmp_path / role / "r.nc", [1.0, 2.0 + shift], code_version=code))
        return {"role": role, "paths": {}, "results": {}, "probe": ds}

    draw = lambda ax, r, style, colour: ax.plot(r["probe"]["loss"].values, style, color=colour, label=r["role"])  # noqa: E731
    monkeypatch.setattr(compare, "FIGURES", [("probe", draw, "seed", "loss", "Loss.")])
    (same,) = compare.figures(rev("base", "a"), rev("head", "b"), tmp_path / "page")
    assert "lines coincide" in same
    (moved,) = compare.figures(rev("base", "a"), rev("moved", "b", shift=1.0), tmp_path / "page")
    assert "lines coincide" not in moved


def test_a_revision_is_checked_out_from_the_cache_the_repository_is_configured_with(tmp_path):
    """A shared cache (`dvc cache dir` elsewhere, as on a cluster) holds the base's outputs; the
    repository's own .dvc/cache is empty. The base's tree must read them from the shared one."""
    import os
    import subprocess
    import sys

    from emergence.report.compare import checkout

    repo, shared = tmp_path / "repo", tmp_path / "shared-cache"
    repo.mkdir()
    env = dict(os.environ, DVC_NO_ANALYTICS="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    dvc = str(os.path.join(os.path.dirname(sys.executable), "dvc"))

    def run(*args):
        subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True)

    run("git", "init", "-q")
    run(dvc, "init", "-q")
    run(dvc, "cache", "dir", "--local", str(shared))
    (repo / "result.txt").write_text("base\n")
    run(dvc, "add", "-q", "result.txt")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "base")
    (repo / "result.txt").write_text("head\n")  # the workspace moves on
    run(dvc, "add", "-q", "result.txt")
    assert not (repo / ".dvc" / "cache").exists()  # every output lives in the shared cache
    tree = checkout("HEAD", repo)
    assert (tree / "result.txt").read_text() == "base\n"


def test_a_dvc_experiment_is_named_as_dvc_exp_show_names_it(tmp_path):
    """`make compare BASE=<experiment>`: a name `dvc exp show` lists resolves to the commit its
    ref (refs/exps/<baseline>/<name>) points at; git revisions keep working; a name that is
    nothing, or two experiments, is refused saying what was looked for."""
    import os
    import subprocess

    import pytest

    from emergence.report.compare import resolve

    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")

    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "baseline")
    base = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "an experiment's commit")
    exp = git("rev-parse", "HEAD")
    git("reset", "-q", "--hard", base)
    git("update-ref", f"refs/exps/{base[:2]}/{base[2:]}/lr-3e-4", exp)
    assert resolve("lr-3e-4", tmp_path) == exp
    assert resolve("HEAD", tmp_path) == base
    with pytest.raises(ValueError, match="no commit of this repository and no DVC experiment"):
        resolve("lr-1e-2", tmp_path)
    git("update-ref", f"refs/exps/{exp[:2]}/{exp[2:]}/lr-3e-4", exp)
    with pytest.raises(ValueError, match="names 2 DVC experiments"):
        resolve("lr-3e-4", tmp_path)

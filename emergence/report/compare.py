"""Two revisions side by side, read from DVC's cache and never retrained:

    make compare BASE=<rev or experiment> [HEAD=<rev, experiment or workspace>]
                                                           (python -m emergence.report.compare BASE [HEAD])

A revision is anything git names (a commit, branch, tag, HEAD~1) or a DVC experiment by its name
(`dvc exp show` lists them; `dvc exp run` keeps each as a git ref under refs/exps/). Each
revision other than the workspace is checked out as a git worktree (under
data/.scratch/compare/) whose DVC outputs come from this repository's cache (`dvc checkout`, no
stage runs). The page (report/_compare/compare.html and compare.pdf, the report's renderer, no
external URL) lists what changed: the parameters, the result files (their hashes in dvc.lock,
with the stages that wrote them), the verdicts and the summary metrics; and it overlays the key
figures of both: learning curves on the linear map, the sparsity hump, the automata's plateau
against S, emergence against size. A result that a revision lacks (never run, or not in
the cache) is named, never silently skipped.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from emergence.analysis.summary_metrics import at_budget  # noqa: E402
from emergence.claims.scorecard import changed_numbers, changed_verdicts  # noqa: E402
from emergence.common import lm_variants as lv
from emergence.common.io import read_netcdf  # noqa: E402
from emergence.common.params import REPO_ROOT, flatten, merged_params  # noqa: E402
from emergence.pipeline.stage import pipeline_paths  # noqa: E402
from emergence.report.render import html_page, pdf_document  # noqa: E402
from emergence.report.report_index import params_diff  # noqa: E402
from emergence.report.tables import pipe_table  # noqa: E402

WORKSPACE = "workspace"
PROVENANCE = ("code_version", "torch_version")  # attributes that say how a result was made, not what it holds
RESULTS = ("linear_map_results", "sparsity_summary", "ca_state_size_summary", "lm_probes")


def _run(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed in {cwd}: {out.stderr.strip()[-2000:]}")
    return out


def experiment_refs(name: str, root: Path = REPO_ROOT) -> list[str]:
    """The refs of DVC experiments named `name` (refs/exps/<baseline>/<name>)."""
    refs = _run(["git", "for-each-ref", "--format=%(refname)", "refs/exps/"], root, check=False).stdout.split()
    return [ref for ref in refs if ref.rsplit("/", 1)[-1] == name]


def resolve(rev: str, root: Path = REPO_ROOT) -> str:
    """The commit `rev` names: a git revision, else a DVC experiment's name. Raises ValueError,
    naming what was looked for, when it names none or several experiments."""
    out = _run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root, check=False)
    if out.returncode == 0:
        return out.stdout.strip()
    refs = experiment_refs(rev, root)
    if len(refs) > 1:
        raise ValueError(f"{rev!r} names {len(refs)} DVC experiments ({', '.join(refs)}): give one of their refs")
    if not refs:
        raise ValueError(f"{rev!r} names no commit of this repository and no DVC experiment "
                         "(git revisions, or the names `dvc exp show` lists)")
    return _run(["git", "rev-parse", f"{refs[0]}^{{commit}}"], root).stdout.strip()


def checkout(rev: str, root: Path = REPO_ROOT) -> Path:
    """The tree of `rev` with its DVC outputs, from this repository's cache: the workspace itself,
    or a git worktree under data/.scratch/compare/ (made anew each time)."""
    if rev == WORKSPACE:
        return root
    sha = resolve(rev, root)
    dest = root / "data" / ".scratch" / "compare" / sha[:12]
    if dest.exists():
        _run(["git", "worktree", "remove", "--force", str(dest)], root, check=False)
        shutil.rmtree(dest, ignore_errors=True)
    _run(["git", "worktree", "add", "--detach", "--force", str(dest), sha], root)
    dvc = str(Path(sys.executable).parent / "dvc")
    # the cache this repository is configured with (`dvc cache dir`: a cluster's shared one, say)
    cache = _run([dvc, "cache", "dir"], root).stdout.strip()
    _run([dvc, "config", "--local", "cache.dir", str(Path(root, cache).resolve())], dest)
    _run([dvc, "config", "--local", "cache.type", "hardlink,copy"], dest)  # read only: links, not copies
    _run([dvc, "checkout", "--quiet"], dest, check=False)  # outputs missing from the cache stay missing
    return dest


def revision(rev: str, tree: Path, role: str, root: Path = REPO_ROOT) -> dict:
    """What the comparison reads from one tree (`role`: base or head): effective params,
    scorecard, summary metrics and the results behind the figures (None where it lacks one)."""
    paths = pipeline_paths(tree)
    read = lambda key: read_netcdf(tree / paths[key]) if key in paths and (tree / paths[key]).exists() else None  # noqa: E731
    jsons = {}
    for key in ("scorecard", "summary_metrics"):
        path = tree / paths.get(key, "-")
        jsons[key] = json.loads(path.read_text()) if key in paths and path.is_file() else None
    label = rev if rev == WORKSPACE else _run(["git", "log", "-1", "--format=%h %s", resolve(rev, root)], root).stdout.strip()
    if rev != WORKSPACE and experiment_refs(rev, root) and not label.startswith(rev):
        label = f"{label.split()[0]} experiment {rev}"
    return {"rev": rev, "label": label, "role": f"{role} {label.split()[0]}", "tree": tree,
            "params": flatten(merged_params(tree)),
            "paths": paths, "results": result_hashes(tree), **jsons,
            **{key: read(key) for key in RESULTS}}


def result_hashes(tree: Path) -> dict[str, tuple[str, str]]:
    """Each output recorded in the tree's dvc.lock: its path -> (the stage that wrote it, its
    hash); empty where there is no lock."""
    lock = tree / "dvc.lock"
    if not lock.is_file():
        return {}
    stages = (yaml.load(lock.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}).get("stages", {})
    return {out["path"]: (name, str(out.get("md5", ""))) for name, stage in stages.items()
            for out in stage.get("outs", [])}


def netcdf_change(a: Path, b: Path) -> str:
    """What differs between two versions of one NetCDF file: "" where nothing does, else the
    variables and coordinates whose values differ and the attributes that do, those that only
    record how the result was made (PROVENANCE) told apart: a refactor that reproduces every
    number reads "provenance only"."""
    x, y = read_netcdf(a), read_netcdf(b)
    values = sorted(name for name in set(x.variables) | set(y.variables)
                    if name not in x.variables or name not in y.variables or not x[name].identical(y[name]))
    attrs = sorted(k for k in set(x.attrs) | set(y.attrs) if not _same_attr(x.attrs.get(k), y.attrs.get(k)))
    made = [k for k in attrs if k in PROVENANCE]
    kept = [k for k in attrs if k not in PROVENANCE]
    if not values and not kept:
        return f"provenance only ({', '.join(made)})" if made else ""
    parts = ([f"values: {_few(values)}"] if values else []) + ([f"attributes: {_few(kept)}"] if kept else [])
    return "; ".join(parts)


def _without_provenance(ds):
    return ds.drop_attrs(deep=False).assign_attrs({k: v for k, v in ds.attrs.items() if k not in PROVENANCE})


def _same_attr(a, b) -> bool:
    return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else a == b


def _few(names: list[str], most: int = 4) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def output_change(a: Path, b: Path) -> str:
    """What differs between two versions of an output, a file or a folder of them: each NetCDF
    file read (`netcdf_change`), any other file by its bytes. A folder's account counts its files
    by what differs."""
    if a.is_file() and b.is_file():
        if a.read_bytes() == b.read_bytes():
            return ""
        return netcdf_change(a, b) if a.suffix == ".nc" else "bytes"
    if not (a.is_dir() and b.is_dir()):
        return ("not read: a revision's copy is not in the DVC cache" if not (a.exists() and b.exists())
                else "a file in one, a folder in the other")
    files = lambda root: {p.relative_to(root) for p in root.rglob("*") if p.is_file()}  # noqa: E731
    fa, fb = files(a), files(b)
    counts: dict[str, int] = {}
    for rel in sorted(fa | fb):
        what = ("only in base" if rel not in fb else "only in head" if rel not in fa
                else output_change(a / rel, b / rel))
        if what:
            counts[what] = counts.get(what, 0) + 1
    return "; ".join(f"{n} of {len(fa | fb)} files: {what}" for what, n in counts.items())


def result_diff(base: dict, head: dict) -> tuple[pd.DataFrame, int]:
    """The outputs whose recorded hash differs (or that one revision lacks), with their stage,
    both hashes' first 8 characters and what differs in them (`output_change`, where both trees
    hold the output); and how many are the same in both."""
    a, b = base["results"], head["results"]
    short = lambda rec: rec[1][:8] if rec else "(absent)"  # noqa: E731
    rows = [(path, (b.get(path) or a.get(path))[0], short(a.get(path)), short(b.get(path)),
             output_change(base["tree"] / path, head["tree"] / path) if a.get(path) and b.get(path) else "")
            for path in sorted(set(a) | set(b)) if a.get(path) != b.get(path)]
    return (pd.DataFrame(rows, columns=["result", "stage", "base", "head", "what differs"]),
            len(set(a) | set(b)) - len(rows))


def _results_section(base: dict, head: dict) -> str:
    lacking = [r["label"] for r in (base, head) if not r["results"]]
    if lacking:
        return f"Not known: {'; '.join(lacking)} has no dvc.lock."
    df, same = result_diff(base, head)
    return (_table(df, "None.") + f"\n\n{same} other results have the same hash in both revisions' dvc.lock."
            + (" \"Provenance only\": the same numbers, recorded as made by other code (a changed "
               "`code_version`: the training code's syntax, not its comments) or another torch."
               if df["what differs"].str.contains("provenance only").any() else ""))


def verdict_diff(base: dict, head: dict) -> pd.DataFrame:
    if base["scorecard"] is None or head["scorecard"] is None:
        return pd.DataFrame()
    return pd.DataFrame(changed_verdicts(base["scorecard"]["claims"], head["scorecard"]["claims"]),
                        columns=["claim", "base", "head"])


def number_diff(base: dict, head: dict) -> pd.DataFrame:
    """Claims decided the same way on other numbers."""
    if base["scorecard"] is None or head["scorecard"] is None:
        return pd.DataFrame()
    return pd.DataFrame(changed_numbers(base["scorecard"]["claims"], head["scorecard"]["claims"]),
                        columns=["claim", "verdict", "base", "head"])


def metric_diff(base: dict, head: dict) -> pd.DataFrame:
    """Metrics that differ; empty where a revision has no metrics file (the page says which)."""
    if base["summary_metrics"] is None or head["summary_metrics"] is None:
        return pd.DataFrame()
    a, b = base["summary_metrics"], head["summary_metrics"]
    rows = [(k, a.get(k, "(absent)"), b.get(k, "(absent)")) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return pd.DataFrame(rows, columns=["metric", "base", "head"])


def _lacks(revs: list[dict], key: str) -> str:
    """Which revision lacks the result `key`, and why: recorded in its dvc.lock but absent from
    this repository's DVC cache (it ran in another clone or on another machine), or never
    produced there."""
    notes = []
    for rev in (r for r in revs if r[key] is None):
        recorded = rev["paths"].get(key) in rev["results"]
        why = ("its dvc.lock records it, but this repository's DVC cache does not hold it (it ran in "
               "another clone or on another machine: `dvc pull` it from a remote that has it, or rerun "
               "that revision)"
               if recorded else "that revision never produced it")
        notes.append(f"{rev['role']} has no `{key}`: {why}")
    return f" Lacking here: {'; '.join(notes)}." if notes else ""


def _linear_map(ax, rev: dict, style: str, colour: str) -> None:
    ds = rev["linear_map_results"]
    steps = ds["step"].values
    acc = ds["accuracy"].values
    for row in acc:
        ax.plot(steps, row, style, lw=0.6, alpha=0.3, color=colour)
    ax.plot(steps, np.nanmean(acc, 0), style, lw=2, color=colour, label=rev["role"])


def _sparsity(ax, rev: dict, style: str, colour: str) -> None:
    ds = rev["sparsity_summary"]
    for S in sorted(set(ds["state_size"].values.tolist())):
        idx = [i for i in range(ds.sizes["cell"]) if ds["state_size"].values[i] == S]
        idx.sort(key=lambda i: ds["density"].values[i])
        ax.plot(ds["density"].values[idx], np.nanmedian(ds["final_output_loss"].values[idx], 1), style, marker="o",
                color=colour, alpha=0.4 + 0.6 * (S == max(ds["state_size"].values)), label=f"{rev['role']}, S = {S}")


def _automata(ax, rev: dict, style: str, colour: str) -> None:
    ds = rev["ca_state_size_summary"]
    for c in sorted(set(ds["strength"].values.tolist())):
        idx = sorted((i for i in range(ds.sizes["cell"]) if ds["strength"].values[i] == c),
                     key=lambda i: ds["state_size"].values[i])
        ax.plot(ds["state_size"].values[idx], [at_budget(ds, i, "plateau_end") for i in idx], style, marker="o",
                color=colour, label=f"{rev['role']}, c = {c:g}")
    ax.set_xscale("log", base=2)


def _language_models(ax, rev: dict, style: str, colour: str) -> None:
    pr = rev["lm_probes"]
    sizes = lv.sizes(pr["size"].values)
    solved = [float((pr["bracket_censored"].sel(size=s).values == 0).mean()) for s in sizes]
    ax.plot(range(len(sizes)), solved, style, marker="o", color=colour, label=rev["role"])
    ax.set_xticks(range(len(sizes)), sizes)


FIGURES = [
    ("linear_map_results", _linear_map, "step", "bit accuracy", "Linear map: accuracy against step, every seed (thin) "
     "and their mean (thick)."),
    ("sparsity_summary", _sparsity, "density s/S", "median final loss on x_1", "Sparsity: median final loss against "
     "s/S per state size (the largest S darkest)."),
    ("ca_state_size_summary", _automata, "state size S", "KM median plateau end (step)", "Automata: Kaplan-Meier "
     "median plateau end against S per bias strength (drawn at the budget where not reached)."),
    ("lm_probes", _language_models, "size", "fraction of (capability, seed) solved", "Language models: fraction of "
     "capability runs solved within the budget, per size."),
]


def figures(base: dict, head: dict, out_dir: Path) -> list[str]:
    """Markdown for each key figure, both revisions overlaid (base dashed, head solid)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    blocks = []
    for i, (key, draw, xlabel, ylabel, caption) in enumerate(FIGURES):
        have = [(r, style, colour) for r, style, colour in ((base, "--", "C0"), (head, "-", "C3")) if r[key] is not None]
        if not have:
            blocks.append(f"*{caption}* Not drawn: neither revision's `{key}` is here.{_lacks([base, head], key)}")
            continue
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        for rev, style, colour in have:
            draw(ax, rev, style, colour)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"figure{i}.png"
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        same = (" The two revisions' results here are identical, so their lines coincide."
                if len(have) == 2 and _without_provenance(base[key]).identical(_without_provenance(head[key])) else "")
        blocks.append(f"![{caption} Base dashed, head solid.{same}{_lacks([base, head], key)}]({name})")
    return blocks


def _table(df: pd.DataFrame, empty: str) -> str:
    return pipe_table(df.astype(str)) if not df.empty else empty


def compare_markdown(base: dict, head: dict, work_dir: Path) -> str:
    missing = [f"{r['label']}: no `{k}`" for r in (base, head) for k in ("scorecard", "summary_metrics") if r[k] is None]
    return "\n\n".join([
        f"Base: **{base['label']}**. Head: **{head['label']}**. Read from DVC's cache; nothing was rerun."
        + (f" Missing: {'; '.join(missing)}." if missing else ""),
        "## Parameters that changed", _table(params_diff(head["params"], base["params"]), "None."),
        "## Results that changed", _results_section(base, head),
        "## Verdicts that changed", _table(verdict_diff(base, head), "None."),
        "Where a revision's scorecard resampled its seeds, each verdict carries the share of those resamples "
        "that gave it again (emergence/claims/stability.py): a change between verdicts that few resamples give is one "
        "another run of the same code could make.",
        "## Same verdict, other numbers", _table(number_diff(base, head), "None."),
        "## Summary metrics that changed", _table(metric_diff(base, head), "None (or, where named above, a revision has none)."),
        "## Key figures", *figures(base, head, work_dir),
    ]) + "\n"


def compare(base_rev: str, head_rev: str = WORKSPACE, root: Path = REPO_ROOT) -> Path:
    """Write root/report/_compare/compare.html and compare.pdf; returns the folder."""
    trees = {rev: checkout(rev, root) for rev in (base_rev, head_rev)}
    try:
        base = revision(base_rev, trees[base_rev], "base", root)
        head = revision(head_rev, trees[head_rev], "head", root)
        out, work = root / "report" / "_compare", root / "data" / ".scratch" / "compare" / "page"
        shutil.rmtree(work, ignore_errors=True)
        markdown = compare_markdown(base, head, work)
        out.mkdir(parents=True, exist_ok=True)
        title = f"Comparison: {base_rev} against {head_rev}"
        html_page(markdown, out / "compare.html", work, title)
        pdf_document(markdown, out / "compare.pdf", work, title)
    finally:
        for tree in trees.values():
            if tree != root:
                _run(["git", "worktree", "remove", "--force", str(tree)], root, check=False)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m emergence.report.compare", description="Two revisions side by side, "
                                     "from DVC's cache, never retrained: report/_compare/compare.html and .pdf.")
    parser.add_argument("base", help="the base: a git revision (a commit, branch, tag, HEAD~1) or a DVC experiment's name")
    parser.add_argument("head", nargs="?", default=WORKSPACE,
                        help=f"a git revision, a DVC experiment's name, or {WORKSPACE} (the default)")
    args = parser.parse_args(argv)
    for rev in {args.base, args.head} - {WORKSPACE}:
        try:
            resolve(rev)
        except ValueError as err:
            parser.error(str(err))
    out = compare(args.base, args.head)
    print(f"HTML: {out / 'compare.html'}\nPDF:  {out / 'compare.pdf'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The report's entry page: the claims scorecard first, then provenance, stage timings, the diff
against a base revision and the parameters."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import yaml

import emergence
from emergence.params import deep_merge, flatten, merged_params
from emergence.schema import ConfigError
from emergence.provenance import code_version, git_show, git_state, hardware, package_versions
from emergence.scorecard import claim_evidence, read_scorecard
from emergence.stage import pipeline_paths

METRICS_FILES = ("data/linear_map/metrics.json",)


def params_at_rev(rev: str, root: Path) -> dict | None:
    """Effective (profile-merged) flattened params at a git revision; None if unavailable."""
    text = git_show(rev, "params.yaml", root)
    if text is None:
        return None
    try:
        base = yaml.safe_load(text) or {}
        profile = base.get("profile", "default")
        if profile != "default":
            overlay = git_show(rev, f"profiles/{profile}.yaml", root)
            base = deep_merge(base, yaml.safe_load(overlay or "") or {})
    except (yaml.YAMLError, ConfigError):
        return None
    return flatten(base)


def params_diff(current: dict, base: dict) -> pd.DataFrame:
    keys = sorted(set(current) | set(base))
    rows = [(k, base.get(k, "(absent)"), current.get(k, "(absent)")) for k in keys if base.get(k) != current.get(k)]
    return pd.DataFrame(rows, columns=["parameter", "base", "this run"])


def metrics_diff(root: Path, rev: str) -> pd.DataFrame:
    rows = []
    for path in METRICS_FILES:
        now_file = root / path
        now = json.loads(now_file.read_text()) if now_file.exists() else {}
        then_text = git_show(rev, path, root)
        then = json.loads(then_text) if then_text else {}
        for key in sorted(set(now) | set(then)):
            a, b = then.get(key), now.get(key)
            change = _short(b - a) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else ""
            rows.append((f"{Path(path).parent.name}: {key}", _short(a) if key in then else "(absent)",
                         _short(b) if key in now else "(absent)", change))
    return pd.DataFrame(rows, columns=["metric", "base", "this run", "change"])


def _short(x):
    """4 significant digits for floats (also inside lists); everything else unchanged."""
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list):
        return "[" + ", ".join(str(_short(v)) for v in x) + "]"
    return "n/a" if x is None else x


def stage_timings(root: Path) -> pd.DataFrame:
    """Each stage's wall time in this run, and its cold cost: the wall time plus what the cells it
    took from the cache took to build (n/a where an entry predates the build record)."""
    rows = []
    for f in sorted((root / "data" / "timings").glob("*.json")):
        t = json.loads(f.read_text())
        reused = t.get("reused_build_seconds", 0.0 if not t.get("cells_reused") else None)
        cold = None if reused is None else round(t["seconds"] + reused, 1)
        rows.append((t["stage"], t.get("profile"), t["seconds"], t.get("cells_built", 0), t.get("cells_reused", 0), cold))
    df = pd.DataFrame(rows, columns=["stage", "profile", "seconds", "cells built", "cells reused", "cold seconds"])
    if not df.empty:
        cold = df["cold seconds"]
        total = ("total", "", round(float(df["seconds"].sum()), 1), int(df["cells built"].sum()),
                 int(df["cells reused"].sum()), round(float(cold.sum()), 1) if cold.notna().all() else None)
        df.loc[len(df)] = total
    df["cold seconds"] = df["cold seconds"].astype(object).where(df["cold seconds"].notna(), "n/a")
    return df


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "(none)"


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(none)_"
    return df.astype(str).to_markdown(index=False)


def _pipe_table(df: pd.DataFrame, widths: list[int]) -> str:
    """A pipe table whose columns get these relative widths in the PDF and HTML (pandoc sizes
    wrapped columns by the length of each column's dashes), so no column is squeezed until
    its words break."""
    cell = lambda x: str(x).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(map(cell, df.columns)) + " |", "|" + "|".join(":" + "-" * w for w in widths) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def scorecard_markdown(scorecard: dict) -> str:
    """The scorecard: a tally, then one row per claim with ours beside the paper's number."""
    rows = scorecard["claims"]
    tally = ", ".join(f"**{n}** {v}" for v, n in scorecard["tally"].items() if n)
    table = pd.DataFrame([{
        "claim": r["claim"], "what the paper says": f"{r['statement']} (paper: {r['paper'] or 'no number'})",
        "verdict": f"**{r['verdict']}**", "here": f"{claim_evidence(r)}. [{r['chapter'][3:].replace('_', ' ')}]"
                                                f"({r['chapter']}.html#{r['figure']})"} for r in rows])
    return "\n\n".join([
        f"{len(rows)} claims and sub-claims, each decided by a pre-registered rule (emergence/verdicts.py, "
        f"thresholds in params.yaml `claims`, tests at α = {scorecard['alpha']}): {tally}. Intervals are at level "
        f"{1 - scorecard['alpha']:.0%}; q is the Benjamini-Hochberg adjustment across the scorecard's tests. The "
        "chapters give each rule's reason and the smallest effect it could detect here.",
        _pipe_table(table, [17, 35, 16, 32])])


def verdict_changes(root: Path, rev: str, current: dict) -> pd.DataFrame:
    """Claims whose verdict differs from the scorecard committed at `rev`."""
    text = git_show(rev, pipeline_paths(root)["scorecard"], root)
    if text is None:
        return pd.DataFrame()
    before = {(r["id"], r["claim"]): r["verdict"] for r in json.loads(text).get("claims", [])}
    rows = [(r["claim"], before.get((r["id"], r["claim"]), "(not tested)"), r["verdict"]) for r in current["claims"]
            if before.get((r["id"], r["claim"])) != r["verdict"]]
    return pd.DataFrame(rows, columns=["claim", f"at {rev}", "now"])


def index_markdown(root: Path, base_rev: str, renderer: str, rendered_at: str) -> str:
    """Markdown of the entry page; `{{chapters}}` is left for the renderer's chapter list."""
    params = merged_params(root)  # validated by the stage that renders this page
    git = git_state(root)
    flat = flatten(params)
    base = params_at_rev(base_rev, root)
    base_commit = git_show(base_rev, "", root) is not None
    prov = pd.DataFrame([
        ("git commit", f"`{git['commit']}`"),
        ("source tree dirty", ("yes: " + ", ".join(f"`{f.strip()}`" for f in git["dirty_files"][:8]))
         if git["dirty"] else ("no" if git["dirty"] is not None else "unknown")),
        ("package version", emergence.__version__),
        ("code version (library source hash)", f"`{code_version()}`"),
        ("profile", f"**{params['profile']}**"),
        ("training precision (train.precision)", ", ".join(
            f"{section}: {params[section]['train']['precision']}"
            for section in ("linear_map", "cellular_automata", "language_model"))),
        ("dvc.lock sha256 (upstream stages)", f"`{sha256_of(root / 'dvc.lock')}`"),
        ("renderer", renderer),
        ("rendered at", rendered_at),
    ], columns=["", "value"])
    hw = hardware()
    scorecard = read_scorecard(root / pipeline_paths(root)["scorecard"])
    parts = [
        "This report regenerates the experiments of *Emergent Capabilities Arise Randomly from Learning "
        "Sparse Attention Patterns* (Baherwani et al., arXiv 2606.25010) from code. Every number and "
        "verdict below is computed from the pipeline's result files.",
        "## What was reproduced", scorecard_markdown(scorecard),
        "## Chapters", "{{chapters}}",
        "## Provenance", _md_table(prov),
        "## Time per stage", _md_table(stage_timings(root)),
        f"## Changes against `{base_rev}`",
    ]
    if base is None or not base_commit:
        parts.append(f"No base revision `{base_rev}` with a params.yaml exists; nothing to compare.")
    else:
        parts += ["Verdicts that changed:", _md_table(verdict_changes(root, base_rev, scorecard)),
                  "Parameters (effective values after the profile overlay):", _md_table(params_diff(flat, base)),
                  "Summary metrics (`dvc metrics diff` gives the same from the command line):",
                  _md_table(metrics_diff(root, base_rev))]
    parts += [
        "## Parameters of this run", _md_table(pd.DataFrame(sorted(flat.items()), columns=["parameter", "value"])),
        "## Software and hardware",
        _md_table(pd.DataFrame(sorted(package_versions().items()), columns=["package", "version"])),
        _md_table(pd.DataFrame(sorted((k, str(v)) for k, v in hw.items()), columns=["hardware", "value"])),
    ]
    return "\n\n".join(parts) + "\n"

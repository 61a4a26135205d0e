"""The report's entry page and its appendix.

The entry page leads with the findings: the claims scorecard, the scale of this run against
the paper profile's, where the time went, what changed against the base revision, then the
chapters. Provenance, every stage's time, the parameters, packages and hardware are the
appendix (its own HTML page, the PDF's last pages)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import yaml

from emergence.claims.scorecard import (changed_numbers, changed_verdicts, claim_evidence, fmt_share, is_paper_claim,
                                  least_stable, read_scorecard, shaky, stability_text, tally)
from emergence.common.params import deep_merge, flatten, merged_params, on_profile, sparsities_on
from emergence.common.provenance import code_version, commit_label, git_show, git_state, hardware, package_versions
from emergence.common.schema import ConfigError
from emergence.pipeline.stage import PREBUILD, pipeline_paths, read_pipeline
from emergence.report.tables import coloured, pipe_table
import emergence

METRICS_FILES = ("data/linear_map/metrics.json", "data/metrics/summary.json")


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


def yaml_value(value) -> str:
    """A parameter's value as params.yaml writes it (null, true, [a, b]), not as Python prints it."""
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).removesuffix("\n...\n").strip()


def params_diff(current: dict, base: dict) -> pd.DataFrame:
    keys = sorted(set(current) | set(base))
    shown = lambda d, k: yaml_value(d[k]) if k in d else "(absent)"  # noqa: E731
    rows = [(k, shown(base, k), shown(current, k)) for k in keys if base.get(k) != current.get(k)]
    return pd.DataFrame(rows, columns=["parameter", "base", "this run"])


def metrics_diff(root: Path, rev: str) -> tuple[pd.DataFrame, str]:
    """The summary metrics that differ from `rev`'s (a table) and a line counting the rest:
    unchanged, and those only one side has (a file the base lacks is new as a whole)."""
    rows, same, only = [], 0, []
    for path in METRICS_FILES:
        now_file = root / path
        now = json.loads(now_file.read_text()) if now_file.exists() else {}
        then_text = git_show(rev, path, root)
        if then_text is None:
            only.append(f"`{path}` is new ({len(now)} metrics)")
            continue
        then = json.loads(then_text)
        for key in sorted(set(now) | set(then)):
            a, b = then.get(key), now.get(key)
            if key in then and key in now and a == b:
                same += 1
                continue
            change = _short(b - a) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else ""
            rows.append((f"{Path(path).parent.name}: {key}", _short(a) if key in then else "(absent)",
                         _short(b) if key in now else "(absent)", change))
    note = f"{same} metrics unchanged" + "".join(f"; {o}" for o in only) + "."
    return pd.DataFrame(rows, columns=["metric", "base", "this run", "change"]), note


def _short(x):
    """4 significant digits for floats (also inside lists); everything else unchanged."""
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list):
        return "[" + ", ".join(str(_short(v)) for v in x) + "]"
    return "n/a" if x is None else x


def _cold_parts(timings: list[dict]) -> list[float | None]:
    """Each stage's part of the whole pipeline from an empty cell cache, so the parts add up to
    it: the stage's time besides building cells, plus each cell once at its recorded build time
    (stages share cells: a shared cell counts in the first stage to run that lists it), spread
    over that stage's workers (never less than its longest cell, or seed group where it splits). `timings` in pipeline order;
    None where a build time is unknown."""
    seen: set[str] = set()
    parts: list[float | None] = []
    for t in timings:
        if "entries" not in t:  # a record without per-entry seconds
            reused = t.get("reused_build_seconds", 0.0 if not t.get("cells_reused") else None)
            parts.append(None if reused is None else round(t["seconds"] + reused, 1))
            continue
        new = {name: s for name, s in t["entries"].items() if name not in seen}
        seen.update(new)
        if any(s is None for s in new.values()):
            parts.append(None)
            continue
        wall = t.get("build_wall_seconds", t.get("built_seconds", 0.0))
        parts.append(round(t["seconds"] - wall + _spread(new, t.get("workers", 1), t.get("pieces", {})), 1))
    return parts


def _spread(entries: dict[str, float], workers: int, pieces: dict[str, int] | None = None) -> float:
    """The wall time of building `entries` on `workers` (the sum shared out, at least the longest
    piece: an entry the executor splits into its seed groups, `pieces`, goes out in as many)."""
    pieces = pieces or {}
    return (max(sum(entries.values()) / workers, max(s / pieces.get(n, 1) for n, s in entries.items()))
            if entries else 0.0)


def _pipeline_rank(root: Path):
    """Sort key putting timings in the order they run: `make report`'s prebuild of every stage's
    cells, then dvc.yaml's stage order (a foreach stage's items by key); stages dvc.yaml does not
    list, or every stage where it is absent, by name after them."""
    order = [PREBUILD] + (list(read_pipeline(root).get("stages", {})) if (root / "dvc.yaml").exists() else [])
    rank = {name: i for i, name in enumerate(order)}
    return lambda t: (rank.get(t["stage"].split("@")[0], len(rank)), t["stage"])


def stage_timings(root: Path) -> pd.DataFrame:
    """Each stage's wall time in this run and its part of a run from an empty cell cache (the
    cells it took from the cache at their build time, a shared cell in the first stage only; n/a
    where an entry predates the build record), in pipeline order, and their totals."""
    timings = sorted((json.loads(f.read_text()) for f in (root / "data" / "timings").glob("*.json")),
                     key=_pipeline_rank(root))
    parts = _cold_parts(timings)
    rows = [(t["stage"], t.get("profile"), t["seconds"], t.get("cells_built", 0), t.get("cells_reused", 0), part)
            for t, part in zip(timings, parts)]
    df = pd.DataFrame(rows, columns=["stage", "profile", "seconds", "cells built", "cells reused", "cold seconds"])
    if not df.empty:
        cold = None if any(p is None for p in parts) else round(sum(parts), 1)
        df.loc[len(df)] = ("total", "", round(float(df["seconds"].sum()), 1), int(df["cells built"].sum()),
                           int(df["cells reused"].sum()), cold)
    df["cold seconds"] = df["cold seconds"].astype(object).where(df["cold seconds"].notna(), "n/a")
    return df


def training_cpus(root: Path) -> str:
    """The CPUs the run's cells and models were built on, with how many each (an entry that
    stages share counted once): the cache may hold entries from another machine, and float32
    results differ across CPU families, so the machine that renders the report need not be the
    one its numbers came from."""
    built: dict[str, str | None] = {}
    for f in (root / "data" / "timings").glob("*.json"):
        built.update(json.loads(f.read_text()).get("cpus", {}))
    counts: dict[str, int] = {}
    for cpu in built.values():
        cpu = cpu or "not recorded (built before the record)"
        counts[cpu] = counts.get(cpu, 0) + 1
    return "; ".join(f"{cpu}: {n}" for cpu, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))) or "(no cells)"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "(none)"


def _md_table(df: pd.DataFrame, max_scale: float = 1.0) -> str:
    return pipe_table(df.astype(str), max_scale=max_scale) if not df.empty else "_(none)_"


def _shaky_share(row: dict) -> str:
    """" (74%)" after a verdict that some resample of the seeds did not give again."""
    return f" ({fmt_share(row['stability'])})" if shaky(row) else ""


# The glance table in 8 pt in the PDF: at the text size its rows wrap to three or four lines and
# the last ones fall onto page 2, and the verdicts belong on page 1 with the title and the tally
GLANCE_SCALE = 0.8


def glance_table(rows: list[dict], columns: int = 3) -> pd.DataFrame:
    """Every verdict in a few lines: (claim, verdict) pairs side by side, `columns` pairs a row,
    filled down each pair of columns in scorecard order, so the whole scorecard fits one screen."""
    height = -(-len(rows) // columns)
    cells = [(r["claim"], coloured(r["verdict"], r["verdict"]) + _shaky_share(r)) for r in rows]
    cells += [("", "")] * (height * columns - len(cells))
    lines = [[x for c in range(columns) for x in cells[c * height + i]] for i in range(height)]
    return pd.DataFrame(lines, columns=["claim", "verdict"] * columns)


def scorecard_markdown(scorecard: dict, preface: str = "") -> str:
    """The scorecard: a tally and every verdict at a glance, `preface`, then one row per claim
    with ours beside the paper's number."""
    rows = scorecard["claims"]
    papers, own = [r for r in rows if is_paper_claim(r)], [r for r in rows if not is_paper_claim(r)]
    counted = lambda part: ", ".join(f"**{n}** {v}" for v, n in tally(part).items() if n)  # noqa: E731
    table = pd.DataFrame([{
        "claim": r["claim"] + ("" if is_paper_claim(r) else f" ({r['kind']})"),
        "what the paper says": f"{r['statement']} (paper: {r['paper'] or 'no number'})",
        "verdict": coloured(r["verdict"], r["verdict"]), "stable": fmt_share(r.get("stability")),
        "here": f"{claim_evidence(r)}. [{r['chapter'][3:].replace('_', ' ')}]({r['chapter']}.html#{r['figure']})"}
        for r in rows])
    n_shaky = sum(map(shaky, rows))
    marked = (f" In brackets after {n_shaky} verdicts: the share of resamples of the seeds that give that verdict "
              "again (*stable*, below)." if n_shaky else "")
    extensions = ([f"**This report's own questions** ({len(own)}: extensions the paper does not state, and controls "
                   f"it does not report), counted apart: {counted(own)}.", _md_table(glance_table(own), GLANCE_SCALE)]
                  if own else [])
    return "\n\n".join([
        f"**The paper's claims** ({len(papers)} claims and sub-claims): {counted(papers)}.{marked}",
        _md_table(glance_table(papers), GLANCE_SCALE), *extensions,
        *([preface] if preface else []),
        f"Each is decided by a pre-registered rule (emergence/claims/verdicts.py, thresholds in params.yaml `claims`, "
        f"tests at α = {scorecard['alpha']}). Intervals are at level {1 - scorecard['alpha']:.0%}; q is the "
        "Benjamini-Hochberg adjustment across the scorecard's tests. A run is one seed trained in one setting; "
        "where a rule compares settings its n counts runs, and where it reads each run's units (output bits, "
        "automata cells, capabilities) it says how many of them were censored at the budget. The chapters give "
        "each rule's reason and the smallest effect it could detect here.", stability_markdown(rows),
        _md_table(table), *sensitivity_markdown(scorecard.get("sensitivity", []),
                                                scorecard["thresholds"].get("sensitivity_factor", 1.0), len(rows))])


def sensitivity_markdown(sensitivity: list[dict], factor: float, n_rows: int) -> list[str]:
    """Which verdicts hinge on a threshold: a paragraph and a table (nothing where not computed)."""
    if not sensitivity:
        return []

    def moved(side: dict | None) -> str:
        if side is None:
            return "not tried (would reach 1)"
        changes = "; ".join(f"{c['claim']}: {c['from']} → {c['to']}" for c in side["changed"]) or "no change"
        return f"{side['value']:.3g}: {changes}"

    hinged = {c["row"] for e in sensitivity for side in ("lower", "higher") if e[side] for c in e[side]["changed"]}
    table = pd.DataFrame([{"threshold": f"`{e['threshold']}`", "value": f"{e['value']:g}",
                           f"÷ {factor:g}": moved(e["lower"]), f"× {factor:g}": moved(e["higher"])}
                          for e in sensitivity])
    return [f"Which verdicts hinge on a threshold: each threshold in params.yaml `claims` divided and multiplied "
            f"by {factor:g}, one at a time, and every rule that reads it decided again (the verdicts above stay "
            f"those at the values fixed before the run). {len(hinged)} of {n_rows} verdicts change under one of "
            "these moves.",
            _md_table(table)]


def stability_markdown(rows: list[dict]) -> str:
    """What the `stable` column means, and the verdicts that came back least often."""
    draws = max((sum(r.get("resampled", {}).values()) for r in rows), default=0)
    if not draws:
        return "No verdict was decided again on resampled seeds (params.yaml `claims.stability_draws` is 0)."
    least_rows = least_stable(rows)
    least = ("Least stable here: " + "; ".join(f"{r['claim']}: {r['verdict']}, {stability_text(r)}" for r in least_rows)
             if least_rows else "Here every verdict came back in every resample")
    return (f"*Stable* is the share of {draws} resamples of the seeds (drawn with replacement, each result at its "
            "own seed count; emergence/claims/stability.py) on which the same rule gives the same verdict again. A verdict "
            "that rests on a few seeds' values, or whose interval ends on its threshold, comes back in few of them; "
            "such verdicts are the ones a rerun on another CPU, whose float results differ in the last bits, can "
            f"move. {least}.")


def verdict_changes(root: Path, rev: str, current: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Against the scorecard committed at `rev`: the claims whose verdict differs, and those
    decided alike on other numbers."""
    text = git_show(rev, pipeline_paths(root)["scorecard"], root)
    if text is None:
        return pd.DataFrame(), pd.DataFrame()
    before = json.loads(text).get("claims", [])
    return (pd.DataFrame(changed_verdicts(before, current["claims"]), columns=["claim", f"at {rev}", "now"]),
            pd.DataFrame(changed_numbers(before, current["claims"]), columns=["claim", "verdict", f"at {rev}", "now"]))


# (row label, dotted key or a function of the merged params): the settings that set this run's
# scale, shown for this profile beside the paper profile's (the paper's values where it states them)
def _profile_cells(section: dict, profile: str) -> int:
    return sum(on_profile(cell, profile) for cell in section.values())


def _sparsity_cells(grid: dict, profile: str) -> int:
    return sum(len(sparsities_on(row, profile)) for row in grid.values())


SCALE_ROWS = (
    ("linear map: state size S, sparsity s", lambda p: f"{p['linear_map']['task']['state_size']}, "
                                                       f"{p['linear_map']['task']['sparsity']}"),
    ("linear map: d_model", "linear_map.model.d_model"),
    ("linear map: steps x seeds", lambda p: f"{p['linear_map']['train']['steps']:,} x {p['linear_map']['train']['n_seeds']}"),
    ("sparsity sweep: (S, s) cells, steps", lambda p: f"{_sparsity_cells(p['sweeps']['sparsity']['grid'], p['profile'])}, "
                                                      f"{p['sweeps']['sparsity']['steps']:,}"),
    ("heads, width, depth (linear map): cells", lambda p: _profile_cells(p["sweeps"]["architecture"]["cells"], p["profile"])),
    ("automata: rules in the pool", "cellular_automata.task.n_rules"),
    ("automata: layers", "cellular_automata.model.n_layer"),
    ("automata: state sizes, steps", lambda p: f"{', '.join(map(str, p['sweeps']['ca_state_size']['state_sizes']))}; "
                                               f"{p['sweeps']['ca_state_size']['steps']:,}"),
    ("sequence mixers compared", lambda p: _profile_cells(p["sweeps"]["mixers"]["architectures"], p["profile"])),
    ("language models: sizes, steps x seeds", lambda p: f"{len(p['language_model']['sizes'])}, "
                                                        f"{p['language_model']['train']['steps']:,} x "
                                                        f"{p['language_model']['train']['n_seeds']}"),
    ("Pythia checkpoints probed", lambda p: "yes" if p["pythia"]["enabled"] else "no"),
)


def _scale_value(params: dict, how) -> str:
    if callable(how):
        return str(how(params))
    node = params
    for part in how.split("."):
        node = node[part]
    return f"{node:,}" if isinstance(node, int) and not isinstance(node, bool) else str(node)


def scale_table(params: dict, paper: dict) -> pd.DataFrame:
    """This run's scale beside the paper profile's, computed from both merged params."""
    return pd.DataFrame([(label, _scale_value(params, how), _scale_value(paper, how)) for label, how in SCALE_ROWS],
                        columns=["setting", f"this run ({params['profile']})", "paper profile"])


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def time_summary(timings: pd.DataFrame, top: int = 5) -> str:
    """Total wall time of this run, its cold cost (every cached cell at its recorded build
    time) and the stages that cost most; the full table is in the appendix."""
    if timings.empty:
        return "No stage timings recorded."
    stages, total = timings.iloc[:-1], timings.iloc[-1]
    text = f"This run's stages took **{_minutes(total['seconds'])}**"
    if total["cold seconds"] != "n/a":
        text += (f"; from an empty cell cache they would take about **{_minutes(total['cold seconds'])}** "
                 f"(of the stages' {_count(int(total['cells built'] + total['cells reused']), 'cell lookup')}, "
                 f"{int(total['cells built'])} trained the cell, {int(total['cells reused'])} found it in the cache)")
        ranked = stages.assign(cost=stages["cold seconds"].astype(float)).sort_values("cost", ascending=False).head(top)
        text += ". Largest: " + ", ".join(f"{r.stage} {_minutes(r.cost)}" for r in ranked.itertuples()) + "."
    else:
        text += " (some cached cells predate the build-time record, so the cold cost is not known)."
    return text + " Every stage's time is in the [appendix](appendix.html)."


def _changes(root: Path, base_rev: str, flat: dict, scorecard: dict) -> list[str]:
    base = params_at_rev(base_rev, root)
    if base is None or git_show(base_rev, "", root) is None:
        return [f"No base revision `{base_rev}` with a params.yaml exists; nothing to compare."]
    verdicts, numbers = verdict_changes(root, base_rev, scorecard)
    # a symbolic revision moves with every commit, and git is no input of this page: say what it was
    return [f"`{base_rev}` was commit {commit_label(base_rev, root)} when this page was rendered.",
            f"Side by side, with the key figures of both revisions overlaid: `make compare BASE={base_rev}` writes "
            "[report/_compare/compare.html](../_compare/compare.html) (and a PDF) from DVC's cache, without training.",
            "Verdicts that changed:", _md_table(verdicts),
            "Claims decided alike on other numbers:", _md_table(numbers),
            "Parameters (effective values after the profile overlay):", _md_table(params_diff(flat, base)),
            "Summary metrics that changed (`dvc metrics diff` gives the same from the command line):",
            *_metrics_section(root, base_rev)]


def _metrics_section(root: Path, base_rev: str) -> list[str]:
    table, note = metrics_diff(root, base_rev)
    return [_md_table(table), note]


def index_markdown(root: Path, base_rev: str) -> str:
    """Markdown of the entry page; `{{chapters}}` is left for the renderer's chapter list."""
    params = merged_params(root)  # validated by the stage that renders this page
    scorecard = read_scorecard(root / pipeline_paths(root)["scorecard"])
    about = ("This report regenerates the experiments of *Emergent Capabilities Arise Randomly from Learning "
             "Sparse Attention Patterns* (Baherwani et al., arXiv 2606.25010) from code. Every number and "
             "verdict here is computed from the pipeline's result files.")
    parts = [  # the verdicts first, so that all of them are on the first screen
        "## What was reproduced", scorecard_markdown(scorecard, preface=about),
        "## Scale of this run",
        f"Profile **{params['profile']}**, beside the paper profile (profiles/paper.yaml: the paper's settings where "
        "it states them). Verdicts at a smaller scale say so in their reasons.",
        _md_table(scale_table(params, merged_params(root, profile="paper"))),
        "## Time", time_summary(stage_timings(root)),
        f"## Changes against `{base_rev}`", *_changes(root, base_rev, flatten(params), scorecard),
        "## Chapters", "{{chapters}}",
        # the PDF itself needs no link to itself
        '`The whole report as one PDF: <a href="report.pdf">report.pdf</a>. `{=html}Provenance, parameters, '
        "packages and hardware: [appendix](appendix.html).",
    ]
    return "\n\n".join(parts) + "\n"


def appendix_markdown(root: Path, renderer: str, rendered_at: str) -> str:
    """The appendix: provenance, every stage's time, every parameter, packages, hardware."""
    params = merged_params(root)
    git = git_state(root)
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
        ("cells and models built on (CPU: entries)", training_cpus(root)),
        ("dvc.lock sha256 (upstream stages)", f"`{sha256_of(root / 'dvc.lock')}`"),
        ("renderer", renderer),
        ("rendered at", rendered_at),
    ], columns=["", "value"])
    parts = [
        "## Provenance", _md_table(prov),
        "## Time per stage",
        "Seconds of this run, in pipeline order; cold seconds: the stage's part of a run from an empty cell "
        "cache (what the cells it took from the cache took to build added, a cell that stages share counted "
        "in the first), so the column adds up to the total. A first row `prebuild`, where present, is `make "
        "report`'s build of the missing cells of every stage to run in one pool of workers before `dvc repro` "
        "(the cells it built count there; `dvc repro` alone builds them stage by stage).",
        _md_table(stage_timings(root)),
        "## Parameters of this run",
        _md_table(pd.DataFrame([(k, yaml_value(v)) for k, v in sorted(flatten(params).items())],
                               columns=["parameter", "value"])),
        "## Software and hardware",
        _md_table(pd.DataFrame(sorted(package_versions().items()), columns=["package", "version"])),
        _md_table(pd.DataFrame(sorted((k, str(v)) for k, v in hardware().items()), columns=["hardware", "value"])),
    ]
    return "\n\n".join(parts) + "\n"

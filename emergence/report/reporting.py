"""What every report chapter shares: the figure style, its data (located by the pipeline's
`paths` in dvc.yaml, the one place they are written), and number and table formatting."""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
import xarray as xr
from IPython.display import Markdown

from emergence.claims import scorecard
from emergence.claims.scorecard import claim_evidence, stability_text
from emergence.common.io import read_netcdf
from emergence.pipeline.stage import pipeline_paths
from emergence.report.tables import coloured, pipe_table


def setup_style() -> None:
    sns.set_theme(context="notebook", style="whitegrid")
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 110})


def load(name: str) -> xr.Dataset:
    """A result file by its name in dvc.yaml's `paths` (e.g. "linear_map_results")."""
    return read_netcdf(pipeline_paths()[name])


def load_folder(name: str, pattern: str = "*.nc") -> dict[str, xr.Dataset]:
    """Every file of a result folder by its name in dvc.yaml's `paths`, keyed by file stem."""
    return {f.stem: read_netcdf(f) for f in sorted(Path(pipeline_paths()[name]).glob(pattern))}


def fmt_step(x: float, censored: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return "not reached"
    s = f"{x:,.0f}"
    return f">{s} (censored)" if censored else s


def fmt(x: float, digits: int = 3) -> str:
    """A number to `digits` significant digits; ∞ for an unreached median or ratio, n/a for none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return f"{x:.{digits}g}"


def md(text: str) -> Markdown:
    return Markdown(text)


def table(df: pd.DataFrame, index: bool = True, floatfmt: str = ".3g") -> Markdown:
    """A pipe table (survives into both HTML and the typst PDF), its columns sized so that no
    word runs into the next (emergence/report/tables.py)."""
    return Markdown(pipe_table(df, index=index, floatfmt=floatfmt))



def read_scorecard() -> dict:
    """data/claims/scorecard.json: every verdict, decided by its rule (emergence/claims/verdicts.py)."""
    return scorecard.read_scorecard(pipeline_paths()["scorecard"])


def claims_section(chapter: str) -> Markdown:
    """This chapter's rows of the scorecard, one block per claim: the paper's statement and
    number, ours with its interval, the verdict and the rule's reason."""
    card = read_scorecard()
    keyed = scorecard.rows_by_key(card["claims"])
    rows = [(key, r) for key, r in keyed.items() if r["chapter"] == chapter]
    if not rows:
        return Markdown("No claim of this chapter is tested on this profile.")
    blocks = []
    whose = {"extension": " This report's question, not a claim of the paper.",
             "control": " A control the paper does not report."}
    for key, r in rows:
        head = coloured(f"Claim {r['claim']}: {r['verdict']}.", r["verdict"]) + whose.get(r.get("kind", "paper"), "")
        hinges = scorecard.hinges_text(key, card.get("sensitivity", []))
        blocks.append(f"{head} "
                      f"{r['statement'][:1].upper()}{r['statement'][1:]}.\n\n"
                      f"- Paper: {r['paper'] or 'no number given'}\n"
                      f"- Here: {claim_evidence(r)}\n"
                      f"- Stability: {stability_text(r)}\n"
                      + (f"- Thresholds: {hinges}\n" if hinges else "") +
                      f"- Why: {r['reason']}\n"
                      f"- Could detect: {r['detectable']}\n")
    return Markdown("\n".join(blocks))

"""Small helpers for report notebooks: formatting numbers and tables from results."""
from __future__ import annotations

import math

import pandas as pd
from IPython.display import Markdown


def fmt_step(x: float, censored: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return "not reached"
    s = f"{x:,.0f}"
    return f">{s} (censored)" if censored else s


def fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}g}"


def md(text: str) -> Markdown:
    return Markdown(text)


def table(df: pd.DataFrame, index: bool = True, floatfmt: str = ".3g") -> Markdown:
    """A pipe table (survives into both HTML and the typst PDF)."""
    return Markdown(df.to_markdown(index=index, floatfmt=floatfmt))


"""Markdown tables of data frames, as every summary, verdict and cost page prints them.

Every header and cell goes through :func:`~debiaseval.io.markup.inert_markdown`, so a
user-given name shows as written. On the ground floor, beside :mod:`~debiaseval.io.markup`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from debiaseval.io.markup import inert_markdown

__all__ = ["markdown_table"]


def _cell(value: object) -> str:
    if isinstance(value, float | np.floating):
        return "" if np.isnan(value) else f"{value:.4g}"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of ``frame`` (floats to 4 significant digits). Every
    header and cell is text, shown as written (:func:`~debiaseval.io.markup.inert_markdown`):
    a name holding ``|``, a backtick or HTML neither splits its cell nor becomes markup."""
    header = "| " + " | ".join(inert_markdown(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = [
        "| " + " | ".join(inert_markdown(_cell(v)) for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body]) + "\n"

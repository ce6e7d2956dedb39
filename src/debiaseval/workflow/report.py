"""Human-readable renderings of result tables: standalone HTML for the Snakemake report."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["finished_message", "html_table"]

_STYLE = (
    "body{font-family:sans-serif;margin:1em}"
    "table{border-collapse:collapse;font-size:0.9em}"
    "th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}"
    "th{background:#f2f2f2}"
)


def html_table(frame: pd.DataFrame, title: str) -> str:
    """A standalone HTML page holding ``frame`` (floats to 4 significant digits)."""
    body = frame.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="", border=0)
    name = html.escape(title)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{name}</title>'
        f"<style>{_STYLE}</style></head>\n<body><h2>{name}</h2>\n{body}\n</body></html>\n"
    )


def finished_message(
    config: Mapping[str, Any], experiments: Sequence[str], root: str | Path = "."
) -> str:
    """What a successful run prints last: where each experiment's readable results are."""
    lines = ["debiaseval: the run is complete. Results (Markdown; Parquet beside them):"]
    for name in experiments:
        for dataset in config[name]["datasets"]:
            folder = Path(root) / "results" / name / dataset
            tables = sorted(p.relative_to(root).as_posix() for p in folder.glob("*.md"))
            if tables:
                lines.append(f"  {name.upper()} on {dataset}: {', '.join(tables)}")
    lines.append(
        "Figures: results/<experiment>/<dataset>/figures/. HTML report with every figure and "
        "table: snakemake --report report.html (with this run's --configfile/--config)."
    )
    return "\n".join(lines)

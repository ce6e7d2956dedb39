"""Figures of the HTML report: one module per experiment, one saving mechanism.

Each ``figures/<experiment>.py`` declares ``TABLES`` (stems of the aggregated
tables ``results/<experiment>/<dataset>/<stem>.parquet`` its figures read),
``FIGURES`` (figure name → caption in reStructuredText) and
``draw(name, tables, dataset)`` returning a matplotlib figure. The workflow's
generic ``plot`` rule calls :func:`render`, which saves every figure as SVG and
PNG with fixed metadata, so a rerun gives byte-identical files.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from debiaseval.workflow.io import atomic_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figure_module", "grouped_bars", "recall_k", "render", "save_figure"]


def recall_k(summary: pd.DataFrame, experiment: str) -> int:
    """The k of the Recall the figures show: 10 when the summary has it, else its smallest."""
    ks = sorted(summary.loc[summary["metric"] == "recall", "k"].unique())
    if not ks:
        raise ValueError(f"the {experiment} summary has no recall rows")
    return 10 if 10 in ks else int(ks[0])


def grouped_bars(ax, table: pd.DataFrame, errors: pd.DataFrame | None, ylabel: str) -> None:
    """Bars of ``table`` (rows = groups on the x axis, columns = bars within a group)."""
    n_rows, n_cols = table.shape
    width = 0.8 / max(n_cols, 1)
    x = np.arange(n_rows)
    for j, column in enumerate(table.columns):
        yerr = None if errors is None else errors[column].fillna(0.0).to_numpy()
        ax.bar(
            x + (j - (n_cols - 1) / 2) * width,
            table[column].to_numpy(),
            width,
            yerr=yerr,
            capsize=2,
            label=str(column),
        )
    ax.set_xticks(x, [str(i) for i in table.index], rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncols=min(n_cols, 6))


def figure_module(experiment: str) -> ModuleType:
    """The figures module of ``experiment`` (``debiaseval.figures.<experiment>``)."""
    try:
        return importlib.import_module(f"debiaseval.figures.{experiment}")
    except ModuleNotFoundError:
        raise ValueError(f"experiment {experiment!r} has no figures module") from None


def _matplotlib() -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)  # headless
    matplotlib.rcParams["svg.hashsalt"] = "debiaseval"  # deterministic SVG element ids
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable


def save_figure(
    figure: Figure, svg_path: str | os.PathLike[str], png_path: str | os.PathLike[str]
) -> None:
    """Save ``figure`` atomically as SVG and PNG (150 dpi) without time stamps."""
    import matplotlib.pyplot as plt

    with atomic_path(svg_path) as tmp:
        figure.savefig(tmp, format="svg", metadata={"Date": None})
    with atomic_path(png_path) as tmp:
        figure.savefig(tmp, format="png", dpi=150, metadata={"Software": None})
    plt.close(figure)


def render(
    experiment: str,
    name: str,
    tables: Mapping[str, pd.DataFrame],
    dataset: str,
    svg_path: str | os.PathLike[str],
    png_path: str | os.PathLike[str],
) -> None:
    """Draw figure ``name`` of ``experiment`` from its aggregated ``tables`` and save it."""
    _matplotlib()
    module = figure_module(experiment)
    if name not in module.FIGURES:
        raise ValueError(f"{experiment} has no figure {name!r}; known: {', '.join(module.FIGURES)}")
    save_figure(module.draw(name, dict(tables), dataset), svg_path, png_path)

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

import pandas as pd

from debiaseval.io import atomic_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figure_module", "render", "save_figure"]


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

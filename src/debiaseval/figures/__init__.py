"""Figures of the HTML report: one module per experiment, one saving mechanism.

Each ``figures/<experiment>.py`` declares ``TITLE`` (the experiment's title and
paper, the report's category), ``TABLES`` (stems of the aggregated tables
``results/<experiment>/<dataset>/<stem>.parquet`` its figures read), ``FIGURES``
(figure name → caption, plain text) and ``draw(name, tables, dataset)`` returning
a matplotlib figure. Each experiment's aggregate job calls :func:`render` for
every figure (through :func:`debiaseval.workflow.report.publish_report`), which
saves it as SVG and PNG with fixed metadata, so a rerun gives byte-identical files.

Two rules every figure keeps: its legend sits outside the axes
(:func:`legend_outside`), so it covers no data, and a bar of height zero is drawn
visibly (:func:`grouped_bars`), so a zero is not mistaken for a missing value.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from debiaseval.io.files import atomic_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "REFERENCE_COLOURS",
    "figure_module",
    "grouped_bars",
    "interval_whiskers",
    "legend_outside",
    "new_figure",
    "recall_k",
    "render",
    "row_colours",
    "save_figure",
]


def recall_k(summary: pd.DataFrame, experiment: str) -> int:
    """The k of the Recall the figures show: 10 when the summary has it, else its smallest."""
    ks = sorted(summary.loc[summary["metric"] == "recall", "k"].unique())
    if not ks:
        raise ValueError(f"the {experiment} summary has no recall rows")
    return 10 if 10 in ks else int(ks[0])


def grouped_bars(
    ax,
    table: pd.DataFrame,
    errors: pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame] | None,
    ylabel: str,
    *,
    value_labels: str | None = None,
    colours: Mapping[str, Any] | None = None,
) -> None:
    """Bars of ``table`` (rows = groups on the x axis, columns = bars within a group).

    ``errors``: the whiskers, one frame of half-widths or a pair (lower bounds, upper
    bounds) of an interval around each value, laid out as ``table``; none is drawn where
    the interval is missing (NaN). ``colours``: column ->
    its colour (every figure of a run gives a test set the same one, :func:`row_colours`).
    A bar of height 0 would be invisible, so it is drawn as a thick line on the
    baseline, labelled ``0``; a missing value (NaN) is labelled ``n/a``. With
    ``value_labels`` (a format such as ``"{:.2f}"``) every bar carries its value.
    The legend is left to :func:`legend_outside`.
    """
    n_rows, n_cols = table.shape
    width = 0.8 / max(n_cols, 1)
    x = np.arange(n_rows)
    for j, column in enumerate(table.columns):
        values = table[column].to_numpy(dtype=float)
        yerr = _whiskers(errors, column, values)
        positions = x + (j - (n_cols - 1) / 2) * width
        colour = None if colours is None else colours.get(str(column))
        bars = ax.bar(
            positions, values, width, yerr=yerr, capsize=2, label=str(column), color=colour
        )
        colour = bars.patches[0].get_facecolor() if bars.patches else None
        zero = np.abs(values) < 1e-12  # a zero up to rounding (NaN compares False)
        if value_labels is not None:
            shown = [
                value_labels.format(v) if np.isfinite(v) and not z else ""
                for v, z in zip(values, zero, strict=True)
            ]
            ax.bar_label(bars, shown, padding=2, fontsize="x-small")
        for position, value, is_zero in zip(positions, values, zero, strict=True):
            if is_zero or not np.isfinite(value):
                _mark_baseline(ax, position, width, colour, "0" if is_zero else "n/a")
    ax.set_xlim(-0.5, n_rows - 0.5)  # every group in view, even one of missing values only
    ax.set_xticks(x, [str(i) for i in table.index], rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def _whiskers(errors, column, values: np.ndarray) -> np.ndarray | None:
    """matplotlib's ``yerr`` of one column: symmetric half-widths, or the distances to the
    (lower, upper) bounds of an interval. NaN where the table gives no interval (a bound is
    missing): matplotlib then draws no whisker there, where a 0 would draw a cap on the bar."""
    if errors is None:
        return None
    if isinstance(errors, tuple):
        low = errors[0][column].to_numpy(dtype=float)
        high = errors[1][column].to_numpy(dtype=float)
        return interval_whiskers(values, low, high)
    return errors[column].to_numpy(dtype=float)


def interval_whiskers(mean: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """matplotlib's ``yerr`` (2 × n distances below and above ``mean``) of the interval
    [``low``, ``high``], NaN in both rows where either bound is missing, so that no whisker
    is drawn where the table prints no interval (a zero-length one would draw its caps)."""
    m = np.asarray(mean, dtype=np.float64)
    lo, hi = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    missing = np.isnan(lo) | np.isnan(hi)
    below = np.where(missing, np.nan, np.maximum(m - lo, 0.0))
    above = np.where(missing, np.nan, np.maximum(hi - m, 0.0))
    return np.vstack([below, above])


REFERENCE_COLOURS: dict[str, str] = {
    "gt": "#4d4d4d",
    "TRUE": "#999999",
    "GT_HALVES": "#737373",
    "CONSTANT": "#c4c4c4",
}
"""The fixed greys of the reference rows (the schema reserves these names): the MAR ground
truth, the exact truth on synthetic data and the scoreboard's baselines."""


def _palette() -> list[Any]:
    """tab10 without its grey, then tab20's light shades without grey, then tab20b: distinct
    hues first, and no colour a reference row's grey could be mistaken for."""
    import matplotlib

    tab10 = [c for j, c in enumerate(matplotlib.colormaps["tab10"].colors) if j != 7]
    light = [c for j, c in enumerate(matplotlib.colormaps["tab20"].colors) if j % 2 and j != 15]
    return [*tab10, *light, *matplotlib.colormaps["tab20b"].colors]


def row_colours(names) -> dict[str, Any]:
    """A colour per name (test set, estimator, baseline): the one mapping every figure of a
    run uses, so a test set has one colour in all of them.

    The reserved names get :data:`REFERENCE_COLOURS`; the others take the palette's colours
    in sorted order of name, so the colour depends on the set of names and not on the order
    in which a table or a figure lists them: the figures of a run, whose datasets share
    their test sets and estimators (only synthetic adds ``TRUE``, a reserved name), agree.
    Give every name the run has (all tables of a figure), not only those one panel draws.
    """
    palette = _palette()
    others = sorted({str(n) for n in names} - set(REFERENCE_COLOURS))
    colours: dict[str, Any] = {
        n: c for n, c in REFERENCE_COLOURS.items() if n in set(map(str, names))
    }
    colours.update({name: palette[j % len(palette)] for j, name in enumerate(others)})
    return colours


def _mark_baseline(ax, position: float, width: float, colour, text: str) -> None:
    """A zero (or missing) bar: a thick line on the baseline in the bar's colour and a label."""
    if text == "0":
        ax.plot(
            [position - width / 2, position + width / 2],
            [0.0, 0.0],
            color=colour,
            linewidth=3,
            solid_capstyle="butt",
            zorder=3,
        )
    ax.annotate(
        text,
        (position, 0.0),
        xytext=(0, 3),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize="x-small",
    )


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib ``Figure(**kwargs)``, matplotlib imported on the first call: the workflow
    imports every experiment's figure module at parse time for its captions, and matplotlib
    costs 0.4 s there."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def legend_outside(fig: Figure, axes, *, ncols: int = 6) -> None:
    """One legend for ``fig``, below its axes (outside every axes: it covers no data).

    Entries come from ``axes`` in order, each label once. Needs the figure's
    constrained layout, which makes room for the legend.
    """
    entries: dict[str, Any] = {}
    for ax in np.atleast_1d(axes).ravel():
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(
            list(entries.values()),
            list(entries),
            loc="outside lower center",
            ncols=min(len(entries), ncols),
            fontsize="small",
        )


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

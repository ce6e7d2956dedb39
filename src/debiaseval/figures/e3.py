"""Figures of experiment E3 ([ICML16] Figures 2 and 4): estimation error of Naive, IPS, SNIPS."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from debiaseval.figures import legend_outside, new_figure, row_colours

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E3 · Estimator accuracy under selection bias (ICML 2016)"

TABLES = ("estimates", "rmse_vs_alpha", "rmse_vs_mar", "rmse_vs_alpha_mean", "rmse_vs_mar_mean")

FIGURES = {
    "rmse_vs_alpha": (
        "RMSE of the Naive, IPS and SNIPS estimates against the true value on the full matrix, "
        "over the draws of O, averaged over the prediction matrices, as the selection-bias "
        "strength alpha varies (alpha = 1: missing completely at random); known propensities. "
        "One panel per metric of e3.curve_metrics, each named on its axis (ICML16 Figure 2 "
        "shows MSE and DCG@50). Lower is better; log scale."
    ),
    "rmse_vs_mar": (
        "RMSE of the estimates with Naive-Bayes propensities, whose rating marginal P(Y=r) comes "
        "from a MAR sample of the given size, at the table's alpha, averaged over the prediction "
        "matrices, as ICML16 Figure 4. Naive does not use propensities and is shown for "
        "reference. Lower is better; log scales."
    ),
    "rmse_vs_alpha_by_matrix": (
        "The RMSE-vs-alpha curves of each prediction matrix (columns) and metric (rows): the "
        "curves the averaged figure is made of. An estimator has one colour in every figure."
    ),
}

_STYLE = {"naive": ("Naive", "o"), "ips": ("IPS", "s"), "snips": ("SNIPS", "^")}


def _colours(tables: Mapping[str, pd.DataFrame]) -> dict[str, object]:
    """Every estimator's colour (:func:`~debiaseval.figures.row_colours` of its label) from
    the estimators of every table: the same in every figure of the run."""
    names = [
        _STYLE.get(str(est), (str(est), "."))[0]
        for table in tables.values()
        if "estimator" in table
        for est in table["estimator"]
    ]
    return row_colours(names)


def _panels(
    table: pd.DataFrame, x: str, xlabel: str, title: str, log_x: bool, colours: Mapping[str, object]
) -> Figure:
    if table.empty:
        raise ValueError(f"no rows to plot for {title!r}")
    matrices = list(dict.fromkeys(table["matrix"]))
    metrics = list(dict.fromkeys(table["metric"]))
    fig = new_figure(
        figsize=(2.6 * len(matrices) + 0.6, 2.4 * len(metrics) + 0.8), layout="constrained"
    )
    axes = fig.subplots(len(metrics), len(matrices), squeeze=False, sharex=True)
    for r, metric in enumerate(metrics):
        for c, matrix in enumerate(matrices):
            ax = axes[r][c]
            cell = table[(table["metric"] == metric) & (table["matrix"] == matrix)]
            _draw_estimators(ax, cell, x, log_x, colours, markersize=3)
            if r == 0:
                ax.set_title(matrix, fontsize="medium")
            if c == 0:
                ax.set_ylabel(f"RMSE of {metric.upper()}")
            if r == len(metrics) - 1:
                ax.set_xlabel(xlabel)
    legend_outside(fig, axes)
    fig.suptitle(title)
    return fig


def _draw_estimators(
    ax: Axes,
    cell: pd.DataFrame,
    x: str,
    log_x: bool,
    colours: Mapping[str, object],
    *,
    markersize: int,
) -> None:
    """Each estimator's RMSE against ``x`` on ``ax``, log-scaled, in the estimators' styles
    and colours."""
    for est, rows in cell.groupby("estimator", sort=False):
        label, marker = _STYLE.get(str(est), (str(est), "."))
        rows = rows.sort_values(x)
        ax.plot(
            rows[x],
            rows["rmse"],
            marker=marker,
            markersize=markersize,
            label=label,
            color=colours.get(label),
        )
    ax.set_yscale("log")
    if log_x:
        ax.set_xscale("log")
    ax.grid(alpha=0.3)


def _mean_panels(
    table: pd.DataFrame, x: str, xlabel: str, title: str, log_x: bool, colours: Mapping[str, object]
) -> Figure:
    """One panel per metric: each estimator's RMSE averaged over the matrices against ``x``."""
    if table.empty:
        raise ValueError(f"no rows to plot for {title!r}")
    metrics = list(dict.fromkeys(table["metric"]))
    fig = new_figure(figsize=(3.4 * len(metrics) + 1.2, 3.4), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        _draw_estimators(ax, table[table["metric"] == metric], x, log_x, colours, markersize=4)
        ax.set_title(metric.upper(), fontsize="medium")
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel("RMSE, mean over the matrices")
    legend_outside(fig, list(axes))
    fig.suptitle(title)
    return fig


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E3's aggregated tables."""
    if name == "rmse_vs_alpha":
        return _mean_panels(
            tables["rmse_vs_alpha_mean"],
            "alpha",
            "alpha",
            f"E3 on {dataset}: estimator RMSE vs selection bias (known propensities)",
            log_x=False,
            colours=_colours(tables),
        )
    if name == "rmse_vs_alpha_by_matrix":
        return _panels(
            tables["rmse_vs_alpha"],
            "alpha",
            "alpha",
            f"E3 on {dataset}: estimator RMSE vs selection bias (known propensities)",
            log_x=False,
            colours=_colours(tables),
        )
    if name == "rmse_vs_mar":
        table = tables["rmse_vs_mar_mean"]
        alpha = f" (alpha = {table['alpha'].iloc[0]:g})" if len(table) else ""
        return _mean_panels(
            table,
            "mar_size",
            "MAR ratings for P(Y=r)",
            f"E3 on {dataset}: RMSE with Naive-Bayes propensities{alpha}",
            log_x=True,
            colours=_colours(tables),
        )
    raise ValueError(f"E3 has no figure {name!r}; known: {', '.join(FIGURES)}")

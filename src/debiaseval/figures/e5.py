"""Figures of experiment E5 ([URE24]): which Recall@K estimate selects models like the truth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from debiaseval.figures import legend_outside, new_figure, row_colours

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E5 · Unbiased Recall Evaluation (URE, 2024)"

TABLES = ("estimates", "agreement")

FIGURES = {
    "correlation": (
        "Agreement across models of each Recall@K estimate with the reference, against K: "
        "Kendall's tau-b of the model rankings (left) and Pearson's r of the values (right). "
        "The reference is the true Recall@K on the fully exposed data; without full data "
        "(yahoo-r3) it is URE@K and only the traditional estimate is compared with it. "
        "Traditional = Recall@K ranking only the randomly exposed items; URE = [URE24]'s "
        "threshold at the (K+1)-th score over all candidates. Undefined points (an estimate "
        "equal for every model, e.g. the traditional one when K reaches the exposed set's "
        "size) are left out."
    ),
    "scatter": (
        "Each model's estimate of Recall@K against the reference at the smallest K (seed "
        "means), one point per model (recommender x hyperparameters); the diagonal is "
        "perfect agreement. Points off the diagonal are biased; an estimate that reorders "
        "the points selects the wrong model."
    ),
}

_LABEL = {"traditional": "traditional Recall@K", "ure": "URE@K"}
_COLUMN = {"traditional": "traditional_recall", "ure": "ure"}


def _reference(table: pd.DataFrame) -> str:
    refs = table["reference"].unique() if "reference" in table else ["true_recall"]
    return "true Recall@K" if refs[0] == "true_recall" else "URE@K"


def _correlation(agreement: pd.DataFrame, dataset: str) -> Figure:
    fig = new_figure(figsize=(8, 3.6), layout="constrained")
    axes = fig.subplots(1, 2, sharex=True)
    for ax, stat, label in zip(
        axes, ("kendall_tau", "pearson_r"), ("Kendall tau-b", "Pearson r"), strict=True
    ):
        for estimator, rows in agreement.groupby("estimator", sort=False):
            rows = rows.sort_values("k")
            ax.plot(rows["k"], rows[stat], marker="o", label=_LABEL.get(estimator, estimator))
        ax.set_xscale("log")
        ks = sorted(agreement["k"].unique())
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_xlabel("K")
        ax.set_ylabel(f"{label} with {_reference(agreement)}")
        ax.set_ylim(-1.05, 1.05)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.grid(alpha=0.3)
    legend_outside(fig, axes)
    fig.suptitle(f"E5 on {dataset}: agreement across models vs K")
    return fig


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
"""Markers the scatter's models cycle through beside their colours."""


def _scatter(estimates: pd.DataFrame, dataset: str) -> Figure:
    k = int(estimates["k"].min())
    rows = estimates[estimates["k"] == k]
    has_truth = rows["true_recall"].notna().any()
    reference = "true_recall" if has_truth else "ure"
    estimators = ("traditional", "ure") if has_truth else ("traditional",)
    fig = new_figure(figsize=(4.2 * len(estimators), 4.0), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(estimators)))
    x = rows[reference].to_numpy()
    models = sorted(map(str, rows["model"].unique()))
    colours = row_colours(models)  # every model its own colour (the palette has 38)
    for ax, estimator in zip(axes, estimators, strict=True):
        y = rows[_COLUMN[estimator]].to_numpy()
        for model, sub in rows.groupby("model", sort=True):
            ax.scatter(
                sub[reference],
                sub[_COLUMN[estimator]],
                s=18,
                label=str(model),
                color=colours[str(model)],
                marker=_MARKERS[models.index(str(model)) % len(_MARKERS)],
            )
        top = float(np.nanmax(np.concatenate([x, y, [0.0]]))) * 1.05 or 1.0
        ax.plot([0, top], [0, top], color="black", linewidth=0.8)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel(f"{'true Recall' if has_truth else 'URE'}@{k}")
        ax.set_ylabel(f"{_LABEL[estimator].replace('K', str(k))}")
        ax.grid(alpha=0.3)
    legend_outside(fig, axes, ncols=4)
    fig.suptitle(f"E5 on {dataset}: estimate vs reference at K = {k}")
    return fig


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E5's aggregated tables."""
    if name == "correlation":
        return _correlation(tables["agreement"], dataset)
    if name == "scatter":
        return _scatter(tables["estimates"], dataset)
    raise ValueError(f"E5 has no figure {name!r}; known: {', '.join(FIGURES)}")

"""Figures of experiment E2 ([FLAIRS20]): elicited ratings and Recall@k change per strategy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from debiaseval.evaluation.uncertainty import shown_interval
from debiaseval.figures import grouped_bars, legend_outside, new_figure, recall_k, row_colours

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E2 · Debiased evaluation of active learning (FLAIRS 2020)"

TABLES = ("elicited", "summary", "wilcoxon")

FIGURES = {
    "elicited": (
        "Ratings elicited per active user by each strategy under each evaluation method "
        "(mean over seeds; whiskers: the t interval over seeds the summary prints, from 3 "
        "seeds on, within [0, ∞); none with fewer seeds). CLASSIC and INT_T share the hidden "
        "set H, so they elicit the same ratings; INT_HT draws H by WTD_H, which removes much of "
        "the popularity bias that popular-item strategies profit from ([FLAIRS20])."
    ),
    "recall_change": (
        "Percentage change of Recall@k on the test set T after retraining on K_before plus the "
        "elicited ratings, per strategy and method; left: the active users (user-centric), "
        "right: every user with a relevant test pair (system-wide). Mean over seeds; whiskers: "
        "the t interval over seeds the summary prints (from 3 seeds on, never below -100%). "
        "A method has the same colour in both figures."
    ),
}


def _order(frame: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    rows = list(dict.fromkeys(frame["strategy"]))
    cols = list(dict.fromkeys(frame["method"]))
    return table.reindex(index=rows, columns=cols)


def _interval(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The interval the summary prints (:func:`shown_interval`: the t interval over seeds from
    3 seeds on, else none, as E2 keeps no interval over users), laid out strategy × method."""
    nan = np.full(len(frame), np.nan)
    low, high = shown_interval(frame["ci_low"], frame["ci_high"], nan, nan, frame["n_seeds"])
    shown = frame.assign(shown_low=low, shown_high=high)
    return tuple(
        _order(frame, shown.pivot(index="strategy", columns="method", values=bound))
        for bound in ("shown_low", "shown_high")
    )


def _elicited(elicited: pd.DataFrame, dataset: str) -> Figure:
    means = _order(elicited, elicited.pivot(index="strategy", columns="method", values="mean"))
    fig = new_figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.add_subplot()
    grouped_bars(
        ax,
        means,
        _interval(elicited),
        "elicited ratings per active user",
        colours=row_colours(elicited["method"]),
    )
    legend_outside(fig, ax)
    ax.set_title(f"E2 on {dataset}: ratings elicited per active user")
    return fig


def _recall_change(summary: pd.DataFrame, dataset: str) -> Figure:
    k = recall_k(summary, "E2")
    rows = summary[(summary["metric"] == "recall") & (summary["k"] == k)]
    fig = new_figure(figsize=(11, 4.2), layout="constrained")
    colours = row_colours(summary["method"])
    for position, (scope, title) in enumerate(
        (("user", "active users (user-centric)"), ("system", "all users (system-wide)")), 1
    ):
        block = rows[rows["scope"] == scope]
        ax = fig.add_subplot(1, 2, position)
        values = _order(block, block.pivot(index="strategy", columns="method", values="pct_change"))
        grouped_bars(ax, values, _interval(block), f"% change of Recall@{k}", colours=colours)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_title(title)
    legend_outside(fig, fig.axes)
    fig.suptitle(f"E2 on {dataset}: Recall@{k} after elicitation vs before")
    return fig


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E2's aggregated tables."""
    if name == "elicited":
        return _elicited(tables["elicited"], dataset)
    if name == "recall_change":
        return _recall_change(tables["summary"], dataset)
    raise ValueError(f"E2 has no figure {name!r}; known: {', '.join(FIGURES)}")

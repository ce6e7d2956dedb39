"""Figures of experiment E6 ([MYT14]): leave-one-out score vs time, without and with KL weights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from debiaseval.figures import legend_outside, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E6 · Weighted offline evaluation over time (Benelearn 2014)"

TABLES = ("scores",)

FIGURES = {
    "scores": (
        "Leave-one-out hit rate (held-out item in the top k) of each recommender at successive "
        "snapshots t, unweighted (p = 0) and with KL item weights fitted to the t0 item marginal, "
        "one line per p (the number of items whose weight may move; the largest p is every "
        "item, as the legend says), each with its own marker and line style; bands are 95% "
        "intervals. g1 and g2 are constant lists: a stable weighted curve means the weights "
        "undo the drift of the item marginal. With several seeds: seed means."
    ),
}


def _label(weighting: str, p: int, p_max: int) -> str:
    """The legend's name of a weighting, its p as the verdict gives it."""
    if weighting == "none":
        return "unweighted (p = 0)"
    return f"KL, p = {p} (every item)" if p == p_max else f"KL, p = {p}"


_LINES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", (0, (5, 1, 1, 1))))
"""(marker, line style) of the weightings in turn: curves that coincide (p = 100 and every item,
say) stay told apart."""


def _scores(scores: pd.DataFrame, dataset: str) -> Figure:
    if scores.empty:
        raise ValueError("the E6 scores table is empty")
    means = (
        scores.groupby(["recommender", "weighting", "p", "t"], sort=False)[
            ["score", "ci_low", "ci_high"]
        ]
        .mean()
        .reset_index()
    )
    recommenders = list(dict.fromkeys(scores["recommender"]))
    n = len(recommenders)
    cols = min(n, 2)
    rows = int(np.ceil(n / cols))
    fig = new_figure(figsize=(5.2 * cols, 3.4 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    p_max = int(scores["p"].max())
    variants = sorted(
        {(w, int(p)) for w, p in zip(means["weighting"], means["p"], strict=True)},
        key=lambda v: (v[0] != "none", v[1]),
    )  # unweighted first, then by p
    colours = {v: f"C{i}" for i, v in enumerate(variants)}
    for ax, name in zip(axes, recommenders, strict=False):
        part = means[means["recommender"] == name]
        for j, (weighting, p) in enumerate(variants):
            line = part[(part["weighting"] == weighting) & (part["p"] == p)].sort_values("t")
            if line.empty:
                continue
            colour = colours[(weighting, p)]
            marker, style = _LINES[j % len(_LINES)]
            # the later (larger p) drawn below, hollow: a curve it coincides with shows on top
            ax.plot(
                line["t"],
                line["score"],
                marker=marker,
                linestyle=style,
                color=colour,
                markerfacecolor="none" if j else colour,
                zorder=3 + len(variants) - j,
                label=_label(weighting, int(p), p_max),
            )
            ax.fill_between(line["t"], line["ci_low"], line["ci_high"], color=colour, alpha=0.12)
        ax.set_title(name)
        ax.set_xlabel("snapshot t")
        ax.set_ylabel("hit rate")
        ax.set_xticks(sorted(part["t"].unique()))
        ax.grid(alpha=0.3)
    for ax in axes[n:]:
        ax.set_visible(False)
    legend_outside(fig, axes[:n], ncols=4)
    fig.suptitle(f"E6 on {dataset}: leave-one-out score vs time")
    return fig


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E6's aggregated tables."""
    if name == "scores":
        return _scores(tables["scores"], dataset)
    raise ValueError(f"E6 has no figure {name!r}; known: {', '.join(FIGURES)}")

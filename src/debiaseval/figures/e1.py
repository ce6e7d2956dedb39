"""Figures of experiment E1 ([SAC20]): how far each test set's Recall@k is from the MAR truth."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

from debiaseval.figures import grouped_bars, legend_outside, recall_k

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E1 · Intervened test sets (SAC 2020)"

TABLES = ("summary", "kendall", "testsets")

FIGURES = {
    "recall": (
        "Recall@k of every recommender on the MAR ground truth (gt) and on each test set; "
        "bars are means over seeds, whiskers one standard deviation. The closer a test set's "
        "bars are to gt's, the less biased its evaluation."
    ),
    "pct_diff": (
        "Percentage difference of Recall@k on each test set from the ground truth (gt), per "
        "recommender, from the seed means. 0 is unbiased; closer to 0 is better."
    ),
    "kendall": (
        "Kendall's tau-b between the ranking of the recommenders on gt and on each test set "
        "(seed means; the sanity baselines listed in e1.kendall_exclude are left out), with and "
        "without matrix factorisation. 1 means the test set ranks the recommenders as gt does; "
        "a tau of 0 is drawn as a thick line on the baseline, an undefined one is marked n/a."
    ),
    "testsets": (
        "How MAR-like each test set is: KL divergence of its user and item marginals from those "
        "of the MAR ground truth gt (Laplace-smoothed, mean over seeds). Lower is closer to MAR."
    ),
}


def _recall(summary: pd.DataFrame, dataset: str, pct: bool) -> Figure:
    k = recall_k(summary, "E1")
    rows = summary[(summary["metric"] == "recall") & (summary["k"] == k)]
    order = list(dict.fromkeys(rows["testset"]))
    value = "pct_diff_vs_gt" if pct else "mean"
    table = rows.pivot(index="recommender", columns="testset", values=value)
    if pct:
        table = table[[t for t in order if t != "gt"]]
    else:
        table = table[order]
    errors = None if pct else rows.pivot(index="recommender", columns="testset", values="sd")
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.add_subplot()
    label = f"% difference of Recall@{k} from gt" if pct else f"Recall@{k}"
    grouped_bars(ax, table, errors, label)
    legend_outside(fig, ax)
    if pct:
        ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_title(f"E1 on {dataset}: {label}")
    return fig


def _kendall(kendall: pd.DataFrame, summary: pd.DataFrame, dataset: str) -> Figure:
    k = recall_k(summary, "E1")
    rows = kendall[(kendall["metric"] == "recall") & (kendall["k"] == k)]
    table = rows.pivot(index="testset", columns="with_mf", values="tau")
    table = table.reindex(list(dict.fromkeys(rows["testset"])))
    table.columns = ["with MF" if c else "without MF" for c in table.columns]
    fig = Figure(figsize=(6.5, 3.8), layout="constrained")
    ax = fig.add_subplot()
    grouped_bars(ax, table, None, f"Kendall tau-b vs gt (Recall@{k})", value_labels="{:.2f}")
    legend_outside(fig, ax)
    ax.set_ylim(-1.25, 1.25)  # headroom for the value labels of tau = ±1
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_title(f"E1 on {dataset}: agreement of the recommender ranking with gt")
    return fig


def _testsets(diagnostics: pd.DataFrame, dataset: str) -> Figure:
    means = diagnostics.groupby("testset", sort=False)[["kl_users", "kl_items"]].mean()
    means.columns = ["users", "items"]
    fig = Figure(figsize=(6.5, 3.8), layout="constrained")
    ax = fig.add_subplot()
    grouped_bars(ax, means, None, "KL divergence from the gt marginal")
    legend_outside(fig, ax)
    ax.set_title(f"E1 on {dataset}: distance of each test set from MAR")
    return fig


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E1's aggregated tables."""
    if name == "recall":
        return _recall(tables["summary"], dataset, pct=False)
    if name == "pct_diff":
        return _recall(tables["summary"], dataset, pct=True)
    if name == "kendall":
        return _kendall(tables["kendall"], tables["summary"], dataset)
    if name == "testsets":
        return _testsets(tables["testsets"], dataset)
    raise ValueError(f"E1 has no figure {name!r}; known: {', '.join(FIGURES)}")

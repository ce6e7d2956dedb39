"""Figures of experiment E1 ([SAC20]): how far each test set's Recall@k is from the MAR truth."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from debiaseval.evaluation.aggregate import kendall_variants
from debiaseval.figures import grouped_bars, legend_outside, recall_k

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E1 · Intervened test sets (SAC 2020)"

TABLES = ("summary", "kendall", "testsets", "comparisons", "estimator_accuracy")

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
        "(seed means; the sanity baselines listed in e1.kendall_exclude are left out), with "
        "every recommender and without each group of e1.kendall_groups (by default the matrix "
        "factorisation models, MF). 1 means the test set ranks the recommenders as gt does; "
        "a tau of 0 is drawn as a thick line on the baseline, an undefined one is marked n/a."
    ),
    "significance": (
        "Paired comparisons on the ground truth gt at Recall@k: the cell of row A and column B "
        "counts the seeds in which A's per-user recall beats B's significantly (paired t-test "
        "over the users, Holm's correction over all pairs, at 1 - e1.confidence), out of all "
        "seeds; blue where A wins more seeds than it loses, red where it loses more, white "
        "where no seed tells them apart."
    ),
    "accuracy": (
        "The estimator arena's scoreboard at Recall@k: every test set or estimator against the "
        "truth (the exact value from the full rating matrix, TRUE, on synthetic; the MAR ground "
        "truth gt elsewhere), over recommenders × seeds. Top: bias (mean estimate - truth) and "
        "RMSE, closer to 0 is better (on a symmetric log scale); bottom: Kendall's tau-b of the "
        "recommender ranking vs the truth within a seed (mean over seeds; 1 is best) and the "
        "coverage of the per-seed "
        "bootstrap intervals (share holding the truth; the dashed line is their nominal level)."
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
    order = list(dict.fromkeys(rows["testset"]))
    variants = kendall_variants(rows)
    variants = variants[1:] + variants[:1]  # "without" each group, then every recommender
    table = pd.DataFrame(
        {label: part.set_index("testset")["tau"] for label, part in variants}
    ).reindex(order)
    fig = Figure(figsize=(6.5, 3.8), layout="constrained")
    ax = fig.add_subplot()
    grouped_bars(ax, table, None, f"Kendall tau-b vs gt (Recall@{k})", value_labels="{:.2f}")
    legend_outside(fig, ax)
    ax.set_ylim(-1.25, 1.25)  # headroom for the value labels of tau = ±1
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_title(f"E1 on {dataset}: agreement of the recommender ranking with gt")
    return fig


def _significance(comparisons: pd.DataFrame, summary: pd.DataFrame, dataset: str) -> Figure:
    k = recall_k(summary, "E1")
    rows = comparisons[
        (comparisons["testset"] == "gt") & (comparisons["metric"] == "recall")
        & (comparisons["k"] == k)
    ]  # fmt: skip
    names = list(dict.fromkeys([*rows["recommender_a"], *rows["recommender_b"]]))
    if not names:
        names = list(dict.fromkeys(summary["recommender"]))
    at = {name: i for i, name in enumerate(names)}
    wins = np.zeros((len(names), len(names)), dtype=np.int64)
    seeds = int(rows["n_seeds"].max()) if len(rows) else 0
    for a, b, n_a, n_b in rows[
        ["recommender_a", "recommender_b", "n_a_better", "n_b_better"]
    ].itertuples(index=False):
        wins[at[a], at[b]], wins[at[b], at[a]] = n_a, n_b
    score = (wins - wins.T) / max(seeds, 1)
    size = 1.2 + 0.6 * len(names)
    fig = Figure(figsize=(size + 1.5, size), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(score, cmap="RdBu", vmin=-1, vmax=1)
    for i, j in np.ndindex(wins.shape):
        if i != j:
            ax.text(j, i, f"{wins[i, j]}/{seeds}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("B")
    ax.set_ylabel("A (seeds where A > B significantly)")
    fig.colorbar(image, ax=ax, label="(wins - losses) / seeds")
    ax.set_title(f"E1 on {dataset}: significance on gt, Recall@{k}")
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


def _accuracy(accuracy: pd.DataFrame, summary: pd.DataFrame, dataset: str) -> Figure:
    k = recall_k(summary, "E1")
    rows = accuracy[(accuracy["metric"] == "recall") & (accuracy["k"] == k)].set_index("testset")
    truth = rows["truth"].iloc[0] if len(rows) else "gt"
    level = float(rows["level"].iloc[0]) if len(rows) else 0.95
    fig = Figure(figsize=(max(7.0, 2.0 + 0.7 * len(rows)), 7.0), layout="constrained")
    error, agreement = fig.subplots(2, 1)
    grouped_bars(error, rows[["bias", "rmse"]], None, f"Recall@{k} vs {truth}")
    # symmetric log: errors of 0.01 and an unstable estimator's 4 both stay readable
    error.set_yscale("symlog", linthresh=0.05)
    error.axhline(0.0, color="black", linewidth=0.8)
    error.set_title("error (symmetric log scale, linear within ±0.05)")
    table = rows[["tau", "coverage"]].rename(columns={"tau": "Kendall tau-b"})
    grouped_bars(agreement, table, None, "", value_labels="{:.2f}")
    agreement.set_ylim(-1.25, 1.25)
    agreement.axhline(0.0, color="black", linewidth=0.8)
    agreement.axhline(level, color="grey", linewidth=0.8, linestyle="--")
    agreement.set_title(f"ranking (per seed) and coverage of the {level:.0%} intervals (dashed)")
    for ax in (error, agreement):  # the two panels share colours, not meanings: a legend
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # each, outside
    fig.suptitle(f"E1 on {dataset}: the estimator arena's scoreboard vs {truth}")
    return fig


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E1's aggregated tables."""
    if name == "recall":
        return _recall(tables["summary"], dataset, pct=False)
    if name == "pct_diff":
        return _recall(tables["summary"], dataset, pct=True)
    if name == "kendall":
        return _kendall(tables["kendall"], tables["summary"], dataset)
    if name == "significance":
        return _significance(tables["comparisons"], tables["summary"], dataset)
    if name == "accuracy":
        return _accuracy(tables["estimator_accuracy"], tables["summary"], dataset)
    if name == "testsets":
        return _testsets(tables["testsets"], dataset)
    raise ValueError(f"E1 has no figure {name!r}; known: {', '.join(FIGURES)}")

"""Figures of experiment E1 ([SAC20]): how far each test set's Recall@k is from the MAR truth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from debiaseval.evaluation.agreement import kendall_variants
from debiaseval.evaluation.uncertainty import shown_interval
from debiaseval.figures import (
    grouped_bars,
    interval_whiskers,
    legend_outside,
    new_figure,
    recall_k,
    row_colours,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E1 · Intervened test sets (SAC 2020)"

TABLES = ("summary", "kendall", "testsets", "comparisons", "estimator_accuracy")

FIGURES = {
    "recall": (
        "Recall@k of every recommender on the MAR ground truth (gt) and on each test set (left) "
        "and under each weighting estimator (right, beside gt); bars are means over seeds, "
        "whiskers the interval the summary table prints (from 3 seeds the t interval over "
        "seeds, with fewer the bootstrap interval over users; both within [0, 1]). The closer "
        "a row's bars are to gt's, the less biased its evaluation. A row has the same colour "
        "in every figure of the run (references in grey)."
    ),
    "pct_diff": (
        "Percentage difference of Recall@k on each test set (left) and under each weighting "
        "estimator (right) from the ground truth (gt), per recommender, from the seed means. "
        "0 is unbiased; closer to 0 is better."
    ),
    "kendall": (
        "Kendall's tau-b between the ranking of the recommenders on gt and on each test set "
        "(seed means; the sanity baselines listed in e1.kendall_exclude are left out), with "
        "every recommender and without each group of e1.kendall_groups (by default the matrix "
        "factorisation models, MF). 1 means the test set ranks the recommenders as gt does; "
        "a tau of 0 is drawn as a thick line on the baseline, an undefined one is marked n/a."
    ),
    "significance": (
        "Paired comparisons on the ground truth gt at Recall@k (left): the cell of row A and "
        "column B counts the seeds in which A's per-user recall beats B's significantly (paired "
        "t-test over the users, Holm's correction over all pairs, at 1 - e1.confidence), out of "
        "all seeds; blue where A wins more seeds than it loses, red where it loses more, white "
        "where no seed tells them apart. Right, where a SNIPS row runs: in the row of the "
        "recommender its estimate puts ahead, Γ*, the factor by which its propensities must be "
        "wrong before the order of the pair can flip (median over seeds; ∞ beyond 1000; 1: the "
        "estimate does not separate them)."
    ),
    "accuracy": (
        "The estimator arena's scoreboard at Recall@k: every test set or estimator against the "
        "truth (the exact value from the full rating matrix, TRUE, on synthetic; the MAR ground "
        "truth gt elsewhere), over recommenders × seeds, with the baselines CONSTANT (every "
        "recommender given the seed's mean truth) and GT_HALVES (gt's split-half agreement). "
        "Bias (mean estimate - truth), RMSE and centred RMSE (each seed's mean error removed: "
        "the error in the differences between models; closer to 0 is better; symmetric log "
        "scale), Kendall's tau-b of the recommender ranking vs the truth within a seed (mean "
        "over seeds; 1 is best) and coverage (share of the rows' intervals over user resamples, "
        "over the truth's users, that hold the truth, or, against gt, whose joint interval of "
        "row - gt holds 0; the dashed line is their nominal level). Whiskers are the 95% "
        "intervals of the scoreboard (a bootstrap over seeds, and over users too where the "
        "seeds re-split one dataset); none below 5 seeds, where the scoreboard gives none. A "
        "row has the same colour in every figure."
    ),
    "testsets": (
        "How MAR-like each test set is: KL divergence of its user and item marginals from those "
        "of the MAR ground truth gt (Laplace-smoothed, mean over seeds). Lower is closer to MAR."
    ),
}


def _families(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Row -> family (MAR sample, resampling, weighting, baseline) from the scoreboard."""
    board = tables.get("estimator_accuracy")
    if board is None or board.empty:
        return {}
    return dict(zip(board["testset"], board["family"], strict=True))


def _colours(tables: Mapping[str, pd.DataFrame]) -> dict[str, object]:
    """Every row's colour (:func:`~debiaseval.figures.row_colours`) from every row name the
    tables hold: the summary's test sets and estimators, the test-set diagnostics' (which
    keep an empty test set) and the scoreboard's baselines. The same in every figure of a
    run."""
    names = [
        name
        for stem in ("summary", "testsets", "estimator_accuracy")
        if stem in tables and "testset" in tables[stem]
        for name in tables[stem]["testset"]
    ]
    return row_colours(names)


def _recall(
    summary: pd.DataFrame,
    families: Mapping[str, str],
    dataset: str,
    pct: bool,
    colours: Mapping[str, object],
) -> Figure:
    k = recall_k(summary, "E1")
    rows = summary[(summary["metric"] == "recall") & (summary["k"] == k)]
    order = list(dict.fromkeys(rows["testset"]))
    weighting = [t for t in order if families.get(t) == "weighting"]
    references = [t for t in ("gt", "TRUE") if t in order and not (pct and t == "gt")]
    panels = [("test sets", [t for t in order if t not in weighting and not (pct and t == "gt")])]
    if weighting:
        panels.append(("weighting estimators", [*references, *weighting]))
    value = "pct_diff_vs_gt" if pct else "mean"
    if not pct:  # the tables' interval: t over seeds from MIN_T_SEEDS seeds, else bootstrap
        shown = shown_interval(
            *(rows[c] for c in ("ci_low", "ci_high", "boot_low", "boot_high", "n_seeds"))
        )
        rows = rows.assign(shown_low=shown[0], shown_high=shown[1])
    fig = new_figure(figsize=(8 if len(panels) == 1 else 13, 4.4), layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    label = f"% difference of Recall@{k} from gt" if pct else f"Recall@{k}"
    for ax, (title, names) in zip(axes, panels, strict=True):
        table = rows.pivot(index="recommender", columns="testset", values=value)[names]
        errors = None
        if not pct:
            errors = tuple(
                rows.pivot(index="recommender", columns="testset", values=bound)[names]
                for bound in ("shown_low", "shown_high")
            )
        grouped_bars(ax, table, errors, label if ax is axes[0] else "", colours=colours)
        if pct:
            ax.axhline(0.0, color="black", linewidth=0.8)
        if len(panels) > 1:
            ax.set_title(title, fontsize="medium")
    legend_outside(fig, axes)
    fig.suptitle(f"E1 on {dataset}: {label}")
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
    fig = new_figure(figsize=(6.5, 3.8), layout="constrained")
    ax = fig.add_subplot()
    grouped_bars(ax, table, None, f"Kendall tau-b vs gt (Recall@{k})", value_labels="{:.2f}")
    legend_outside(fig, ax)
    ax.set_ylim(-1.25, 1.25)  # headroom for the value labels of tau = ±1
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_title(f"E1 on {dataset}: agreement of the recommender ranking with gt")
    return fig


def _significance(comparisons: pd.DataFrame, summary: pd.DataFrame, dataset: str) -> Figure:
    k = recall_k(summary, "E1")
    at_k = comparisons[(comparisons["metric"] == "recall") & (comparisons["k"] == k)]
    rows = at_k[at_k["testset"] == "gt"]
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
    stars = at_k[at_k["gamma_star"].notna()] if "gamma_star" in at_k else at_k.iloc[:0]
    snips = list(dict.fromkeys(stars["testset"]))[:1]
    size = 1.2 + 0.6 * len(names)
    fig = new_figure(figsize=((size + 1.5) * (1 + len(snips)), size), layout="constrained")
    axes = fig.subplots(1, 1 + len(snips), squeeze=False)[0]
    ax = axes[0]
    image = ax.imshow(score, cmap="RdBu", vmin=-1, vmax=1)
    for i, j in np.ndindex(wins.shape):
        if i != j:
            ax.text(j, i, f"{wins[i, j]}/{seeds}", ha="center", va="center", fontsize=8)
    _matrix_axes(ax, names)
    ax.set_ylabel("A (seeds where A > B significantly)")
    fig.colorbar(image, ax=ax, label="(wins - losses) / seeds")
    ax.set_title(f"significance on gt, Recall@{k}", fontsize="medium")
    for ax, estimator in zip(axes[1:], snips, strict=True):
        grid = np.full((len(names), len(names)), np.nan)
        for a, b, diff, star in stars[stars["testset"] == estimator][
            ["recommender_a", "recommender_b", "mean_diff", "gamma_star"]
        ].itertuples(index=False):
            if a in at and b in at:
                winner, loser = (a, b) if diff >= 0 else (b, a)
                grid[at[winner], at[loser]] = star
        shown = np.log10(np.clip(grid, 1.0, 10.0))
        image = ax.imshow(shown, cmap="Greens", vmin=0, vmax=1)
        for i, j in np.ndindex(grid.shape):
            if np.isfinite(grid[i, j]) or np.isinf(grid[i, j]):
                text = "∞" if np.isinf(grid[i, j]) else f"{grid[i, j]:.2g}"
                ax.text(j, i, text, ha="center", va="center", fontsize=8)
        _matrix_axes(ax, names)
        ax.set_ylabel("the recommender ahead under " + estimator)
        fig.colorbar(image, ax=ax, label="log10 Γ* (capped at 10)")
        ax.set_title(f"Γ* under {estimator}: how wrong may its propensities be", fontsize="medium")
    fig.suptitle(f"E1 on {dataset}: which recommenders differ, Recall@{k}")
    return fig


def _matrix_axes(ax, names: list[str]) -> None:
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("B")


def _testsets(diagnostics: pd.DataFrame, dataset: str) -> Figure:
    means = diagnostics.groupby("testset", sort=False)[["kl_users", "kl_items"]].mean()
    means.columns = ["users", "items"]
    fig = new_figure(figsize=(6.5, 3.8), layout="constrained")
    ax = fig.add_subplot()
    grouped_bars(ax, means, None, "KL divergence from the gt marginal")
    legend_outside(fig, ax)
    ax.set_title(f"E1 on {dataset}: distance of each test set from MAR")
    return fig


def _accuracy(
    accuracy: pd.DataFrame, summary: pd.DataFrame, dataset: str, colours: Mapping[str, object]
) -> Figure:
    k = recall_k(summary, "E1")
    rows = accuracy[(accuracy["metric"] == "recall") & (accuracy["k"] == k)]
    truth = rows["truth"].iloc[0] if len(rows) else "gt"
    confidence = float(rows["level"].iloc[0]) if len(rows) else 0.95
    fig = new_figure(figsize=(max(12.0, 2.0 + 0.65 * len(rows)), 7.5), layout="constrained")
    axes = fig.subplots(2, 3, sharex=True).ravel()
    axes[5].axis("off")
    x = np.arange(len(rows))
    labels = rows["testset"].tolist()
    panels = (
        ("bias", "bias (estimate − truth)"),
        ("rmse", "RMSE"),
        ("crmse", "centred RMSE (error in differences)"),
        ("tau", "Kendall's tau-b vs the truth"),
        ("coverage", "coverage"),
    )
    for ax, (stat, title) in zip(axes, panels, strict=False):
        values = rows[stat].to_numpy(dtype=float)
        low, high = rows[f"{stat}_low"].to_numpy(float), rows[f"{stat}_high"].to_numpy(float)
        ax.bar(
            x,
            np.nan_to_num(values),
            0.7,
            yerr=interval_whiskers(values, low, high),
            capsize=2,
            color=[colours.get(name, "grey") for name in labels],
        )
        for position, value in zip(x, values, strict=True):
            if not np.isfinite(value):
                ax.annotate(
                    "n/a",
                    (position, 0.0),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    fontsize="x-small",
                )
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_title(title, fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
        if stat in ("bias", "rmse", "crmse"):  # an error of 0.01 and an unstable one's 4 readable
            ax.set_yscale("symlog", linthresh=0.05)
        if stat == "coverage":
            ax.axhline(confidence, color="grey", linewidth=0.8, linestyle="--")
            ax.set_ylim(0, 1.05)
        if stat == "tau":
            ax.set_ylim(-1.05, 1.05)
    for ax in axes[2:5]:
        ax.set_xticks(x, labels, rotation=45, ha="right")
        ax.tick_params(labelbottom=True)
    fig.suptitle(f"E1 on {dataset}: the estimator arena's scoreboard vs {truth}, Recall@{k}")
    return fig


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E1's aggregated tables."""
    if name == "recall":
        return _recall(tables["summary"], _families(tables), dataset, False, _colours(tables))
    if name == "pct_diff":
        return _recall(tables["summary"], _families(tables), dataset, True, _colours(tables))
    if name == "kendall":
        return _kendall(tables["kendall"], tables["summary"], dataset)
    if name == "significance":
        return _significance(tables["comparisons"], tables["summary"], dataset)
    if name == "accuracy":
        return _accuracy(tables["estimator_accuracy"], tables["summary"], dataset, _colours(tables))
    if name == "testsets":
        return _testsets(tables["testsets"], dataset)
    raise ValueError(f"E1 has no figure {name!r}; known: {', '.join(FIGURES)}")

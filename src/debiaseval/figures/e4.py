"""Figure of experiment E4 ([ICML16] Table 2 and Fig. 3-style): MF-Naive vs MF-IPS test error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from debiaseval.evaluation.uncertainty import shown_interval
from debiaseval.figures import interval_whiskers, legend_outside, new_figure, row_colours

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E4 · Debiased learning, MF-IPS vs MF-Naive (ICML 2016)"

TABLES = ("summary",)

FIGURES = {
    "test_error": (
        "Test error of MF-Naive and MF-IPS (one bar per propensity model), mean over seeds; "
        "whiskers: the 95% t interval over seeds the summary prints (from 3 seeds on, computed "
        "on the log scale, so never below 0; none with fewer seeds), "
        "on the MAR test (coat, yahoo-r3) or the full matrix (synthetic, ml-100k-semi, at the "
        "smallest alpha of the sweep); p = paired t-test against MF-Naive across seeds, from 3 "
        "seeds on as the interval (every seed's test over the MAR test pairs, ICML16's, is in "
        "pair_tests). With an alpha sweep, "
        "a second panel shows the test MSE vs the selection-bias strength alpha (1 = MCAR) "
        "(ICML16 Figure 3, left) and, with MF-IPS-NB, a third its test MSE vs the size of the "
        "MCAR sample that estimates P(Y = r), beside MF-Naive and MF-IPS with the known "
        "propensities at the same alpha (Figure 3, right). A model has one colour in every "
        "panel. Lower is better."
    ),
}


def _label(model: str, propensity: str) -> str:
    return model if propensity == "none" else f"{model} ({propensity})"


def _whiskers(rows: pd.DataFrame) -> np.ndarray:
    """matplotlib's ``yerr`` (2 × n distances below and above the mean) of the interval the
    summary prints (:func:`shown_interval`: the t interval over seeds from 3 seeds on, else
    none, as E4 keeps no interval over test pairs); NaN, so no whisker, where there is none."""
    nan = np.full(len(rows), np.nan)
    low, high = shown_interval(rows["ci_low"], rows["ci_high"], nan, nan, rows["n_seeds"])
    return interval_whiskers(rows["mean"], low, high)


def _colours(summary: pd.DataFrame) -> dict[str, object]:
    """Every series' colour (:func:`~debiaseval.figures.row_colours` of its label)."""
    return row_colours(
        [_label(*pair) for pair in zip(summary["model"], summary["propensity"], strict=True)]
    )


def _bars(ax, rows: pd.DataFrame, colours: Mapping[str, object]) -> None:
    metrics = list(dict.fromkeys(rows["metric"]))
    series = list(dict.fromkeys(zip(rows["model"], rows["propensity"], strict=True)))
    width = 0.8 / len(series)
    for j, (model, propensity) in enumerate(series):
        cell = rows[(rows["model"] == model) & (rows["propensity"] == propensity)]
        cell = cell.set_index("metric").reindex(metrics)
        x = np.arange(len(metrics)) + (j - (len(series) - 1) / 2) * width
        label = _label(model, propensity)
        ax.bar(
            x,
            cell["mean"],
            width,
            yerr=_whiskers(cell),
            capsize=3,
            label=label,
            color=colours[label],
        )
        for xi, (mean, p) in zip(x, cell[["mean", "p_value"]].to_numpy(), strict=True):
            if np.isfinite(p):
                ax.annotate(
                    f"p={p:.2g}",
                    (xi, mean),
                    ha="center",
                    va="bottom",
                    xytext=(0, 2),
                    fontsize="x-small",
                    textcoords="offset points",
                )
    ax.margins(y=0.12)  # headroom for the p-value labels
    ax.set_xticks(np.arange(len(metrics)), [m.upper() for m in metrics])
    ax.set_ylabel("test error")
    ax.grid(axis="y", alpha=0.3)


def _mcar_curve(ax, rows: pd.DataFrame, colours: Mapping[str, object]) -> None:
    """MF-IPS-NB's test MSE vs its MCAR sample size; the other models as flat lines."""
    nb = rows[rows["mar_size"].notna()].sort_values("mar_size")
    label = _label(str(nb["model"].iloc[0]), "naive_bayes")
    ax.errorbar(
        nb["mar_size"],
        nb["mean"],
        yerr=_whiskers(nb),
        marker="o",
        markersize=3,
        capsize=3,
        color=colours[label],
        label=label,
    )
    for (model, propensity), cell in rows[rows["mar_size"].isna()].groupby(
        ["model", "propensity"], sort=False
    ):
        label = _label(model, propensity)
        ax.axhline(
            float(cell["mean"].iloc[0]),
            linestyle="--",
            linewidth=1,
            color=colours[label],
            label=label,
        )
    ax.set_xscale("log")
    ax.set_xlabel("MCAR ratings that estimate P(Y = r)")
    ax.set_ylabel("test MSE on the full matrix")
    ax.grid(alpha=0.3)


def _curve(ax, rows: pd.DataFrame, colours: Mapping[str, object]) -> None:
    for (model, propensity), cell in rows.groupby(["model", "propensity"], sort=False):
        cell = cell.sort_values("alpha")
        label = _label(model, propensity)
        ax.errorbar(
            cell["alpha"],
            cell["mean"],
            yerr=_whiskers(cell),
            marker="o",
            markersize=3,
            capsize=3,
            label=label,
            color=colours[label],
        )
    ax.set_xlabel("alpha (selection-bias strength; 1 = MCAR)")
    ax.set_ylabel("test MSE on the full matrix")
    ax.grid(alpha=0.3)


def draw(name: str, tables: Mapping[str, pd.DataFrame], dataset: str) -> Figure:
    """Figure ``name`` of :data:`FIGURES` from E4's summary table."""
    if name != "test_error":
        raise ValueError(f"E4 has no figure {name!r}; known: {', '.join(FIGURES)}")
    summary = tables["summary"]
    if summary.empty:
        raise ValueError("no rows to plot for E4")
    colours = _colours(summary)
    sizes = summary["mar_size"] if "mar_size" in summary else pd.Series(np.nan, summary.index)
    nb, summary = summary[sizes.notna()], summary[sizes.isna()]
    alphas = summary["alpha"].dropna().unique()
    sweep = alphas.size > 1
    panels = 1 + sweep + (not nb.empty)
    fig = new_figure(figsize=(4.5 * panels + 1.0, 3.8), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)[0]
    rows = summary
    where = ""
    if alphas.size:
        alpha = float(alphas.min())
        rows = summary[summary["alpha"] == alpha]
        where = f" at alpha = {alpha:g}"
    _bars(axes[0], rows, colours)
    axes[0].set_title(f"test error{where}", fontsize="medium")
    if sweep:
        _curve(axes[1], summary[summary["metric"] == "mse"], colours)
        axes[1].set_title("MSE vs alpha", fontsize="medium")
    if not nb.empty:
        alpha = float(nb["alpha"].iloc[0])
        mse = pd.concat([nb, summary[np.isclose(summary["alpha"], alpha)]])
        _mcar_curve(axes[-1], mse[mse["metric"] == "mse"], colours)
        axes[-1].set_title(f"MF-IPS-NB at alpha = {alpha:g}", fontsize="medium")
    legend_outside(fig, axes, ncols=4)
    fig.suptitle(f"E4 on {dataset}: MF-Naive vs MF-IPS")
    return fig

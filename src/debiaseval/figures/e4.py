"""Figure of experiment E4 ([ICML16] Table 2 and Fig. 3-style): MF-Naive vs MF-IPS test error."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from debiaseval.figures import legend_outside

__all__ = ["FIGURES", "TABLES", "TITLE", "draw"]

TITLE = "E4 · Debiased learning, MF-IPS vs MF-Naive (ICML 2016)"

TABLES = ("summary",)

FIGURES = {
    "test_error": (
        "Test error of MF-Naive and MF-IPS (one bar per propensity model), mean ± sd over seeds, "
        "on the MAR test (coat, yahoo-r3) or the full matrix (synthetic, ml-100k-semi, at the "
        "smallest alpha of the sweep); p = paired t-test against MF-Naive across seeds (every "
        "seed's test over the MAR test pairs, ICML16's, is in pair_tests). With an alpha sweep, "
        "a second panel shows the test MSE vs the selection-bias strength alpha (1 = MCAR) "
        "(ICML16 Figure 3, left) and, with MF-IPS-NB, a third its test MSE vs the size of the "
        "MCAR sample that estimates P(Y = r), beside MF-Naive and MF-IPS with the known "
        "propensities at the same alpha (Figure 3, right). Lower is better."
    ),
}


def _label(model: str, propensity: str) -> str:
    return model if propensity == "none" else f"{model} ({propensity})"


def _bars(ax, rows: pd.DataFrame) -> None:
    metrics = list(dict.fromkeys(rows["metric"]))
    series = list(dict.fromkeys(zip(rows["model"], rows["propensity"], strict=True)))
    width = 0.8 / len(series)
    for j, (model, propensity) in enumerate(series):
        cell = rows[(rows["model"] == model) & (rows["propensity"] == propensity)]
        cell = cell.set_index("metric").reindex(metrics)
        x = np.arange(len(metrics)) + (j - (len(series) - 1) / 2) * width
        ax.bar(x, cell["mean"], width, yerr=cell["sd"].fillna(0.0), capsize=3,
               label=_label(model, propensity))  # fmt: skip
        for xi, (mean, p) in zip(x, cell[["mean", "p_value"]].to_numpy(), strict=True):
            if np.isfinite(p):
                ax.annotate(f"p={p:.2g}", (xi, mean), ha="center", va="bottom", xytext=(0, 2),
                            fontsize="x-small", textcoords="offset points")  # fmt: skip
    ax.margins(y=0.12)  # headroom for the p-value labels
    ax.set_xticks(np.arange(len(metrics)), [m.upper() for m in metrics])
    ax.set_ylabel("test error")
    ax.grid(axis="y", alpha=0.3)


def _mcar_curve(ax, rows: pd.DataFrame) -> None:
    """MF-IPS-NB's test MSE vs its MCAR sample size; the other models as flat lines."""
    nb = rows[rows["mar_size"].notna()].sort_values("mar_size")
    ax.errorbar(nb["mar_size"], nb["mean"], yerr=nb["sd"].fillna(0.0), marker="o", markersize=3,
                capsize=3, color="C2", label="MF-IPS (naive_bayes)")  # fmt: skip
    for (model, propensity), cell in rows[rows["mar_size"].isna()].groupby(
        ["model", "propensity"], sort=False
    ):
        ax.axhline(float(cell["mean"].iloc[0]), linestyle="--", linewidth=1,
                   color="C0" if propensity == "none" else "C1",
                   label=f"{_label(model, propensity)}")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("MCAR ratings that estimate P(Y = r)")
    ax.set_ylabel("test MSE on the full matrix")
    ax.grid(alpha=0.3)


def _curve(ax, rows: pd.DataFrame) -> None:
    for (model, propensity), cell in rows.groupby(["model", "propensity"], sort=False):
        cell = cell.sort_values("alpha")
        ax.errorbar(cell["alpha"], cell["mean"], yerr=cell["sd"].fillna(0.0), marker="o",
                    markersize=3, capsize=3, label=_label(model, propensity))  # fmt: skip
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
    sizes = summary["mar_size"] if "mar_size" in summary else pd.Series(np.nan, summary.index)
    nb, summary = summary[sizes.notna()], summary[sizes.isna()]
    alphas = summary["alpha"].dropna().unique()
    sweep = alphas.size > 1
    panels = 1 + sweep + (not nb.empty)
    fig = Figure(figsize=(4.5 * panels + 1.0, 3.8), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)[0]
    rows = summary
    where = ""
    if alphas.size:
        alpha = float(alphas.min())
        rows = summary[summary["alpha"] == alpha]
        where = f" at alpha = {alpha:g}"
    _bars(axes[0], rows)
    axes[0].set_title(f"test error{where}", fontsize="medium")
    if sweep:
        _curve(axes[1], summary[summary["metric"] == "mse"])
        axes[1].set_title("MSE vs alpha", fontsize="medium")
    if not nb.empty:
        alpha = float(nb["alpha"].iloc[0])
        mse = pd.concat([nb, summary[np.isclose(summary["alpha"], alpha)]])
        _mcar_curve(axes[-1], mse[mse["metric"] == "mse"])
        axes[-1].set_title(f"MF-IPS-NB at alpha = {alpha:g}", fontsize="medium")
    legend_outside(fig, axes, ncols=4)
    fig.suptitle(f"E4 on {dataset}: MF-Naive vs MF-IPS")
    return fig

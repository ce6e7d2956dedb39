"""E3's tables over seeds and draws (rule ``e3_aggregate``): each estimator's mean, bias and
RMSE against the true value, Table 1 of [ICML16], and the RMSE averaged over the prediction
matrices (docs/experiments/e3.md)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import pandas as pd

from debiaseval.evaluation.flags import join_flags, legend, marked
from debiaseval.evaluation.losses import parse_metric
from debiaseval.evaluation.uncertainty import interval_cell, seed_interval_note, seed_intervals
from debiaseval.experiments.step_config import StepConfig

__all__ = [
    "CONFIDENCE",
    "aggregate",
    "mean_over_matrices",
    "rmse_table",
    "summarise_estimates",
    "table1_markdown",
    "value_range",
]


def _ordered_groups(draws: pd.DataFrame, keys: list[str]) -> pd.core.groupby.DataFrameGroupBy:
    return draws.groupby(keys, sort=False, observed=True)


CONFIDENCE = 0.95
"""Coverage of the estimates' t interval over the draws. E3 has no ``confidence`` key: its
aggregate job gets only ``alpha``, ``table_metrics`` and ``curve_metrics`` of the block."""


def value_range(metric: str) -> tuple[float, float]:
    """The range of E3's ``metric`` and of its estimates: [0, 1] for ``accuracy``, [0, ∞) for
    the others (``mae``, ``mse``, and ``dcg@k``, ``precision@k``, whose gain is the rating,
    :mod:`debiaseval.evaluation.losses`, so not a share)."""
    return (0.0, 1.0) if parse_metric(metric)[0] == "accuracy" else (0.0, math.inf)


def summarise_estimates(draws: pd.DataFrame, *, alpha: float) -> pd.DataFrame:
    """[ICML16] Table 1: mean and sd (ddof 1) of every estimator over all draws at ``alpha``,
    and the :data:`CONFIDENCE` t interval of the mean over the draws within the metric's range.

    Uses the known-propensity rows at ``alpha`` (of every seed); columns
    ``matrix``, ``metric``, ``estimator``, ``true_value`` (mean over seeds),
    ``mean``, ``sd``, ``ci_low``/``ci_high`` (the t interval over the draws computed on the
    logit or log scale of :func:`value_range` and mapped back:
    :func:`~debiaseval.evaluation.uncertainty.seed_intervals`), ``n_draws``, ``flags``
    (:mod:`debiaseval.evaluation.flags`: ``undefined_draws`` where some draws' estimate is
    NaN, e.g. SNIPS or Naive on a draw that observed no pair; the mean, sd and interval leave
    them out), in the order the draws list them.
    """
    rows = draws[(draws["propensity"] == "known") & np.isclose(draws["alpha"], alpha)]
    if rows.empty:
        raise ValueError(f"the draws hold no known-propensity estimates at alpha={alpha:g}")
    out = _ordered_groups(rows, ["matrix", "metric", "estimator"]).agg(
        true_value=("true_value", "mean"),
        mean=("value", "mean"),
        sd=("value", "std"),
        n_draws=("value", "size"),
        n_defined=("value", "count"),
    )
    out = out.reset_index()
    out["n_draws"] = out["n_draws"].astype(np.int64)
    undefined = (out.pop("n_defined") < out["n_draws"]).to_numpy()
    out["flags"] = join_flags({"undefined_draws": undefined})
    keys = ["matrix", "metric", "estimator"]
    ci = seed_intervals(rows, keys, confidence=CONFIDENCE, bounds=value_range)[
        [*keys, "ci_low", "ci_high"]
    ]
    columns = [
        *out.columns[: list(out.columns).index("sd") + 1],
        "ci_low",
        "ci_high",
        "n_draws",
        "flags",
    ]
    return out.merge(ci, on=keys, how="left")[columns]


def rmse_table(draws: pd.DataFrame, *, propensity: str, by: str) -> pd.DataFrame:
    """RMSE, bias and sd of every estimator against the truth, per value of ``by``.

    ``propensity`` selects the rows (``known`` or ``naive_bayes``); ``by`` is
    ``alpha`` (RMSE vs α) or ``mar_size`` (RMSE vs the MAR sample size). RMSE =
    √(mean over draws and seeds of (estimate − true value)²). Columns
    ``matrix``, ``metric``, ``estimator``, ``alpha``, ``mar_size``, ``rmse``,
    ``bias``, ``sd``, ``n_draws``; sorted by matrix, metric, estimator (in the
    draws' order) and ``by``.
    """
    rows = draws[draws["propensity"] == propensity].copy()
    if rows.empty:
        return pd.DataFrame(
            {
                c: pd.Series(dtype=t)
                for c, t in [
                    ("matrix", object),
                    ("metric", object),
                    ("estimator", object),
                    ("alpha", np.float64),
                    ("mar_size", np.int64),
                    ("rmse", np.float64),
                    ("bias", np.float64),
                    ("sd", np.float64),
                    ("n_draws", np.int64),
                ]
            }
        )
    rows["error"] = rows["value"] - rows["true_value"]
    rows["sq"] = rows["error"] ** 2
    keys = ["matrix", "metric", "estimator", "alpha", "mar_size"]
    out = _ordered_groups(rows, keys).agg(
        rmse=("sq", "mean"), bias=("error", "mean"), sd=("value", "std"), n_draws=("value", "size")
    )
    out = out.reset_index()
    out["rmse"] = np.sqrt(out["rmse"])
    out["n_draws"] = out["n_draws"].astype(np.int64)
    order = {
        col: {v: i for i, v in enumerate(pd.unique(rows[col]))}
        for col in ("matrix", "metric", "estimator")
    }
    rank = [out[col].map(order[col]) for col in order]
    out = out.assign(_m=rank[0], _t=rank[1], _e=rank[2])
    out = out.sort_values(["_m", "_t", "_e", by], kind="stable", ignore_index=True)
    return out.drop(columns=["_m", "_t", "_e"])


def _fmt(x: float, scale: float) -> str:
    return f"{x:.3f}" if scale < 10 else f"{x:.2f}"


def table1_markdown(estimates: pd.DataFrame, *, title: str = "") -> str:
    """The estimates laid out like [ICML16] Table 1: metrics × (True, estimators) by matrix.

    Each cell is ``mean [t interval over the draws] (sd s)``: the interval of the mean, within
    the metric's range, and the estimator's spread over the draws; the ``True`` row is the
    true value.
    """
    matrices = list(pd.unique(estimates["matrix"]))
    lines = [f"# {title}", ""] if title else []
    lines.append("| metric | | " + " | ".join(matrices) + " |")
    lines.append("|---|---|" + "---:|" * len(matrices))
    labels = {"naive": "Naive", "ips": "IPS", "snips": "SNIPS"}
    for metric in pd.unique(estimates["metric"]):
        block = estimates[estimates["metric"] == metric]
        true = block.groupby("matrix", sort=False)["true_value"].first()
        scale = float(true.abs().max())  # one number format per metric
        cells = [_fmt(true[m], scale) for m in matrices]
        lines.append(f"| {metric.upper()} | True | " + " | ".join(cells) + " |")
        for est in pd.unique(block["estimator"]):
            row = block[block["estimator"] == est].set_index("matrix")
            digits = 3 if scale < 10 else 2  # as _fmt
            cells = [
                interval_cell(
                    *row.loc[m, ["mean", "ci_low", "ci_high"]],
                    np.nan,
                    np.nan,
                    row.at[m, "n_draws"],
                    digits=digits,
                )
                + f" (sd {_fmt(row.at[m, 'sd'], scale)})"
                for m in matrices
            ]
            if "flags" in row:
                cells = marked(cells, [row.at[m, "flags"] for m in matrices])
            lines.append(f"| | {labels.get(est, est)} | " + " | ".join(cells) + " |")
    n = int(estimates["n_draws"].iloc[0])
    note = seed_interval_note(
        n,
        confidence=CONFIDENCE,
        source="fixed: E3 has no level key",
        bounds="([0, 1] for accuracy, [0, ∞) for the other metrics)",
        scale="logit or log",
        over="draws of O",
    )
    lines += [
        "",
        f"Mean over {n} draws of O, and in round brackets the sd of the estimates over the "
        "draws; True = the exact value on the full matrix, averaged over the seeds where "
        f"each draws its own matrix (docs/datasets.md). {note}",
    ]
    notes = legend(estimates["flags"]) if "flags" in estimates else ""
    return "\n".join(lines) + "\n" + notes


def mean_over_matrices(rmse: pd.DataFrame) -> pd.DataFrame:
    """RMSE, |bias| and sd of each estimator averaged over the prediction matrices.

    [ICML16] Figures 2 and 4 plot, per metric and estimator, the RMSE averaged over the five
    prediction matrices against α (Fig. 2) and against the MAR sample size (Fig. 4). From a
    :func:`rmse_table`: per ``metric``, ``estimator``, ``alpha``, ``mar_size``, the means over
    matrices of ``rmse``, of ``abs_bias`` = |bias| and of ``sd``, with ``n_matrices``.
    """
    keys = ["metric", "estimator", "alpha", "mar_size"]
    out = (
        rmse.assign(abs_bias=rmse["bias"].abs())
        .groupby(keys, sort=False)
        .agg(
            rmse=("rmse", "mean"),
            abs_bias=("abs_bias", "mean"),
            sd=("sd", "mean"),
            n_matrices=("matrix", "nunique"),
        )
        .reset_index()
    )
    out["n_matrices"] = out["n_matrices"].astype(np.int64)
    return out


def _only(frame: pd.DataFrame, metrics: Sequence[str] | None) -> pd.DataFrame:
    if metrics is None:
        return frame
    return frame[frame["metric"].isin(metrics)].reset_index(drop=True)


@dataclasses.dataclass(frozen=True)
class E3Aggregate(StepConfig):
    """What rule ``e3_aggregate`` reads of the ``e3`` block: Table 1's ``alpha`` and the
    metrics of Table 1 and of the curves (None: every metric of the draws)."""

    BLOCK: ClassVar[str] = "e3"
    alpha: float
    table_metrics: list[str] | None = None
    curve_metrics: list[str] | None = None


def aggregate(draws: pd.DataFrame, step: E3Aggregate) -> dict[str, pd.DataFrame]:
    """The aggregated tables of E3 from every seed's draws.

    ``estimates`` ([ICML16] Table 1, at ``step.alpha``) for the metrics of
    ``step.table_metrics``; the RMSE tables per matrix (``rmse_vs_alpha``, ``rmse_vs_mar``)
    and averaged over the matrices (``rmse_vs_alpha_mean``, ``rmse_vs_mar_mean``, Figures 2
    and 4) for those of ``step.curve_metrics``; None means every metric of the draws.
    """
    curves = _only(draws, step.curve_metrics)
    by_alpha = rmse_table(curves, propensity="known", by="alpha")
    by_mar = rmse_table(curves, propensity="naive_bayes", by="mar_size")
    return {
        "estimates": summarise_estimates(_only(draws, step.table_metrics), alpha=step.alpha),
        "rmse_vs_alpha": by_alpha,
        "rmse_vs_mar": by_mar,
        "rmse_vs_alpha_mean": mean_over_matrices(by_alpha),
        "rmse_vs_mar_mean": mean_over_matrices(by_mar),
    }

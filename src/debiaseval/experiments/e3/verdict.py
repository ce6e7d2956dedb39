"""E3's verdict: the estimators' RMSE against the true value over the seeds and draws, and
the closest where a paired interval over the draws separates the best from every other
([ICML16] Figure 2; docs/experiments/e3.md, Reading the verdict)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.evaluation.uncertainty import t_interval
from debiaseval.experiments.verdicts import inert_name, metric_label, number, seeds_text

__all__ = ["e3_gap", "e3_verdict"]

_LABELS = {"naive": "Naive", "ips": "IPS", "snips": "SNIPS"}


def e3_gap(
    draws: pd.DataFrame,
    *,
    metric: str,
    alpha: float,
    best: str,
    runner: str,
    confidence: float = 0.95,
) -> tuple[float, float, float, int]:
    """How much closer ``best`` comes than ``runner``: per draw of O (each seed's), with the
    known propensities at ``alpha``, the mean over the prediction matrices of runner's squared
    error minus best's (both estimators see the same O: a paired difference); its mean over
    the draws, which is the difference of their MSEs averaged over the matrices, and its
    ``confidence`` t interval over the draws (NaN with fewer than two). Returns ``(mean, low, high,
    n_draws)``."""
    rows = draws[
        (draws["propensity"] == "known")
        & np.isclose(draws["alpha"].astype(float), alpha)
        & (draws["metric"] == metric)
        & draws["estimator"].isin([best, runner])
    ]
    squared = rows.assign(_sq=(rows["value"] - rows["true_value"]) ** 2)
    per_draw = squared.groupby(["seed", "draw", "estimator"])["_sq"].mean().unstack("estimator")
    gap = (per_draw[runner] - per_draw[best]).to_numpy(np.float64)
    mean, low, high = t_interval(gap, confidence=confidence)
    return float(mean), float(low), float(high), int(gap.size)


def _e3_closest(draws: pd.DataFrame, metric: str, alpha: float, order: Sequence[str]) -> str:
    """Which estimator comes closest, said only where the paired interval of its squared error
    against every other's (:func:`e3_gap`) lies above 0; else the first, in RMSE order, that it
    is not told apart from."""
    if len(order) < 2:
        return ""
    best = order[0]
    label = _LABELS.get(best, inert_name(best))
    intervals = []
    for other in order[1:]:
        other_label = _LABELS.get(other, inert_name(other))
        mean, low, high, n = e3_gap(draws, metric=metric, alpha=alpha, best=best, runner=other)
        if not np.isfinite(low):
            return f"; {label} and {other_label} are not told apart ({n} draw gives no interval)"
        interval = f"{mean:.3g} [{low:.3g}, {high:.3g}] (95% paired t interval over the {n} draws)"
        if low <= 0:
            return (
                f"; {label} and {other_label} are not told apart: {other_label}'s squared error, "
                f"averaged over the matrices, minus {label}'s is {interval}, an interval not "
                "above 0"
            )
        intervals.append(interval)
    runner = _LABELS.get(order[1], inert_name(order[1]))
    return (
        f"; {label} comes closest: {runner}'s squared error, averaged over the matrices, "
        f"exceeds {label}'s by {intervals[0]}"
        + (", and every other's by an interval above 0" if len(order) > 2 else "")
    )


def e3_verdict(
    rmse_mean: pd.DataFrame, draws: pd.DataFrame, block: Mapping[str, Any], *, dataset: str
) -> list[str]:
    """E3's verdict ([ICML16] Figure 2) from ``rmse_vs_alpha_mean.parquet`` and the draws:
    per metric, at the ``e3.alpha`` of Table 1 with the known propensities, each estimator's
    RMSE against the true value (mean over the prediction matrices) with its |bias| and sd
    over the draws, over how many seeds and draws of O; and the estimator that comes closest
    only where the paired interval of its squared error against every other's lies above 0
    (:func:`e3_gap`), else which two are not told apart."""
    where = inert_name(dataset)
    alpha = float(block.get("alpha", 0.25))
    rows = rmse_mean[np.isclose(rmse_mean["alpha"].astype(float), alpha)]
    if rows.empty:
        return [f"On {where}, no estimate was made at α = {alpha:g}: nothing to compare."]
    n_draws = draws["draw"].nunique()
    over = f"{seeds_text(draws['seed'].nunique())} × {n_draws} draw{'s' * (n_draws != 1)} of O"
    out = []
    for metric, part in rows.groupby("metric", sort=False):
        part = part.sort_values("rmse", kind="stable")
        cells = [
            f"{_LABELS.get(r['estimator'], inert_name(r['estimator']))} {number(r['rmse'])} "
            f"(|bias| {number(r['abs_bias'])}, sd {number(r['sd'])})"
            for _, r in part.iterrows()
        ]
        closest = _e3_closest(draws, metric, alpha, list(part["estimator"]))
        out.append(
            f"On {where} at α = {alpha:g} with the known propensities, over {over} and "
            f"{int(part['n_matrices'].max())} prediction matrices, the RMSE of the "
            f"{metric_label(metric)} estimates against the true value: {', '.join(cells)}"
            f"{closest}."
        )
    return out

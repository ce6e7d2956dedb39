"""The estimator arena's scoreboard: how close each test set or estimator comes to the truth
(docs/estimators.md).

Every row of E1's test-set column (FULL, SKEW, WTD, WTD_H, the weighting estimators) estimates,
per recommender and seed, the value its metric would have under missing-at-random data. The
truth is the MAR ground truth ``gt`` on real data and the exact value from the full rating
matrix (``TRUE``) on ``synthetic``. Scored over the recommenders × seeds of one (test set,
metric, k):

- ``bias``: the mean of estimate − truth over the (recommender, seed) pairs;
- ``rmse``: the root of the mean of (estimate − truth)²;
- ``tau``: Kendall's tau-b between the recommender rankings by the estimate and by the truth,
  computed within each seed (as [SAC20] Table 3 ranks recommenders) and averaged over the
  seeds where it is defined (``n_tau_seeds``); the recommenders of ``excluded`` (sanity
  baselines such as Random, last on both sides, which inflate tau) are left out of it;
- ``coverage``: the share of the per-seed 95% bootstrap intervals over users
  (``boot_low``/``boot_high`` of E1's ``metrics.parquet``) that contain the truth, out of
  ``n_intervals`` finite intervals (NaN with the bootstrap off).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from debiaseval.evaluation.aggregate import markdown_table

__all__ = [
    "ACCURACY_COLUMNS",
    "TRUE",
    "estimator_accuracy",
    "estimator_accuracy_markdown",
    "truth_of",
]

TRUE = "TRUE"
"""The test-set name of the exact truth from the full rating matrix (``synthetic``)."""

ACCURACY_COLUMNS = [
    "testset", "metric", "k", "truth", "n_recommenders", "n_seeds", "n_pairs",
    "bias", "rmse", "tau", "n_tau_seeds", "coverage", "level", "n_intervals",
]  # fmt: skip
"""Columns of ``estimator_accuracy.parquet``."""


def truth_of(testsets: Sequence[str]) -> str:
    """The truth a scoreboard scores against: ``TRUE`` where present, else ``gt``."""
    return TRUE if TRUE in set(testsets) else "gt"


def _tau(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Kendall's tau-b of two value vectors; NaN for fewer than 2 values or a constant one."""
    if truth.size < 2 or np.ptp(truth) == 0 or np.ptp(estimate) == 0:
        return np.nan
    from scipy.stats import kendalltau  # lazy: scipy.stats costs 0.5 s

    return float(kendalltau(truth, estimate, variant="b").statistic)


def estimator_accuracy(
    per_seed: pd.DataFrame,
    *,
    truth: str | None = None,
    excluded: Sequence[str] = (),
    level: float = 0.95,
) -> pd.DataFrame:
    """Bias, RMSE, mean Kendall's tau and interval coverage of every test set vs the truth.

    ``per_seed``: E1's per-seed metrics (columns recommender, seed, testset, metric, k,
    value, and optionally boot_low, boot_high), the truth's rows included. ``truth``: the
    test set scored against (default :func:`truth_of`); every other test set gets one row per
    (metric, k) with the columns of :data:`ACCURACY_COLUMNS` (module docstring), scored over
    the (recommender, seed) pairs where both it and the truth have a value. ``excluded``
    recommenders are left out of tau only; ``level`` is the intervals' nominal level
    (``e1.confidence``), kept beside their coverage. Rows in the order the test sets first appear.
    """
    truth = truth_of(per_seed["testset"]) if truth is None else truth
    keys = ["recommender", "seed", "metric", "k"]
    has_bounds = {"boot_low", "boot_high"} <= set(per_seed.columns)
    cols = [*keys, "testset", "value", *(["boot_low", "boot_high"] if has_bounds else [])]
    frame = per_seed[cols]
    reference = frame.loc[frame["testset"] == truth, [*keys, "value"]]
    reference = reference.rename(columns={"value": "truth_value"})
    others = frame[frame["testset"] != truth]
    pairs = others.merge(reference, on=keys, how="inner")
    pairs = pairs[np.isfinite(pairs["value"]) & np.isfinite(pairs["truth_value"])]
    order = list(dict.fromkeys(others["testset"]))
    skip = set(excluded)
    rows = []
    for (testset, metric, k), block in pairs.groupby(["testset", "metric", "k"], sort=False):
        error = block["value"].to_numpy() - block["truth_value"].to_numpy()
        taus = []
        ranked = block[~block["recommender"].isin(skip)]
        for _, seed in ranked.groupby("seed", sort=True):
            taus.append(_tau(seed["truth_value"].to_numpy(), seed["value"].to_numpy()))
        taus_arr = np.asarray(taus, dtype=np.float64)
        n_tau = int(np.isfinite(taus_arr).sum())
        if has_bounds:
            low, high = block["boot_low"].to_numpy(), block["boot_high"].to_numpy()
            finite = np.isfinite(low) & np.isfinite(high)
            inside = (low <= block["truth_value"].to_numpy()) & (
                block["truth_value"].to_numpy() <= high
            )
            n_intervals = int(finite.sum())
            coverage = float(inside[finite].mean()) if n_intervals else np.nan
        else:
            n_intervals, coverage = 0, np.nan
        rows.append(
            {
                "testset": testset,
                "metric": metric,
                "k": k,
                "truth": truth,
                "n_recommenders": np.int64(block["recommender"].nunique()),
                "n_seeds": np.int64(block["seed"].nunique()),
                "n_pairs": np.int64(len(block)),
                "bias": float(error.mean()),
                "rmse": float(np.sqrt(np.mean(error**2))),
                "tau": float(np.nanmean(taus_arr)) if n_tau else np.nan,
                "n_tau_seeds": np.int64(n_tau),
                "coverage": coverage,
                "level": float(level),
                "n_intervals": np.int64(n_intervals),
            }
        )
    out = pd.DataFrame(rows, columns=ACCURACY_COLUMNS)
    if len(out):
        out["k"] = out["k"].astype(per_seed["k"].dtype)
        rank = {name: i for i, name in enumerate(order)}
        out = out.sort_values(
            ["metric", "k", "testset"],
            key=lambda c: c.map(rank) if c.name == "testset" else c,
            kind="stable",
        )
    return out.reset_index(drop=True)


def estimator_accuracy_markdown(accuracy: pd.DataFrame, dataset: str) -> str:
    """The scoreboard for people: one table per (metric, k) of test sets × bias, RMSE, tau,
    coverage (``estimator_accuracy.md``)."""
    truth = accuracy["truth"].iloc[0] if len(accuracy) else "gt"
    level = accuracy["level"].iloc[0] if len(accuracy) else 0.95
    what = (
        "the exact value from the full rating matrix (`TRUE`)"
        if truth == TRUE
        else "the MAR ground truth `gt`, itself an estimate from a random sample"
    )
    parts = [
        f"# E1 on {dataset}: the estimator arena's scoreboard\n\n"
        f"Each test set or estimator against {what}, over recommenders × seeds: `bias` "
        "(mean estimate − truth; 0 is unbiased), `rmse`, `tau` (Kendall's tau-b of the "
        "recommender ranking vs the truth within a seed, mean over seeds; 1 is best) and "
        f"`coverage` (share of the per-seed {level:.0%} bootstrap intervals over users that "
        f"hold the truth; {level:.0%} is calibrated).\n"
    ]
    columns = ["testset", "bias", "rmse", "tau", "coverage", "n_pairs"]
    for (metric, k), block in accuracy.groupby(["metric", "k"], sort=True):
        parts.append(f"\n## {metric}@{k}\n\n" + markdown_table(block[columns]))
    return "".join(parts)

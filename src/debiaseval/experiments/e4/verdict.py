"""E4's verdict: MF-IPS against MF-Naive, across seeds and per seed, and the ``grid_edge``
flag ([ICML16] §6.5; docs/experiments/e4.md, Reading the verdict)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from debiaseval.evaluation.uncertainty import MIN_T_SEEDS
from debiaseval.experiments.verdicts import (
    and_list,
    inert_name,
    metric_label,
    number,
    p_text,
    seeds_text,
)

__all__ = ["e4_verdict"]


def _e4_interval(row: pd.Series) -> str:
    """`` [low, high]``: the row's t interval over seeds where the summary prints one (from
    :data:`MIN_T_SEEDS` seeds on, both bounds finite), else nothing."""
    low, high = row.get("ci_low", np.nan), row.get("ci_high", np.nan)
    shown = int(row["n_seeds"]) >= MIN_T_SEEDS and np.isfinite(low) and np.isfinite(high)
    return f" [{number(low, 3)}, {number(high, 3)}]" if shown else ""


def _e4_across_seeds(row: pd.Series) -> str:
    """``; paired t-test across seeds: p = …`` where the summary gives that test (from
    :data:`MIN_T_SEEDS` seeds on, as the interval), else nothing."""
    p = row.get("p_value", np.nan)
    if int(row["n_seeds"]) < MIN_T_SEEDS or not np.isfinite(p):
        return ""
    return f"; paired t-test across seeds: p = {p_text(p)}"


def _e4_per_seed(tests: pd.DataFrame, significance: float) -> str:
    """``; over the MAR test pairs it is better in … and worse in … of n seeds (…)``: the
    per-seed paired t-tests over the test pairs ([ICML16] §6.5), or nothing without them."""
    if tests.empty:
        return ""
    sig = tests["p_value"] < significance
    better = int((sig & (tests["mean_diff"] < 0)).sum())
    worse = int((sig & (tests["mean_diff"] > 0)).sum())
    ps = ", ".join(f"seed {int(t['seed'])} p = {p_text(t['p_value'])}" for _, t in tests.iterrows())
    return (
        f"; over the MAR test pairs it is better in {better} and worse in {worse} of "
        f"{seeds_text(len(tests))} (paired t-test per seed at {significance:g}: {ps})"
    )


def _e4_grid_edge(rows: Sequence[tuple[str, pd.Series]]) -> str:
    """``; the tuning picked … at an end of the grid …`` for the models flagged ``grid_edge``
    (:func:`~debiaseval.experiments.e4.tables.grid_edge`), else nothing."""
    flagged = [name for name, row in rows if "grid_edge" in str(row.get("flags", "") or "")]
    if not flagged:
        return ""
    return (
        f"; for {and_list(flagged)} the tuning picked factors or λ at an end of the grid in "
        "some seed (flag grid_edge): the best setting may lie beyond the grid, and a wider one "
        "may change the comparison"
    )


def e4_verdict(
    summary: pd.DataFrame,
    pair_tests: pd.DataFrame,
    *,
    dataset: str,
    alpha: float | None = None,
    significance: float = 0.05,
) -> list[str]:
    """E4's verdict ([ICML16] Table 2, §6.5) from ``summary.parquet`` and ``pair_tests.parquet``:
    per MF-IPS model (and MCAR sample size) and metric, at ``alpha`` (the summary's α; all rows
    without a sweep), its test error against MF-Naive's (mean over seeds), and with the table's
    statistics policy: the t interval over seeds and the paired t-test across seeds only from
    :data:`MIN_T_SEEDS` seeds on (as the summary and the figure); in how many seeds the paired
    t-test over the MAR test pairs finds it better or worse at ``significance``; and the models
    whose selected hyperparameter lies at an end of the tuning grid (flag ``grid_edge``)."""
    where = inert_name(dataset)
    rows = summary
    if alpha is not None and summary["alpha"].notna().any():
        rows = summary[np.isclose(summary["alpha"].astype(float), alpha)]
    at = "" if alpha is None or rows["alpha"].isna().all() else f" at α = {alpha:g}"
    naive = rows[rows["propensity"] == "none"].set_index("metric")
    out = []
    for _, r in rows[rows["propensity"] != "none"].iterrows():
        metric = r["metric"]
        if metric not in naive.index:
            continue
        base = naive.loc[metric]
        base = base.iloc[0] if isinstance(base, pd.DataFrame) else base
        size = r.get("mar_size", np.nan)
        model = f"{inert_name(r['model'])} ({inert_name(r['propensity'])} propensities" + (
            f", MCAR sample {int(size):,})" if np.isfinite(size) else ")"
        )
        diff = r["mean"] - base["mean"]
        intervals = (
            "mean [95% t interval over seeds, within [0, ∞)]"
            if _e4_interval(r) and _e4_interval(base)
            else f"means over seeds; fewer than {MIN_T_SEEDS} seeds give no interval and no test "
            "across seeds"
        )
        tests = pair_tests[
            (pair_tests["propensity"] == r["propensity"]) & (pair_tests["metric"] == metric)
        ]
        if alpha is not None and tests["alpha"].notna().any():
            tests = tests[np.isclose(tests["alpha"].astype(float), alpha)]
        out.append(
            f"On {where}{at}, over {seeds_text(int(r['n_seeds']))}, {model} has a test "
            f"{metric_label(metric)} of {number(r['mean'], 3)}{_e4_interval(r)} against "
            f"MF-Naive's {number(base['mean'], 3)}{_e4_interval(base)} ({intervals}), "
            f"{'lower' if diff < 0 else 'higher'} by {number(abs(diff), 3)}"
            f"{_e4_across_seeds(r)}{_e4_per_seed(tests, significance)}"
            f"{_e4_grid_edge([(inert_name(r['model']), r), ('MF-Naive', base)])}."
        )
    if not out:
        out.append(f"On {where}{at}, no MF-IPS model was compared with MF-Naive.")
    return out

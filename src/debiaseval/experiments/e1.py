"""Experiment E1: train, tune, rank and evaluate on intervened test sets ([SAC20]).

Carraro & Bridge, *Debiased offline evaluation of recommender systems: a
weighted-sampling approach*, ACM SAC 2020: every recommender is trained on the
MNAR ``train`` part, tuned on the MAR ``val`` part, and evaluated on the MAR
``gt`` part (ground truth) and on test sets drawn from the MNAR ``heldout`` part.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.config import ConfigError, expand_grid
from debiaseval.interactions import rating_matrix
from debiaseval.metrics import evaluate_topk, summarise, train_overlap_mask
from debiaseval.ranking import top_k
from debiaseval.recommenders import make_recommender

__all__ = ["DATASETS", "OUTPUTS", "check_config", "evaluate_on_testsets", "tune_and_rank"]

DATASETS = ("synthetic", "coat", "yahoo-r3")
"""Datasets with both a MAR and an MNAR part, which E1 needs."""

OUTPUTS = ("summary.parquet", "kendall.parquet", "summary.md", "kendall.md")
"""E1's aggregated files in ``results/e1/<dataset>/``."""


def _check_fractions(block: Mapping[str, Any]) -> None:
    for key in ("mnar_split", "mar_split"):
        parts = block[key]
        total = sum(parts.values())
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ConfigError(
                f"config error at 'e1.{key}': fractions {parts} sum to {total:g}, expected 1"
            )


def _check_datasets(block: Mapping[str, Any]) -> None:
    for position, name in enumerate(block["datasets"]):
        if name not in DATASETS:
            raise ConfigError(
                f"config error at 'e1.datasets.{position}': E1 needs a MAR part, which {name!r} "
                f"lacks (E1 datasets: {', '.join(DATASETS)})"
            )


def _check_recommenders(block: Mapping[str, Any]) -> None:
    for name, spec in block["recommenders"].items():
        where = f"e1.recommenders.{name}"
        overlap = set(spec["params"]) & set(spec["grid"])
        if overlap:
            raise ConfigError(
                f"config error at '{where}': {sorted(overlap)} in both params and grid"
            )
        for point in expand_grid(spec["grid"]):
            try:
                make_recommender(spec["algorithm"], **spec["params"], **point)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"config error at '{where}': {exc}") from None


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e1`` block (after schema validation); raise ``ConfigError``."""
    block = config["e1"]
    _check_datasets(block)
    _check_fractions(block)
    _check_recommenders(block)


def tune_and_rank(
    train: pd.DataFrame,
    val: pd.DataFrame,
    *,
    n_users: int,
    n_items: int,
    algorithm: str,
    params: Mapping[str, Any],
    grid: Mapping[str, list[Any]],
    tuning_metric: str,
    tuning_k: int,
    ks: Sequence[int],
    positive_threshold: float,
    batch_size: int,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Grid-search on ``val``, then rank every user's candidates with the best model.

    Returns (recommendations, tuning): the top-max(ks) list of every user from
    the model that maximises ``tuning_metric@tuning_k`` on ``val`` (the first
    grid point wins ties), and one row per grid point with its score.
    """
    matrix = rating_matrix(train, n_users, n_items)
    depth = max(max(ks), tuning_k)
    rows, best, best_score = [], None, -np.inf
    for point in expand_grid(grid):
        model = make_recommender(algorithm, **params, **point).fit(matrix, seed=seed)
        recs = top_k(model, matrix, depth, batch_size=batch_size)
        scores = summarise(
            evaluate_topk(
                recs,
                val,
                [tuning_k],
                n_items=n_items,
                positive_threshold=positive_threshold,
                metrics=[tuning_metric],
            )
        )
        score = float(scores["value"].iloc[0]) if len(scores) else 0.0
        rows.append({"params": json.dumps(point, sort_keys=True), "value": score})
        if score > best_score:
            best, best_score = recs, score
    assert best is not None
    tuning = pd.DataFrame(rows)
    tuning["metric"] = tuning_metric
    tuning["k"] = np.int16(tuning_k)
    tuning["selected"] = np.arange(len(tuning)) == int(np.argmax(tuning["value"].to_numpy()))
    recs = best[best["rank"] <= max(ks)].reset_index(drop=True)
    return recs, tuning[["params", "metric", "k", "value", "selected"]]


def evaluate_on_testsets(
    recs: pd.DataFrame,
    testsets: Mapping[str, pd.DataFrame],
    train: pd.DataFrame,
    *,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    drop_train_overlap: bool,
) -> pd.DataFrame:
    """Mean top-k metrics of one recommender on every test set (SPEC section 6).

    Test pairs whose item the user also rated in ``train`` can never be hit
    (training items are not candidates); they are counted in ``n_train_overlap``
    and dropped only when ``drop_train_overlap`` is set.
    """
    frames = []
    for name, test in testsets.items():
        overlap = train_overlap_mask(test, train)
        if drop_train_overlap:
            test = test[~overlap]
        per_user = evaluate_topk(
            recs, test, ks, n_items=n_items, positive_threshold=positive_threshold, metrics=metrics
        )
        summary = summarise(per_user)
        summary.insert(0, "testset", name)
        summary["n_test_pairs"] = np.int64(len(test))
        summary["n_train_overlap"] = np.int64(overlap.sum())
        frames.append(summary)
    return pd.concat(frames, ignore_index=True)

"""Experiment E1: train, tune, rank and evaluate on intervened test sets ([SAC20]).

Carraro & Bridge, *Debiased offline evaluation of recommender systems: a
weighted-sampling approach*, ACM SAC 2020: every recommender is trained on the
MNAR ``train`` part, tuned on the MAR ``val`` part, and evaluated on the MAR
``gt`` part (ground truth) and on test sets drawn from the MNAR ``heldout`` part.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.config import ConfigError, expand_grid
from debiaseval.interventions import marginal_kl
from debiaseval.metrics import evaluate_topk, summarise, train_overlap_mask
from debiaseval.recommenders import make_recommender

__all__ = [
    "DATASETS",
    "OUTPUTS",
    "check_config",
    "evaluate_on_testsets",
    "kendall_excluded",
    "testset_diagnostics",
]

DATASETS = ("synthetic", "coat", "yahoo-r3")
"""Datasets with both a MAR and an MNAR part, which E1 needs."""

OUTPUTS = ("summary.parquet", "kendall.parquet", "testsets.parquet", "summary.md", "kendall.md")
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


def _check_epochs(block: Mapping[str, Any]) -> None:
    if block["tuning"]["early_stopping"] is None:
        return
    for name, spec in block["recommenders"].items():
        if "epochs" in spec["params"] or "epochs" in spec["grid"]:
            raise ConfigError(
                f"config error at 'e1.recommenders.{name}': epochs are chosen by early stopping "
                "(e1.tuning.early_stopping); set its max_epochs, or set it to null to fix epochs"
            )


def _check_kendall(block: Mapping[str, Any]) -> None:
    for position, name in enumerate(block["kendall_exclude"] or []):
        if name not in block["recommenders"]:
            raise ConfigError(
                f"config error at 'e1.kendall_exclude.{position}': {name!r} is not a recommender "
                f"of e1.recommenders ({', '.join(block['recommenders'])})"
            )


def kendall_excluded(block: Mapping[str, Any]) -> list[str]:
    """The recommenders left out of Kendall's tau: ``kendall_exclude``, or the random ones."""
    if block["kendall_exclude"] is not None:
        return list(block["kendall_exclude"])
    return [n for n, spec in block["recommenders"].items() if spec["algorithm"] == "random"]


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e1`` block (after schema validation); raise ``ConfigError``."""
    block = config["e1"]
    _check_datasets(block)
    _check_fractions(block)
    _check_recommenders(block)
    _check_epochs(block)
    _check_kendall(block)


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


def testset_diagnostics(
    name: str,
    sample: pd.DataFrame,
    space: pd.DataFrame,
    weights: np.ndarray,
    gt: pd.DataFrame,
    *,
    n_users: int,
    n_items: int,
) -> pd.DataFrame:
    """How MAR-like one intervened test set is: a one-row frame.

    Columns: ``testset``; ``n_pairs``, ``n_users``, ``n_items`` of the sample;
    ``zero_weight_share``, the share of the sampled space's (held-out) pairs
    whose sampling weight is 0 (WTD gives weight 0 to users and items absent
    from the MAR weights part: such pairs are drawn only once every
    positive-weight pair is taken); ``kl_users`` and ``kl_items``, the KL
    divergence of the sample's user and item marginals from those of the MAR
    ``gt`` part (:func:`~debiaseval.interventions.marginal_kl`, Laplace-smoothed).
    """
    return pd.DataFrame(
        {
            "testset": [name],
            "n_pairs": np.int64(len(sample)),
            "n_users": np.int64(sample["user"].nunique()),
            "n_items": np.int64(sample["item"].nunique()),
            "zero_weight_share": float(np.mean(np.asarray(weights) == 0)) if len(space) else 0.0,
            "kl_users": marginal_kl(sample["user"], gt["user"], n_users),
            "kl_items": marginal_kl(sample["item"], gt["item"], n_items),
        }
    )


def run_metadata(interactions: pd.DataFrame, block: Mapping[str, Any]) -> list[str]:
    """Lines describing an E1 run for the summary: data sizes and the settings that shape it."""
    parts = interactions["part"].value_counts()
    testsets = ", ".join(f"{n} ({s['strategy']})" for n, s in block["testsets"].items())
    excluded = kendall_excluded(block)
    return [
        f"Data: {interactions['user'].nunique():,} users, {interactions['item'].nunique():,} "
        f"items; {int(parts.get('mnar', 0)):,} MNAR and {int(parts.get('mar', 0)):,} MAR ratings.",
        f"Splits: MNAR {block['mnar_split']}, MAR {block['mar_split']}; rho = {block['rho']}; "
        f"{block['seeds']} seed(s); positive = rating > {block['positive_threshold']}.",
        f"Test sets: gt (MAR ground truth), {testsets}.",
        f"Recommenders: {', '.join(block['recommenders'])}, tuned for "
        f"{block['tuning']['metric']}@{block['tuning']['k']} on MAR val (selected points in "
        "seed*/tuning/). Kendall's tau leaves out: "
        f"{', '.join(excluded) if excluded else 'none'}.",
    ]

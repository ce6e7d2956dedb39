"""Estimators of a loss averaged over all user-item pairs from observed pairs.

See docs/experiments/e3.md.

[ICML16] T. Schnabel et al., *Recommendations as treatments: debiasing learning
and evaluation*, ICML 2016, eqs. 5, 10 and 11. Each takes the per-pair losses
δ_{u,i} of the observed pairs (and their propensities P_{u,i}) and estimates
R(Ŷ) = 1/(U·I) Σ_{u,i} δ_{u,i}.

:func:`estimate` computes all three at once, vectorised over several loss
vectors; :func:`evaluate` goes from observed pairs, their propensities (an
array or a propensity table of :mod:`debiaseval.debiasing.propensities`) and a
prediction matrix or a model's scores to the estimates of a metric of
:mod:`debiaseval.evaluation.losses` (``mae``, ``mse``, ``accuracy``, ``dcg@k``,
``precision@k``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from debiaseval.debiasing.propensities import lookup
from debiaseval.evaluation.losses import Scorer, pair_losses

__all__ = ["LOSS_ESTIMATORS", "estimate", "evaluate", "ips", "naive", "snips"]

LOSS_ESTIMATORS = ("naive", "ips", "snips")
"""The estimators of a loss averaged over all pairs, in the order of [ICML16] Table 1."""


def _losses(delta: np.ndarray) -> np.ndarray:
    d = np.asarray(delta, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"delta must be a non-empty 1-D array, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("delta contains NaN or infinite losses")
    return d


def _propensities(propensity: np.ndarray, size: int) -> np.ndarray:
    p = np.asarray(propensity, dtype=np.float64)
    if p.shape != (size,):
        raise ValueError(f"propensity must have shape ({size},), got {p.shape}")
    if not np.all((p > 0) & (p <= 1)):
        raise ValueError("propensities must lie in (0, 1]")
    return p


def naive(delta: np.ndarray) -> float:
    """Naive estimate: the mean loss over the observed pairs ([ICML16] eq. 5)."""
    return float(_losses(delta).mean())


def ips(delta: np.ndarray, propensity: np.ndarray, n_total: int) -> float:
    """IPS estimate (1/(U·I)) Σ_{O=1} δ/P ([ICML16] eq. 10); ``n_total`` = U·I."""
    d = _losses(delta)
    if n_total < 1:
        raise ValueError(f"n_total must be >= 1, got {n_total}")
    return float((d / _propensities(propensity, d.size)).sum() / n_total)


def snips(delta: np.ndarray, propensity: np.ndarray) -> float:
    """Self-normalised IPS Σ δ/P / Σ 1/P ([ICML16] eq. 11)."""
    d = _losses(delta)
    inv = 1.0 / _propensities(propensity, d.size)
    return float((d * inv).sum() / inv.sum())


def estimate(
    delta: np.ndarray,
    propensity: np.ndarray,
    n_total: int,
    *,
    estimators: Sequence[str] = LOSS_ESTIMATORS,
) -> dict[str, np.ndarray]:
    """Naive, IPS and SNIPS estimates of every row of ``delta`` at once.

    ``delta`` holds the observed pairs' losses along its last axis (shape
    (..., n)), ``propensity`` their propensities (shape (n,)); ``n_total`` = U·I.
    Returns ``{name: array of shape delta.shape[:-1]}`` with the same values as
    :func:`naive`, :func:`ips` and :func:`snips` row by row.
    """
    d = np.asarray(delta, dtype=np.float64)
    if d.ndim < 1 or d.shape[-1] == 0:
        raise ValueError(f"delta must hold at least one observed pair, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("delta contains NaN or infinite losses")
    unknown = [e for e in estimators if e not in LOSS_ESTIMATORS]
    if unknown:
        raise ValueError(
            f"unknown estimator(s) {unknown}, expected some of {list(LOSS_ESTIMATORS)}"
        )
    if n_total < d.shape[-1]:
        raise ValueError(f"n_total = {n_total} is smaller than the {d.shape[-1]} observed pairs")
    inv = 1.0 / _propensities(propensity, d.shape[-1])
    weighted = d @ inv
    values = {
        "naive": d.mean(axis=-1),
        "ips": weighted / n_total,
        "snips": weighted / inv.sum(),
    }
    return {name: values[name] for name in estimators}


def evaluate(
    metric: str,
    pairs: pd.DataFrame,
    propensity: np.ndarray | pd.DataFrame,
    prediction: np.ndarray | Scorer,
    *,
    n_users: int,
    n_items: int,
    estimators: Sequence[str] = LOSS_ESTIMATORS,
    positive_threshold: float | None = None,
    tie_break: np.ndarray | None = None,
    batch_size: int = 1024,
) -> dict[str, float]:
    """Estimates of ``metric`` of ``prediction`` from the observed ``pairs``.

    See docs/experiments/e3.md.

    ``pairs`` has columns ``user``, ``item`` and ``rating`` (the true values of
    the observed pairs, each pair once); ``propensity`` is one value per pair or
    a propensity table to look them up in; ``prediction`` is the n_users ×
    n_items matrix Ŷ or a fitted model with ``score(users)``. ``metric`` and the
    ranking options are those of :func:`debiaseval.evaluation.losses.pair_losses`.
    """
    for col in ("user", "item", "rating"):
        if col not in pairs.columns:
            raise ValueError(f"pairs lack the column '{col}'")
    if pairs.duplicated(["user", "item"]).any():
        raise ValueError("pairs hold a (user, item) pair more than once")
    users = pairs["user"].to_numpy()
    if users.size and users.max() >= n_users:
        raise ValueError(f"pair user ids must be < n_users={n_users}")
    if isinstance(prediction, np.ndarray) and prediction.shape != (n_users, n_items):
        raise ValueError(
            f"the prediction matrix has shape {prediction.shape}, expected {(n_users, n_items)}"
        )
    p = lookup(propensity, pairs) if isinstance(propensity, pd.DataFrame) else propensity
    delta = pair_losses(
        metric,
        users,
        pairs["item"].to_numpy(),
        pairs["rating"].to_numpy(),
        prediction,
        n_items=n_items,
        positive_threshold=positive_threshold,
        tie_break=tie_break,
        batch_size=batch_size,
    )
    values = estimate(delta, p, n_users * n_items, estimators=estimators)
    return {name: float(v) for name, v in values.items()}

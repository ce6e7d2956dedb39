"""Per-pair losses δ_{u,i}(Y, Ŷ) whose mean over all pairs the estimators target.

See docs/experiments/e3.md.

[ICML16] T. Schnabel et al., ICML 2016, §3.1: a performance measure of a
prediction matrix Ŷ is R(Ŷ) = 1/(U·I) Σ_{u,i} δ_{u,i}(Y, Ŷ), with

- ``mae``: |Y − Ŷ|;  ``mse``: (Y − Ŷ)²;  ``accuracy``: 1{round(Ŷ) = Y}
  (rounding half up, as :func:`debiaseval.evaluation.metrics.accuracy`);
- ``dcg@k``: I · g(Y) · 1{rank ≤ k} / log2(1 + rank);
- ``precision@k``: I · g(Y) · 1{rank ≤ k} / k,

where rank is the 1-based position of item i in user u's ranking of **all**
items by Ŷ (descending) and g(Y) = Y (the rating as gain, as in [ICML16]
Table 1), or 1{Y > threshold} when a positive threshold is given. With the
factor I, R is the mean over users of DCG@k (Precision@k) of their rankings.
DCG form: the paper writes the discount as log(rank), which is undefined at
rank 1; we use the standard log2(1 + rank). Ties in Ŷ are broken by a fixed
item order (``tie_break``, default: smaller item id first).

:data:`LOSSES` is the single registry of loss names; ``metric`` strings name a
rating loss or a ranking loss with its cut-off (``dcg@50``, ``precision@10``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from debiaseval.recommenders.ranking import top_k_indices

__all__ = [
    "LOSSES",
    "RANKING_LOSSES",
    "RATING_LOSSES",
    "Scorer",
    "loss_matrix",
    "pair_losses",
    "parse_metric",
]


class Scorer(Protocol):
    """Anything with a ``score(users)`` giving a (len(users), n_items) score array."""

    def score(self, users: np.ndarray) -> np.ndarray: ...


RATING_LOSSES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "mae": lambda y, p: np.abs(y - p),
    "mse": lambda y, p: (y - p) ** 2,
    "accuracy": lambda y, p: (np.floor(p + 0.5) == y).astype(np.float64),
}
"""Rating losses δ(Y, Ŷ), elementwise on arrays of true and predicted values."""

RANKING_LOSSES: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "dcg": lambda rank, k: 1.0 / np.log2(1.0 + rank),
    "precision": lambda rank, k: np.full(rank.shape, 1.0 / k),
}
"""Position weights of ranking losses for 1-based ranks ≤ k (δ = I · gain · weight)."""

LOSSES = (*RATING_LOSSES, *RANKING_LOSSES)


def parse_metric(metric: str) -> tuple[str, int | None]:
    """Split ``metric`` into (loss, cut-off): ``'mae'`` → (mae, None), ``'dcg@50'`` → (dcg, 50)."""
    name, sep, cut = metric.partition("@")
    if name in RATING_LOSSES and not sep:
        return name, None
    if name in RANKING_LOSSES and sep and cut.isdigit() and int(cut) >= 1:
        return name, int(cut)
    raise ValueError(
        f"unknown metric {metric!r}: expected one of {list(RATING_LOSSES)} "
        f"or {[f'{n}@k' for n in RANKING_LOSSES]} with an integer k >= 1"
    )


def _gains(y: np.ndarray, positive_threshold: float | None) -> np.ndarray:
    return y if positive_threshold is None else (y > positive_threshold).astype(np.float64)


def _finite(x: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contain NaN or infinite values")
    return arr


def _tie_order(tie_break: np.ndarray | None, n_items: int) -> np.ndarray | None:
    if tie_break is None:
        return None
    order = np.asarray(tie_break)
    if order.shape != (n_items,) or not np.array_equal(np.sort(order), np.arange(n_items)):
        raise ValueError(f"tie_break must be a permutation of the {n_items} item ids")
    return order.astype(np.int64)


def _top(scores: np.ndarray, k: int, order: np.ndarray | None) -> np.ndarray:
    """Items of each row's top k (best first); ties go to the item earlier in ``order``."""
    if order is None:
        return top_k_indices(scores, k)
    return order[top_k_indices(scores[:, order], k)]


def loss_matrix(
    metric: str,
    truth: np.ndarray,
    prediction: np.ndarray,
    *,
    positive_threshold: float | None = None,
    tie_break: np.ndarray | None = None,
) -> np.ndarray:
    """δ_{u,i} of every pair of a full truth matrix Y and prediction matrix Ŷ (U × I, float64).

    Its mean is the true value R(Ŷ) that the estimators target ([ICML16] eq. 1).
    """
    name, k = parse_metric(metric)
    y = _finite(truth, "true ratings")
    p = _finite(prediction, "predictions")
    if y.ndim != 2 or y.shape != p.shape:
        raise ValueError(f"truth and prediction must be 2-D of one shape, got {y.shape}, {p.shape}")
    if k is None:
        return RATING_LOSSES[name](y, p)
    n_users, n_items = y.shape
    top = _top(p, k, _tie_order(tie_break, n_items))
    ranks = np.arange(1, top.shape[1] + 1, dtype=np.float64)
    delta = np.zeros_like(y)
    rows = np.arange(n_users)[:, None]
    delta[rows, top] = (
        n_items * _gains(y[rows, top], positive_threshold) * RANKING_LOSSES[name](ranks, k)
    )
    return delta


def pair_losses(
    metric: str,
    users: np.ndarray,
    items: np.ndarray,
    ratings: np.ndarray,
    prediction: np.ndarray | Scorer,
    *,
    n_items: int | None = None,
    positive_threshold: float | None = None,
    tie_break: np.ndarray | None = None,
    batch_size: int = 1024,
) -> np.ndarray:
    """δ_{u,i} of the given (observed) pairs with true ``ratings``, in their order.

    ``prediction`` is a dense n_users × n_items matrix Ŷ or a fitted model whose
    ``score(users)`` returns that matrix's rows; a model is scored for the pairs'
    users only, ``batch_size`` users at a time (memory, never the result). Ranks
    for ranking losses are over all ``n_items`` items (the matrix's columns).
    """
    name, k = parse_metric(metric)
    u = np.asarray(users, dtype=np.int64)
    i = np.asarray(items, dtype=np.int64)
    y = np.asarray(ratings, dtype=np.float64)
    if not (u.ndim == 1 and u.shape == i.shape == y.shape):
        raise ValueError(
            f"users, items, ratings must be 1-D of one length: {u.shape, i.shape, y.shape}"
        )
    if np.isnan(y).any():
        raise ValueError("ratings contain NaN")
    _finite(y, "ratings")
    dense = isinstance(prediction, np.ndarray)
    if dense:
        if prediction.ndim != 2:
            raise ValueError(f"a prediction matrix must be 2-D, got shape {prediction.shape}")
        n_items = prediction.shape[1]
    elif n_items is None:
        raise ValueError("n_items is needed when the prediction is a model")
    if u.size and (u.min() < 0 or i.min() < 0 or i.max() >= n_items):
        raise ValueError(f"pair ids must be >= 0 with item < n_items={n_items}")
    if dense and u.size and u.max() >= prediction.shape[0]:
        raise ValueError(f"pair user ids must be < {prediction.shape[0]} (rows of the prediction)")
    order = _tie_order(tie_break, n_items)

    delta = np.empty(u.size, dtype=np.float64)
    by_user = np.argsort(u, kind="stable")
    sorted_users = u[by_user]
    batch_users = np.unique(u)
    for start in range(0, batch_users.size, batch_size):
        batch = batch_users[start : start + batch_size]
        lo, hi = np.searchsorted(sorted_users, [batch[0], batch[-1] + 1])
        sel = by_user[lo:hi]
        scores = prediction[batch] if dense else np.asarray(prediction.score(batch))
        scores = _finite(scores, "predictions")
        if scores.shape != (batch.size, n_items):
            raise ValueError(f"scores have shape {scores.shape}, expected {(batch.size, n_items)}")
        row = np.searchsorted(batch, u[sel])
        if k is None:
            delta[sel] = RATING_LOSSES[name](y[sel], scores[row, i[sel]])
            continue
        top = _top(scores, k, order)
        rank = np.zeros((batch.size, n_items), dtype=np.int64)
        rank[np.arange(batch.size)[:, None], top] = np.arange(1, top.shape[1] + 1)
        r = rank[row, i[sel]]
        hit = r > 0
        weight = np.zeros(r.size)
        weight[hit] = RANKING_LOSSES[name](r[hit].astype(np.float64), k)
        delta[sel] = n_items * _gains(y[sel], positive_threshold) * weight
    return delta

"""Imputation models r̂_ui ≈ P(y_ui = 1) of the doubly robust estimator (docs/experiments/e1.md).

The DR estimator of a ranking metric (:mod:`debiaseval.evaluation.weighting`; Saito,
RecSys 2020; Wang et al., ICML 2019) needs r̂ at a few pairs (the held-out pairs and the
top-K lists) and, per user, its sum over the user's candidate items C_u (every item
without a training pair). An :class:`Imputation` gives both; :data:`IMPUTATIONS` is the
registry of the models a config can name, each built from the training part and its
propensities:

- ``item_rate``: an item-level relevance rate, the propensity-weighted (self-normalised)
  share of positive training pairs of the item, shrunk toward the overall rate: cost
  O(pairs + items) to fit, O(users·K) to use;
- ``candidate_rate``: an item's relevance rate among its candidate pairs (the users without a
  training pair with it), a Horvitz–Thompson estimate from the training part with its
  inclusion probabilities π: calibrated where ``item_rate``, a ratio over the observed pairs,
  is pulled up by the few, heavily weighted observed negatives; same cost;
- ``model``: the rating MF of E4 ([ICML16] eq. 14, weights 1/P: MF-IPS) fitted on the
  training part, its predictions thresholded at the positive threshold; the per-user sum
  over the candidates is computed users-batch by users-batch, never as one users × items
  array.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

__all__ = [
    "IMPUTATIONS",
    "Imputation",
    "ItemRate",
    "Predicted",
    "build_imputation",
    "candidate_rate",
    "item_rate",
    "rating_model",
]


class Imputation(Protocol):
    """r̂ at given pairs, and its per-user sum over the candidate items."""

    def pairs(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """r̂_ui of the pairs (float64)."""
        ...

    def candidate_mass(
        self, train_users: np.ndarray, train_items: np.ndarray, n_users: int
    ) -> np.ndarray:
        """Σ_{i∈C_u} r̂_ui per user (length ``n_users``), C_u = items without a training pair."""
        ...


@dataclass(frozen=True)
class ItemRate:
    """An item-level imputation r̂_ui = ``rates[i]``."""

    rates: np.ndarray

    def pairs(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.rates[np.asarray(items, dtype=np.int64)].astype(np.float64)

    def candidate_mass(
        self, train_users: np.ndarray, train_items: np.ndarray, n_users: int
    ) -> np.ndarray:
        seen = np.bincount(
            np.asarray(train_users, dtype=np.int64),
            weights=self.rates[np.asarray(train_items, dtype=np.int64)],
            minlength=n_users,
        )
        return float(self.rates.sum()) - seen


@dataclass(frozen=True)
class Predicted:
    """r̂_ui = ``transform``(score of (u, i)) of a model scoring pairs and rows of users.

    ``score_pairs(users, items)`` scores pairs, ``score_rows(users)`` every item of
    the users (a dense len(users) × items block); the candidate mass is summed over
    blocks of ``batch_size`` users.
    """

    score_pairs: Callable[[np.ndarray, np.ndarray], np.ndarray]
    score_rows: Callable[[np.ndarray], np.ndarray]
    transform: Callable[[np.ndarray], np.ndarray]
    batch_size: int = 1024

    def pairs(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.transform(self.score_pairs(users, items)).astype(np.float64)

    def candidate_mass(
        self, train_users: np.ndarray, train_items: np.ndarray, n_users: int
    ) -> np.ndarray:
        out = np.empty(n_users)
        for start in range(0, n_users, self.batch_size):
            users = np.arange(start, min(start + self.batch_size, n_users))
            out[users] = self.transform(self.score_rows(users)).sum(axis=1)
        u = np.asarray(train_users, dtype=np.int64)
        return out - np.bincount(u, weights=self.pairs(u, train_items), minlength=n_users)


def _labels(train: pd.DataFrame, positive_threshold: float) -> np.ndarray:
    return (train["rating"].to_numpy() > positive_threshold).astype(np.float64)


def item_rate(
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    prior: float = 1.0,
) -> ItemRate:
    """Item relevance rates from the training part weighted by 1/P (docs/experiments/e1.md).

    r̂_i = (Σ_{u∈T_i} y_ui / P_ui + m·w̄·r̄) / (Σ_{u∈T_i} 1 / P_ui + m·w̄): the
    self-normalised IPS estimate of item i's share of positive pairs, shrunk toward the
    overall rate r̄ = Σ y/P ÷ Σ 1/P by ``prior`` m pseudo-pairs of the mean weight w̄
    (an item without training pairs gets r̄). ``propensities``: P of the training pairs,
    in their order. O(pairs + items).
    """
    w = 1.0 / np.asarray(propensities, dtype=np.float64)
    y = _labels(train, positive_threshold)
    if w.size == 0:
        raise ValueError("the item_rate imputation needs training pairs")
    items = train["item"].to_numpy().astype(np.int64)
    overall = float(w @ y / w.sum())
    pseudo = prior * float(w.mean())
    num = np.bincount(items, weights=w * y, minlength=n_items) + pseudo * overall
    den = np.bincount(items, weights=w, minlength=n_items) + pseudo
    return ItemRate(num / den)


def candidate_rate(
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    prior: float = 10.0,
) -> ItemRate:
    """Item relevance rates among the candidates, by Horvitz–Thompson (docs/estimators.md).

    With π_ui = P((u, i) in the training part) (``propensities``: absolute probabilities of
    the training pairs, in their order), Σ_{u∈T_i} y_ui (1 − π_ui) / π_ui is unbiased for the
    number of positive pairs of item i *outside* the training part, and n_users − |T_i| is
    the number of those pairs. r̂_i = (that sum + m·r̄) / (n_users − |T_i| + m), shrunk toward
    the overall rate r̄ by ``prior`` m pseudo-candidates and clipped to [0, 1]: the
    imputation DR's denominator Σ_{i∈C_u} r̂_i needs, an estimate of the user's relevant
    candidates. O(pairs + items).
    """
    pi = np.asarray(propensities, dtype=np.float64)
    if pi.size == 0:
        raise ValueError("the candidate_rate imputation needs training pairs")
    if not np.all((pi > 0) & (pi <= 1)):
        raise ValueError(
            "candidate_rate needs the training pairs' inclusion probabilities in (0, 1]"
        )
    if prior < 0:
        raise ValueError(f"the candidate_rate prior must be >= 0, got {prior}")
    y = _labels(train, positive_threshold)
    items = train["item"].to_numpy().astype(np.int64)
    num = np.bincount(items, weights=y * (1.0 - pi) / pi, minlength=n_items)
    den = n_users - np.bincount(items, minlength=n_items).astype(np.float64)
    overall = float(num.sum() / max(den.sum(), 1.0))
    return ItemRate(np.clip((num + prior * overall) / np.maximum(den + prior, 1e-12), 0.0, 1.0))


def rating_model(
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    factors: int = 20,
    l2: float = 3.0,
    max_iter: int = 30,
    batch_size: int = 1024,
) -> Predicted:
    """E4's rating MF fitted on the training part with weights 1/P (MF-IPS, [ICML16] eq. 14),
    its predicted ratings thresholded: r̂_ui = 1[ŷ_ui > positive threshold]."""
    from debiaseval.recommenders.rating_mf import WeightedMF

    model = WeightedMF(factors=factors, l2=l2, max_iter=max_iter).fit(
        train["user"].to_numpy(),
        train["item"].to_numpy(),
        train["rating"].to_numpy(np.float64),
        weights=1.0 / np.asarray(propensities, dtype=np.float64),
        n_users=n_users,
        n_items=n_items,
        rng=np.random.default_rng(seed),
    )
    return Predicted(
        score_pairs=model.predict,
        score_rows=model.predict_matrix,
        transform=lambda scores: (scores > positive_threshold).astype(np.float64),
        batch_size=batch_size,
    )


IMPUTATIONS: dict[str, Callable[..., Imputation]] = {
    "item_rate": item_rate,
    "candidate_rate": candidate_rate,
    "model": rating_model,
}
"""The registry of imputation models: name -> builder(train, propensities, *, n_users,
n_items, positive_threshold, seed, **params)."""


def build_imputation(
    name: str,
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    params: dict[str, object] | None = None,
) -> Imputation:
    """The imputation model ``name`` of :data:`IMPUTATIONS` fitted on ``train``."""
    if name not in IMPUTATIONS:
        raise ValueError(f"unknown imputation {name!r}; known: {', '.join(IMPUTATIONS)}")
    return IMPUTATIONS[name](
        train,
        propensities,
        n_users=n_users,
        n_items=n_items,
        positive_threshold=positive_threshold,
        seed=seed,
        **(params or {}),
    )

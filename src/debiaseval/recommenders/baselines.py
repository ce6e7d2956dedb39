"""Non-personalised baselines of [SAC20] §4 (docs/experiments/e1.md): Random, PosPop, AvgRating."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.base import Recommender, check_real
from debiaseval.recommenders.ranking import item_order, rank_from_order

__all__ = ["AvgRating", "PosPop", "Random"]


class Random(Recommender):
    """Uniform random scores in [0, 1): the sanity baseline (docs/experiments/e1.md).

    The score of (u, i) depends only on the fit ``seed``, ``u`` and ``i``: row u
    is drawn from ``numpy.random.default_rng([seed, u])``, so scores do not
    depend on which users are scored together or in which order.
    """

    name = "random"

    def __init__(self) -> None:
        pass

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        pass  # n_users_, n_items_ and seed_ are all the state there is

    def _score(self, users: np.ndarray) -> np.ndarray:
        out = np.empty((users.size, self.n_items_), dtype=np.float64)
        for row, u in enumerate(users.tolist()):
            out[row] = np.random.default_rng([self.seed_, u]).random(self.n_items_)
        return out


class _ItemScores(Recommender):
    """A model whose score of an item is the same for every user (``item_scores_``).

    It ranks from its one item order (``item_order_``, best first, ties by the smaller
    id) without a dense score matrix: ``_rank`` takes each user's first k candidates
    of that order, O(k + training items of the user) per user.
    """

    def _learn(self, item_scores: np.ndarray) -> None:
        self.item_scores_ = item_scores
        self.item_order_ = item_order(item_scores)

    def _score(self, users: np.ndarray) -> np.ndarray:
        return np.tile(self.item_scores_, (users.size, 1))

    def _rank(
        self, users: np.ndarray, k: int, exclude: sp.csr_matrix
    ) -> tuple[np.ndarray, np.ndarray]:
        return rank_from_order(self.item_order_, self.item_scores_, users, k, exclude)


class PosPop(_ItemScores):
    """Positive popularity: the number of positive training ratings of the item.

    See docs/experiments/e1.md.

    A rating is positive when it is strictly greater than ``positive_threshold``
    (docs/datasets.md; 3 on a 1–5 scale, as in [SAC20]).
    """

    name = "pospop"

    def __init__(self, *, positive_threshold: float = 3.0) -> None:
        self.positive_threshold = positive_threshold

    def validate_params(self) -> None:
        check_real("positive_threshold", self.positive_threshold)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        positive = (train.data > float(self.positive_threshold)).astype(np.float64)
        self._learn(np.bincount(train.indices, weights=positive, minlength=self.n_items_))


class AvgRating(_ItemScores):
    """Mean training rating of the item, optionally damped toward the global mean.

    See docs/experiments/e1.md.

    score(i) = (Σ_u r_ui + d·μ) / (|U_i| + d) with d = ``damping`` ≥ 0 and μ the
    mean of all training ratings. An item without training ratings scores μ
    (for every d, including the undamped default d = 0). With no training
    ratings at all, μ = 0.
    """

    name = "avgrating"

    def __init__(self, *, damping: float = 0.0) -> None:
        self.damping = damping

    def validate_params(self) -> None:
        check_real("damping", self.damping, low=0.0)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        damping = float(self.damping)
        self.global_mean_ = float(train.data.mean()) if train.nnz else 0.0
        sums = np.bincount(train.indices, weights=train.data, minlength=self.n_items_)
        counts = np.bincount(train.indices, minlength=self.n_items_).astype(np.float64)
        denom = counts + damping
        scores = np.full(self.n_items_, self.global_mean_)
        rated = denom > 0
        scores[rated] = (sums[rated] + damping * self.global_mean_) / denom[rated]
        self._learn(scores)

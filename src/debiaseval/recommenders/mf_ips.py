"""LightFM trained with inverse-propensity sample weights, a debiasing-trained model ([URE24] E5).

- :class:`IPSMF` (``mf_ips``): the ranking MF of :mod:`debiaseval.recommenders.mf`
  (whose ``max_sampled`` is WARP's hard-negative budget, the family [URE24] finds
  winning under traditional evaluation) trained with inverse-propensity sample
  weights. Popularity propensities of the training
  positives, P̂_i = (n_i / max_j n_j)^η with n_i the item's number of positive
  training pairs and η = ``propensity_exponent`` (0.5 in Yang et al., *Unbiased
  offline recommender evaluation for missing-not-at-random implicit feedback*,
  RecSys 2018); each positive pair (u, i) gets weight 1 / max(P̂_i,
  ``min_propensity``), rescaled to mean 1 over the training pairs so that the
  learning rate keeps its meaning. The weights reach LightFM through
  ``fit(sample_weight=...)`` ([ICML16] eq. 14's weighting of the loss by 1/P̂).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.base import check_real
from debiaseval.recommenders.mf import LightFMRanker

__all__ = ["IPSMF", "popularity_propensities"]


def popularity_propensities(
    counts: np.ndarray, exponent: float, *, min_propensity: float
) -> np.ndarray:
    """P̂_i = max((n_i / max_j n_j)^exponent, min_propensity) for item counts n_i ≥ 0."""
    n = np.asarray(counts, dtype=np.float64)
    top = n.max() if n.size else 0.0
    rel = n / top if top > 0 else np.ones_like(n)
    return np.maximum(rel**exponent, min_propensity)


class IPSMF(LightFMRanker):
    """LightFM ranking MF trained with popularity-IPS sample weights (see the module)."""

    name = "mf_ips"

    def __init__(
        self,
        *,
        loss: str = "warp",
        factors: int = 40,
        alpha: float = 0.0,
        epochs: int = 30,
        learning_rate: float = 0.05,
        max_sampled: int = 10,
        num_threads: int = 1,
        positives_only: bool = True,
        positive_threshold: float = 3.0,
        propensity_exponent: float = 0.5,
        min_propensity: float = 0.01,
    ) -> None:
        super().__init__(
            loss=loss,
            factors=factors,
            alpha=alpha,
            epochs=epochs,
            learning_rate=learning_rate,
            max_sampled=max_sampled,
            num_threads=num_threads,
            positives_only=positives_only,
            positive_threshold=positive_threshold,
        )
        self.propensity_exponent = propensity_exponent
        self.min_propensity = min_propensity

    def validate_params(self) -> None:
        super().validate_params()
        check_real("propensity_exponent", self.propensity_exponent, low=0.0)
        check_real("min_propensity", self.min_propensity, low=0.0, strict=True)
        if self.min_propensity > 1:
            raise ValueError(f"min_propensity must be <= 1, got {self.min_propensity!r}")

    def _sample_weight(
        self, train: sp.csr_matrix, interactions: sp.coo_matrix
    ) -> sp.coo_matrix | None:
        counts = np.bincount(interactions.col, minlength=interactions.shape[1])
        propensity = popularity_propensities(
            counts, float(self.propensity_exponent), min_propensity=float(self.min_propensity)
        )
        self.propensities_ = propensity
        weights = 1.0 / propensity[interactions.col]
        if weights.size:
            weights /= weights.mean()
        return sp.coo_matrix(
            (weights.astype(np.float32), (interactions.row, interactions.col)),
            shape=interactions.shape,
        )

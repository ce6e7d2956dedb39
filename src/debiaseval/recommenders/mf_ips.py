"""LightFM variants for model selection studies ([URE24] E5): WARP's ``max_sampled``, and IPS.

- :class:`WarpMF` (``mf_warp``): the ranking MF of :mod:`debiaseval.recommenders.mf`
  with LightFM's ``max_sampled`` exposed: WARP draws up to that many negatives
  per positive looking for a violating one, so a larger value is harder negative
  sampling, the family [URE24] finds winning under traditional evaluation.
- :class:`IPSMF` (``mf_ips``): the same trained with inverse-propensity sample
  weights, a debiasing-trained model. Popularity propensities of the training
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

from debiaseval.recommenders.base import check_int, check_real, positive_mask
from debiaseval.recommenders.mf import LightFMRanker

__all__ = ["IPSMF", "WarpMF", "popularity_propensities"]


def popularity_propensities(
    counts: np.ndarray, exponent: float, *, min_propensity: float
) -> np.ndarray:
    """P̂_i = max((n_i / max_j n_j)^exponent, min_propensity) for item counts n_i ≥ 0."""
    n = np.asarray(counts, dtype=np.float64)
    top = n.max() if n.size else 0.0
    rel = n / top if top > 0 else np.ones_like(n)
    return np.maximum(rel**exponent, min_propensity)


class WarpMF(LightFMRanker):
    """LightFM ranking MF with ``max_sampled`` (negatives WARP may draw per positive)."""

    name = "mf_warp"

    def __init__(
        self,
        *,
        loss: str = "warp",
        factors: int = 40,
        l2: float = 0.01,
        epochs: int = 30,
        learning_rate: float = 0.05,
        num_threads: int = 1,
        positives_only: bool = True,
        positive_threshold: float = 3.0,
        max_sampled: int = 10,
    ) -> None:
        super().__init__(
            loss=loss,
            factors=factors,
            l2=l2,
            epochs=epochs,
            learning_rate=learning_rate,
            num_threads=num_threads,
            positives_only=positives_only,
            positive_threshold=positive_threshold,
        )
        self.max_sampled = max_sampled

    def validate_params(self) -> None:
        super().validate_params()
        check_int("max_sampled", self.max_sampled)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        from lightfm import LightFM  # compiled extension: import only when training

        if self.positives_only:
            implicit = positive_mask(train, float(self.positive_threshold))
        else:
            implicit = sp.csr_matrix(
                (np.ones(train.nnz), train.indices, train.indptr), shape=train.shape
            )
        model = LightFM(
            no_components=int(self.factors),
            loss=self.loss,
            learning_rate=float(self.learning_rate),
            item_alpha=float(self.l2),
            user_alpha=float(self.l2),
            max_sampled=int(self.max_sampled),
            random_state=np.random.RandomState(seed),
        )
        interactions = sp.coo_matrix(implicit, dtype=np.float32)
        model.fit(
            interactions,
            sample_weight=self._sample_weight(train, interactions),
            epochs=int(self.epochs),
            num_threads=int(self.num_threads),
        )
        self.user_embeddings_ = model.user_embeddings.astype(np.float64)
        self.item_embeddings_ = model.item_embeddings.astype(np.float64)
        self.user_biases_ = model.user_biases.astype(np.float64)
        self.item_biases_ = model.item_biases.astype(np.float64)


class IPSMF(WarpMF):
    """LightFM ranking MF trained with popularity-IPS sample weights (see the module)."""

    name = "mf_ips"

    def __init__(
        self,
        *,
        loss: str = "warp",
        factors: int = 40,
        l2: float = 0.01,
        epochs: int = 30,
        learning_rate: float = 0.05,
        num_threads: int = 1,
        positives_only: bool = True,
        positive_threshold: float = 3.0,
        max_sampled: int = 10,
        propensity_exponent: float = 0.5,
        min_propensity: float = 0.01,
    ) -> None:
        super().__init__(
            loss=loss,
            factors=factors,
            l2=l2,
            epochs=epochs,
            learning_rate=learning_rate,
            num_threads=num_threads,
            positives_only=positives_only,
            positive_threshold=positive_threshold,
            max_sampled=max_sampled,
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

"""Ranking matrix factorisation with LightFM (SPEC §5, the MF of [SAC20] and [FLAIRS20]).

Trained on implicit feedback: by default the positive training pairs
(rating > ``positive_threshold``), each with value 1, with a pairwise ranking
loss (WARP by default, or BPR). LightFM with ``num_threads > 1`` runs lock-free
parallel SGD (Hogwild), whose result depends on thread timing: only the
default ``num_threads=1`` is deterministic given the seed.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.base import Recommender, check_int, check_real, positive_mask

__all__ = ["LightFMRanker"]

_LOSSES = ("warp", "bpr")


class LightFMRanker(Recommender):
    """LightFM ranking MF: score(u, i) = p_u·q_i + b_i + b_u (SPEC §5).

    Hyperparameters map to LightFM as ``factors`` → ``no_components``, ``l2`` →
    ``user_alpha`` = ``item_alpha``, ``learning_rate`` (adagrad schedule),
    ``epochs`` and ``num_threads`` → ``fit``; the fit ``seed`` is LightFM's
    ``random_state``. With ``positives_only=False`` every observed pair counts
    as a positive. Scores are computed from the learned embeddings with numpy
    in float64 and equal ``LightFM.predict`` (whose user bias b_u is constant
    per user and so never changes a ranking).
    """

    name = "mf"

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
    ) -> None:
        self.loss = loss
        self.factors = factors
        self.l2 = l2
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.num_threads = num_threads
        self.positives_only = positives_only
        self.positive_threshold = positive_threshold

    def validate_params(self) -> None:
        if self.loss not in _LOSSES:
            raise ValueError(f"loss must be one of {_LOSSES}, got {self.loss!r}")
        for key in ("factors", "epochs", "num_threads"):
            check_int(key, getattr(self, key))
        check_real("l2", self.l2, low=0.0)
        check_real("learning_rate", self.learning_rate, low=0.0, strict=True)
        check_real("positive_threshold", self.positive_threshold)
        if not isinstance(self.positives_only, bool | np.bool_):
            raise ValueError(f"positives_only must be a bool, got {self.positives_only!r}")

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
            random_state=np.random.RandomState(seed),
        )
        interactions = sp.coo_matrix(implicit, dtype=np.float32)
        weights = self._sample_weight(train, interactions)
        model.fit(
            interactions,
            sample_weight=weights,
            epochs=int(self.epochs),
            num_threads=int(self.num_threads),
        )
        self.user_embeddings_ = model.user_embeddings.astype(np.float64)
        self.item_embeddings_ = model.item_embeddings.astype(np.float64)
        self.user_biases_ = model.user_biases.astype(np.float64)
        self.item_biases_ = model.item_biases.astype(np.float64)

    def _sample_weight(
        self, train: sp.csr_matrix, interactions: sp.coo_matrix
    ) -> sp.coo_matrix | None:
        """Per-pair weights of ``interactions`` for LightFM's ``sample_weight`` (None = all 1).

        A hook for weighted variants (e.g. IPS weights 1/P̂): return a COO matrix
        with exactly the rows, columns and order of ``interactions``.
        """
        return None

    def _score(self, users: np.ndarray) -> np.ndarray:
        out = self.user_embeddings_[users] @ self.item_embeddings_.T
        out += self.item_biases_
        out += self.user_biases_[users, None]
        return out

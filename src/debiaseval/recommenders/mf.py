"""Ranking matrix factorisation with LightFM: the MF of [SAC20] and [FLAIRS20].

See docs/experiments/e1.md.

Trained on implicit feedback: by default the positive training pairs
(rating > ``positive_threshold``), each with value 1, with a pairwise ranking
loss (WARP by default, or BPR). Regularisation is in LightFM's own terms:
``alpha`` is LightFM's per-update L2 penalty ``item_alpha`` = ``user_alpha``.
It is not the λ of an ALS objective: [SAC20]'s grid {0.001, ..., 0.6} collapses
LightFM's embeddings to zero or makes them diverge from about 0.006 on, so the
useful range is about {0, 1e-6, ..., 1e-3} (docs/experiments/e1.md). The number of epochs can
be chosen on validation data by :meth:`LightFMRanker.iter_epochs` (early
stopping, see :mod:`debiaseval.selection.tuning`). LightFM with ``num_threads > 1`` runs
lock-free parallel SGD (Hogwild), whose result depends on thread timing: only
the default ``num_threads=1`` is deterministic given the seed.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.base import (
    Recommender,
    check_bool,
    check_int,
    check_real,
    implicit_feedback,
)

__all__ = ["LightFMRanker"]

_LOSSES = ("warp", "bpr")


class LightFMRanker(Recommender):
    """LightFM ranking MF: score(u, i) = p_u·q_i + b_i + b_u (docs/experiments/e1.md).

    Hyperparameters map to LightFM as ``factors`` → ``no_components``,
    ``alpha`` → ``user_alpha`` = ``item_alpha``, ``learning_rate`` (adagrad
    schedule), ``max_sampled`` (WARP's negative sampling budget), ``epochs`` and
    ``num_threads`` → ``fit``; the fit ``seed`` is LightFM's ``random_state``.
    With ``positives_only=False`` every observed pair counts as a positive.
    Scores are computed from the learned embeddings with numpy in float64 and
    equal ``LightFM.predict`` (whose user bias b_u is constant per user and so
    never changes a ranking).
    """

    name = "mf"

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
    ) -> None:
        self.loss = loss
        self.factors = factors
        self.alpha = alpha
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.max_sampled = max_sampled
        self.num_threads = num_threads
        self.positives_only = positives_only
        self.positive_threshold = positive_threshold

    def validate_params(self) -> None:
        if self.loss not in _LOSSES:
            raise ValueError(f"loss must be one of {_LOSSES}, got {self.loss!r}")
        for key in ("factors", "epochs", "max_sampled", "num_threads"):
            check_int(key, getattr(self, key))
        check_real("alpha", self.alpha, low=0.0)
        check_real("learning_rate", self.learning_rate, low=0.0, strict=True)
        check_real("positive_threshold", self.positive_threshold)
        check_bool("positives_only", self.positives_only)

    def _interactions(self, train: sp.csr_matrix) -> sp.coo_matrix:
        implicit = implicit_feedback(
            train,
            positives_only=bool(self.positives_only),
            positive_threshold=float(self.positive_threshold),
        )
        return sp.coo_matrix(implicit, dtype=np.float32)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        from lightfm import LightFM  # compiled extension: import only when training

        self.lightfm_ = LightFM(
            no_components=int(self.factors),
            loss=self.loss,
            learning_rate=float(self.learning_rate),
            item_alpha=float(self.alpha),
            user_alpha=float(self.alpha),
            max_sampled=int(self.max_sampled),
            random_state=np.random.RandomState(seed),
        )
        self._fit_partial(train, int(self.epochs))

    def _fit_partial(self, train: sp.csr_matrix, epochs: int) -> None:
        """Train ``epochs`` more epochs: LightFM's ``fit`` first, then its ``fit_partial``,
        which continues the same random stream, so the states equal one longer ``fit``."""
        interactions = self._interactions(train)
        weights = self._sample_weight(train, interactions)
        model = self.lightfm_
        train_more = model.fit if model.item_embeddings is None else model.fit_partial
        train_more(
            interactions, sample_weight=weights, epochs=epochs, num_threads=int(self.num_threads)
        )
        self.user_embeddings_ = model.user_embeddings.astype(np.float64)
        self.item_embeddings_ = model.item_embeddings.astype(np.float64)
        self.user_biases_ = model.user_biases.astype(np.float64)
        self.item_biases_ = model.item_biases.astype(np.float64)

    def health(self, *, divergence_limit: float = 1e4) -> str | None:
        """None for a usable model, else why not: ``diverged: ...`` or ``collapsed: ...``.

        Diverged: a non-finite embedding or bias, or an embedding entry larger
        than ``divergence_limit`` in absolute value (healthy ones are O(1)).
        Collapsed: the root mean square of the user or of the item embeddings
        has shrunk below that of LightFM's initialisation, U(-0.5, 0.5)/factors,
        i.e. 1/(√12·factors): the L2 penalty (too large an ``alpha``) pulled the
        factors to zero and the model ranks by item bias alone, a popularity ranker.
        """
        arrays = (self.user_embeddings_, self.item_embeddings_, self.item_biases_)
        if not all(np.isfinite(a).all() for a in arrays):
            return "diverged: non-finite embeddings"
        largest = max(float(np.abs(a).max(initial=0.0)) for a in arrays[:2])
        if largest > divergence_limit:
            return f"diverged: |embedding| reaches {largest:.3g} > {divergence_limit:g}"
        initial = 1.0 / (np.sqrt(12.0) * int(self.factors))
        for kind, emb in (("user", self.user_embeddings_), ("item", self.item_embeddings_)):
            rms = float(np.sqrt(np.mean(emb**2)))
            if rms < initial:
                return (
                    f"collapsed: RMS of the {kind} embeddings is {rms:.3g}, "
                    f"below their initial {initial:.3g}"
                )
        return None

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

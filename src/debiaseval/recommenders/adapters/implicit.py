"""Adapters for the ``implicit`` library (0.7.x, CPU models): ALS and BPR.

Install with ``pip install -e '.[implicit]'``; config names ``implicit_als`` and
``implicit_bpr`` (see docs/own-recommender.md).

**Feedback.** Both models learn from the user × item matrix (users as rows, implicit's
orientation since 0.5) of the pairs of :func:`~debiaseval.recommenders.base.implicit_feedback`:
the positive training pairs, rating > ``positive_threshold`` (3 on Coat's 1–5 scale), as
the built-in MF, or every observed pair with ``positives_only=False``. A rating at or
below the threshold is treated as unobserved. ALS reads each stored value as the
confidence c_ui of a positive, against 1 for every unobserved pair (preference 0); the
adapter stores c_ui = 1 + ``alpha``, Hu, Koren & Volinsky's (ICDM 2008) c = 1 + α·r with
r = 1 for a positive, so ``alpha = 0`` weighs positives like unobserved pairs
(implicit's own ``alpha``, a factor on the stored values, stays 1). BPR (Rendle et al.,
UAI 2009) uses only which pairs are positive.

**Determinism.** The fit ``seed`` seeds the ``numpy.random.Generator`` given to implicit
as ``random_state``; BLAS runs on one thread during training (implicit's own advice,
and a fixed summation order). ALS solves each user (item) independently, so any
``num_threads`` gives the same factors; BPR's SGD with ``num_threads > 1`` is lock-free
(Hogwild) and depends on thread timing, so only the default ``num_threads = 1`` is
reproducible, as for the built-in MF.

**Epochs.** One ALS epoch is one sweep (users, then items); implicit's ``fit`` starts
from the factors it already has, so more sweeps continue the same run. implicit's BPR
draws its samplers' seeds from ``random_state`` at each ``fit`` call; the adapter makes
one call per epoch, so ``a`` epochs then ``b`` more equal ``a + b`` epochs. Both
therefore train by epochs, and tuning chooses their epochs by early stopping.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from debiaseval.recommenders.adapters import LibraryAdapter, require
from debiaseval.recommenders.base import check_bool, check_int, check_real

__all__ = ["ImplicitALS", "ImplicitBPR"]


class _ImplicitFactors(LibraryAdapter):
    """Shared part of implicit's factor models: training loop, scores, health."""

    extra = "implicit"

    def validate_params(self) -> None:
        super().validate_params()
        for key in ("factors", "epochs", "num_threads"):
            check_int(key, getattr(self, key))
        check_real("regularization", self.regularization, low=0.0)

    def _library_model(self, rng: np.random.Generator) -> object:
        """A new, untrained implicit model seeded by ``rng``."""
        raise NotImplementedError

    def _train(self, feedback: sp.csr_matrix, epochs: int) -> None:
        """Train ``self.model_`` ``epochs`` more epochs on ``feedback``."""
        raise NotImplementedError

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        with threadpool_limits(limits=1, user_api="blas"):  # before implicit checks BLAS
            self.model_ = self._library_model(np.random.default_rng(seed))
        self._fit_partial(train, int(self.epochs))

    def _fit_partial(self, train: sp.csr_matrix, epochs: int) -> None:
        fit_error = require("implicit.recommender_base", self.name, "implicit").ModelFitError
        feedback = self._feedback(train).astype(np.float32)
        with threadpool_limits(limits=1, user_api="blas"):
            try:
                self._train(feedback, epochs)
            except fit_error:  # NaN factors: health() reports the model as diverged
                pass

    def health(self) -> str | None:
        """None for a usable model, else ``diverged: ...`` (non-finite factors)."""
        for kind in ("user", "item"):
            if not np.isfinite(getattr(self.model_, f"{kind}_factors")).all():
                return f"diverged: non-finite {kind} factors"
        return None

    def _score(self, users: np.ndarray) -> np.ndarray:
        user_factors = self.model_.user_factors[users].astype(np.float64)
        return user_factors @ self.model_.item_factors.astype(np.float64).T


class ImplicitALS(_ImplicitFactors):
    """implicit's ALS with conjugate-gradient steps (Takács et al., RecSys 2011); see the module.

    ``factors``, ``regularization`` (the L2 weight λ) and ``epochs`` (implicit's
    ``iterations``) map to implicit; ``alpha`` sets the confidence 1 + α of a positive.
    """

    name = "implicit_als"

    def __init__(
        self,
        *,
        factors: int = 64,
        regularization: float = 0.01,
        alpha: float = 1.0,
        epochs: int = 15,
        num_threads: int = 1,
        positives_only: bool = True,
        positive_threshold: float = 3.0,
    ) -> None:
        self.factors = factors
        self.regularization = regularization
        self.alpha = alpha
        self.epochs = epochs
        self.num_threads = num_threads
        self.positives_only = positives_only
        self.positive_threshold = positive_threshold

    def validate_params(self) -> None:
        super().validate_params()
        check_real("alpha", self.alpha, low=0.0)

    def _library_model(self, rng: np.random.Generator) -> object:
        als = require("implicit.cpu.als", self.name, "implicit")
        return als.AlternatingLeastSquares(
            factors=int(self.factors),
            regularization=float(self.regularization),
            num_threads=int(self.num_threads),
            random_state=rng,
        )

    def _train(self, feedback: sp.csr_matrix, epochs: int) -> None:
        confidence = feedback * np.float32(1.0 + float(self.alpha))
        self.model_.iterations = epochs
        self.model_.fit(confidence, show_progress=False)


class ImplicitBPR(_ImplicitFactors):
    """implicit's BPR: SGD on the pairwise log-sigmoid loss with an item bias; see the module.

    ``factors``, ``learning_rate``, ``regularization``, ``verify_negative_samples``
    (resample a negative that is a positive of the user) map to implicit; ``epochs``
    is its ``iterations``. implicit draws a negative as the item of a uniformly drawn
    positive pair, i.e. in proportion to its popularity among the positives.
    """

    name = "implicit_bpr"

    def __init__(
        self,
        *,
        factors: int = 64,
        learning_rate: float = 0.01,
        regularization: float = 0.01,
        epochs: int = 100,
        verify_negative_samples: bool = True,
        num_threads: int = 1,
        positives_only: bool = True,
        positive_threshold: float = 3.0,
    ) -> None:
        self.factors = factors
        self.learning_rate = learning_rate
        self.regularization = regularization
        self.epochs = epochs
        self.verify_negative_samples = verify_negative_samples
        self.num_threads = num_threads
        self.positives_only = positives_only
        self.positive_threshold = positive_threshold

    def validate_params(self) -> None:
        super().validate_params()
        check_real("learning_rate", self.learning_rate, low=0.0, strict=True)
        check_bool("verify_negative_samples", self.verify_negative_samples)

    def _library_model(self, rng: np.random.Generator) -> object:
        bpr = require("implicit.cpu.bpr", self.name, "implicit")
        return bpr.BayesianPersonalizedRanking(
            factors=int(self.factors),
            learning_rate=float(self.learning_rate),
            regularization=float(self.regularization),
            iterations=1,
            num_threads=int(self.num_threads),
            verify_negative_samples=bool(self.verify_negative_samples),
            random_state=rng,
        )

    def _train(self, feedback: sp.csr_matrix, epochs: int) -> None:
        for _ in range(epochs):  # one call per epoch: see the module's "Epochs"
            self.model_.fit(feedback, show_progress=False)

"""Adapters for the Cornac library (3.x): EASEᴿ and hierarchical Poisson factorisation.

Install with ``pip install -e '.[cornac]'``; config names ``cornac_ease`` and
``cornac_hpf`` (see docs/own-recommender.md). Two models that
neither the built-in ones nor implicit have, both without PyTorch or TensorFlow.

**Feedback.** Both learn from the 0/1 matrix of
:func:`~debiaseval.recommenders.base.implicit_feedback`: the positive training pairs,
rating > ``positive_threshold``, as the built-in MF (every observed pair with
``positives_only=False``). It reaches Cornac as a ``cornac.data.Dataset`` whose user and
item indices are the project's own (identity id maps), so no id is remapped and users or
items without a positive keep their row or column.

**Scores** are computed from the learned parameters with numpy, in float64, and equal
Cornac's own ``score(user)`` (tested): EASEᴿ's X_u·B and HPF's θ_u·β_i. The Cornac model
itself is not kept (it holds the whole training set).

Neither model trains by epochs: EASEᴿ is closed-form; HPF's variational inference runs a
fixed ``iterations`` (Cornac has no way to continue it), tuned like any hyperparameter.
"""

from __future__ import annotations

import contextlib
import io
from collections import OrderedDict

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.adapters import LibraryAdapter, require
from debiaseval.recommenders.base import check_bool, check_int, check_real

__all__ = ["CornacEASE", "CornacHPF"]


class _CornacModel(LibraryAdapter):
    """Shared part of the Cornac adapters: the training ``Dataset``."""

    extra = "cornac"

    def _dataset(self, train: sp.csr_matrix, seed: int) -> object:
        """The feedback as a ``cornac.data.Dataset`` indexed by the project's ids."""
        data = require("cornac.data", self.name, "cornac")
        feedback = self._feedback(train).tocoo()
        n_users, n_items = feedback.shape
        return data.Dataset(
            num_users=n_users,
            num_items=n_items,
            uid_map=OrderedDict(zip(range(n_users), range(n_users), strict=True)),
            iid_map=OrderedDict(zip(range(n_items), range(n_items), strict=True)),
            uir_tuple=(
                feedback.row.astype(np.int64),
                feedback.col.astype(np.int64),
                feedback.data.astype(np.float64),
            ),
            seed=seed,
        )


class CornacEASE(_CornacModel):
    """EASEᴿ (Steck, WWW 2019): item-item weights B from a ridge regression of X on itself.

    B = I − P·diag(1/diag(P)) with P = (XᵀX + λI)⁻¹, diagonal zero; score(u, i) = X_u·B_i.
    ``regularization`` is λ (Cornac's ``lamb``); ``nonnegative`` (Cornac's ``posB``)
    sets the negative weights to 0. Deterministic: the seed is not used.
    """

    name = "cornac_ease"

    def __init__(
        self,
        *,
        regularization: float = 500.0,
        nonnegative: bool = True,
        positives_only: bool = True,
        positive_threshold: float = 3.0,
    ) -> None:
        self.regularization = regularization
        self.nonnegative = nonnegative
        self.positives_only = positives_only
        self.positive_threshold = positive_threshold

    def validate_params(self) -> None:
        super().validate_params()
        check_real("regularization", self.regularization, low=0.0, strict=True)
        check_bool("nonnegative", self.nonnegative)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        models = require("cornac.models", self.name, "cornac")
        model = models.EASE(
            lamb=float(self.regularization),
            posB=bool(self.nonnegative),
            verbose=False,
            seed=seed,
        )
        model.fit(self._dataset(train, seed))
        self.user_items_ = sp.csr_matrix(model.U, dtype=np.float64)
        self.weights_ = np.asarray(model.B, dtype=np.float64)

    def _score(self, users: np.ndarray) -> np.ndarray:
        return np.asarray(self.user_items_[users] @ self.weights_)


class CornacHPF(_CornacModel):
    """Hierarchical Poisson factorisation (Gopalan, Hofman & Blei, UAI 2015).

    Gamma-Poisson factors θ_u, β_i with Gamma priors on the users' activity and the
    items' popularity (``hierarchical=False``: plain Poisson factorisation), fitted by
    coordinate-ascent variational inference; score(u, i) = θ_u·β_i (posterior means).
    ``factors`` is Cornac's ``k``, ``iterations`` its ``max_iter``; the fit seed seeds
    the initialisation.
    """

    name = "cornac_hpf"

    def __init__(
        self,
        *,
        factors: int = 5,
        iterations: int = 100,
        hierarchical: bool = True,
        positives_only: bool = True,
        positive_threshold: float = 3.0,
    ) -> None:
        self.factors = factors
        self.iterations = iterations
        self.hierarchical = hierarchical
        self.positives_only = positives_only
        self.positive_threshold = positive_threshold

    def validate_params(self) -> None:
        super().validate_params()
        for key in ("factors", "iterations"):
            check_int(key, getattr(self, key))
        check_bool("hierarchical", self.hierarchical)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        models = require("cornac.models", self.name, "cornac")
        model = models.HPF(
            k=int(self.factors),
            max_iter=int(self.iterations),
            hierarchical=bool(self.hierarchical),
            verbose=False,
            seed=seed,
        )
        with contextlib.redirect_stdout(io.StringIO()):  # Cornac's HPF prints its progress
            model.fit(self._dataset(train, seed))
        self.user_factors_ = np.asarray(model.Theta, dtype=np.float64)
        self.item_factors_ = np.asarray(model.Beta, dtype=np.float64)

    def _score(self, users: np.ndarray) -> np.ndarray:
        return self.user_factors_[users] @ self.item_factors_.T

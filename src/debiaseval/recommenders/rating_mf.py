"""Rating-prediction biased MF with per-pair weights: MF-Naive and MF-IPS (docs/experiments/e4.md).

[ICML16] T. Schnabel et al., *Recommendations as treatments*, ICML 2016, eq. 14:

    argmin_{V, W, a, b, c}  Σ_{O=1} w_{u,i} · δ(y_{u,i}, ŷ_{u,i}) + λ (‖V‖² + ‖W‖²),
    ŷ_{u,i} = v_uᵀ w_i + a_u + b_i + c,

with δ the squared or the absolute error and w = 1 (MF-Naive) or w = 1/P̂ (MF-IPS).
As in eq. 14 the biases a, b and the offset c are not regularised;
``penalise_biases=True`` adds λ(‖a‖² + ‖b‖²). **Weights are normalised to mean 1 over the
training pairs**, so the data term has the size of MF-Naive's whatever the propensity
scale (1/P̂ reaches several hundred on Coat) and one λ grid means the same for both.

Solver: weighted alternating least squares. With the items' [w_i, 1] fixed, every
user's [v_u, a_u] solves a (d+1)-dimensional weighted ridge problem, and vice versa,
each by Cholesky in the cheaper of the primal (d+1)² and the dual n_u² form (with a free
intercept when the bias is not penalised), in one
compiled loop over the users (items) (:mod:`debiaseval.recommenders.ridge`; see
docs/experiments/e4.md); c is the weighted mean residual. The absolute error is handled
by majorise-minimise (iteratively reweighted least squares): every half-step minimises
the quadratic majoriser with weights w / max(|r|, ε) of the Huber-smoothed absolute
error, which is |r| for |r| ≥ ε. Every step is an exact block minimisation of the
objective (or of a majoriser touching it), so the objective never increases.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from debiaseval.recommenders.base import NotFittedError, check_int, check_real
from debiaseval.recommenders.ridge import RowGroups

__all__ = ["LOSSES", "WeightedMF", "normalise_weights"]

LOSSES = ("squared", "absolute")
_PREDICT_CHUNK = 65_536
"""Pairs predicted at once (their gathered factors are the temporaries)."""


def normalise_weights(weights: np.ndarray | None, n: int) -> np.ndarray:
    """Per-pair weights as float64 with mean 1 (all 1 when ``weights`` is None).

    Raises ``ValueError`` for a wrong shape or a weight that is not finite and positive.
    """
    if weights is None:
        return np.ones(n)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), one per rating, got {w.shape}")
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("weights must be finite and > 0 (use 1/propensity for MF-IPS)")
    return w / w.mean()


class _Layout:
    """The observed pairs grouped by user and by item (:class:`RowGroups`), built once per fit."""

    def __init__(self, users: np.ndarray, items: np.ndarray, n_users: int, n_items: int) -> None:
        self.by_user = RowGroups(users, items, n_users, n_items)
        self.by_item = RowGroups(items, users, n_items, n_users)


class WeightedMF:
    """Biased rating MF trained on weighted squared or absolute error ([ICML16] eq. 14).

    Follows scikit-learn's estimator contract: ``__init__`` stores the keyword-only
    hyperparameters; :meth:`fit` returns ``self`` and sets the learned state
    ``user_factors_``, ``item_factors_``, ``user_bias_``, ``item_bias_``, ``offset_``
    and ``objective_`` (the objective after initialisation and after every sweep).
    """

    def __init__(
        self,
        *,
        factors: int = 20,
        l2: float = 1.0,
        loss: str = "squared",
        max_iter: int = 100,
        tol: float = 1e-4,
        epsilon: float = 1e-3,
        init_scale: float = 0.1,
        penalise_biases: bool = False,
    ) -> None:
        self.factors = factors
        self.l2 = l2
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol
        self.epsilon = epsilon
        self.init_scale = init_scale
        self.penalise_biases = penalise_biases

    def get_params(self) -> dict[str, object]:
        """Hyperparameters as a dict; ``WeightedMF(**m.get_params())`` is an unfitted twin."""
        keys = (
            "factors",
            "l2",
            "loss",
            "max_iter",
            "tol",
            "epsilon",
            "init_scale",
            "penalise_biases",
        )
        return {key: getattr(self, key) for key in keys}

    def validate_params(self) -> None:
        """Raise a one-line ``ValueError`` for an invalid hyperparameter."""
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        check_int("factors", self.factors)
        check_int("max_iter", self.max_iter)
        check_real("l2", self.l2, low=0.0, strict=True)
        check_real("tol", self.tol, low=0.0)
        check_real("epsilon", self.epsilon, low=0.0, strict=True)
        check_real("init_scale", self.init_scale, low=0.0)
        if not isinstance(self.penalise_biases, bool):
            raise ValueError(f"penalise_biases must be a bool, got {self.penalise_biases!r}")

    def _loss(self, residual: np.ndarray) -> np.ndarray:
        if self.loss == "squared":
            return residual**2
        r, eps = np.abs(residual), self.epsilon
        return np.where(r >= eps, r, 0.5 * (r * r / eps + eps))

    def _irls(self, weight: np.ndarray, residual: np.ndarray) -> np.ndarray:
        """Weights of the quadratic step: w for squared error, w / max(|r|, ε) for absolute."""
        if self.loss == "squared":
            return weight
        # majoriser r²/(2m) + m/2, m = max(|r0|, ε); its factor 1/2 is moved onto the
        # ridge: min Σ (ω/2m) r² + λP  ⇔  min Σ (ω/m) r² + 2λP (see _sweep)
        return weight / np.maximum(np.abs(residual), self.epsilon)

    def objective(self, users, items, ratings, weights=None) -> float:
        """Σ w·δ + λ(‖V‖² + ‖W‖²) (+ λ(‖a‖² + ‖b‖²) with ``penalise_biases``) of the fitted
        model, weights normalised."""
        w = normalise_weights(weights, len(ratings))
        residual = np.asarray(ratings, dtype=np.float64) - self.predict(users, items)
        return self._objective(w, residual)

    def _objective(self, w: np.ndarray, residual: np.ndarray) -> float:
        blocks = [self.user_factors_, self.item_factors_]
        if self.penalise_biases:
            blocks += [self.user_bias_, self.item_bias_]
        penalty = sum(float(np.sum(a * a)) for a in blocks)
        return float(np.dot(w, self._loss(residual)) + self.l2 * penalty)

    def fit(
        self,
        users: np.ndarray,
        items: np.ndarray,
        ratings: np.ndarray,
        *,
        n_users: int,
        n_items: int,
        weights: np.ndarray | None = None,
        rng: np.random.Generator,
        init: WeightedMF | None = None,
    ) -> Self:
        """Learn from observed (user, item, rating) triples with optional per-pair weights.

        ``weights`` (e.g. 1/P̂ for MF-IPS) are normalised to mean 1; None means MF-Naive.
        Factors start at N(0, init_scale²) drawn from ``rng``; biases at 0, c at the
        weighted mean rating; with ``init`` (a fitted model of the same shape and factors,
        e.g. the previous λ of a grid) they start at its values instead, and ``rng`` is
        drawn from all the same. Sweeps stop when the relative decrease of the objective
        falls below ``tol`` or after ``max_iter`` sweeps.
        """
        self.validate_params()
        u = np.asarray(users)
        i = np.asarray(items)
        y = np.asarray(ratings, dtype=np.float64)
        n = y.size
        if n == 0 or u.shape != (n,) or i.shape != (n,):
            raise ValueError("users, items and ratings must be non-empty 1-D arrays of one length")
        if not np.all(np.isfinite(y)):
            raise ValueError("ratings contain NaN or infinite values")
        for name, ids, size in (("user", u, n_users), ("item", i, n_items)):
            if not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= size:
                raise ValueError(f"{name} ids must be integers in [0, {size})")
        w = normalise_weights(weights, n)
        u, i = u.astype(np.int64), i.astype(np.int64)
        layout = _Layout(u, i, int(n_users), int(n_items))

        d = int(self.factors)
        self.n_users_, self.n_items_ = int(n_users), int(n_items)
        self.user_factors_ = self.init_scale * rng.standard_normal((n_users, d))
        self.item_factors_ = self.init_scale * rng.standard_normal((n_items, d))
        self.user_bias_ = np.zeros(n_users)
        self.item_bias_ = np.zeros(n_items)
        self.offset_ = float(np.dot(w, y) / w.sum())
        if init is not None:
            if init.user_factors_.shape != (n_users, d) or init.item_factors_.shape != (n_items, d):
                raise ValueError(
                    f"init must be a fitted WeightedMF with {d} factors of the same "
                    f"{n_users} users and {n_items} items"
                )
            self.user_factors_, self.item_factors_ = init.user_factors_, init.item_factors_
            self.user_bias_, self.item_bias_ = init.user_bias_, init.item_bias_
            self.offset_ = init.offset_
        residual = y - self.predict(u, i)
        objective = [self._objective(w, residual)]
        for _ in range(int(self.max_iter)):
            residual = self._sweep(u, i, y, w, layout, residual)
            objective.append(self._objective(w, residual))
            if objective[-2] - objective[-1] <= self.tol * abs(objective[-2]):
                break
        self.objective_ = np.asarray(objective)
        return self

    def _sweep(self, u, i, y, w, layout: _Layout, residual: np.ndarray) -> np.ndarray:
        """One ALS sweep: users, then items, then the offset (each an exact block step).

        ``residual`` is y − ŷ before the sweep; returns it after the sweep.
        """
        ridge = self.l2 if self.loss == "squared" else 2.0 * self.l2

        omega = self._irls(w, residual)
        x = np.hstack([self.item_factors_, np.ones((self.n_items_, 1))])
        target = y - self.offset_ - self.item_bias_[i]
        free = not self.penalise_biases
        theta, fitted = layout.by_user.solve(omega, target, x, ridge, free_last=free)
        self.user_factors_, self.user_bias_ = theta[:, :-1], theta[:, -1].copy()

        omega = self._irls(w, target - fitted)
        x = np.hstack([self.user_factors_, np.ones((self.n_users_, 1))])
        target = y - self.offset_ - self.user_bias_[u]
        theta, fitted = layout.by_item.solve(omega, target, x, ridge, free_last=free)
        self.item_factors_, self.item_bias_ = theta[:, :-1], theta[:, -1].copy()

        residual = target - fitted
        omega = self._irls(w, residual)
        shift = float(np.dot(omega, residual) / omega.sum())
        self.offset_ += shift
        return residual - shift

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Predicted ratings ŷ = v_uᵀw_i + a_u + b_i + c of the given pairs (float64)."""
        if not hasattr(self, "offset_"):
            raise NotFittedError("WeightedMF is not fitted; call fit() first")
        u = np.asarray(users, dtype=np.int64)
        i = np.asarray(items, dtype=np.int64)
        out = np.empty(u.size)
        for s0 in range(0, u.size, _PREDICT_CHUNK):  # small temporaries: pairs × d at most
            uu, ii = u[s0 : s0 + _PREDICT_CHUNK], i[s0 : s0 + _PREDICT_CHUNK]
            out[s0 : s0 + uu.size] = np.einsum(
                "nd,nd->n", self.user_factors_[uu], self.item_factors_[ii]
            )
        out += self.user_bias_[u] + self.item_bias_[i] + self.offset_
        return out

    def predict_matrix(self, users: np.ndarray | None = None) -> np.ndarray:
        """Dense predictions of every item for ``users`` (all users if None)."""
        if not hasattr(self, "offset_"):
            raise NotFittedError("WeightedMF is not fitted; call fit() first")
        u = np.arange(self.n_users_) if users is None else np.asarray(users, dtype=np.int64)
        out = self.user_factors_[u] @ self.item_factors_.T
        out += self.user_bias_[u, None] + self.item_bias_[None, :] + self.offset_
        return out

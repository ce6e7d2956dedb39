"""Rating-prediction biased MF with per-pair weights: MF-Naive and MF-IPS (docs/experiments/e4.md).

[ICML16] T. Schnabel et al., *Recommendations as treatments*, ICML 2016, eq. 14:

    argmin_{V, W, a, b, c}  Σ_{O=1} w_{u,i} · δ(y_{u,i}, ŷ_{u,i}) + λ (‖V‖² + ‖W‖² + ‖a‖² + ‖b‖²),
    ŷ_{u,i} = v_uᵀ w_i + a_u + b_i + c,

with δ the squared or the absolute error and w = 1 (MF-Naive) or w = 1/P̂ (MF-IPS).
The global offset c is not regularised. **Weights are normalised to mean 1 over the
training pairs**, so the data term has the size of MF-Naive's whatever the propensity
scale (1/P̂ reaches several hundred on Coat) and one λ grid means the same for both.

Solver: weighted alternating least squares. With the items' [w_i, 1] fixed, every
user's [v_u, a_u] solves a (d+1)-dimensional weighted ridge problem, and vice versa;
the normal equations of a batch of users are built from their observed pairs at once
(a sparse indicator times per-pair outer products) and solved with batched
``numpy.linalg.solve``; c is the weighted mean residual. The absolute error is handled
by majorise-minimise (iteratively reweighted least squares): every half-step minimises
the quadratic majoriser with weights w / max(|r|, ε) of the Huber-smoothed absolute
error, which is |r| for |r| ≥ ε. Every step is an exact block minimisation of the
objective (or of a majoriser touching it), so the objective never increases.
"""

from __future__ import annotations

from typing import Self

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.base import NotFittedError, check_int, check_real

__all__ = ["LOSSES", "WeightedMF", "normalise_weights"]

LOSSES = ("squared", "absolute")
_MAX_BLOCK = 4_000_000
"""Upper bound on (pairs × (d+1)²) floats held at once while building normal equations."""


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


def _ridge_rows(
    weight: sp.csr_matrix, weighted_target: sp.csr_matrix, x: np.ndarray, l2: float
) -> np.ndarray:
    """Solve min_θ Σ_j ω_rj (t_rj − x_jᵀθ)² + λ‖θ‖² for every row r of ``weight`` (Ω).

    Normal equations (Xᵀ Ω_r X + λI) θ_r = Xᵀ Ω_r t_r: the Gram matrices of a block of
    rows are the sparse product Ω_block @ [vec(x_j x_jᵀ)]_j, with blocks of rows and of
    columns small enough to hold about ``_MAX_BLOCK`` floats; ``weighted_target`` holds
    ω_rj t_rj. Rows without pairs get θ = 0.
    """
    n_rows, n_cols = weight.shape
    k = x.shape[1]
    rhs = weighted_target @ x
    out = np.empty((n_rows, k))
    ridge = l2 * np.eye(k)
    chunk = max(1, _MAX_BLOCK // (k * k))
    for r0 in range(0, n_rows, chunk):
        rows = weight[r0 : r0 + chunk]
        gram = np.zeros((rows.shape[0], k * k))
        if n_cols > chunk:
            rows = rows.tocsc()
        for c0 in range(0, n_cols, chunk):
            xc = x[c0 : c0 + chunk]
            outer = (xc[:, :, None] * xc[:, None, :]).reshape(len(xc), k * k)
            gram += (rows if n_cols <= chunk else rows[:, c0 : c0 + chunk]) @ outer
        gram = gram.reshape(-1, k, k) + ridge
        out[r0 : r0 + chunk] = np.linalg.solve(gram, rhs[r0 : r0 + chunk, :, None])[:, :, 0]
    return out


class _Layout:
    """The observed pairs in CSR order by user and by item, to build Ω and Ω∘T quickly."""

    def __init__(self, users: np.ndarray, items: np.ndarray, n_users: int, n_items: int):
        self.by_user = np.lexsort((items, users))
        self.by_item = np.lexsort((users, items))
        self.user_cols = items[self.by_user]
        self.item_cols = users[self.by_item]
        self.user_ptr = np.searchsorted(users[self.by_user], np.arange(n_users + 1))
        self.item_ptr = np.searchsorted(items[self.by_item], np.arange(n_items + 1))
        self.shape = (n_users, n_items)

    def matrices(self, values: np.ndarray, target: np.ndarray, *, by_user: bool):
        """CSR (Ω, Ω∘T) with users (``by_user``) or items as rows."""
        if by_user:
            order, cols, ptr, shape = self.by_user, self.user_cols, self.user_ptr, self.shape
        else:
            order, cols, ptr = self.by_item, self.item_cols, self.item_ptr
            shape = self.shape[::-1]
        w = values[order]
        return (
            sp.csr_matrix((w, cols, ptr), shape=shape),
            sp.csr_matrix((w * target[order], cols, ptr), shape=shape),
        )


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
    ) -> None:
        self.factors = factors
        self.l2 = l2
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol
        self.epsilon = epsilon
        self.init_scale = init_scale

    def get_params(self) -> dict[str, object]:
        """Hyperparameters as a dict; ``WeightedMF(**m.get_params())`` is an unfitted twin."""
        keys = ("factors", "l2", "loss", "max_iter", "tol", "epsilon", "init_scale")
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

    def _loss(self, residual: np.ndarray) -> np.ndarray:
        if self.loss == "squared":
            return residual**2
        r, eps = np.abs(residual), self.epsilon
        return np.where(r >= eps, r, 0.5 * (r * r / eps + eps))

    def _irls(self, weight, u, i, y, residual=None) -> np.ndarray:
        """Weights of the quadratic step: w for squared error, w / max(|r|, ε) for absolute."""
        if self.loss == "squared":
            return weight
        if residual is None:
            residual = y - self.predict(u, i)
        # majoriser r²/(2m) + m/2, m = max(|r0|, ε); its factor 1/2 is moved onto the
        # ridge: min Σ (ω/2m) r² + λP  ⇔  min Σ (ω/m) r² + 2λP (see _sweep)
        return weight / np.maximum(np.abs(residual), self.epsilon)

    def objective(self, users, items, ratings, weights=None) -> float:
        """Σ w·δ + λ(‖V‖² + ‖W‖² + ‖a‖² + ‖b‖²) of the fitted model (weights normalised)."""
        w = normalise_weights(weights, len(ratings))
        residual = np.asarray(ratings, dtype=np.float64) - self.predict(users, items)
        return self._objective(w, residual)

    def _objective(self, w: np.ndarray, residual: np.ndarray) -> float:
        penalty = sum(
            float(np.sum(a * a))
            for a in (self.user_factors_, self.item_factors_, self.user_bias_, self.item_bias_)
        )
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
    ) -> Self:
        """Learn from observed (user, item, rating) triples with optional per-pair weights.

        ``weights`` (e.g. 1/P̂ for MF-IPS) are normalised to mean 1; None means MF-Naive.
        Factors start at N(0, init_scale²) drawn from ``rng``; biases at 0, c at the
        weighted mean rating. Sweeps stop when the relative decrease of the objective
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
        objective = [self._objective(w, y - self.predict(u, i))]
        for _ in range(int(self.max_iter)):
            self._sweep(u, i, y, w, layout)
            objective.append(self._objective(w, y - self.predict(u, i)))
            if objective[-2] - objective[-1] <= self.tol * abs(objective[-2]):
                break
        self.objective_ = np.asarray(objective)
        return self

    def _sweep(self, u, i, y, w, layout: _Layout) -> None:
        """One ALS sweep: users, then items, then the offset (each an exact block step)."""
        ridge = self.l2 if self.loss == "squared" else 2.0 * self.l2

        omega = self._irls(w, u, i, y)
        x = np.hstack([self.item_factors_, np.ones((self.n_items_, 1))])
        target = y - self.offset_ - self.item_bias_[i]
        theta = _ridge_rows(*layout.matrices(omega, target, by_user=True), x, ridge)
        self.user_factors_, self.user_bias_ = theta[:, :-1], theta[:, -1].copy()

        omega = self._irls(w, u, i, y)
        x = np.hstack([self.user_factors_, np.ones((self.n_users_, 1))])
        target = y - self.offset_ - self.user_bias_[u]
        theta = _ridge_rows(*layout.matrices(omega, target, by_user=False), x, ridge)
        self.item_factors_, self.item_bias_ = theta[:, :-1], theta[:, -1].copy()

        residual = y - self.predict(u, i)
        omega = w if self.loss == "squared" else self._irls(w, u, i, y, residual)
        self.offset_ += float(np.dot(omega, residual) / omega.sum())

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Predicted ratings ŷ = v_uᵀw_i + a_u + b_i + c of the given pairs (float64)."""
        if not hasattr(self, "offset_"):
            raise NotFittedError("WeightedMF is not fitted; call fit() first")
        u = np.asarray(users, dtype=np.int64)
        i = np.asarray(items, dtype=np.int64)
        out = np.einsum("nd,nd->n", self.user_factors_[u], self.item_factors_[i])
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

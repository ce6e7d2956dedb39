"""Weighted ridge solves over the rows of a sparse pattern (the half-steps of weighted ALS).

Every row r (a user, or an item) of the observed pairs solves

    θ_r = argmin_θ Σ_{j ∈ O_r} ω_rj (t_rj − x_jᵀθ)² + λ‖θ‖²,

a k-dimensional ridge regression on its n_r pairs (optionally with its last coefficient, a
bias against a column of ones, unpenalised), in whichever of two equal forms (the
push-through identity) costs less:

- primal: (X_rᵀ Ω_r X_r + λI_k) θ_r = X_rᵀ Ω_r t_r, a k × k system built in n_r k²/2
  multiply-adds;
- dual: (X_r X_rᵀ + λΩ_r⁻¹) γ_r = t_r, θ_r = X_rᵀ γ_r, an n_r × n_r system built in
  n_r² k/2, or gathered from the columns' Gram matrix X Xᵀ (one BLAS product per
  half-step) when there are few columns.

Each system is factorised by Cholesky (it is symmetric positive definite, λ > 0, ω > 0)
in one compiled pass over the rows (numba): no padding, no per-row Python, no copy of
the pairs × k design, so a half-step costs about Σ_r min(n_r, k)² · max(n_r, k) / 2
multiply-adds, whatever the spread of the rows' lengths. The sums run in a fixed order
(no fast-math), so results do not depend on the machine's vector width. The former
builder (pairs × k² sparse products outside BLAS) is kept as the reference of
:mod:`debiaseval.benchmark`; see docs/experiments/e4.md.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RowGroups"]

_MAX_COLUMN_GRAM = 4_000_000
"""The dual gathers its systems from X Xᵀ only when that has at most this many entries."""

GRAM_COST = 0.25
"""Cost of a multiply-add of the columns' Gram matrix X Xᵀ (one BLAS product) relative to one
of the compiled loop: the Gram matrix is formed only when it saves more than it costs."""

BLAS_ROWS = 64
"""A primal row of at least this many pairs builds Xᵀ Ω X as one BLAS product (``None`` in
:meth:`RowGroups.solve`'s ``blas_rows``); shorter rows accumulate it pair by pair."""


class RowGroups:
    """The pairs of every row, sorted by row (stably: pairs keep their input order).

    ``rows`` and ``cols`` are the pairs' row and column ids (e.g. users and items);
    ``order`` sorts the pairs by row, ``ptr`` delimits each row's pairs in that order and
    ``sorted_cols`` holds their columns.
    """

    def __init__(self, rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        self.n_rows, self.n_cols, self.n_pairs = int(n_rows), int(n_cols), int(rows.size)
        self.order = np.argsort(rows, kind="stable")
        self.ptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n_rows))))
        self.sorted_cols = cols[self.order]

    def _gram_pays(self, k: int, k_penalised: int) -> bool:
        """Whether forming X Xᵀ of the columns (``GRAM_COST`` × n_cols² k multiply-adds) costs
        less than it saves the dual rows, each row taking its cheapest form either way (the
        multiply-add counts of ``_ridge_kernel._dual_is_cheaper``)."""
        if self.n_cols**2 > _MAX_COLUMN_GRAM:
            return False
        n = np.diff(self.ptr).astype(np.float64)
        n = n[n > 0]
        primal = n * k * k / 2 + k**3 / 6
        gathered = np.minimum(primal, n * n + n**3 / 6)
        built = np.minimum(primal, n * n * k / 2 + n**3 / 6)
        gram = GRAM_COST * self.n_cols**2 * k_penalised
        return bool(gram + gathered.sum() < built.sum())

    def solve(
        self,
        weight: np.ndarray,
        target: np.ndarray,
        x: np.ndarray,
        l2: float,
        *,
        free_last: bool = False,
        blas_rows: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """θ of every row (``n_rows`` × k) and the fitted values x_jᵀθ_r of every pair.

        ``weight`` (ω > 0) and ``target`` (t) are per pair in the input order; ``x`` holds
        one row x_j per column; rows without pairs get θ = 0. With ``free_last`` the last
        column of ``x`` must be all ones and its coefficient (a per-row bias) is not
        penalised: min Σ ω (t − x_{:k−1}ᵀθ_{:k−1} − θ_k)² + λ‖θ_{:k−1}‖². Primal rows of at
        least ``blas_rows`` pairs (default :data:`BLAS_ROWS`) build their system by BLAS.
        """
        from debiaseval.recommenders._ridge_kernel import solve_rows

        x = np.ascontiguousarray(x, dtype=np.float64)
        penalised = x[:, :-1] if free_last else x
        gathered = self._gram_pays(x.shape[1], penalised.shape[1])
        gram = penalised @ penalised.T if gathered else np.empty((0, 0))
        theta = np.empty((self.n_rows, x.shape[1]))
        fitted_sorted = np.empty(self.n_pairs)
        solve_rows(
            self.ptr,
            self.sorted_cols,
            np.ascontiguousarray(weight[self.order], dtype=np.float64),
            np.ascontiguousarray(target[self.order], dtype=np.float64),
            x,
            float(l2),
            gram,
            theta,
            fitted_sorted,
            bool(free_last),
            int(BLAS_ROWS if blas_rows is None else blas_rows),
        )
        fitted = np.empty(self.n_pairs)
        fitted[self.order] = fitted_sorted
        return theta, fitted

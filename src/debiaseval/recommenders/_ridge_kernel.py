"""Compiled row loop of :meth:`debiaseval.recommenders.ridge.RowGroups.solve` (numba).

Imported on first use only, so that jobs without E4 do not pay for numba's import; the
compiled code is cached next to this file (``cache=True``), so only the first process
after an install compiles it (a few seconds).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _cholesky(a: np.ndarray, n: int) -> None:
    """Lower Cholesky factor of the leading n × n block of ``a``, in place.

    Only the lower triangle of ``a`` is read; the sums run in a fixed order.
    """
    for j in range(n):
        s = a[j, j]
        for p in range(j):
            s -= a[j, p] * a[j, p]
        d = math.sqrt(s)
        a[j, j] = d
        for i in range(j + 1, n):
            s = a[i, j]
            for p in range(j):
                s -= a[i, p] * a[j, p]
            a[i, j] = s / d


@njit(cache=True)
def _cholesky_solve(a: np.ndarray, n: int, b: np.ndarray) -> None:
    """Overwrite ``b[:n]`` with (L Lᵀ)⁻¹ b, L the factor in ``a`` (L y = b, then Lᵀx = y)."""
    for i in range(n):
        s = b[i]
        for p in range(i):
            s -= a[i, p] * b[p]
        b[i] = s / a[i, i]
    for i in range(n - 1, -1, -1):
        b[i] /= a[i, i]
        v = b[i]
        for p in range(i):
            b[p] -= v * a[i, p]


@njit(cache=True)
def _dual_is_cheaper(n: int, k: int, gathered: bool) -> bool:
    """Whether the n × n dual system costs fewer multiply-adds than the k × k primal one."""
    build = n * n if gathered else n * n * k / 2
    return build + n * n * n / 6 < n * k * k / 2 + k * k * k / 6


@njit(cache=True)
def solve_rows(
    ptr: np.ndarray,
    cols: np.ndarray,
    weight: np.ndarray,
    target: np.ndarray,
    x: np.ndarray,
    l2: float,
    gram: np.ndarray,
    theta: np.ndarray,
    fitted: np.ndarray,
    free_last: bool,
    blas_rows: int,
) -> None:
    """Weighted ridge θ_r of every row and fitted x_jᵀθ_r of every pair (pairs sorted by row).

    Writes ``theta`` (rows × k) and ``fitted`` (pairs). ``gram`` is X Xᵀ of the columns (of
    their first k − 1 entries with ``free_last``), or empty to build the dual systems from
    ``x``. With ``free_last`` the last entry of every x_j is 1 and its coefficient (a bias)
    is not penalised: the primal puts no λ on it, the dual is kernel ridge regression with a
    free intercept β, (G + λΩ⁻¹) γ + β1 = t, 1ᵀγ = 0, solved through the Schur complement
    β = 1ᵀM⁻¹t / 1ᵀM⁻¹1 of M = G + λΩ⁻¹. A primal row of at least ``blas_rows`` pairs builds
    Xᵀ Ω X as one BLAS product (Ω^½X)ᵀ(Ω^½X) of its gathered, scaled design; shorter rows
    accumulate it pair by pair.
    """
    n_rows, k = theta.shape
    kf = k - 1 if free_last else k  # penalised coefficients
    gathered = gram.shape[0] > 0
    longest = 0
    longest_blas = 0
    for r in range(n_rows):
        n = ptr[r + 1] - ptr[r]
        if _dual_is_cheaper(n, k, gathered):
            longest = max(longest, n)
        elif n >= blas_rows:
            longest_blas = max(longest_blas, n)
    primal = np.empty((k, k))
    rhs = np.empty(k)
    dual = np.empty((longest, longest))
    coef = np.empty(longest)
    ones = np.empty(longest)
    rows_t = np.empty((k, longest))  # X_rᵀ of a dual row, when it is built from x
    design = np.empty((longest_blas, k))  # Ω_r^½ X_r of a long primal row
    scaled = np.empty(longest_blas)  # Ω_r^½ t_r
    full = np.empty((k, k))
    for r in range(n_rows):
        start, end = ptr[r], ptr[r + 1]
        n = end - start
        if n == 0:
            theta[r, :] = 0.0
        elif _dual_is_cheaper(n, k, gathered):  # (X Xᵀ + λΩ⁻¹) γ = t, θ = Xᵀγ
            if gathered:
                for i in range(n):
                    ci = cols[start + i]
                    for j in range(i + 1):
                        dual[i, j] = gram[ci, cols[start + j]]
            else:
                for i in range(n):
                    rows_t[:, i] = x[cols[start + i]]
                for i in range(n):
                    dual[i, : i + 1] = 0.0
                for f in range(kf):
                    for i in range(n):
                        v = rows_t[f, i]
                        for j in range(i + 1):
                            dual[i, j] += v * rows_t[f, j]
            for i in range(n):
                dual[i, i] += l2 / weight[start + i]
                coef[i] = target[start + i]
            _cholesky(dual, n)
            _cholesky_solve(dual, n, coef)
            theta[r, :] = 0.0
            if free_last:  # γ = M⁻¹t − β M⁻¹1 with β = 1ᵀM⁻¹t / 1ᵀM⁻¹1
                ones[:n] = 1.0
                _cholesky_solve(dual, n, ones)
                num = 0.0
                den = 0.0
                for i in range(n):
                    num += coef[i]
                    den += ones[i]
                beta = num / den
                for i in range(n):
                    coef[i] -= beta * ones[i]
                theta[r, k - 1] = beta
            for i in range(n):
                xi = x[cols[start + i]]
                c = coef[i]
                for f in range(kf):
                    theta[r, f] += c * xi[f]
                fitted[start + i] = target[start + i] - l2 / weight[start + i] * c
        elif n >= blas_rows:  # (Xᵀ Ω X + λI) θ = Xᵀ Ω t, Xᵀ Ω X by BLAS
            for q in range(n):
                p = start + q
                xp = x[cols[p]]
                s = math.sqrt(weight[p])
                for i in range(k):
                    design[q, i] = s * xp[i]
                scaled[q] = s * target[p]
            block = design[:n]
            np.dot(block.T, block, full)
            rhs[:] = np.dot(block.T, scaled[:n])
            for i in range(k):
                for j in range(i + 1):
                    primal[i, j] = full[i, j]
            for i in range(kf):
                primal[i, i] += l2
            _cholesky(primal, k)
            _cholesky_solve(primal, k, rhs)
            theta[r, :] = rhs
            for p in range(start, end):
                xp = x[cols[p]]
                s = 0.0
                for i in range(k):
                    s += xp[i] * rhs[i]
                fitted[p] = s
        else:  # (Xᵀ Ω X + λI) θ = Xᵀ Ω t
            primal[:, :] = 0.0
            rhs[:] = 0.0
            for p in range(start, end):
                xp = x[cols[p]]
                w = weight[p]
                wt = w * target[p]
                for i in range(k):
                    v = w * xp[i]
                    rhs[i] += wt * xp[i]
                    for j in range(i + 1):
                        primal[i, j] += v * xp[j]
            for i in range(kf):
                primal[i, i] += l2
            _cholesky(primal, k)
            _cholesky_solve(primal, k, rhs)
            theta[r, :] = rhs
            for p in range(start, end):
                xp = x[cols[p]]
                s = 0.0
                for i in range(k):
                    s += xp[i] * rhs[i]
                fitted[p] = s

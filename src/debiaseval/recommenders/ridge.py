"""Batched weighted ridge solves over the rows of a sparse pattern (the half-steps of weighted ALS).

Every row r (a user, or an item) of the observed pairs solves

    θ_r = argmin_θ Σ_{j ∈ O_r} ω_rj (t_rj − x_jᵀθ)² + λ‖θ‖²,

a k-dimensional ridge regression on its n_r pairs. With Z_r = diag(√ω_r) X_{O_r} (n_r × k)
and s_r = √ω_r ∘ t_r, the solution has two equal forms (the push-through identity):

- primal: θ_r = (Z_rᵀ Z_r + λI_k)⁻¹ Z_rᵀ s_r, a k × k system built in n_r k² flops;
- dual:   θ_r = Z_rᵀ (Z_r Z_rᵀ + λI_{n_r})⁻¹ s_r, an n_r × n_r system built in n_r² k flops
  (or gathered from the columns' Gram matrix X Xᵀ when there are few columns).

:class:`RowGroups` puts rows of similar n_r into buckets, once per fit; each bucket is
zero-padded to its largest n_r (a zero row of Z adds nothing to Z_rᵀZ_r, and in the dual
its coefficient is 0, so the padding is exact) and solved in the cheaper form (dual when
the bucket's length is below k) with batched ``matmul`` and ``numpy.linalg.solve`` in
float64. The cost of a half-step is about Σ_r min(n_r, k)² · max(n_r, k) flops through BLAS
instead of the pairs × k² sparse products of the former builder (kept as the reference in
:mod:`debiaseval.benchmark`; see docs/experiments/e4.md).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["RowGroups"]

_MAX_BLOCK = 1_000_000
"""Upper bound on the floats of one padded batch (rows × length × k): a few MB, cache-sized."""
_TYPICAL_K = 64
"""Batches are sized for k up to this (a dual system, length × length, is smaller)."""
_MAX_COLUMN_GRAM = 4_000_000
"""The dual gathers its systems from X Xᵀ when that has at most this many entries."""
_MAX_CACHED = 16_000_000
"""Upper bound on the cached X Xᵀ positions of the dual batches (int64, 128 MB)."""
_GROWTH = 1.25
"""A bucket takes rows up to this ratio of its shortest row's number of pairs (padding < 25%)."""
_MIN_ROWS = 32
"""A bucket with fewer rows also takes rows up to twice its shortest (fewer, fuller batches)."""
_PLANNED = 3
"""Rows of up to this many times k pairs are bucketed by the cost model below."""
_BATCH_COST, _ROW_COST, _CUBE_COST, _BUILD_COST = 60.0, 1.5, 1.2e-4, 1e-4
"""Cost model of a batch in µs: fixed (numpy calls); per row, fixed, per size³ of its system
(LAPACK) and per length × size × k of building it (the primal's product)."""


def _bucket_ends(sorted_counts: np.ndarray, k: int) -> list[int]:
    """End positions of the buckets of rows sorted by their number of pairs (ascending).

    Rows of up to ``_PLANNED`` · k pairs are split where a cost model of the batched solves
    (a fixed cost per batch; per row, one of its system, min(length, k)³, and of building
    it) is least, by dynamic programming over the distinct lengths; longer rows by the
    ratio ``_GROWTH``.
    """
    lengths, first_at = np.unique(sorted_counts, return_index=True)
    planned = int(np.searchsorted(lengths, _PLANNED * k, side="right"))
    size = np.minimum(lengths, k).astype(np.float64)
    row_cost = _ROW_COST + _CUBE_COST * size**3 + _BUILD_COST * lengths * size * k
    starts = np.append(first_at, sorted_counts.size)
    best, cut = [0.0], [0]
    for j in range(1, planned + 1):  # buckets of the distinct lengths i .. j-1
        rows = starts[j] - starts[:j]
        cost = np.array(best) + _BATCH_COST + rows * row_cost[j - 1]
        cut.append(int(np.argmin(cost)))
        best.append(float(cost[cut[-1]]))
    ends, j = [], planned
    while j > 0:
        ends.append(int(starts[j]))
        j = cut[j]
    ends.reverse()
    start = int(starts[planned])
    while start < sorted_counts.size:
        first = sorted_counts[start]
        end = int(np.searchsorted(sorted_counts, np.floor(first * _GROWTH), side="right"))
        if end - start < _MIN_ROWS:
            end = max(end, int(np.searchsorted(sorted_counts, 2 * first, side="right")))
        ends.append(end)
        start = end
    return ends


_DualPlan = tuple[list[tuple[int, int]], np.ndarray, np.ndarray, sp.csr_matrix]


class RowGroups:
    """The pairs of every row, in padded batches of rows with similar numbers of pairs.

    ``rows`` and ``cols`` are the pairs' row and column ids (e.g. users and items). Each
    batch holds its rows, the positions of their pairs in the input order (padding points
    at a sentinel position ``n_pairs`` of weight 0) and the pairs' columns (padding points
    at a zero row ``n_cols`` of the design matrix); pairs keep their input order. Batches
    hold at most about ``_MAX_BLOCK`` floats for k up to ``_TYPICAL_K``.
    """

    def __init__(
        self, rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int, k: int = _TYPICAL_K
    ) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        order = np.argsort(rows, kind="stable")
        counts = np.bincount(rows, minlength=n_rows)
        self.n_rows, self.n_cols, self.n_pairs = int(n_rows), int(n_cols), int(rows.size)
        self.order = order
        self.ptr = np.concatenate(([0], np.cumsum(counts)))
        self.sorted_cols = cols[order]
        self.batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        by_count = np.argsort(counts, kind="stable")
        by_count = by_count[counts[by_count] > 0]
        start = 0
        for end in _bucket_ends(counts[by_count], k):
            length = int(counts[by_count[end - 1]])
            step = max(1, _MAX_BLOCK // (length * _TYPICAL_K))
            for b0 in range(start, end, step):
                members = by_count[b0 : min(end, b0 + step)]
                offset = np.arange(length)
                inside = offset[None, :] < counts[members, None]
                slot = np.where(inside, self.ptr[members, None] + offset[None, :], 0)
                pairs = np.where(inside, order[slot], rows.size)
                self.batches.append((members, pairs, np.where(inside, cols[order[slot]], n_cols)))
            start = end
        self._flat: dict[int, np.ndarray] = {}
        self._cached = 0
        self._workspace = np.empty(0)
        self._plans: dict[int, _DualPlan] = {}

    def _column_gram_index(self, index: int) -> np.ndarray:
        """Flat positions of batch ``index``'s (col, col) pairs in the padded X Xᵀ (cached
        up to ``_MAX_CACHED`` positions in all)."""
        if index in self._flat:
            return self._flat[index]
        cols = self.batches[index][2]
        flat = cols[:, :, None] * (self.n_cols + 1) + cols[:, None, :]
        if self._cached + flat.size <= _MAX_CACHED:
            self._flat[index] = flat
            self._cached += flat.size
        return flat

    def _dual_plan(self, k: int) -> _DualPlan:
        """The batches solved in the dual from X Xᵀ for k columns (each with its offset in
        their concatenated pairs), those pairs, their rows, and the sparse matrix Γ of the
        rows' dual coefficients (θ = Γ X) whose ``data`` each solve overwrites; cached per k."""
        if k in self._plans:
            return self._plans[k]
        chosen, offset = [], 0
        if (self.n_cols + 1) ** 2 <= _MAX_COLUMN_GRAM:
            for index, (_, pairs, _) in enumerate(self.batches):
                if pairs.shape[1] < k:
                    chosen.append((index, offset))
                    offset += pairs.size
        picked = [self.batches[index] for index, _ in chosen]
        pairs = np.concatenate([b[1].ravel() for b in picked] or [np.empty(0, np.int64)])
        members = np.concatenate([b[0] for b in picked] or [np.empty(0, np.int64)])
        lengths = np.concatenate([np.full(b[0].size, b[1].shape[1]) for b in picked] or [[]])
        ptr = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
        cols = np.concatenate([b[2].ravel() for b in picked] or [np.empty(0, np.int64)])
        gamma = sp.csr_matrix((np.zeros(pairs.size), cols, ptr), (members.size, self.n_cols + 1))
        self._plans[k] = (chosen, pairs, members, gamma)
        return self._plans[k]

    def solve(
        self, weight: np.ndarray, target: np.ndarray, x: np.ndarray, l2: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """θ of every row (``n_rows`` × k) and the fitted values x_jᵀθ_r of every pair.

        ``weight`` (ω > 0) and ``target`` (t) are per pair in the input order; ``x`` holds
        one row x_j per column; rows without pairs get θ = 0. Primal:
        (X_rᵀ Ω_r X_r + λI) θ = X_rᵀ Ω_r t_r; dual: (X_r X_rᵀ + λΩ_r⁻¹) γ = t_r, θ = X_rᵀγ
        (the push-through identity with Ω_r; a padded pair gets 1 on the diagonal, γ = 0).
        """
        k = x.shape[1]
        weight = np.append(weight, 0.0)
        target = np.append(target, 0.0)
        ridge = np.append(l2 / weight[:-1], 1.0)  # λ/ω, and 1 for the padding
        design = np.vstack([x, np.zeros((1, k))])
        out = np.zeros((self.n_rows, k))
        fitted = np.empty(self.n_pairs + 1)
        chosen, pairs, members, gamma = self._dual_plan(k)
        if chosen:  # dual from the columns' Gram matrix: no rows × length × k array at all
            gram = (design @ design.T).ravel()
            t_all, diagonal, coef = target[pairs], ridge[pairs], gamma.data
            for index, offset in chosen:
                rows, length = self.batches[index][1].shape
                part = slice(offset, offset + rows * length)
                system = np.take(gram, self._column_gram_index(index))  # X_r X_rᵀ
                system.reshape(rows, -1)[:, :: length + 1] += diagonal[part].reshape(rows, -1)
                coef[part] = np.linalg.solve(system, t_all[part].reshape(rows, length, 1)).ravel()
            fitted[pairs] = t_all - diagonal * coef  # X_r X_rᵀγ = t − λΩ⁻¹γ
            out[members] = gamma @ design  # Σ_j γ_j x_j
        done = {index for index, _ in chosen}
        root = np.sqrt(weight)  # 0 for the padding
        inverse_root = np.append(1.0 / root[:-1], 0.0)
        for index, (members, pairs, cols) in enumerate(self.batches):
            if index in done:
                continue
            rows, length = pairs.shape
            size = rows * length * k
            if self._workspace.size < size:  # reused: no fresh pages per batch
                self._workspace = np.empty(max(size, _MAX_BLOCK // _TYPICAL_K * k))
            xr = self._workspace[:size].reshape(rows, length, k)
            np.take(design, cols, axis=0, out=xr, mode="clip")  # X_r, zero rows for the padding
            xrt = xr.transpose(0, 2, 1)
            if length < k:  # dual
                system = xr @ xrt
                system.reshape(rows, -1)[:, :: length + 1] += ridge[pairs]
                theta = xrt @ np.linalg.solve(system, target[pairs][:, :, None])
                fitted[pairs] = (xr @ theta)[:, :, 0]
            else:  # primal in Z_r = diag(√ω) X_r, s_r = √ω ∘ t_r: ZᵀZ is one symmetric product
                root_r = root[pairs]
                xr *= root_r[:, :, None]
                system = xrt @ xr
                system.reshape(rows, -1)[:, :: k + 1] += l2
                theta = np.linalg.solve(system, xrt @ (root_r * target[pairs])[:, :, None])
                fitted[pairs] = (xr @ theta)[:, :, 0] * inverse_root[pairs]
            out[members] = theta[:, :, 0]
        return out, fitted[:-1]

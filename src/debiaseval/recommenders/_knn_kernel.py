"""Compiled top-k neighbour lists of :func:`debiaseval.recommenders.knn.neighbour_lists` (numba).

One pass per row r of the unit-norm rows X: the sparse product row x_r·Xᵀ is accumulated
in a dense per-thread buffer over the rows s it touches (a row never touched has
similarity 0), and its k best entries are kept in a bounded heap while the touched rows
are read: nothing of size n × n, nor a dense block of rows, is built. The rows are
split over threads; each row's list depends on that row alone, so the result is the
same for any thread count.

The sums run in the order of scipy's sparse product ``X[r] @ X.T`` (the stored order of
row r, one product per term), so the similarities are bit-identical to it; the lists
follow :func:`debiaseval.recommenders.ranking.top_k_indices` on that row with the diagonal
at -inf: similarity descending, ties by the smaller index, the zero similarities (in
index order) after the positive ones and before the negative ones.

Imported on first use only (no numba import for jobs without k-NN); compiled code is
cached next to this file, so only the first process after an install compiles it.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _worse(v1: float, i1: int, v2: float, i2: int) -> bool:
    """Whether entry (v1, i1) ranks after (v2, i2): smaller value, or equal and larger index."""
    return v1 < v2 or (v1 == v2 and i1 > i2)


@njit(cache=True)
def _sift_down(hv: np.ndarray, hi: np.ndarray, size: int, pos: int) -> None:
    """Restore the heap (worst entry at the root) below ``pos``."""
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        if child + 1 < size and _worse(hv[child + 1], hi[child + 1], hv[child], hi[child]):
            child += 1
        if not _worse(hv[child], hi[child], hv[pos], hi[pos]):
            return
        hv[pos], hv[child] = hv[child], hv[pos]
        hi[pos], hi[child] = hi[child], hi[pos]
        pos = child


@njit(cache=True)
def _push(hv: np.ndarray, hi: np.ndarray, size: int, k: int, v: float, i: int) -> int:
    """Offer entry (v, i) to the heap of the ``k`` best; return the heap's new size."""
    if size < k:
        pos = size
        hv[pos] = v
        hi[pos] = i
        while pos > 0:  # sift up
            parent = (pos - 1) // 2
            if not _worse(hv[pos], hi[pos], hv[parent], hi[parent]):
                break
            hv[pos], hv[parent] = hv[parent], hv[pos]
            hi[pos], hi[parent] = hi[parent], hi[pos]
            pos = parent
        return size + 1
    if _worse(v, i, hv[0], hi[0]):
        return size
    hv[0] = v
    hi[0] = i
    _sift_down(hv, hi, size, 0)
    return size


@njit(cache=True)
def _drain(hv: np.ndarray, hi: np.ndarray, size: int, vals: np.ndarray, cols: np.ndarray) -> None:
    """Write the heap's entries best first into ``vals[:size]``, ``cols[:size]``."""
    for last in range(size - 1, -1, -1):
        vals[last] = hv[0]
        cols[last] = hi[0]
        hv[0] = hv[last]
        hi[0] = hi[last]
        _sift_down(hv, hi, last, 0)


@njit(cache=True)
def _row_lists(
    r: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    t_indptr: np.ndarray,
    t_indices: np.ndarray,
    t_data: np.ndarray,
    k: int,
    acc: np.ndarray,
    stamp: np.ndarray,
    touched: np.ndarray,
    everyone: np.ndarray,
    hv: np.ndarray,
    hi: np.ndarray,
    out_cols: np.ndarray,
    out_vals: np.ndarray,
) -> None:
    """Row r's best-first top-``k`` list into ``out_cols[r]``, ``out_vals[r]``.

    A row whose product has at least n / 4 terms touches most rows: its sums skip the
    bookkeeping of touched rows and its candidates are all n rows (``everyone``).
    """
    work = 0
    for jj in range(indptr[r], indptr[r + 1]):
        c = indices[jj]
        work += np.int64(t_indptr[c + 1] - t_indptr[c])
    n = acc.size
    if 4 * work >= n:
        for jj in range(indptr[r], indptr[r + 1]):
            c = indices[jj]
            v = data[jj]
            for kk in range(t_indptr[c], t_indptr[c + 1]):
                acc[t_indices[kk]] += v * t_data[kk]
        touched = everyone
        n_touched = n
    else:
        n_touched = 0
        for jj in range(indptr[r], indptr[r + 1]):
            c = indices[jj]
            v = data[jj]
            for kk in range(t_indptr[c], t_indptr[c + 1]):
                s = t_indices[kk]
                if stamp[s] != r:
                    stamp[s] = r
                    touched[n_touched] = s
                    n_touched += 1
                acc[s] += v * t_data[kk]
    size = 0
    floor = 0.0  # an entry below the heap's worst (once full) is never kept
    for t in range(n_touched):  # the positive similarities
        s = touched[t]
        v = acc[s]
        if v > 0.0 and v >= floor and s != r:
            size = _push(hv, hi, size, k, v, s)
            if size == k:
                floor = hv[0]
    _drain(hv, hi, size, out_vals[r], out_cols[r])
    filled = size
    s = 0
    while filled < k and s < acc.size:  # then zeros (untouched or cancelled), by index
        if s != r and acc[s] == 0.0:
            out_cols[r, filled] = s
            out_vals[r, filled] = 0.0
            filled += 1
        s += 1
    if filled < k:  # then the negative similarities
        size = 0
        for t in range(n_touched):
            s = touched[t]
            if s != r and acc[s] < 0.0:
                size = _push(hv, hi, size, k - filled, acc[s], s)
        _drain(hv, hi, size, out_vals[r, filled:], out_cols[r, filled:])
    for t in range(n_touched):
        acc[touched[t]] = 0.0


@njit(cache=True, parallel=True)
def top_k_lists(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    t_indptr: np.ndarray,
    t_indices: np.ndarray,
    t_data: np.ndarray,
    k: int,
    n_chunks: int,
    out_cols: np.ndarray,
    out_vals: np.ndarray,
) -> None:
    """Fill ``out_cols``/``out_vals`` (n × k) with every row's best-first top-``k`` list.

    X is the CSR (``indptr``, ``indices``, ``data``) of n unit-norm rows, Xᵀ its transpose
    as CSR (``t_*``), with unsigned offsets and ids (no negative-index checks in the inner
    loop); ``k`` ≤ n - 1. Row r goes to chunk r mod ``n_chunks`` (the chunks run
    on the threads; striding spreads costly rows evenly).
    """
    n = indptr.size - 1
    for chunk in prange(n_chunks):
        acc = np.zeros(n, dtype=np.float64)
        stamp = np.full(n, -1, dtype=np.int64)
        touched = np.empty(n, dtype=np.int64)
        everyone = np.arange(n)
        hv = np.empty(k, dtype=np.float64)
        hi = np.empty(k, dtype=np.int64)
        for r in range(chunk, n, n_chunks):
            _row_lists(
                r,
                indptr,
                indices,
                data,
                t_indptr,
                t_indices,
                t_data,
                k,
                acc,
                stamp,
                touched,
                everyone,
                hv,
                hi,
                out_cols,
                out_vals,
            )

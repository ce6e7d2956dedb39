"""Compiled top-k selection of :func:`debiaseval.recommenders.ranking.top_k` (numba).

Imported on first use only, so that jobs that rank nothing do not pay for numba's import;
the compiled code is cached next to this file (``cache=True``), so only the first process
after an install compiles it. Both kernels run their rows in parallel (``prange``) on
numba's threads (:func:`numba.set_num_threads`); every row is computed by one thread
alone, in a fixed order, so the result never depends on the thread count.

The order is the project's: score descending, ties by the smaller item id. A row's k best
are kept in a binary heap whose root is the worst of them; items are visited in ascending
id, so an item that ties with the root has the larger id and loses: one comparison with
the root decides almost every item.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_BLOCK = 64
"""Items compared with a row's current k-th best at once, before any is inserted."""


@njit(cache=True, inline="always")
def _worse(va, ia, vb, ib) -> bool:  # type: ignore[no-untyped-def]
    """Whether (va, ia) ranks after (vb, ib): a smaller score, or the same and a larger id."""
    return va < vb or (va == vb and ia > ib)


@njit(cache=True, inline="always")
def _count_above(s, start, n, worst):  # type: ignore[no-untyped-def]
    """How many of ``s[start:start + n]`` are above ``worst`` or NaN (vectorised)."""
    above = np.uint32(0)
    for q in range(n):
        above += np.uint32(0) if s[start + q] <= worst else np.uint32(1)
    return above


@njit(cache=True)
def _sift_down(vals, items, start, size) -> None:  # type: ignore[no-untyped-def]
    """Restore the heap (root = worst) of ``vals[:size]``/``items[:size]`` below ``start``."""
    pos = start
    v, i = vals[pos], items[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _worse(vals[right], items[right], vals[child], items[child]):
            child = right
        if not _worse(vals[child], items[child], v, i):
            break
        vals[pos], items[pos] = vals[child], items[child]
        pos = child
    vals[pos], items[pos] = v, i


@njit(cache=True)
def _sort_heap(vals, items) -> None:  # type: ignore[no-untyped-def]
    """Heapsort in place: the heap (root = worst) becomes best first."""
    for end in range(vals.shape[0] - 1, 0, -1):
        vals[0], vals[end] = vals[end], vals[0]
        items[0], items[end] = items[end], items[0]
        _sift_down(vals, items, 0, end)


@njit(cache=True, inline="always")
def _offer(s, start, stop, worst, vals, items, indices, p, end):  # type: ignore[no-untyped-def]
    """Offer items ``start:stop`` to the heap; returns (worst, p, nan).

    An item above the root is inserted unless it is excluded: ``indices[p:end]`` are the
    row's excluded items not yet passed, sorted, so one forward pointer finds them.
    """
    k = items.shape[0]
    nan = False
    for q in range(start, stop):
        v = s[q]
        if v > worst:
            while p < end and indices[p] < q:
                p += 1
            if p < end and indices[p] == q:
                continue
            vals[0], items[0] = v, q
            _sift_down(vals, items, 0, k)
            worst = vals[0]
        elif v != v:
            nan = True
    return worst, p, nan


@njit(cache=True, inline="always")
def _select_row(s, u, indptr, indices, vals, items, nan_rows, r) -> None:  # type: ignore[no-untyped-def]
    """:func:`select_top_k` of row ``r`` (scores ``s``, user ``u``) into ``vals``/``items``.

    Blocks of ``_BLOCK`` items are first counted (vectorised) against the root: a block with
    none above it (nor NaN, for which the comparison is false too) is skipped whole, and so is
    every such eighth of a block that has one; only the rest is offered item by item.
    """
    n_items = s.shape[0]
    k = items.shape[0]
    for slot in range(k):  # sentinels: worse than any candidate
        vals[slot] = -np.inf
        items[slot] = n_items + k - slot
    worst = vals[0]
    nan = False
    p, end = indptr[u], indptr[u + 1]
    sub = _BLOCK // 8
    full = n_items - n_items % _BLOCK
    for j in range(0, full, _BLOCK):
        if _count_above(s, j, _BLOCK, worst) == 0:
            continue
        for start in range(j, j + _BLOCK, sub):
            if _count_above(s, start, sub, worst) == 0:
                continue
            worst, p, found = _offer(s, start, start + sub, worst, vals, items, indices, p, end)
            nan |= found
    worst, p, found = _offer(s, full, n_items, worst, vals, items, indices, p, end)
    nan_rows[r] = nan | found
    _sort_heap(vals, items)
    for slot in range(k):
        if items[slot] >= n_items:
            items[slot] = -1


@njit(cache=True, parallel=True)
def select_top_k(scores, users, indptr, indices, out_items, out_scores, nan_rows) -> None:  # type: ignore[no-untyped-def]
    """Top ``k = out_items.shape[1]`` of every row of ``scores`` (batch × n_items).

    Row r belongs to user ``users[r]``; the items ``indices[indptr[u]:indptr[u + 1]]``
    (sorted ascending) are not candidates. Items scored -inf are never listed. Writes
    ``out_items[r]`` (int64, best first, -1 after the last listed item), ``out_scores[r]``
    (in the dtype of ``scores``) and ``nan_rows[r]`` (whether the row holds a NaN).
    """
    for r in prange(scores.shape[0]):
        _select_row(scores[r], users[r], indptr, indices, out_scores[r], out_items[r], nan_rows, r)


@njit(cache=True)
def select_top_k_serial(scores, users, indptr, indices, out_items, out_scores, nan_rows) -> None:  # type: ignore[no-untyped-def]
    """:func:`select_top_k` on the calling thread (no thread pool to wake for small batches)."""
    for r in range(scores.shape[0]):
        _select_row(scores[r], users[r], indptr, indices, out_scores[r], out_items[r], nan_rows, r)


_CHUNK = 256
"""Users per task of :func:`take_from_order`: each task marks its users' items in one array."""


@njit(cache=True)
def _take_rows(order, order_scores, users, indptr, indices, out_items, out_scores, start, stop):  # type: ignore[no-untyped-def]
    """:func:`take_from_order` of rows ``start:stop``, with one array marking a user's items."""
    k = out_items.shape[1]
    n = order.shape[0]
    marked = np.zeros(n, dtype=np.bool_)
    for r in range(start, stop):
        u = users[r]
        own = indices[indptr[u] : indptr[u + 1]]
        for item in own:
            marked[item] = True
        taken = 0
        p = 0
        while taken < k and p < n:
            if order_scores[p] == -np.inf:  # never listed, as in select_top_k
                break
            item = order[p]
            if not marked[item]:
                out_items[r, taken] = item
                out_scores[r, taken] = order_scores[p]
                taken += 1
            p += 1
        for slot in range(taken, k):
            out_items[r, slot] = -1
            out_scores[r, slot] = -np.inf
        for item in own:
            marked[item] = False


@njit(cache=True, parallel=True)
def take_from_order(order, order_scores, users, indptr, indices, out_items, out_scores) -> None:  # type: ignore[no-untyped-def]
    """The first ``k = out_items.shape[1]`` candidates of one item ``order`` for every user.

    ``order`` lists every item best first (ties by the smaller id) and ``order_scores`` their
    scores; user ``users[r]``'s items ``indices[indptr[u]:indptr[u + 1]]`` are skipped (marked
    in an array of the items): O(k + |I_u|) steps per user. Writes ``out_items[r]`` (-1 after
    the last) and ``out_scores[r]`` (-inf after the last).
    """
    n_users = users.shape[0]
    for c in prange((n_users + _CHUNK - 1) // _CHUNK):
        stop = min((c + 1) * _CHUNK, n_users)
        _take_rows(
            order, order_scores, users, indptr, indices, out_items, out_scores, c * _CHUNK, stop
        )


@njit(cache=True)
def take_from_order_serial(
    order, order_scores, users, indptr, indices, out_items, out_scores
) -> None:  # type: ignore[no-untyped-def]
    """:func:`take_from_order` on the calling thread."""
    _take_rows(
        order, order_scores, users, indptr, indices, out_items, out_scores, 0, users.shape[0]
    )

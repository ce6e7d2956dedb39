"""Top-N recommendation lists over the candidate set (docs/own-recommender.md).

Candidates of a user are, by default, every item the user has no training
interaction with ([SAC20] §4). Rankings are deterministic: items are ordered
by score descending, ties broken by the smaller item id, also at the k-th
boundary, so results never depend on the batch size.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.io.errors import ContractError

if TYPE_CHECKING:
    from debiaseval.recommenders.base import Recommender

__all__ = [
    "empty_recommendations",
    "item_order",
    "largest",
    "nan_scores_message",
    "rank_from_order",
    "rank_threads",
    "top_k",
    "top_k_indices",
]

_RANK_MAX = np.iinfo(np.int16).max


def _select_with_ties(s: np.ndarray, kth: np.ndarray, k: int) -> np.ndarray:
    """Columns of the k largest entries per row given the k-th largest value ``kth``.

    Takes every entry above ``kth`` and, of those equal to it, the ones with the
    smallest column index; returns them in ascending column order.
    """
    greater = s > kth
    equal = s == kth
    need = k - greater.sum(axis=1, keepdims=True)  # >= 1 by definition of kth
    chosen = greater | (equal & (np.cumsum(equal, axis=1, dtype=np.int32) <= need))
    return np.nonzero(chosen)[1].reshape(s.shape[0], k)


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` largest entries of each row, best first.

    Ties are broken by the smaller column index, at the k-th boundary too.
    O(n_cols) per row: one ``np.argpartition`` picks the k largest entries and
    the (k+1)-th largest; a row where the k-th and (k+1)-th are equal (ties
    straddle the cut) is re-selected with a cumulative count over the entries
    equal to the k-th; the k picks are then ordered by (score descending,
    column ascending). Returns an int64 array of shape
    (n_rows, min(k, n_cols)). ``scores`` must not contain NaN; -inf entries are
    ranked last like any other value.
    """
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"scores must be 2-D, got shape {s.shape}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    n_rows, n_cols = s.shape
    kk = min(int(k), n_cols)
    if kk == 0 or n_rows == 0:
        return np.empty((n_rows, kk), dtype=np.int64)
    if kk == n_cols:
        cols = np.broadcast_to(np.arange(n_cols), s.shape)
        vals = s
    else:
        # one selection places the (kk+1)-th largest entry at n_cols-kk-1 and the kk largest
        # after it: a row straddles when the two values are equal
        part = np.argpartition(s, n_cols - kk - 1, axis=1)
        cols = part[:, n_cols - kk :]
        vals = np.take_along_axis(s, cols, axis=1)
        kth = vals.min(axis=1, keepdims=True)  # the kk-th largest value of the row
        below = np.take_along_axis(s, part[:, n_cols - kk - 1 : n_cols - kk], axis=1)
        straddle = np.flatnonzero(below == kth)
        if straddle.size:
            cols[straddle] = _select_with_ties(s[straddle], kth[straddle], kk)
            vals[straddle] = np.take_along_axis(s[straddle], cols[straddle], axis=1)
    order = np.lexsort((cols, -vals), axis=1)
    return np.take_along_axis(cols, order, axis=1).astype(np.int64, copy=False)


_PARALLEL_ROWS = 64
"""Fewer rows than this are ranked on the calling thread: waking the pool costs more."""


def _parallel(n_rows: int) -> bool:
    """Whether ``n_rows`` rows are ranked on numba's threads (more than one, enough rows)."""
    import numba

    # the config first: a process limited to one thread never starts numba's pool
    return n_rows >= _PARALLEL_ROWS and _pool_size(numba) > 1 and numba.get_num_threads() > 1


def _pool_size(numba: ModuleType) -> int:
    """numba's most threads (``NUMBA_NUM_THREADS``), read without starting its pool."""
    return int(numba.config.NUMBA_NUM_THREADS)


def item_order(scores: np.ndarray) -> np.ndarray:
    """Every item best first, ties by the smaller id: the order of a model whose score of an
    item is the same for every user (int64; stable sort of the negated scores)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable").astype(np.int64)


def rank_from_order(
    order: np.ndarray,
    scores: np.ndarray,
    users: np.ndarray,
    k: int,
    exclude: sp.csr_matrix,
) -> tuple[np.ndarray, np.ndarray]:
    """``_rank`` of a model with one item ``order`` (:func:`item_order`) for every user.

    ``scores`` are the items' scores (indexed by item id); ``exclude`` is a CSR matrix
    with sorted indices whose row u holds the items that are not candidates of user u.
    Returns (items, scores), each (len(users), k): the first k candidates of ``order``
    for each user, -1 (and -inf) after the last. O(k + |I_u|) steps per user, threads
    over users, no dense score matrix.
    """
    from debiaseval.recommenders import _topk_kernel as kernel  # numba: only when ranking

    u = np.asarray(users, dtype=np.int64)
    items = np.empty((u.size, k), dtype=np.int64)
    vals = np.empty((u.size, k), dtype=np.float64)
    order_scores = np.asarray(scores, dtype=np.float64)[order]
    take = kernel.take_from_order if _parallel(u.size) else kernel.take_from_order_serial
    take(order, order_scores, u, exclude.indptr, exclude.indices, items, vals)
    return items, vals


def largest(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries of every row of a dense matrix, best first, by the compiled
    pass of :func:`top_k` (ties by the smaller column, -inf never listed), on numba's threads.

    Returns (columns, values), each (n_rows, k): int64 columns, -1 after the last listed
    entry, and the values in the dtype of ``scores`` (float32 or float64), -inf after the
    last. Raises ``ValueError`` for NaN.
    """
    from debiaseval.recommenders import _topk_kernel as kernel  # numba: only when ranking

    s = np.ascontiguousarray(scores)
    if s.dtype not in (np.float32, np.float64):
        s = s.astype(np.float64)
    n_rows = s.shape[0]
    cols = np.empty((n_rows, k), dtype=np.int64)
    vals = np.empty((n_rows, k), dtype=s.dtype)
    nan = np.empty(n_rows, dtype=np.bool_)
    none = np.zeros(n_rows + 1, dtype=np.int64)  # no excluded column
    rows = np.arange(n_rows, dtype=np.int64)
    select = kernel.select_top_k if _parallel(n_rows) else kernel.select_top_k_serial
    select(s, rows, none, none[:0], cols, vals, nan)
    if nan.any():
        raise ValueError("scores contain NaN")
    return cols, vals


def empty_recommendations() -> pd.DataFrame:
    """A recommendation frame without rows, with the columns and dtypes of :func:`top_k`."""
    return pd.DataFrame(
        {
            "user": np.empty(0, np.int32),
            "item": np.empty(0, np.int32),
            "rank": np.empty(0, np.int16),
            "score": np.empty(0, np.float32),
        }
    )


def _exclusions(train: sp.spmatrix | sp.sparray, exclude: bool) -> sp.csr_matrix:
    """``train`` as CSR with sorted indices (a copy only when needed), or an empty matrix."""
    if not exclude:
        return sp.csr_matrix(train.shape, dtype=np.int8)
    x = sp.csr_matrix(train)
    if not x.has_sorted_indices:
        x = x.copy()
        x.sort_indices()
    return x


def _scores(model: Recommender, users: np.ndarray) -> np.ndarray:
    """A batch's dense scores in the model's own precision (float32 or float64).

    A :class:`~debiaseval.recommenders.base.Recommender` gives them before
    ``score``'s cast to float64 (exact, so the ranking is the same); one that overrides
    ``score``, or any other object with ``score(users)`` (a strategy, lists made
    elsewhere), through ``score``.
    """
    from debiaseval.recommenders.base import Recommender

    native = isinstance(model, Recommender) and type(model).score is Recommender.score
    s = model._native_scores(users) if native else model.score(users)
    s = np.asarray(s)
    if s.dtype not in (np.float32, np.float64):
        s = s.astype(np.float64)
    return np.ascontiguousarray(s)


def rank_threads(threads: int | None) -> int:
    """The threads a ranking uses: ``threads``, or numba's default (``NUMBA_NUM_THREADS``,
    which a workflow job sets to its Snakemake ``threads``) when None."""
    import numba

    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int | np.integer) or threads < 1
    ):
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    if _pool_size(numba) == 1:
        return 1
    if threads is None:
        return int(numba.get_num_threads())
    return min(int(threads), _pool_size(numba))


def _frame(blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """One recommendation frame from (users, items, scores) blocks, items -1 where unlisted."""
    if not blocks:
        return empty_recommendations()
    users = np.concatenate([b[0] for b in blocks])
    items = np.concatenate([b[1] for b in blocks])
    scores = np.concatenate([b[2].astype(np.float32) for b in blocks])
    keep = items >= 0  # listed slots come first in every row
    rank = np.broadcast_to(np.arange(1, items.shape[1] + 1, dtype=np.int16), items.shape)
    return pd.DataFrame(
        {
            "user": np.broadcast_to(users[:, None], items.shape)[keep].astype(np.int32),
            "item": items[keep].astype(np.int32),
            "rank": rank[keep],
            "score": scores[keep],
        }
    )


def _ranked_batch(
    model: Recommender, batch: np.ndarray, k: int, x: sp.csr_matrix, kernel: object
) -> tuple[np.ndarray, np.ndarray]:
    """(items, scores) of one batch: from the model's ``_rank`` if it has one, else from its
    dense scores by the compiled selection."""
    n_items = x.shape[1]
    rank = getattr(model, "_rank", None)
    if rank is not None:
        items, vals = rank(batch, k, x)
        items, vals = np.asarray(items), np.asarray(vals)
        if items.shape != (batch.size, k) or vals.shape != items.shape:
            raise ValueError(
                f"{type(model).__name__}._rank returned shapes {items.shape} and {vals.shape}, "
                f"expected {(batch.size, k)}"
            )
        return items.astype(np.int64, copy=False), vals
    s = _scores(model, batch)
    if s.shape != (batch.size, n_items):
        raise ValueError(
            f"model scores have shape {s.shape}, expected {(batch.size, n_items)}: "
            "was it fitted on this train matrix?"
        )
    items = np.empty((batch.size, k), dtype=np.int64)
    vals = np.empty((batch.size, k), dtype=s.dtype)
    nan = np.empty(batch.size, dtype=np.bool_)
    select = kernel.select_top_k if _parallel(batch.size) else kernel.select_top_k_serial  # type: ignore[attr-defined]
    select(s, batch, x.indptr, x.indices, items, vals, nan)
    if nan.any():
        raise ContractError(nan_scores_message(type(model), nan, batch))
    return items, vals


def nan_scores_message(cls: type, nan: np.ndarray, users: np.ndarray) -> str:
    """The one line for scores with NaN: ``nan`` flags the rows of ``users`` that hold one."""
    return (
        f"{cls.__module__}.{cls.__qualname__}._score() returned NaN scores for "
        f"{int(nan.sum())} of the {users.size} users of a batch (the first: user "
        f"{int(users[np.argmax(nan)])}); expected finite scores, or -inf for an item it "
        "excludes"
    )


def top_k(
    model: Recommender,
    train: sp.spmatrix | sp.sparray,
    k: int,
    *,
    users: np.ndarray | None = None,
    batch_size: int = 1024,
    exclude_train: bool = True,
    threads: int | None = None,
) -> pd.DataFrame:
    """Top-``k`` recommendations of a fitted ``model`` for ``users`` (docs/own-recommender.md).

    ``train`` is the n_users × n_items training matrix the model was fitted on;
    with ``exclude_train`` its stored pairs are removed from the candidates, and
    a user with fewer than ``k`` candidates gets fewer rows; an item scored -inf is
    never listed. ``users`` defaults to every user; they are ranked in sorted,
    de-duplicated order, in batches of ``batch_size``, on ``threads`` threads (None:
    :func:`rank_threads`); neither changes the result, only memory and time.

    A model with the optional ``_rank(users, k, exclude)`` method (docs/own-recommender.md)
    ranks itself without dense scores; any other is scored by batch (in float32 when the
    model scores in float32) and its top ``k`` selected in one compiled pass
    (:mod:`debiaseval.recommenders._topk_kernel`, parallel over users).

    Returns a frame with columns ``user`` (int32), ``item`` (int32), ``rank``
    (int16, 1-based) and ``score`` (float32), sorted by user then rank; items
    are ordered by score descending, ties by smaller item id.
    """
    if not sp.issparse(train) or train.ndim != 2:
        raise ValueError("train must be a 2-D scipy sparse matrix")
    if not 1 <= k <= _RANK_MAX:
        raise ValueError(f"k must be in [1, {_RANK_MAX}], got {k}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n_users, n_items = train.shape
    if users is None:
        users = np.arange(n_users, dtype=np.int64)
    else:
        users = np.unique(np.asarray(users, dtype=np.int64))
        if users.size and (users[0] < 0 or users[-1] >= n_users):
            raise ValueError(f"user ids must lie in [0, {n_users})")
    kk = min(int(k), n_items)
    if kk == 0 or users.size == 0:
        return empty_recommendations()
    import numba

    from debiaseval.recommenders import _topk_kernel as kernel  # numba: only when ranking

    x = _exclusions(train, exclude_train)
    n_threads = rank_threads(threads)
    pooled = _pool_size(numba) > 1  # else the pool is never started
    before = numba.get_num_threads() if pooled else 1
    if pooled:
        numba.set_num_threads(n_threads)
    try:
        blocks = []
        for start in range(0, users.size, batch_size):
            batch = users[start : start + batch_size]
            blocks.append((batch, *_ranked_batch(model, batch, kk, x, kernel)))
    finally:
        if pooled:
            numba.set_num_threads(before)
    return _frame(blocks)

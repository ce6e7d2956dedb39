"""Top-N recommendation lists over the candidate set (docs/own-recommender.md).

Candidates of a user are, by default, every item the user has no training
interaction with ([SAC20] §4). Rankings are deterministic: items are ordered
by score descending, ties broken by the smaller item id, also at the k-th
boundary, so results never depend on the batch size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp

if TYPE_CHECKING:
    from debiaseval.recommenders.base import Recommender

__all__ = ["empty_recommendations", "top_k", "top_k_indices"]

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


def top_k(
    model: Recommender,
    train: sp.spmatrix | sp.sparray,
    k: int,
    *,
    users: np.ndarray | None = None,
    batch_size: int = 1024,
    exclude_train: bool = True,
) -> pd.DataFrame:
    """Top-``k`` recommendations of a fitted ``model`` for ``users`` (docs/own-recommender.md).

    ``train`` is the n_users × n_items training matrix the model was fitted on;
    with ``exclude_train`` its stored pairs are removed from the candidates, and
    a user with fewer than ``k`` candidates gets fewer rows. ``users`` defaults
    to every user; they are scored in sorted, de-duplicated order, in batches of
    ``batch_size`` (which changes memory use, never the result).

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
    x = sp.csr_matrix(train)
    if users is None:
        users = np.arange(n_users, dtype=np.int64)
    else:
        users = np.unique(np.asarray(users, dtype=np.int64))
        if users.size and (users[0] < 0 or users[-1] >= n_users):
            raise ValueError(f"user ids must lie in [0, {n_users})")

    parts: list[pd.DataFrame] = []
    for start in range(0, users.size, batch_size):
        batch = users[start : start + batch_size]
        s = model.score(batch)
        if s.shape != (batch.size, n_items):
            raise ValueError(
                f"model scores have shape {s.shape}, expected {(batch.size, n_items)}: "
                "was it fitted on this train matrix?"
            )
        if np.isnan(s.max(initial=-np.inf)):  # max propagates NaN: one fast pass
            raise ValueError(f"{type(model).__name__} returned NaN scores")
        if exclude_train:
            rows = x[batch]
            s[np.repeat(np.arange(batch.size), np.diff(rows.indptr)), rows.indices] = -np.inf
        cols = top_k_indices(s, k)
        vals = np.take_along_axis(s, cols, axis=1)
        keep = vals > -np.inf  # never return an excluded (or -inf scored) item
        rank = np.broadcast_to(np.arange(1, cols.shape[1] + 1, dtype=np.int16), cols.shape)
        parts.append(
            pd.DataFrame(
                {
                    "user": np.broadcast_to(batch[:, None], cols.shape)[keep].astype(np.int32),
                    "item": cols[keep].astype(np.int32),
                    "rank": rank[keep],
                    "score": vals[keep].astype(np.float32),
                }
            )
        )
    if not parts:
        return empty_recommendations()
    return pd.concat(parts, ignore_index=True)

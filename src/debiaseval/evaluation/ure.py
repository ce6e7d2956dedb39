"""Recall@K from a randomly exposed set: Unbiased Recall Evaluation and the traditional way.

[URE24] (*Debias can be unreliable*, arXiv 2409.04810), docs/experiments/e5.md. A user u has a
randomly exposed set R_u (items shown at random, labels known) with positives
R_u⁺, and, on fully exposed data, the set P_u of all positives among the
candidates (every item u has no training interaction with).

- True Recall@K(u) = |P_u ∩ T_K(u)| / |P_u|, T_K(u) = the model's top K over
  all candidates.
- URE@K(u) = |{i ∈ R_u⁺ : score(u, i) > s_K}| / |R_u⁺|, s_K = the score of the
  (K+1)-th best candidate ([URE24]'s URE; docs/experiments/e5.md). Items above s_K are
  exactly T_K(u), so URE@K(u) = |R_u⁺ ∩ T_K(u)| / |R_u⁺|; given |R_u⁺| = m ≥ 1
  a uniform R_u makes R_u⁺ a uniform m-subset of P_u, hence
  E[URE@K(u) | R_u⁺ ≠ ∅] = True Recall@K(u): unbiased for every user.
- Traditional Recall@K(u) ranks only R_u's items and counts R_u⁺'s items in
  that short list's top K: it answers a different question and is 1 for K ≥ |R_u|.

**Ties.** ``ties="rank"`` (default) orders candidates by score descending and
breaks ties by the smaller item id, exactly as :func:`debiaseval.recommenders.ranking.top_k`
does, so that exactly K candidates pass the threshold and URE@K estimates the
true Recall@K of the lists the project ranks (the threshold is the (K+1)-th
candidate of that order). ``ties="strict"`` is the formula read literally: an
item whose score equals s_K is not counted, so when the K-th and (K+1)-th scores
tie fewer than K items pass (conservative; identical to "rank" without ties).
The traditional Recall@K breaks ties within R_u by the smaller item id too.
Scores of -inf (excluded candidates, e.g. training items) are never counted.

The kernels take one batch of users' dense scores (rows = users of the batch)
and the pairs to count as row/column arrays; every per-user value is NaN for a
user without any pair to count. :func:`recall_estimates` drives them over the
users with a pair to count, in batches, and averages over the users where each value is defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.recommenders.ranking import largest

if TYPE_CHECKING:
    from debiaseval.recommenders.base import Recommender

__all__ = [
    "TIES",
    "in_top_k",
    "kth_largest",
    "mean_recall",
    "recall_estimates",
    "traditional_recall_at_k",
    "true_recall_at_k",
    "ure_at_k",
]

TIES = ("rank", "strict")
"""Tie handling at the threshold: "rank" (smaller item id first, as top_k) or "strict" (s > s_K)."""


def _check_ks(ks: Sequence[int]) -> np.ndarray:
    vals = list(ks)
    if not vals or any(
        isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1 for k in vals
    ):
        raise ValueError(f"ks must be a non-empty list of positive integers, got {vals}")
    return np.asarray(vals, dtype=np.int64)


def _check_scores(scores: np.ndarray) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"scores must be 2-D (users x items), got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN; expected finite scores or -inf for excluded items")
    return s


def _check_pairs(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> tuple:
    r = np.asarray(rows, dtype=np.int64)
    c = np.asarray(cols, dtype=np.int64)
    if r.shape != c.shape or r.ndim != 1:
        raise ValueError(f"rows and cols must be 1-D of equal length, got {r.shape}, {c.shape}")
    if r.size and (r.min() < 0 or r.max() >= shape[0] or c.min() < 0 or c.max() >= shape[1]):
        raise ValueError(f"pair indices must lie within the scores' shape {shape}")
    return r, c


def kth_largest(scores: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """The (K+1)-th largest score of every row for every K: shape (n_rows, len(ks)).

    This is [URE24]'s threshold s_K. One compiled top-(max K + 1) pass per row for all K
    at once (:func:`debiaseval.recommenders.ranking.largest`, O(n_items) per row, no copy). A
    row with at most K entries above -inf has no finite (K+1)-th score: its threshold is
    -inf (every finite score passes).
    """
    s = _check_scores(scores)
    k = _check_ks(ks)
    n_rows, n_cols = s.shape
    out = np.full((n_rows, k.size), -np.inf)
    inside = k < n_cols
    if n_rows and inside.any():
        _, vals = largest(s, int(k[inside].max()) + 1)
        out[:, inside] = vals[:, k[inside]]
    return out


def in_top_k(
    scores: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    ks: Sequence[int],
    *,
    ties: str = "rank",
) -> np.ndarray:
    """Whether pair j, ``scores[rows[j], cols[j]]``, is above its row's threshold s_K.

    Returns a boolean array (len(rows), len(ks)). With ``ties="rank"`` an item
    equal to s_K counts when it is among the first K of the (score descending,
    item id ascending) order, i.e. when fewer than K − #{score > s_K} items of
    the row with a smaller id share its score; with ``"strict"`` it never does.
    Vectorised: one partition for the thresholds, and a cumulative count of the
    tied entries only for the rows where a counted pair ties with s_K.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    s = _check_scores(scores)
    r, c = _check_pairs(rows, cols, s.shape)
    k = _check_ks(ks)
    thresh = kth_largest(s, k)
    vals = s[r, c]
    out = vals[:, None] > thresh[r]
    if ties == "rank":
        for j, kk in enumerate(k.tolist()):
            tied = np.flatnonzero((vals == thresh[r, j]) & (vals > -np.inf))
            if tied.size == 0:
                continue
            tie_rows, pos = np.unique(r[tied], return_inverse=True)
            block = s[tie_rows]
            v = thresh[tie_rows, j][:, None]
            need = kk - np.count_nonzero(block > v, axis=1)  # tied items the top K still takes
            equal = block == v
            before = np.cumsum(equal, axis=1, dtype=np.int64) - equal  # equal items with smaller id
            out[tied, j] = before[pos, c[tied]] < need[pos]
    out &= (vals > -np.inf)[:, None]
    return out


def _per_row(rows: np.ndarray, weights: np.ndarray, counted: np.ndarray, n_rows: int) -> np.ndarray:
    """Per-row sum of ``weights`` (pairs × ks) divided by per-row ``counted``; NaN where 0."""
    denom = np.bincount(rows, weights=counted.astype(np.float64), minlength=n_rows)
    out = np.full((n_rows, weights.shape[1]), np.nan)
    has = denom > 0
    for j in range(weights.shape[1]):
        num = np.bincount(rows, weights=weights[:, j].astype(np.float64), minlength=n_rows)
        out[has, j] = num[has] / denom[has]
    return out


def ure_at_k(
    scores: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    ks: Sequence[int],
    *,
    ties: str = "rank",
) -> np.ndarray:
    """URE@K of every row ([URE24]): shape (n_rows, len(ks)), NaN without positives.

    See docs/experiments/e5.md.

    ``scores``: the model's scores of **all** items for a batch of users, with
    non-candidates (training items) set to -inf. ``rows``/``cols``: the
    positives R_u⁺ of the randomly exposed sets (row = user within the batch).
    URE@K(u) = |{i ∈ R_u⁺ : score(u, i) > s_K}| / |R_u⁺| with s_K the (K+1)-th
    best candidate score; ties as in :func:`in_top_k`.
    """
    s = _check_scores(scores)
    r, c = _check_pairs(rows, cols, s.shape)
    hits = in_top_k(s, r, c, ks, ties=ties)
    return _per_row(r, hits, np.ones(r.size, dtype=bool), s.shape[0])


def true_recall_at_k(
    scores: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    ks: Sequence[int],
) -> np.ndarray:
    """True Recall@K of every row on fully exposed data: (n_rows, len(ks)), NaN without positives.

    ``rows``/``cols``: every positive candidate P_u of the user (fully exposed
    truth minus training pairs). The top K is that of
    :func:`debiaseval.recommenders.ranking.top_k` (ties by the smaller item id); the same
    kernel as :func:`ure_at_k` applied to P_u instead of R_u⁺.
    """
    return ure_at_k(scores, rows, cols, ks, ties="rank")


def traditional_recall_at_k(
    scores: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    positive: np.ndarray,
    ks: Sequence[int],
) -> np.ndarray:
    """Traditional Recall@K on the exposed sets: rank only R_u, count R_u⁺ in its top K.

    ``rows``/``cols``: every exposed pair R_u (row = user within the batch),
    ``positive``: its label. Items of R_u are ordered by score descending, ties
    by the smaller item id; an item scored -inf is never a hit. Returns
    (n_rows, len(ks)), NaN for rows without an exposed positive.
    """
    s = _check_scores(scores)
    r, c = _check_pairs(rows, cols, s.shape)
    pos = np.asarray(positive, dtype=bool)
    if pos.shape != r.shape:
        raise ValueError(f"positive must have one label per pair ({r.size}), got {pos.shape}")
    k = _check_ks(ks)
    vals = s[r, c]
    order = np.lexsort((c, -vals, r))
    sorted_rows = r[order]
    rank = np.empty(r.size, dtype=np.int64)
    rank[order] = np.arange(r.size) - np.searchsorted(sorted_rows, sorted_rows, side="left")
    hits = (rank[:, None] < k[None, :]) & (pos & (vals > -np.inf))[:, None]
    return _per_row(r, hits, pos, s.shape[0])


# --------------------------------------------------------------------------- driver


def _user_slices(frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """``frame`` sorted by user, item, and its user column (for batch slicing)."""
    out = frame.sort_values(["user", "item"], kind="stable").reset_index(drop=True)
    return out, out["user"].to_numpy(np.int64)


def _pair_keys(frame: pd.DataFrame, n_items: int) -> np.ndarray:
    return frame["user"].to_numpy(np.int64) * n_items + frame["item"].to_numpy(np.int64)


def recall_estimates(
    model: Recommender,
    train: sp.spmatrix | sp.sparray,
    exposed: pd.DataFrame,
    ks: Sequence[int],
    *,
    truth: pd.DataFrame | None = None,
    positive_threshold: float,
    ties: str = "rank",
    batch_size: int = 1024,
) -> pd.DataFrame:
    """Per-user true Recall@K, traditional Recall@K and URE@K of a fitted model.

    ``train``: the n_users × n_items matrix the model was fitted on (its pairs
    are not candidates). ``exposed``: the randomly exposed sets (user, item,
    rating). ``truth``: the fully exposed data (user, item, rating), or None
    where there is none (then ``true_recall`` is NaN); its training pairs are
    dropped. Positive = rating > ``positive_threshold`` (docs/datasets.md). Only the users
    with an exposed pair or a truth pair are scored, in batches of ``batch_size`` (memory
    only, never the result).

    Returns one row per scored user and K: ``user`` (int32), ``k`` (int16),
    ``true_recall``, ``traditional_recall``, ``ure`` (float64, NaN where the
    user has no positive to count). Average with :func:`mean_recall`.
    """
    k = _check_ks(ks)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    x = sp.csr_matrix(train)
    n_users, n_items = x.shape
    for name, frame in (("exposed", exposed), ("truth", truth)):
        if frame is None:
            continue
        missing = [col for col in ("user", "item", "rating") if col not in frame.columns]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}")
        if len(frame) and (
            frame["user"].min() < 0
            or frame["user"].max() >= n_users
            or frame["item"].min() < 0
            or frame["item"].max() >= n_items
        ):
            raise ValueError(f"{name} ids must lie within train's shape {x.shape}")
    exp, exp_users = _user_slices(exposed)
    exp_pos = exp["rating"].to_numpy() > positive_threshold
    if truth is not None:
        tru = truth[truth["rating"].to_numpy() > positive_threshold]
        tx = sp.coo_matrix(x)
        train_keys = tx.row.astype(np.int64) * n_items + tx.col
        tru = tru[~np.isin(_pair_keys(tru, n_items), train_keys)]
        tru, tru_users = _user_slices(tru)

    # only users with a pair to count are scored: a training set may hold many more users
    # than the random sets (Yahoo! R3: 15,400 MNAR users, 5,400 MAR users)
    counted = [exp_users] + ([tru_users] if truth is not None else [])
    scored = np.unique(np.concatenate(counted))
    nan = np.full((0, k.size), np.nan)
    blocks: list[tuple[np.ndarray, ...]] = []
    for start in range(0, scored.size, batch_size):
        users = scored[start : start + batch_size]
        s = model.score(users)
        rows = x[users]
        s[np.repeat(np.arange(users.size), np.diff(rows.indptr)), rows.indices] = -np.inf
        lo, hi = np.searchsorted(exp_users, [users[0], users[-1] + 1])
        er, ec = np.searchsorted(users, exp_users[lo:hi]), exp["item"].to_numpy(np.int64)[lo:hi]
        ep = exp_pos[lo:hi]
        trad = traditional_recall_at_k(s, er, ec, ep, k)
        ure = ure_at_k(s, er[ep], ec[ep], k, ties=ties)
        if truth is None:
            true = np.full_like(ure, np.nan)
        else:
            lo, hi = np.searchsorted(tru_users, [users[0], users[-1] + 1])
            true = true_recall_at_k(
                s,
                np.searchsorted(users, tru_users[lo:hi]),
                tru["item"].to_numpy(np.int64)[lo:hi],
                k,
            )
        blocks.append((users, true, trad, ure))
    users = np.concatenate([b[0] for b in blocks]) if blocks else np.empty(0, np.int64)
    true, trad, ure = (np.concatenate([b[i] for b in blocks]) if blocks else nan for i in (1, 2, 3))
    return pd.DataFrame(
        {
            "user": np.repeat(users, k.size).astype(np.int32),
            "k": np.tile(k, users.size).astype(np.int16),
            "true_recall": true.ravel(),
            "traditional_recall": trad.ravel(),
            "ure": ure.ravel(),
        }
    )


def mean_recall(per_user: pd.DataFrame) -> pd.DataFrame:
    """Mean over users per K of :func:`recall_estimates`' columns, ignoring NaN.

    Columns ``k``, ``true_recall``, ``traditional_recall``, ``ure`` (each the
    mean over the users where it is defined, as [URE24] averages over users with
    R_u⁺ ≠ ∅) and ``n_users_true``, ``n_users_exposed`` (how many users each
    mean is over).
    """
    cols = ["true_recall", "traditional_recall", "ure"]
    grouped = per_user.groupby("k", sort=True)
    out = grouped[cols].mean().reset_index()
    out["n_users_true"] = grouped["true_recall"].count().to_numpy().astype(np.int64)
    out["n_users_exposed"] = grouped["ure"].count().to_numpy().astype(np.int64)
    return out

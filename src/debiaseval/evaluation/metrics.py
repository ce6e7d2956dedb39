"""Top-k and rating metrics (docs/experiments/e1.md).

Top-k metrics are computed per user from recommendation lists and a test set:
relevant = test pairs with rating > ``positive_threshold`` (strictly, docs/datasets.md),
evaluated users = users with at least one relevant test pair. That is the
project's choice, not [SAC20]'s or [FLAIRS20]'s, which do not say which users
they average over: Recall@k and AP@k are undefined for a user with no relevant
pair (0/0), and counting such users as 0 in Precision, HitRate and NDCG would
make every metric depend on how many users a test set happens to leave without
a positive, which differs between the test sets being compared (docs/experiments/e1.md,
Metrics). :func:`hit_matrix` builds the users × k boolean hit
matrix once; every metric in :data:`TOPK_METRICS` (the single registry of
metric names) maps ``(hits, n_relevant)`` to one value per user.
Rating metrics (MAE, MSE, RMSE, 0/1 accuracy of rounded predictions, as in
[ICML16] §6) work on plain arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "GAINS",
    "TOPK_METRICS",
    "BlockValues",
    "accuracy",
    "average_precision_at_k",
    "avg_dcg_at_k",
    "block_columns",
    "evaluate_topk",
    "hit_matrix",
    "hit_rate_at_k",
    "labels_of_codes",
    "mae",
    "mse",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "rmse",
    "summarise",
    "topk_blocks",
    "train_overlap_mask",
]

TopKMetric = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _check_columns(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}")


def _check_ids(df: pd.DataFrame, n_items: int, what: str) -> None:
    if len(df) == 0:
        return
    user, item = df["user"].to_numpy(), df["item"].to_numpy()
    if user.min() < 0 or item.min() < 0 or item.max() >= n_items:
        raise ValueError(f"{what} ids must be 0-based with item < n_items={n_items}")


def _pair_keys(users: np.ndarray, items: np.ndarray, n_items: int) -> np.ndarray:
    return users.astype(np.int64) * np.int64(n_items) + items.astype(np.int64)


# Membership tests use a boolean lookup table when its span is at most _TABLE_BYTES cells
# (64 MiB) or _TABLE_PER_KEY cells per key, else binary search.
_TABLE_BYTES = 1 << 26
_TABLE_PER_KEY = 16


def _unique_sorted(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array (sort-based; numpy's ``unique`` hashes)."""
    out = np.sort(keys)
    if out.size > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def _isin(keys: np.ndarray, ref: np.ndarray, *, ref_sorted: bool = False) -> np.ndarray:
    """``np.isin(keys, ref)`` for integer keys, by sorted keys, never by hashing.

    A boolean lookup table over the span of ``ref`` when it has at most
    ``_TABLE_BYTES`` cells (or ``_TABLE_PER_KEY`` per key), else binary search
    of the sorted queries in the sorted ``ref``. ``ref_sorted`` says that
    ``ref`` is sorted already.
    """
    if keys.size == 0 or ref.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    low, high = (ref[0], ref[-1]) if ref_sorted else (ref.min(), ref.max())
    if int(high) - int(low) < max(_TABLE_BYTES, _TABLE_PER_KEY * (keys.size + ref.size)):
        return np.isin(keys, ref, kind="table")
    ref = ref if ref_sorted else np.sort(ref)
    order = np.argsort(keys)
    queries = keys[order]
    at = np.minimum(np.searchsorted(ref, queries), ref.size - 1)
    out = np.empty(keys.shape, dtype=bool)
    out[order] = ref[at] == queries
    return out


def hit_matrix(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    k: int,
    *,
    n_items: int,
    positive_threshold: float = 3.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Users × k boolean hit matrix of top-k lists against the relevant test pairs.

    See docs/experiments/e1.md.

    ``recs``: columns user, item, rank (1-based; a user may have fewer than k
    rows, and list items are assumed distinct). ``test``: user, item, rating;
    relevant = rating > ``positive_threshold`` (strictly; duplicate pairs count
    once). Returns ``(users, hits, n_relevant)``: the users with ≥ 1 relevant
    test pair (sorted, int64), ``hits[u, r]`` = the item at rank r+1 of user
    ``users[u]`` is relevant (False past the end of a short list, and for users
    without any list), and the number of relevant pairs of each user.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    _check_columns(recs, ("user", "item", "rank"), "recs")
    _check_columns(test, ("user", "item", "rating"), "test")
    _check_ids(test, n_items, "test")
    _check_ids(recs, n_items, "recs")
    rel = test["rating"].to_numpy() > positive_threshold
    rel_keys = _unique_sorted(
        _pair_keys(test["user"].to_numpy()[rel], test["item"].to_numpy()[rel], n_items)
    )
    rel_users = rel_keys // n_items  # sorted
    first = np.ones(rel_users.size, dtype=bool)
    first[1:] = rel_users[1:] != rel_users[:-1]
    starts = np.flatnonzero(first)
    users, n_relevant = rel_users[starts], np.diff(np.append(starts, rel_users.size))
    hits = np.zeros((users.size, k), dtype=bool)
    if users.size == 0 or len(recs) == 0:
        return users, hits, n_relevant

    rank = recs["rank"].to_numpy().astype(np.int64)
    if rank.min() < 1:
        raise ValueError(f"recs rank must be 1-based, found rank {rank.min()}")
    r_user = recs["user"].to_numpy().astype(np.int64)
    row = np.minimum(np.searchsorted(users, r_user), users.size - 1)
    keep = (rank <= k) & (users[row] == r_user)
    keys = _pair_keys(r_user[keep], recs["item"].to_numpy()[keep], n_items)
    hits[row[keep], rank[keep] - 1] = _isin(keys, rel_keys, ref_sorted=True)
    return users, hits, n_relevant


def precision_at_k(hits: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    """Precision@k = #hits in the top k / k (k = ``hits.shape[1]``, also for short lists)."""
    return hits.sum(axis=1) / hits.shape[1]


def recall_at_k(hits: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    """Recall@k = #hits in the top k / #relevant."""
    return hits.sum(axis=1) / n_relevant


def average_precision_at_k(hits: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    """AP@k = Σ_r P@r · hit_r / min(k, #relevant); its user mean is MAP@k.

    See docs/experiments/e1.md.
    """
    k = hits.shape[1]
    prec_at_r = np.cumsum(hits, axis=1) / np.arange(1, k + 1)
    return (prec_at_r * hits).sum(axis=1) / np.minimum(k, n_relevant)


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def ndcg_at_k(hits: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    """NDCG@k with binary gains and discount 1/log2(rank + 1); IDCG over min(k, #relevant) hits."""
    k = hits.shape[1]
    disc = _discounts(k)
    ideal = np.concatenate([[0.0], np.cumsum(disc)])[np.minimum(k, n_relevant)]
    return (hits * disc).sum(axis=1) / ideal


def avg_dcg_at_k(hits: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    """Per-relevant-item DCG@k = Σ_r hit_r / log2(r + 1) / #relevant (metric ``avgdcg``).

    The mean over the user's relevant items of the gain 1[rank ≤ k] / log2(1 + rank)
    (Yang et al., RecSys 2018): unlike NDCG it is not normalised by the ideal DCG, so the
    weighting estimators of docs/experiments/e1.md apply to it.
    """
    return (hits * _discounts(hits.shape[1])).sum(axis=1) / n_relevant


def hit_rate_at_k(hits: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    """HitRate@k = 1 if at least one relevant item is in the top k, else 0."""
    return hits.any(axis=1).astype(np.float64)


TOPK_METRICS: dict[str, TopKMetric] = {
    "precision": precision_at_k,
    "recall": recall_at_k,
    "map": average_precision_at_k,
    "ndcg": ndcg_at_k,
    "hitrate": hit_rate_at_k,
    "avgdcg": avg_dcg_at_k,
}
"""The single registry of top-k metric names: name → f(hits, n_relevant) per user."""

GAINS: tuple[str, ...] = ("recall", "avgdcg")
"""The metrics of :data:`TOPK_METRICS` that are a mean over the relevant items of a rank gain:
a test set's value of them estimates the full-matrix value user by user (the weighting
estimators are defined for these alone, and the arena scores only these)."""


def evaluate_topk(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    ks: Sequence[int],
    *,
    n_items: int,
    positive_threshold: float = 3.0,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Tidy per-user top-k metrics: columns user (int32), metric (str), k (int16), value (float64).

    One row per evaluated user (≥ 1 relevant test pair), metric and k; ``metrics``
    are names in :data:`TOPK_METRICS` (default: all). Rows are ordered by metric,
    k, user. Average with :func:`summarise`.
    """
    names = list(TOPK_METRICS) if metrics is None else list(metrics)
    unknown = [m for m in names if m not in TOPK_METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {', '.join(TOPK_METRICS)}")
    ks = list(dict.fromkeys(int(k) for k in ks))
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be a non-empty list of positive integers, got {ks}")
    users, hits, n_rel = hit_matrix(
        recs, test, max(ks), n_items=n_items, positive_threshold=positive_threshold
    )
    blocks = topk_blocks(names, ks)
    values = np.empty((len(blocks), users.size))
    for row, (m, k) in zip(values, blocks, strict=True):
        row[:] = TOPK_METRICS[m](hits[:, :k], n_rel)
    return BlockValues(users.astype(np.int32), values, tuple(blocks)).frame()


def topk_blocks(metrics: Sequence[str] | None, ks: Sequence[int]) -> list[tuple[str, int]]:
    """The (metric, k) blocks of :func:`evaluate_topk`'s rows, in their order: metric, then k
    (duplicate ks once)."""
    names = list(TOPK_METRICS) if metrics is None else list(metrics)
    return [(m, k) for m in names for k in dict.fromkeys(int(k) for k in ks)]


def labels_of_codes(labels: Sequence[str], codes: np.ndarray) -> pd.Series:
    """The str column ``labels[codes]`` (``pd.Series(labels[codes], dtype=str)``), taken in
    Arrow from the codes: no Python string per row (about 0.3 µs each)."""
    import pyarrow as pa

    column = pa.array([str(label) for label in labels], type=pa.large_string()).take(codes)
    return pd.Series(pd.array(column, dtype=str))


@dataclass(frozen=True)
class BlockValues:
    """Per-user values in :func:`evaluate_topk`'s layout, kept compact: the ``users`` (int32)
    of one block, the ``values`` (float64, blocks × users) and the ``blocks`` ((metric, k),
    :func:`topk_blocks`). A tidy frame costs about 28 bytes a row (user, metric string, k,
    value); this keeps 8, so that E1 can hold every recommender's values on every test set
    until it writes them (:meth:`frame` gives the tidy frame back)."""

    users: np.ndarray
    values: np.ndarray
    blocks: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, frame: pd.DataFrame, blocks: Sequence[tuple[str, int]]) -> BlockValues:
        """From a tidy frame whose rows are ``blocks`` in order, each over the same users."""
        value = frame["value"].to_numpy()
        n_blocks = len(blocks)
        if n_blocks == 0 or value.size % n_blocks:
            raise ValueError(f"{value.size} per-user values do not make {n_blocks} equal blocks")
        n_users = value.size // n_blocks
        users = np.array(frame["user"].to_numpy()[:n_users], dtype=np.int32)
        return cls(users, value.reshape(n_blocks, n_users), tuple(blocks))

    def __len__(self) -> int:
        return self.values.size

    def frame(self) -> pd.DataFrame:
        """The tidy frame: user (int32), metric (str), k (int16), value (float64)."""
        return stack_block_values([self])


def block_columns(parts: Sequence[BlockValues]) -> dict[str, Any]:
    """The columns of :func:`stack_block_values`' frame, by name: user (int32), metric (str),
    k (int16), value (float64), each allocated once in its final dtype (no per-part
    temporaries to concatenate), so that ``pd.DataFrame(..., copy=False)`` can take them
    as they are."""
    metrics = list(dict.fromkeys(m for part in parts for m, _ in part.blocks))
    code = {m: j for j, m in enumerate(metrics)}
    counts = np.array([part.users.size for part in parts for _ in part.blocks], dtype=np.int64)
    code_type = np.min_scalar_type(max(len(metrics) - 1, 0))
    metric_codes = np.array([code[m] for part in parts for m, _ in part.blocks], dtype=code_type)
    ks = np.array([k for part in parts for _, k in part.blocks], dtype=np.int16)
    user = np.empty(int(counts.sum()), dtype=np.int32)
    value = np.empty(user.size)
    start = 0
    for part in parts:
        end = start + part.values.size
        user[start:end].reshape(len(part.blocks), part.users.size)[:] = part.users
        value[start:end] = part.values.ravel()
        start = end
    return {
        "user": user,
        "metric": labels_of_codes(metrics, np.repeat(metric_codes, counts)),
        "k": np.repeat(ks, counts),
        "value": value,
    }


def stack_block_values(parts: Sequence[BlockValues]) -> pd.DataFrame:
    """The tidy frames of ``parts`` (:class:`BlockValues`) one after the other, built in one
    pass: user (int32), metric (str), k (int16), value (float64), block by block (the layout
    of :func:`evaluate_topk`; the columns are :func:`block_columns`)."""
    return pd.DataFrame(block_columns(parts))


def summarise(per_user: pd.DataFrame) -> pd.DataFrame:
    """Mean over users per (metric, k): columns metric, k, value, n_users (input group order)."""
    _check_columns(per_user, ("metric", "k", "value"), "per_user")
    out = (
        per_user.groupby(["metric", "k"], sort=False, observed=True)["value"]
        .agg(value="mean", n_users="size")
        .reset_index()
    )
    out["n_users"] = out["n_users"].astype(np.int64)
    return out


def _pair(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_pred, dtype=np.float64)
    if t.shape != p.shape:
        raise ValueError(f"y_true and y_pred differ in shape: {t.shape} != {p.shape}")
    if t.size == 0:
        raise ValueError("rating metrics of empty arrays are undefined")
    return t, p


def mae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean absolute error."""
    t, p = _pair(y_true, y_pred)
    return float(np.mean(np.abs(t - p)))


def mse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean squared error."""
    t, p = _pair(y_true, y_pred)
    return float(np.mean((t - p) ** 2))


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error."""
    return float(np.sqrt(mse(y_true, y_pred)))


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """0/1 accuracy of rounded predictions ([ICML16] §6): mean of 1{round(ŷ) = y}.

    Rounding is half up (floor(ŷ + 0.5)); predictions are not clipped to the scale.
    """
    t, p = _pair(y_true, y_pred)
    return float(np.mean(np.floor(p + 0.5) == t))


def train_overlap_mask(test: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the ``test`` rows whose (user, item) pair also occurs in ``train``.

    Such MAR pairs (366 in Coat) can never be hit when training items
    are excluded from the candidates; they are kept by default, and this mask
    lets callers count or drop them. Membership is tested by sorted keys
    (a lookup table or binary search), O(n log n) at worst, never by hashing.
    """
    _check_columns(test, ("user", "item"), "test")
    _check_columns(train, ("user", "item"), "train")
    if len(test) == 0 or len(train) == 0:
        return np.zeros(len(test), dtype=bool)
    n = int(max(test["item"].max(), train["item"].max())) + 1
    t_keys = _pair_keys(test["user"].to_numpy(), test["item"].to_numpy(), n)
    r_keys = _pair_keys(train["user"].to_numpy(), train["item"].to_numpy(), n)
    return _isin(t_keys, r_keys)

"""The exact top-k metrics of recommendation lists against a full rating matrix: the
arena's ``TRUE`` row on ``synthetic`` (docs/estimators.md).

Where every rating is known, the metric a debiased estimator aims at is computed, not
estimated: for user u, Rel_u = the items with Y(u, i) > threshold among u's candidates (every
item but u's training items), and m_u is the top-k metric of u's list against Rel_u, averaged
over the users with a non-empty Rel_u, exactly as on a test set (Yang et al., RecSys 2018;
[SAC20] uses the MAR sample gt as the stand-in for it). Users are taken in batches, so
memory follows the batch, never users × items.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from debiaseval.evaluation.flags import short_list_counts
from debiaseval.evaluation.metrics import evaluate_topk, summarise

__all__ = ["BATCH_CELLS", "true_rows", "true_topk", "true_topk_table"]

BATCH_CELLS = 1 << 22
"""Users × items cells of the rating rows read per batch (4 MiB of int8)."""


class _ByUser:
    """The rows of a frame sorted by user once, so that every batch of users is one slice."""

    def __init__(self, frame: pd.DataFrame) -> None:
        order = np.argsort(frame["user"].to_numpy(), kind="stable")
        self.frame = frame.iloc[order]
        self.users = self.frame["user"].to_numpy()

    def rows(self, lo: int, hi: int) -> pd.DataFrame:
        start, stop = np.searchsorted(self.users, [lo, hi])
        return self.frame.iloc[start:stop]


def true_topk(
    recs: Mapping[str, pd.DataFrame],
    train: pd.DataFrame,
    rating_rows: Callable[[np.ndarray], np.ndarray],
    *,
    n_users: int,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    raw_users: np.ndarray | None = None,
    raw_items: np.ndarray | None = None,
    batch_cells: int = BATCH_CELLS,
) -> tuple[dict[str, pd.DataFrame], int]:
    """Per-user top-k metrics of every recommender's lists against the full truth.

    ``recs``: name -> top-k lists (user, item, rank); ``train``: the pairs that are no
    candidates (user, item); ``rating_rows(raw users)`` gives their full rating rows over
    the raw items (e.g. :func:`debiaseval.data.synthetic_dataset.full_rating_rows`); ``raw_users`` /
    ``raw_items`` map the ids of ``recs`` and ``train`` to the rows' ids (identity if None).
    Returns, per recommender, :func:`evaluate_topk`'s frame (metric, k, user order) and the
    number of relevant candidate pairs.
    """
    raw_users = np.arange(n_users) if raw_users is None else np.asarray(raw_users, np.int64)
    raw_items = np.arange(n_items) if raw_items is None else np.asarray(raw_items, np.int64)
    step = max(1, batch_cells // max(n_items, 1))
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in recs}
    lists_by_user = {name: _ByUser(lists) for name, lists in recs.items()}
    train_by_user = _ByUser(train)
    n_relevant = 0
    for lo in range(0, n_users, step):
        hi = min(lo + step, n_users)
        relevant = rating_rows(raw_users[lo:hi])[:, raw_items] > positive_threshold
        seen = train_by_user.rows(lo, hi)
        relevant[seen["user"].to_numpy() - lo, seen["item"].to_numpy()] = False
        users, items = np.nonzero(relevant)
        n_relevant += users.size
        test = pd.DataFrame(
            {"user": users + lo, "item": items, "rating": np.ones(users.size, np.float32)}
        )
        for name, lists in lists_by_user.items():
            parts[name].append(
                evaluate_topk(
                    lists.rows(lo, hi),
                    test,
                    ks,
                    n_items=n_items,
                    positive_threshold=0.0,
                    metrics=metrics,
                )
            )
    out = {}
    for name, frames in parts.items():
        values = pd.concat(frames, ignore_index=True)
        block = values["metric"].map({m: i for i, m in enumerate(metrics)}).to_numpy()
        order = np.lexsort((values["user"].to_numpy(), values["k"].to_numpy(), block))
        out[name] = values.iloc[order].reset_index(drop=True)
    return out, n_relevant


def true_topk_table(
    recs: Mapping[str, pd.DataFrame],
    per_user: Mapping[str, pd.DataFrame],
    *,
    testset: str,
    seed: int,
    n_relevant: int,
) -> pd.DataFrame:
    """The rows ``testset`` of E1's per-seed metrics from :func:`true_topk`'s values: per
    recommender, metric and k the mean over users, ``n_users``, ``n_test_pairs`` (the relevant
    candidate pairs), ``n_train_overlap`` (0: training pairs are no candidates),
    ``n_short_lists`` and NaN bootstrap bounds (the truth has no sampling error)."""
    frames = []
    for name, values in per_user.items():
        table = summarise(values)
        table.insert(0, "recommender", name)
        table.insert(1, "seed", seed)
        table.insert(2, "testset", testset)
        table["n_test_pairs"] = np.int64(n_relevant)
        table["n_train_overlap"] = np.int64(0)
        short = values.assign(short=short_list_counts(recs[name], values))
        counts = short.groupby(["metric", "k"], sort=False, observed=True)["short"].sum()
        table["n_short_lists"] = counts.to_numpy().astype(np.int64)
        table["boot_low"] = np.nan
        table["boot_high"] = np.nan
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def true_rows(
    recs: Mapping[str, pd.DataFrame],
    train: pd.DataFrame,
    rating_rows: Callable[[np.ndarray], np.ndarray],
    *,
    testset: str,
    seed: int,
    raw_users: np.ndarray,
    raw_items: np.ndarray,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    per_user_metrics: Sequence[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A seed's rows ``testset`` of the exact truth (:func:`true_topk`, then
    :func:`true_topk_table`) and the per-user values of ``per_user_metrics`` (recommender,
    user, metric, k, value) for the scores that need them."""
    per_user, n_relevant = true_topk(
        recs,
        train,
        rating_rows,
        n_users=len(raw_users),
        n_items=len(raw_items),
        ks=list(dict.fromkeys(ks)),
        metrics=metrics,
        positive_threshold=positive_threshold,
        raw_users=raw_users,
        raw_items=raw_items,
    )
    table = true_topk_table(recs, per_user, testset=testset, seed=seed, n_relevant=n_relevant)
    columns = ["recommender", "user", "metric", "k", "value"]
    values = [
        frame[frame["metric"].isin(list(per_user_metrics))].assign(recommender=name)
        for name, frame in per_user.items()
    ]
    if not values:
        return table, pd.DataFrame(columns=columns)
    return table, pd.concat(values, ignore_index=True)[columns]

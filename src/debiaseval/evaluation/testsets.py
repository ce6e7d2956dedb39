"""Recommendation lists on test sets: the metrics of every recommender on every test set of a
seed, the checks a test set and the lists must pass first, and how MAR-like a test set is
(docs/experiments/e1.md).

Test pairs whose item the user also rated in the training part can never be hit (training
items are not candidates): they are counted and, only when asked, dropped. A k above some
user's number of candidate items makes lists shorter than k, which inflates metrics such as
HitRate@k: :func:`short_list_warnings` says so once per k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from debiaseval.debiasing.interventions import marginal_kl
from debiaseval.evaluation.flags import short_list_counts
from debiaseval.evaluation.metrics import (
    BlockValues,
    evaluate_topk,
    summarise,
    topk_blocks,
    train_overlap_mask,
)
from debiaseval.io.errors import EmptyTestSetError

__all__ = [
    "check_testset",
    "evaluate_on_testsets",
    "evaluate_recommenders",
    "short_list_warnings",
    "testset_diagnostics",
    "train_overlap_masks",
]


def check_testset(
    sample: pd.DataFrame,
    name: str,
    *,
    dataset: str,
    seed: int,
    rho: float,
    n_heldout: int,
    positive_threshold: float,
    allow_empty: bool = False,
) -> bool:
    """Whether test set ``name`` is empty: no pair, or no relevant pair (rating > threshold).

    An empty test set has no user to average over, so its metrics would vanish
    from the summary; unless ``allow_empty`` (``e1.allow_empty_testsets``),
    raise :class:`EmptyTestSetError` with one line saying why and what to change.
    """
    n_relevant = int((sample["rating"] > positive_threshold).sum()) if len(sample) else 0
    if n_relevant:
        return False
    if allow_empty:
        return True
    where = f"E1 on {dataset}, seed {seed}: test set {name}"
    if len(sample) == 0:
        why = f"has no pair: rho = {rho:g} of {n_heldout:,} held-out pairs gives 0"
    else:
        why = (
            f"has no relevant pair (rating > {positive_threshold:g}) among its {len(sample):,} "
            f"pairs (rho = {rho:g} of {n_heldout:,} held-out pairs)"
        )
    raise EmptyTestSetError(
        f"{where} {why}; raise e1.rho, or set e1.allow_empty_testsets: true to report it as empty"
    )


def short_list_warnings(train: pd.DataFrame, *, n_items: int, ks: Sequence[int]) -> list[str]:
    """One message per k that exceeds some user's number of candidate items.

    Candidates are the items a user has no training interaction with; where
    there are fewer than k, the top-k list is shorter than k and HitRate@k or
    Recall@k can reach 1 trivially (on a 6 x 6 dataset every HitRate is 1).
    """
    if n_items - _most_rows_of_a_user(train) >= max(ks, default=0):
        return []  # a user's distinct items are at most its rows: no k can exceed the candidates
    seen = _distinct_items_per_user(train)
    # Users without training pairs have every item as a candidate.
    fewest = n_items - (int(seen.max()) if seen.size else 0)
    messages = []
    for k in sorted(ks):
        if k > fewest:
            short = int((n_items - seen < k).sum()) if n_items >= k else None
            who = "every user" if short is None else f"{short:,} user(s)"
            messages.append(
                f"k = {k} exceeds the number of candidate items of {who} (as few as {fewest:,} "
                f"of {n_items:,} items): their top-{k} lists are shorter than {k}, so "
                f"metrics@{k} such as HitRate@{k} are inflated"
            )
    return messages


def _most_rows_of_a_user(pairs: pd.DataFrame) -> int:
    """The largest number of rows of one user in ``pairs``: from the lengths of the runs of
    equal users where they are sorted, as a split's parts are (no copy of the column), else
    a bincount."""
    user = pairs["user"].to_numpy()
    if user.size == 0:
        return 0
    if (user[1:] >= user[:-1]).all():
        ends = np.flatnonzero(user[1:] != user[:-1])
        bounds = np.concatenate(([-1], ends, [user.size - 1]))
        return int(np.diff(bounds).max())
    return int(np.bincount(user.astype(np.int64, copy=False)).max())


def _distinct_items_per_user(pairs: pd.DataFrame) -> np.ndarray:
    """The number of distinct items of every user with pairs in ``pairs`` (in user order), from
    the (user, item) keys: one pass where they are sorted, as a split's parts are, else a sort."""
    user = pairs["user"].to_numpy(np.int64)
    if user.size == 0:
        return np.zeros(0, dtype=np.int64)
    item = pairs["item"].to_numpy(np.int64)
    width = np.int64(item.max()) + 1
    keys = user * width + item
    if (keys[1:] < keys[:-1]).any():
        keys = np.sort(keys)
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    counts = np.bincount(keys[first] // width)
    return counts[counts > 0]


def train_overlap_masks(
    testsets: Mapping[str, pd.DataFrame], train: pd.DataFrame
) -> dict[str, np.ndarray]:
    """Per test set, the mask of its rows whose (user, item) pair also occurs in ``train``.

    Depends on the test sets and the seed's ``train`` part only: compute it once
    and pass it to :func:`evaluate_on_testsets` for every recommender.
    """
    return {name: train_overlap_mask(test, train) for name, test in testsets.items()}


def evaluate_on_testsets(
    recs: pd.DataFrame,
    testsets: Mapping[str, pd.DataFrame],
    train: pd.DataFrame | None,
    *,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    drop_train_overlap: bool,
    overlaps: Mapping[str, np.ndarray] | None = None,
    per_user: dict[str, BlockValues] | None = None,
) -> pd.DataFrame:
    """Mean top-k metrics of one recommender on every test set (docs/experiments/e1.md).

    ``n_short_lists`` counts the evaluated users whose list holds fewer than k items
    (flagged ``short_lists`` by :func:`aggregate_step`).

    Test pairs whose item the user also rated in ``train`` can never be hit
    (training items are not candidates); they are counted in ``n_train_overlap``
    and dropped only when ``drop_train_overlap`` is set. ``overlaps`` (from
    :func:`train_overlap_masks`, then ``train`` may be None) saves recomputing
    the masks for every recommender; the result is the same. ``per_user``, when given,
    receives test set -> its per-user values (:func:`evaluate_topk`'s, kept compact as
    :class:`~debiaseval.evaluation.metrics.BlockValues`), whose means are the returned values.
    """
    if overlaps is None:
        if train is None:
            raise ValueError("evaluate_on_testsets needs train or precomputed overlaps")
        overlaps = train_overlap_masks(testsets, train)
    frames = []
    for name, test in testsets.items():
        overlap = overlaps.get(name)
        if overlap is None or overlap.shape != (len(test),):
            raise ValueError(f"overlaps lacks a mask of {len(test)} rows for test set {name!r}")
        if drop_train_overlap:
            test = test[~overlap]
        values = evaluate_topk(
            recs, test, ks, n_items=n_items, positive_threshold=positive_threshold, metrics=metrics
        )
        if per_user is not None:
            per_user[name] = BlockValues.of(values, topk_blocks(metrics, ks))
        summary = summarise(values)
        summary.insert(0, "testset", name)
        summary["n_test_pairs"] = np.int64(len(test))
        summary["n_train_overlap"] = np.int64(overlap.sum())
        short = values.assign(short=short_list_counts(recs, values))
        counts = short.groupby(["metric", "k"], sort=False, observed=True)["short"].sum()
        summary["n_short_lists"] = counts.to_numpy().astype(np.int64)
        frames.append(summary)
    return pd.concat(frames, ignore_index=True)


def evaluate_recommenders(
    recs: Mapping[str, pd.DataFrame],
    testsets: Mapping[str, pd.DataFrame],
    train: pd.DataFrame,
    *,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    drop_train_overlap: bool,
    per_user: dict[str, dict[str, BlockValues]] | None = None,
) -> pd.DataFrame:
    """:func:`evaluate_on_testsets` of several recommenders in one pass (one job per seed).

    ``recs`` maps recommender names to their top-k lists. The train-overlap
    masks are computed once. Returns the per-recommender tables stacked in
    ``recs`` order, with a leading ``recommender`` column. ``per_user``, when
    given, receives recommender -> test set -> per-user values.
    """
    overlaps = train_overlap_masks(testsets, train)
    tables = []
    for name, lists in recs.items():
        table = evaluate_on_testsets(
            lists,
            testsets,
            None,
            n_items=n_items,
            ks=ks,
            metrics=metrics,
            positive_threshold=positive_threshold,
            drop_train_overlap=drop_train_overlap,
            overlaps=overlaps,
            per_user=None if per_user is None else per_user.setdefault(name, {}),
        )
        table.insert(0, "recommender", name)
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def testset_diagnostics(
    name: str,
    sample: pd.DataFrame,
    space: pd.DataFrame,
    weights: np.ndarray,
    gt: pd.DataFrame,
    *,
    n_users: int,
    n_items: int,
) -> pd.DataFrame:
    """How MAR-like one intervened test set is: a one-row frame.

    Columns: ``testset``; ``n_pairs``, ``n_users``, ``n_items`` of the sample;
    ``zero_weight_share``, the share of the sampled space's (held-out) pairs
    whose sampling weight is 0 (WTD gives weight 0 to users and items absent
    from the MAR weights part: such pairs are drawn only once every
    positive-weight pair is taken); ``kl_users`` and ``kl_items``, the KL
    divergence of the sample's user and item marginals from those of the MAR
    ``gt`` part (:func:`~debiaseval.debiasing.interventions.marginal_kl`, Laplace-smoothed).
    """
    return pd.DataFrame(
        {
            "testset": [name],
            "n_pairs": np.int64(len(sample)),
            "n_users": np.int64(sample["user"].nunique()),
            "n_items": np.int64(sample["item"].nunique()),
            "zero_weight_share": float(np.mean(np.asarray(weights) == 0)) if len(space) else 0.0,
            "kl_users": marginal_kl(sample["user"], gt["user"], n_users),
            "kl_items": marginal_kl(sample["item"], gt["item"], n_items),
        }
    )
